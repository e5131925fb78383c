// ResourceSync: a set of Kubernetes manifests delivered to clusters — inline, or read from ConfigMaps and
// Secrets of its namespace — and kept there: applied in dependency order, corrected when they drift,
// retried per cluster with backoff, pruned when they leave the set, a cluster leaves the targets or the
// ResourceSync is deleted. Status says, per cluster and per object, what happened last.
import { Type, type Static } from "@sinclair/typebox";
import { Condition, FreeForm, keyedBy, StringEnum, Struct, objectSchema, type KubeObject, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, computedColumn, fieldColumn, readyOfDesired } from "../columns.ts";
import { dnsLabelErrors, duplicate, invalid, objectNameErrors, required } from "../field-errors.ts";
import { labelSelectorErrors, labelSelectorSchema, type LabelSelector } from "../selector.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase, specDefaults } from "./group.ts";

/** Held on a ResourceSync until what it applied is pruned from every cluster. */
export const FINALIZER_RESOURCESYNC = "slipway.dev/resourcesync";
/** Objects a ResourceSync applied carry its name and namespace under these labels (how pruning finds them). */
export const LABEL_RESOURCESYNC = "slipway.dev/resourcesync";
export const LABEL_RESOURCESYNC_NAMESPACE = "slipway.dev/resourcesync-namespace";

export const SYNC_STATES = ["Pending", "Applied", "Failed", "Drifted"] as const;
export type SyncState = (typeof SYNC_STATES)[number];
export const RESOURCESYNC_PHASES = ["Pending", "Synced", "Degraded", "Suspended", "Deleting"] as const;

export const ClusterTargetSchema = Struct({ name: Type.String({ minLength: 1, description: "Name of a Cluster in this namespace (built or registered)." }) }, { description: "A target cluster." });

const SourceSchema = Struct(
  {
    kind: StringEnum(["ConfigMap", "Secret"], { description: "ConfigMap or Secret (in this namespace)." }),
    name: Type.String({ minLength: 1, description: "Name of the ConfigMap or Secret." }),
    optional: Type.Optional(Type.Boolean({ description: "If true, a missing source adds nothing instead of failing." })),
  },
  { description: "Manifests read from every key of a ConfigMap or Secret (YAML, several documents per key allowed)." },
);

export const ResourceSyncSpecSchema = Struct(
  {
    clusters: Type.Optional(Type.Array(ClusterTargetSchema, { ...keyedBy("name"), description: "Clusters to deliver to, by name." })),
    clusterSelector: Type.Optional(labelSelectorSchema("Clusters to deliver to, by label (in addition to those named).")),
    resources: Type.Optional(Type.Array(FreeForm("A Kubernetes manifest: apiVersion, kind, metadata.name, and the rest."), { description: "Manifests, inline." })),
    resourcesFrom: Type.Optional(Type.Array(SourceSchema, { description: "Manifests kept in ConfigMaps or Secrets." })),
    suspend: Type.Optional(Type.Boolean({ description: "If true, nothing is applied, corrected or pruned until it is false again (deletion still prunes)." })),
  },
  { description: "What to deliver and where." },
);
export type ResourceSyncSpec = Static<typeof ResourceSyncSpecSchema>;

const ResourceStatusSchema = Struct(
  {
    apiVersion: Type.String({ description: "API version of the object." }),
    kind: Type.String({ description: "Kind of the object." }),
    namespace: Type.Optional(Type.String({ description: "Namespace of the object, if namespaced." })),
    name: Type.String({ description: "Name of the object." }),
    state: StringEnum(SYNC_STATES, { description: "Pending, Applied, Failed or Drifted (changed or deleted in the cluster, then put back)." }),
    message: Type.Optional(Type.String({ description: "The API's error, or what the last drift was." })),
  },
  { description: "One object in one cluster." },
);

const ClusterSyncStatusSchema = Struct(
  {
    name: Type.String({ description: "Name of the cluster." }),
    state: StringEnum(SYNC_STATES, { description: "Applied when every object is; Failed when any failed or the cluster cannot be reached; Pending before the first attempt." }),
    message: Type.Optional(Type.String({ description: "Why the cluster is not Applied." })),
    appliedGeneration: Type.Optional(Type.Integer({ description: "The ResourceSync generation last applied in full to this cluster." })),
    lastAttemptTime: Type.Optional(Type.String({ description: "When the objects were last applied (or tried)." })),
    lastAppliedTime: Type.Optional(Type.String({ description: "When every object was last applied without error." })),
    failures: Type.Optional(Type.Integer({ description: "Attempts that failed in a row (the backoff grows with them)." })),
    nextAttemptTime: Type.Optional(Type.String({ description: "When a failed cluster is tried again." })),
    drifts: Type.Optional(Type.Integer({ description: "How many times objects were found changed or deleted in the cluster and put back." })),
    resources: Type.Optional(Type.Array(ResourceStatusSchema, { description: "Each object of the set in this cluster." })),
  },
  { description: "What the synchroniser did in one cluster." },
);
export type ClusterSyncStatus = Static<typeof ClusterSyncStatusSchema>;
export type ResourceSyncState = Static<typeof ResourceStatusSchema>;

export const ResourceSyncStatusSchema = Struct(
  {
    phase: Type.Optional(StringEnum(RESOURCESYNC_PHASES, { description: "Pending, Synced (every cluster Applied), Degraded, Suspended or Deleting." })),
    observedGeneration: Type.Optional(Type.Integer({ description: "The spec generation this status describes." })),
    conditions: Type.Optional(Type.Array(Condition, { description: "Ready." })),
    message: Type.Optional(Type.String({ description: "What is wrong with the spec or its sources, naming the field." })),
    targets: Type.Optional(Type.Integer({ description: "Clusters targeted." })),
    synced: Type.Optional(Type.Integer({ description: "Clusters where every object is applied at the current generation." })),
    clusters: Type.Optional(Type.Array(ClusterSyncStatusSchema, { description: "Per cluster (those targeted, and those still being pruned)." })),
  },
  { description: "What was delivered where." },
);
export type ResourceSyncStatus = Static<typeof ResourceSyncStatusSchema>;

