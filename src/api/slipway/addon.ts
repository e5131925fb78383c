// Addon: something installed on clusters — Kubernetes manifests inline, from a ConfigMap, or from a
// bundle Slipway ships (bundles/<name>/<version>/) — with parameters substituted into them, on a named
// cluster or every cluster a label selector picks, after the addons it depends on, and Ready once the
// objects it made report ready in the cluster. Services it declares are reachable through Slipway at
// /services/<namespace>/<cluster>/<service>/ and listed in the cluster's status.services.
import { Type, type Static } from "@sinclair/typebox";
import { Condition, FreeForm, MapOf, StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, computedColumn, fieldColumn, readyOfDesired } from "../columns.ts";
import { dnsLabelErrors, duplicate, invalid, objectNameErrors, required } from "../field-errors.ts";
import { labelSelectorErrors, labelSelectorSchema } from "../selector.ts";
import { manifestErrors } from "./resourcesync.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase, specDefaults } from "./group.ts";

export const FINALIZER_ADDON = "slipway.dev/addon";
/** The ResourceSyncs made for an addon carry its name under this label (and the cluster's under the next). */
export const LABEL_ADDON = "slipway.dev/addon";
export const LABEL_ADDON_CLUSTER = "slipway.dev/addon-cluster";
export const ADDON_PHASES = ["Pending", "Waiting", "Installing", "Ready", "Failed", "Deleting"] as const;
export type AddonPhase = (typeof ADDON_PHASES)[number];
/** A parameter's name: what `${name}` in a manifest refers to. */
export const PARAMETER_NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/;

export const AddonServiceSchema = Struct(
  {
    name: Type.String({ minLength: 1, description: "Name of the service in Slipway's URL /services/<namespace>/<cluster>/<name>/ (unique among the cluster's addons)." }),
    service: Type.Optional(Type.String({ description: "Name of the Service in the cluster (default: name)." })),
    namespace: Type.String({ minLength: 1, description: "Namespace of the Service in the cluster." }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: "Port of the Service (default: its first)." })),
    label: Type.Optional(Type.String({ description: "What users see it as, e.g. Kubernetes Dashboard." })),
    icon: Type.Optional(Type.String({ description: "An icon hint for consoles, e.g. dashboard, chart, network." })),
  },
  { description: "A Service in the cluster users reach through Slipway." },
);
export type AddonService = Static<typeof AddonServiceSchema>;

export const AddonSpecSchema = Struct(
  {
    clusterName: Type.Optional(Type.String({ description: "The Cluster (in this namespace) to install on." })),
    clusterSelector: Type.Optional(labelSelectorSchema("Clusters to install on, by label (in addition to clusterName).")),
    bundle: Type.Optional(
      Struct(
        {
          name: Type.String({ minLength: 1, description: "A bundle Slipway ships: metrics-server, dashboard, ingress-nginx (slipway get addons lists what is used)." }),
          version: Type.Optional(Type.String({ description: "Its version (default: the newest shipped)." })),
        },
        { description: "Manifests from a bundle Slipway ships." },
      ),
    ),
    manifests: Type.Optional(Type.Array(FreeForm("A Kubernetes manifest."), { description: "Manifests, inline." })),
    configMapRef: Type.Optional(Struct({ name: Type.String({ minLength: 1, description: "Name of the ConfigMap." }) }, { description: "Manifests kept in a ConfigMap of this namespace (every key, YAML, several documents per key)." })),
    version: Type.Optional(Type.String({ description: "Version reported for inline or ConfigMap manifests." })),
    parameters: Type.Optional(MapOf(Type.String(), "Values substituted for ${name} in the manifests (a bundle's defaults fill the rest).")),
    dependsOn: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: "Addons (in this namespace) that must be Ready in a cluster before this one is installed there." })),
    services: Type.Optional(Type.Array(AddonServiceSchema, { description: "User-facing Services (in addition to those the bundle declares)." })),
  },
  { description: "What to install and where." },
);
export type AddonSpec = Static<typeof AddonSpecSchema>;

const AddonClusterStatusSchema = Struct(
  {
    name: Type.String({ description: "Name of the cluster." }),
    phase: StringEnum(ADDON_PHASES, { description: "Waiting (for a dependency), Installing, Ready or Failed." }),
    message: Type.Optional(Type.String({ description: "Why it is not Ready." })),
    ready: Type.Optional(Type.Integer({ description: "Objects that report ready." })),
    objects: Type.Optional(Type.Integer({ description: "Objects the addon made in the cluster." })),
    drifts: Type.Optional(Type.Integer({ description: "How many times its objects were found changed or deleted and repaired." })),
  },
  { description: "The addon in one cluster." },
);
export type AddonClusterStatus = Static<typeof AddonClusterStatusSchema>;

