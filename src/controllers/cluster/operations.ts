// Asynchronous operation records for Cluster writes (as ARO-RP's front end creates one a client polls):
// a create, a change of the spec, or a delete of a Cluster makes an Operation — whoever writes, over
// HTTP or in process — and an HTTP response carries its address in the `Operation-Location` header.
// The operation controller keeps it up to date.
import type { KindDefinition } from "../../api/registry.ts";
import type { KubeObject } from "../../api/meta.ts";
import { operationKind } from "../../api/slipway/operation.ts";
import type { PostWriteHook, WriteEvent } from "../../apiserver/admission.ts";
import { AlreadyExistsError, ForbiddenError } from "../../apiserver/errors.ts";
import type { ObjectService } from "../../apiserver/objects.ts";
import { LABEL_CLUSTER, names } from "../contract.ts";

type OperationType = "Create" | "Update" | "Upgrade" | "Delete";

/** The operation a write starts, if any: creates, spec changes (a raised generation; an Upgrade when the version changed) and deletes. */
function operationType(event: WriteEvent): OperationType | undefined {
  if (event.operation === "CREATE") return "Create";
  if (event.operation === "DELETE") return "Delete";
  const before = event.previous?.metadata.generation ?? 0;
  if ((event.object.metadata.generation ?? 0) <= before) return undefined;
  const version = (o: KubeObject | undefined) => (o as { spec?: { kubernetesVersion?: string } } | undefined)?.spec?.kubernetesVersion;
  return version(event.object) !== version(event.previous) ? "Upgrade" : "Update";
}

export function operationPath(namespace: string, name: string): string {
  return `/apis/slipway.dev/v1alpha1/namespaces/${namespace}/operations/${name}`;
}

/**
 * Records an Operation for a Cluster write and returns its name (an existing record is reused); none in
 * a namespace being deleted, which takes its records with it.
 */
export async function recordOperation(objects: ObjectService, type: OperationType, cluster: KubeObject): Promise<string | undefined> {
  const generation = cluster.metadata.generation ?? 1;
  const name = names.operation(cluster.metadata.name!, type, generation);
  const namespace = cluster.metadata.namespace!;
  try {
    await objects.create(operationKind as unknown as KindDefinition, namespace, {
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Operation",
      // Not owned by the cluster: the record of a delete must outlive what it deleted.
      metadata: { name, namespace, labels: { [LABEL_CLUSTER]: cluster.metadata.name! } },
      spec: {
        type,
        target: { apiVersion: cluster.apiVersion, kind: cluster.kind, name: cluster.metadata.name!, uid: cluster.metadata.uid! },
        generation,
      },
    });
  } catch (e) {
    if (e instanceof ForbiddenError) return undefined;
    if (!(e instanceof AlreadyExistsError)) throw e;
  }
  return name;
}

/**
 * The API server's post-write hook for Clusters. Writes that leave the spec alone (labels, annotations,
 * finalizers, status, a repeated delete) start no new operation.
 */
export const clusterOperations: PostWriteHook = {
  name: "ClusterOperations",
  afterWrite(event) {
    // Synchronous for the writes it ignores: every write of the control plane passes here.
    if (event.def.group !== "slipway.dev" || event.def.kind !== "Cluster") return;
    const type = operationType(event);
    if (!type) return;
    return recordOperation(event.objects, type, event.object).then((name) =>
      name ? { responseHeaders: { "Operation-Location": operationPath(event.object.metadata.namespace!, name) } } : undefined,
    );
  },
};
