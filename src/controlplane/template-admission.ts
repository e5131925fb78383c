// Admission of Clusters made from a ClusterTemplate (spec.templateName): the template must exist, and what
// the cluster leaves out is filled from it before the cluster's own validation runs — kubernetesVersion and
// network settings when the cluster is created, default machine types whenever a group names none. The
// schema's defaults are applied before any plugin, so a value equal to Slipway's own default counts as left
// out. A deprecated template is allowed, with a warning to the client.
import { Value } from "@sinclair/typebox/value";
import type { ClusterObject } from "../api/kinds.ts";
import { notFound } from "../api/field-errors.ts";
import type { KindDefinition } from "../api/registry.ts";
import { ClusterSpecSchema, DEFAULT_KUBERNETES_VERSION, clusterKind } from "../api/slipway/cluster.ts";
import { clusterTemplateKind, type ClusterTemplateObject } from "../api/slipway/clustertemplate.ts";
import type { AdmissionPlugin, WriteAdmission } from "../apiserver/admission.ts";
import { InvalidError, refOf } from "../apiserver/errors.ts";

/** Slipway's own network defaults: a cluster's value equal to one of them counts as left out. */
const NETWORK_DEFAULTS = (Value.Default(ClusterSpecSchema.properties.network, {}) ?? {}) as NonNullable<ClusterObject["spec"]["network"]>;
const NETWORK_FIELDS = ["cni", "podCIDR", "serviceCIDR", "nodeCIDR", "serviceDomain"] as const;

function isCluster(def: KindDefinition): boolean {
  return def.group === clusterKind.group && def.kind === clusterKind.kind;
}

/** Fills what the cluster leaves out from the template; version and network only when it is created. */
export function fillFromTemplate(cluster: ClusterObject, template: ClusterTemplateObject, creating: boolean): void {
  const spec = cluster.spec;
  const t = template.spec;
  if (creating) {
    if (spec.kubernetesVersion === undefined || spec.kubernetesVersion === DEFAULT_KUBERNETES_VERSION) spec.kubernetesVersion = t.kubernetesVersion;
    const network = { ...spec.network };
    for (const field of NETWORK_FIELDS) {
      const chosen = t.network?.[field];
      if (chosen !== undefined && (network[field] === undefined || network[field] === NETWORK_DEFAULTS[field])) (network as Record<string, string>)[field] = chosen;
    }
    spec.network = network;
  }
  if (spec.controlPlane.machineType === undefined && t.machineTypes?.controlPlane) spec.controlPlane.machineType = t.machineTypes.controlPlane;
  for (const pool of spec.workers ?? []) if (pool.machineType === undefined && t.machineTypes?.workers) pool.machineType = t.machineTypes.workers;
}

async function templateOf(request: WriteAdmission, cluster: ClusterObject): Promise<ClusterTemplateObject> {
  const name = cluster.spec.templateName!;
  const def = request.objects.registry.byKind(`${clusterTemplateKind.group}/${clusterTemplateKind.version}`, clusterTemplateKind.kind)!;
  const template = (await request.objects.tryGet(def, undefined, name)) as ClusterTemplateObject | undefined;
  if (!template) {
    throw new InvalidError(refOf(request.def, cluster.metadata.name), [notFound("spec.templateName", name, "no ClusterTemplate of that name")]);
  }
  return template;
}

export const clusterTemplateAdmission: AdmissionPlugin = {
  name: "ClusterTemplate",
  async mutate(request) {
    if (!isCluster(request.def) || request.request.resource.subresource === "status") return;
    const cluster = request.object as ClusterObject;
    if (!cluster.spec?.templateName) return;
    const creating = request.operation === "CREATE";
    // An update of a cluster whose template has gone keeps what it was made with; only a missing machine type needs it.
    const needsTemplate = creating || cluster.spec.controlPlane.machineType === undefined || (cluster.spec.workers ?? []).some((w) => w.machineType === undefined);
    if (!needsTemplate) return;
    const template = await templateOf(request, cluster);
    fillFromTemplate(cluster, template, creating);
    if (creating && template.spec.deprecated) {
      const targets = template.spec.upgradeTargets?.length ? `; consider ${template.spec.upgradeTargets.join(", ")}` : "";
      request.warnings.push(`ClusterTemplate ${template.metadata.name} is deprecated${targets}`);
    }
  },
};