export const AddonStatusSchema = Struct(
  {
    phase: Type.Optional(StringEnum(ADDON_PHASES, { description: "Pending (no cluster), Waiting, Installing, Ready (in every cluster), Failed or Deleting." })),
    version: Type.Optional(Type.String({ description: "The version installed (the bundle's, or spec.version)." })),
    message: Type.Optional(Type.String({ description: "What is wrong, naming the field or the cluster." })),
    observedGeneration: Type.Optional(Type.Integer({ description: "The spec generation this status describes." })),
    conditions: Type.Optional(Type.Array(Condition, { description: "Ready." })),
    clusters: Type.Optional(Type.Array(AddonClusterStatusSchema, { description: "Per target cluster." })),
    services: Type.Optional(Type.Array(AddonServiceSchema, { description: "The user-facing Services it declares (its bundle's and spec.services)." })),
  },
  { description: "Where the addon is installed and how it is." },
);
export type AddonStatus = Static<typeof AddonStatusSchema>;

export const AddonSchema = objectSchema(SLIPWAY_API_VERSION, "Addon", "Something installed on clusters, kept there and watched.", {
  spec: AddonSpecSchema,
  status: Type.Optional(AddonStatusSchema),
});
export type AddonObject = ObjectOf<typeof AddonSchema>;

function validateAddon(addon: AddonObject): FieldError[] {
  const spec = addon.spec;
  const errors: FieldError[] = [];
  if (spec.clusterName === undefined && spec.clusterSelector === undefined) errors.push(required("spec.clusterName", "Required value: name a cluster, or give a clusterSelector"));
  if (spec.clusterName !== undefined) errors.push(...dnsLabelErrors("spec.clusterName", spec.clusterName));
  errors.push(...labelSelectorErrors("spec.clusterSelector", spec.clusterSelector));
  const sources = (["bundle", "manifests", "configMapRef"] as const).filter((k) => spec[k] !== undefined);
  if (sources.length === 0) errors.push(required("spec.bundle", "Required value: one of bundle, manifests or configMapRef"));
  if (sources.length > 1) errors.push(invalid(`spec.${sources[1]}`, "set", `only one of bundle, manifests or configMapRef may be given (spec.${sources[0]} is)`));
  if (spec.bundle) errors.push(...dnsLabelErrors("spec.bundle.name", spec.bundle.name));
  // Manifests are checked once parameters are substituted (a name may be ${param}); only their shape here.
  (spec.manifests ?? []).forEach((m, i) => {
    if (typeof m !== "object" || m === null || Array.isArray(m)) errors.push(...manifestErrors(`spec.manifests[${i}]`, m));
  });
  for (const key of Object.keys(spec.parameters ?? {})) if (!PARAMETER_NAME.test(key)) errors.push(invalid(`spec.parameters.${key}`, key, "a parameter name is letters, digits, _ and ., not starting with a digit"));
  const deps = new Set<string>();
  (spec.dependsOn ?? []).forEach((dep, i) => {
    errors.push(...dnsLabelErrors(`spec.dependsOn[${i}]`, dep));
    if (dep === addon.metadata.name) errors.push(invalid(`spec.dependsOn[${i}]`, dep, "an addon cannot depend on itself"));
    if (deps.has(dep)) errors.push(duplicate(`spec.dependsOn[${i}]`, dep));
    deps.add(dep);
  });
  const names = new Set<string>();
  (spec.services ?? []).forEach((s, i) => {
    errors.push(...dnsLabelErrors(`spec.services[${i}].name`, s.name));
    errors.push(...dnsLabelErrors(`spec.services[${i}].namespace`, s.namespace));
    if (names.has(s.name)) errors.push(duplicate(`spec.services[${i}].name`, s.name));
    names.add(s.name);
  });
  return errors;
}

function readyClusters(addon: AddonObject): string {
  const clusters = addon.status?.clusters ?? [];
  return readyOfDesired(clusters.filter((c) => c.phase === "Ready").length, clusters.length);
}

export const addonKind: KindDefinition<AddonObject> = {
  ...slipwayKindBase,
  kind: "Addon",
  plural: "addons",
  singular: "addon",
  shortNames: [],
  schema: AddonSchema,
  description: "Something installed on clusters (manifests or a bundle Slipway ships), kept there and watched.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the addon."),
    computedColumn<AddonObject>("SOURCE", ".spec.bundle.name", "The bundle, or inline / configmap.", sourceOf),
    fieldColumn("VERSION", ".status.version", "The version installed."),
    fieldColumn("PHASE", ".status.phase", "Pending, Waiting, Installing, Ready, Failed or Deleting."),
    computedColumn<AddonObject>("CLUSTERS", ".status.clusters", "Clusters where it is Ready/targeted.", readyClusters),
    ageColumn,
    fieldColumn("MESSAGE", ".status.message", "What is wrong, if anything.", { priority: 1 }),
  ],
  defaults: specDefaults(AddonSpecSchema),
  // Its name goes into labels and into its ResourceSyncs' names (addon.<addon>.<cluster>): a DNS label.
  strategy: { validateName: (name) => objectNameErrors(name, "label") },
  validate: validateAddon,
};

/** Where an addon's manifests come from, as the CLI shows it. */
export function sourceOf(addon: AddonObject): string {
  if (addon.spec.bundle) return `bundle ${addon.spec.bundle.name}`;
  if (addon.spec.configMapRef) return `configmap ${addon.spec.configMapRef.name}`;
  return "inline";
}