export const ResourceSyncSchema = objectSchema(SLIPWAY_API_VERSION, "ResourceSync", "Manifests delivered to clusters and kept there.", {
  spec: ResourceSyncSpecSchema,
  status: Type.Optional(ResourceSyncStatusSchema),
});
export type ResourceSyncObject = ObjectOf<typeof ResourceSyncSchema>;

/** The identity of a manifest within a set: kinds are compared by group, as the API server does. */
export function manifestKey(object: { apiVersion?: unknown; kind?: unknown; metadata?: { namespace?: unknown; name?: unknown } }): string {
  const group = typeof object.apiVersion === "string" && object.apiVersion.includes("/") ? object.apiVersion.split("/")[0] : "";
  return `${group}/${String(object.kind)}/${String(object.metadata?.namespace ?? "")}/${String(object.metadata?.name)}`;
}

/** Errors of one manifest, at `field`: what the synchroniser needs to apply it. */
export function manifestErrors(field: string, manifest: unknown): FieldError[] {
  if (typeof manifest !== "object" || manifest === null || Array.isArray(manifest)) return [invalid(field, typeof manifest, "must be a Kubernetes object")];
  const object = manifest as Partial<KubeObject>;
  const errors: FieldError[] = [];
  if (typeof object.apiVersion !== "string" || object.apiVersion === "") errors.push(required(`${field}.apiVersion`));
  if (typeof object.kind !== "string" || object.kind === "") errors.push(required(`${field}.kind`));
  const metadata = object.metadata;
  if (typeof metadata !== "object" || metadata === null) return [...errors, required(`${field}.metadata.name`)];
  const name = metadata.name;
  // RBAC objects may hold colons; every other kind's name is a DNS subdomain.
  const rbac = typeof object.apiVersion === "string" && object.apiVersion.startsWith("rbac.authorization.k8s.io/");
  if (typeof name !== "string" || name === "") errors.push(required(`${field}.metadata.name`));
  else if (!rbac) errors.push(...objectNameErrors(name).map((e) => ({ ...e, field: `${field}.metadata.name` })));
  if (metadata.namespace !== undefined) errors.push(...dnsLabelErrors(`${field}.metadata.namespace`, String(metadata.namespace)));
  if (object.kind === "Namespace" && typeof name === "string") errors.push(...dnsLabelErrors(`${field}.metadata.name`, name));
  return errors;
}

/** Errors of the clusters a spec names and selects (ResourceSync's targets, a LogicalCloud's members): at least one way, names unique DNS labels. */
export function clusterTargetErrors(spec: { clusters?: { name: string }[]; clusterSelector?: LabelSelector }): FieldError[] {
  const errors: FieldError[] = [];
  if ((spec.clusters ?? []).length === 0 && spec.clusterSelector === undefined) {
    errors.push(required("spec.clusters", "Required value: name clusters, or give a clusterSelector"));
  }
  const names = new Set<string>();
  (spec.clusters ?? []).forEach((target, i) => {
    errors.push(...dnsLabelErrors(`spec.clusters[${i}].name`, target.name));
    if (names.has(target.name)) errors.push(duplicate(`spec.clusters[${i}].name`, target.name));
    names.add(target.name);
  });
  errors.push(...labelSelectorErrors("spec.clusterSelector", spec.clusterSelector));
  return errors;
}

function validateResourceSync(sync: ResourceSyncObject): FieldError[] {
  const spec = sync.spec;
  const errors = clusterTargetErrors(spec);
  const keys = new Set<string>();
  (spec.resources ?? []).forEach((manifest, i) => {
    const field = `spec.resources[${i}]`;
    const problems = manifestErrors(field, manifest);
    errors.push(...problems);
    if (problems.length > 0) return;
    const key = manifestKey(manifest as KubeObject);
    if (keys.has(key)) errors.push(duplicate(field, `${(manifest as KubeObject).kind} ${(manifest as KubeObject).metadata.name}`));
    keys.add(key);
  });
  const sources = new Set<string>();
  (spec.resourcesFrom ?? []).forEach((source, i) => {
    const key = `${source.kind}/${source.name}`;
    if (sources.has(key)) errors.push(duplicate(`spec.resourcesFrom[${i}]`, key));
    sources.add(key);
  });
  return errors;
}

export const resourceSyncKind: KindDefinition<ResourceSyncObject> = {
  ...slipwayKindBase,
  kind: "ResourceSync",
  plural: "resourcesyncs",
  singular: "resourcesync",
  shortNames: ["rsync"],
  schema: ResourceSyncSchema,
  description: "Kubernetes manifests delivered to clusters (by name or label) and kept there.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the resource sync."),
    fieldColumn("PHASE", ".status.phase", "Pending, Synced, Degraded, Suspended or Deleting."),
    computedColumn<ResourceSyncObject>("CLUSTERS", ".status.synced", "Clusters synced/targeted.", ({ status }) => readyOfDesired(status?.synced ?? 0, status?.targets ?? 0)),
    computedColumn<ResourceSyncObject>("OBJECTS", ".spec.resources", "Manifests declared inline.", (o) => (o.spec.resources ?? []).length, { type: "integer" }),
    ageColumn,
    fieldColumn("MESSAGE", ".status.message", "What is wrong, if anything.", { priority: 1 }),
  ],
  defaults: specDefaults(ResourceSyncSpecSchema),
  validate: validateResourceSync,
};
