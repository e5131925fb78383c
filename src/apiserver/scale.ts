// The `/scale` subresource of a kind that declares one (KindDefinition.subresources.scale), as Kubernetes
// serves it for Deployments and custom resources: an autoscaling/v1 Scale read from the object (wanted
// replicas, current replicas, label selector), and a write of a Scale that changes only the object's
// wanted replicas. Requests are authorized as the `scale` subresource, so a role may scale a kind
// without being allowed to edit it.
import type { KindDefinition, ScaleSubresource } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import { BadRequestError, InvalidError, MethodNotAllowedError, refOf } from "./errors.ts";
import type { ObjectService } from "./objects.ts";
import { applyPatch, type PatchType } from "./patch.ts";
import type { RequestContext } from "./request-context.ts";

export const SCALE_SUBRESOURCE = "scale";
export const SCALE_GROUP = "autoscaling";
export const SCALE_VERSION = "v1";

export interface Scale {
  apiVersion: string;
  kind: "Scale";
  metadata: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; creationTimestamp?: string };
  spec: { replicas?: number };
  status: { replicas: number; selector?: string };
}

/** ".spec.replicas" → ["spec", "replicas"]. */
function segments(path: string): string[] {
  return path.replace(/^\./, "").split(".");
}

function valueAt(object: unknown, path: string): unknown {
  let at: unknown = object;
  for (const key of segments(path)) at = at !== null && typeof at === "object" ? (at as Record<string, unknown>)[key] : undefined;
  return at;
}

/** A merge patch setting `value` at `path`. */
function patchAt(path: string, value: unknown): Record<string, unknown> {
  return segments(path).reduceRight<Record<string, unknown>>((inner, key, i, all) => ({ [key]: i === all.length - 1 ? value : inner }), {});
}

/** The Scale of an object. */
export function scaleOf(scale: ScaleSubresource, object: KubeObject): Scale {
  const { name, namespace, uid, resourceVersion, creationTimestamp } = object.metadata;
  const count = (path: string) => {
    const value = valueAt(object, path);
    return typeof value === "number" ? value : 0;
  };
  const selector = scale.labelSelectorPath ? valueAt(object, scale.labelSelectorPath) : undefined;
  return {
    apiVersion: `${SCALE_GROUP}/${SCALE_VERSION}`,
    kind: "Scale",
    metadata: { name, namespace, uid, resourceVersion, creationTimestamp },
    spec: { replicas: count(scale.specReplicasPath) },
    status: { replicas: count(scale.statusReplicasPath), ...(typeof selector === "string" ? { selector } : {}) },
  };
}

/** The replicas a Scale asks for, or a 422 naming spec.replicas. */
function wantedReplicas(def: KindDefinition, name: string, body: unknown): number {
  const replicas = (body as { spec?: { replicas?: unknown } } | undefined)?.spec?.replicas;
  if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0) {
    const message = replicas === undefined ? "Required value: the wanted number of replicas" : `Invalid value: ${JSON.stringify(replicas)}: must be a non-negative integer`;
    throw new InvalidError(refOf(def, name), [{ field: "spec.replicas", reason: replicas === undefined ? "FieldValueRequired" : "FieldValueInvalid", message }]);
  }
  return replicas;
}

export interface ScaleRequest {
  method: string;
  namespace: string | undefined;
  name: string;
  /** The parsed body of a PUT or PATCH. */
  body?: unknown;
  /** The patch type of a PATCH (apply patches are not served on /scale). */
  patchType?: PatchType;
  context: RequestContext;
}

/** GET, PUT or PATCH of `<plural>/<name>/scale`; the answer is the Scale as the object now is. */
export async function serveScale(objects: ObjectService, def: KindDefinition, request: ScaleRequest): Promise<Scale> {
  const scale = def.subresources.scale!;
  const { namespace, name, context } = request;
  const read = () => objects.get(def, namespace, name, { context, subresource: SCALE_SUBRESOURCE });
  let wanted: Scale;
  if (request.method === "GET") return scaleOf(scale, await read());
  if (request.method === "PUT") {
    wanted = request.body as Scale;
  } else if (request.method === "PATCH") {
    if (!request.patchType) throw new BadRequestError("server-side apply is not supported on a scale subresource; use a merge or JSON patch");
    wanted = applyPatch(request.patchType, scaleOf(scale, await read()), request.body) as Scale;
  } else {
    throw new MethodNotAllowedError(`${request.method} is not supported on ${def.plural}/${SCALE_SUBRESOURCE}`);
  }
  if (wanted?.metadata?.name !== undefined && wanted.metadata.name !== name) {
    throw new BadRequestError(`the name of the object (${wanted.metadata.name}) does not match the name on the URL (${name})`);
  }
  const replicas = wantedReplicas(def, name, wanted);
  // A resourceVersion the Scale carries is a precondition on the object (kubectl scale --resource-version).
  const resourceVersion = request.method === "PUT" ? wanted.metadata?.resourceVersion : (request.body as Partial<Scale> | undefined)?.metadata?.resourceVersion;
  const patch = { ...patchAt(scale.specReplicasPath, replicas), ...(resourceVersion ? { metadata: { resourceVersion } } : {}) };
  const result = await objects.patch(def, namespace, name, "merge", patch, { context, subresource: SCALE_SUBRESOURCE });
  return scaleOf(scale, result.object);
}
