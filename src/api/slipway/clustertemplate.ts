// ClusterTemplate: what a platform team offers as a starting point for clusters (as azimuth's cluster
// templates): a Kubernetes version, network settings, default machine types, addons, the templates a
// cluster may later move to, and whether it is deprecated. Cluster-scoped, so that one catalogue of
// templates serves every namespace. A Cluster naming one (`spec.templateName`) gets, at admission, what it
// leaves out (see controlplane/template-admission.ts).
import { Type, type Static } from "@sinclair/typebox";
import { StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, computedColumn, fieldColumn } from "../columns.ts";
import { duplicate, objectNameErrors } from "../field-errors.ts";
import { CNI_PLUGINS, networkErrors, versionErrors } from "./cluster.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase } from "./group.ts";

const TemplateNetwork = Struct(
  {
    cni: Type.Optional(StringEnum(CNI_PLUGINS, { description: "Network plugin: calico, flannel or cilium." })),
    podCIDR: Type.Optional(Type.String({ description: "Address range of pods (IPv4 CIDR)." })),
    serviceCIDR: Type.Optional(Type.String({ description: "Address range of services (IPv4 CIDR, /12 or smaller)." })),
    nodeCIDR: Type.Optional(Type.String({ description: "Address range of the cloud network made in each connection (IPv4 CIDR)." })),
    serviceDomain: Type.Optional(Type.String({ description: "DNS domain of services." })),
  },
  { description: "Cluster networking clusters made from the template get, unless they set it themselves." },
);

const TemplateAddon = Struct(
  {
    name: Type.String({ minLength: 1, description: "Name of the addon, e.g. monitoring." }),
    version: Type.Optional(Type.String({ description: "Version of the addon." })),
  },
  { description: "An addon clusters made from the template carry (recorded; installed by the addon machinery)." },
);

export const ClusterTemplateSpecSchema = Struct(
  {
    description: Type.Optional(Type.String({ description: "What the template is for, for people choosing one." })),
    kubernetesVersion: Type.String({ description: "Kubernetes version of clusters made from it, v1.<minor>.<patch> with minor 28 to 32." }),
    network: Type.Optional(TemplateNetwork),
    machineTypes: Type.Optional(
      Struct(
        {
          controlPlane: Type.Optional(Type.String({ minLength: 1, description: "Machine type of the control plane when the cluster names none." })),
          workers: Type.Optional(Type.String({ minLength: 1, description: "Machine type of each worker pool that names none." })),
        },
        { description: "Default machine types." },
      ),
    ),
    addons: Type.Optional(Type.Array(TemplateAddon, { description: "Addons of clusters made from it (stored only)." })),
    upgradeTargets: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: "Names of the templates a cluster made from this one may move to." })),
    deprecated: Type.Optional(Type.Boolean({ description: "If true, creating a cluster from it is allowed with a warning; choose another." })),
  },
  { description: "What clusters made from the template get." },
);
export type ClusterTemplateSpec = Static<typeof ClusterTemplateSpecSchema>;

export const ClusterTemplateSchema = objectSchema(SLIPWAY_API_VERSION, "ClusterTemplate", "A starting point for clusters: version, network, machine types, addons.", {
  spec: ClusterTemplateSpecSchema,
});
export type ClusterTemplateObject = ObjectOf<typeof ClusterTemplateSchema>;

export function validateClusterTemplate(template: ClusterTemplateObject): FieldError[] {
  const { spec } = template;
  const errors: FieldError[] = [...versionErrors(spec.kubernetesVersion), ...networkErrors(spec.network)];
  const addons = new Set<string>();
  (spec.addons ?? []).forEach((addon, i) => {
    if (addons.has(addon.name)) errors.push(duplicate(`spec.addons[${i}].name`, addon.name));
    addons.add(addon.name);
  });
  (spec.upgradeTargets ?? []).forEach((target, i) => {
    errors.push(...objectNameErrors(target).map((e) => ({ ...e, field: `spec.upgradeTargets[${i}]` })));
  });
  return errors;
}

export const clusterTemplateKind: KindDefinition<ClusterTemplateObject> = {
  ...slipwayKindBase,
  namespaced: false,
  subresources: { status: false },
  kind: "ClusterTemplate",
  plural: "clustertemplates",
  singular: "clustertemplate",
  shortNames: ["ct"],
  schema: ClusterTemplateSchema,
  description: "A starting point for clusters (cluster-scoped): a Cluster naming it in spec.templateName gets what it leaves out.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the template."),
    fieldColumn("VERSION", ".spec.kubernetesVersion", "Kubernetes version."),
    fieldColumn("CNI", ".spec.network.cni", "Network plugin."),
    computedColumn<ClusterTemplateObject>("DEPRECATED", ".spec.deprecated", "Whether the template is deprecated.", (o) => (o.spec.deprecated ? "true" : "false")),
    computedColumn<ClusterTemplateObject>("UPGRADES", ".spec.upgradeTargets", "Templates a cluster may move to.", (o) => (o.spec.upgradeTargets ?? []).join(",")),
    ageColumn,
    fieldColumn("DESCRIPTION", ".spec.description", "What the template is for.", { priority: 1 }),
  ],
  validate: validateClusterTemplate,
};
