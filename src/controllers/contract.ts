// What the controllers agree on among themselves and with the providers: owner references, the pause of a
// cluster, the tags on cloud resources, and idempotency tokens. The names, labels, annotations and
// finalizers of the objects made for a cluster are part of the API and live beside their kinds
// (api/slipway/); the operation hook (cluster/operations.ts) reads two of them from here.
import { createHash } from "node:crypto";
import type { KubeObject, OwnerReferenceT } from "../api/meta.ts";
import type { Reconcile } from "../runtime/controller.ts";
import { keyFor } from "../runtime/keys.ts";

export { LABEL_CLUSTER } from "../api/slipway/cluster.ts";
export { names } from "../api/slipway/names.ts";

export const TAG_CLUSTER = "slipway.dev/cluster";
export const TAG_CLUSTER_UID = "slipway.dev/cluster-uid";
export const TAG_OWNER = "slipway.dev/owner";
export const TAG_OWNER_UID = "slipway.dev/owner-uid";
export const TAG_ROLE = "slipway.dev/role";
/** On a subnet: the zone it is in (an infrastructure has one subnet per zone used). */
export const TAG_ZONE = "slipway.dev/zone";

/** An owner reference making `owner` the managing controller of the object it is put on. */
export function controllerRef(owner: KubeObject): OwnerReferenceT {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name!,
    uid: owner.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The owner that manages an object, if any. */
export function controllerOf(object: KubeObject): OwnerReferenceT | undefined {
  return object.metadata.ownerReferences?.find((r) => r.controller);
}

/**
 * A parent being deleted waits for its children to go: of a child already on its way out, only its going
 * (a delete event, always delivered) concerns the parent, not the status writes of its way out (a
 * machine's drain, deregistration and termination; each resource an infrastructure deletes).
 */
export function leavingWithParent(previous: KubeObject, parent: KubeObject | undefined): boolean {
  return previous.metadata.deletionTimestamp !== undefined && parent?.metadata.deletionTimestamp !== undefined;
}

/**
 * Whether a cluster's pause holds an object made for it (or the cluster itself): while `spec.paused` is
 * set, the controllers leave the cluster and everything of it as it is, status included, as Cluster API
 * pauses; what is being deleted still goes.
 */
export function heldByPause(
  cluster: { spec: { paused?: boolean }; metadata: { deletionTimestamp?: string } } | undefined,
  object: { metadata: { deletionTimestamp?: string } },
): boolean {
  return cluster?.spec.paused === true && !cluster.metadata.deletionTimestamp && !object.metadata.deletionTimestamp;
}

type PausableCluster = Parameters<typeof heldByPause>[0] & object;
interface ClusterPart {
  metadata: { namespace?: string; deletionTimestamp?: string };
  spec: { clusterName: string };
}

/** `reconcile`, for an object made for a cluster (found in `objects`), except while the cluster's pause holds it. */
export function unlessPaused(reconcile: Reconcile, objects: { get(key: string): ClusterPart | undefined }, clusters: { get(key: string): PausableCluster | undefined }): Reconcile {
  return async (ctx) => {
    const object = objects.get(ctx.key);
    const cluster = object && clusters.get(keyFor(object.metadata.namespace, object.spec.clusterName));
    return object && heldByPause(cluster, object) ? {} : reconcile(ctx);
  };
}

/** The key of the cluster an object made for it belongs to (its shard key); the key itself when the object is not cached. */
export function clusterKeyOf(objects: { get(key: string): ClusterPart | undefined }): (key: string) => string {
  return (key) => {
    const object = objects.get(key);
    return object ? keyFor(object.metadata.namespace, object.spec.clusterName) : key;
  };
}

/**
 * The order a controller serves the waiting keys of many clusters in (`priority` of a controller): by
 * the age of the cluster each belongs to, older first — the creation second, so that a controller may
 * add a fraction to order keys of one second (a control-plane machine before workers). When the workers
 * are the bottleneck, clusters are finished one after another instead of all advancing together: the
 * first are Running sooner, and fewer wait half built, each polled and re-checked while it waits. A key
 * whose cluster is unknown (not yet in the cache, or gone) goes first; there is little left to do for it.
 */
export function olderClustersFirst(clusters: { get(key: string): { metadata: { creationTimestamp?: string } } | undefined }, clusterKeyOf: (key: string) => string): (key: string) => number {
  return (key) => {
    const born = clusters.get(clusterKeyOf(key))?.metadata.creationTimestamp;
    return born ? Math.floor(Date.parse(born) / 1000) : 0;
  };
}

/** Tags every cloud resource of a cluster carries, naming the cluster and the owning object. */
export function cloudTags(cluster: { namespace: string; name: string; uid: string }, owner: KubeObject, role: string): Record<string, string> {
  return {
    [TAG_CLUSTER]: `${cluster.namespace}/${cluster.name}`,
    [TAG_CLUSTER_UID]: cluster.uid,
    [TAG_OWNER]: `${owner.kind}/${owner.metadata.name}`,
    [TAG_OWNER_UID]: owner.metadata.uid!,
    [TAG_ROLE]: role,
  };
}

/**
 * The idempotency token of one intent: the owner's uid and what is being made. A retry, a restart or
 * another replica taking over computes the same token, so the cloud returns the resource already made.
 */
export function idempotencyToken(ownerUid: string, purpose: string): string {
  const text = `${ownerUid}/${purpose}`;
  return text.length <= 64 ? text : createHash("sha256").update(text).digest("hex").slice(0, 64);
}
