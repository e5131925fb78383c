// Where each kind lives in the API. The console addresses the API by these paths, as kubectl does after
// discovery; the kinds it shows are Slipway's own and core Events.
export const SLIPWAY = "/apis/slipway.dev/v1alpha1";

export type SlipwayPlural = "clusters" | "connections" | "machinepools" | "machines" | "infrastructures" | "operations";

/** A collection (all namespaces when `namespace` is empty), or one object in it. */
export function slipwayPath(plural: SlipwayPlural, namespace: string, name?: string, subresource?: string): string {
  const base = namespace ? `${SLIPWAY}/namespaces/${encodeURIComponent(namespace)}/${plural}` : `${SLIPWAY}/${plural}`;
  return [base, name === undefined ? undefined : encodeURIComponent(name), subresource].filter((p) => p !== undefined).join("/");
}

export function eventsPath(namespace: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`;
}

export function secretPath(namespace: string, name: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`;
}

export const NAMESPACES_PATH = "/api/v1/namespaces";

/** The label every object made for a cluster carries, naming the cluster. */
export const LABEL_CLUSTER = "slipway.dev/cluster";
export const LABEL_POOL = "slipway.dev/pool";
