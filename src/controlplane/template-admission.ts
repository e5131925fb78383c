// Admission of Clusters made from a ClusterTemplate (spec.templateName): the template must exist, and what
// the cluster leaves out is filled from it before the cluster's own validation runs — kubernetesVersion and
// network settings when the cluster is created, default machine types whenever a group names none. The
// schema's defaults are applied before any plugin, so a value equal to Slipway's own default counts as left
// out. A deprecated template is allowed, with a warning to the client. Moving a cluster to one of its
// template's upgradeTargets upgrades it to that template's version.
import { Value } from "@sinclair/typebox/value";
import type { ClusterObject } from "../api/kinds.ts";
import { invalid, notFound } from "../api/field-errors.ts";
import type { KindDefinition } from "../api/registry.ts";
import { ClusterSpecSchema, DEFAULT_KUBERNETES_VERSION, clusterKind, isRegistered } from "../api/slipway/cluster.ts";
import { clusterTemplateKind, type ClusterTemplateObject } from "../api/slipway/clustertemplate.ts";
import type { AdmissionPlugin, WriteAdmission } from "../apiserver/admission.ts";
import { InvalidError, refOf } from "../apiserver/errors.ts";

/** Slipway's own network defaults: a cluster's value equal to one of them counts as left out. */
const NETWORK_DEFAULTS = (Value.Default(ClusterSpecSchema.properties.network, {}) ?? {}) as NonNullable<ClusterObject["spec"]["network"]>;
const NETWORK_FIELDS = ["cni", "podCIDR", "serviceCIDR", "nodeCIDR", "serviceDomain"] as const;

function isCluster(def: KindDefinition): boolean {
  return def.group === clusterKind.group && def.kind === clusterKind.kind;
}

/** What fills a cluster's version and network fields left out (or at Slipway's default). */
type Source = Pick<ClusterObject["spec"], "kubernetesVersion" | "network">;

function fillVersionAndNetwork(spec: ClusterObject["spec"], from: Source): void {
  if (from.kubernetesVersion !== undefined && (spec.kubernetesVersion === undefined || spec.kubernetesVersion === DEFAULT_KUBERNETES_VERSION)) {
    spec.kubernetesVersion = from.kubernetesVersion;
  }
  const network = { ...spec.network };
  for (const field of NETWORK_FIELDS) {
    const chosen = from.network?.[field];
    if (chosen !== undefined && (network[field] === undefined || network[field] === NETWORK_DEFAULTS[field])) (network as Record<string, string>)[field] = chosen;
  }
  spec.network = network;
}

/**
 * Fills what the cluster leaves out. Created: version and network from the template. Updated: from the
 * cluster as it was made (those fields cannot change, so an update that leaves them out keeps them rather
 * than asking for Slipway's defaults). Machine types a group names none of come from the template.
 */
export function fillFromTemplate(cluster: ClusterObject, template: ClusterTemplateObject | undefined, old: ClusterObject | undefined): void {
  const spec = cluster.spec;
  if (old) fillVersionAndNetwork(spec, old.spec);
  else if (template) fillVersionAndNetwork(spec, template.spec);
  const types = template?.spec.machineTypes;
  if (spec.controlPlane.machineType === undefined && types?.controlPlane) spec.controlPlane.machineType = types.controlPlane;
  for (const pool of spec.workers ?? []) if (pool.machineType === undefined && types?.workers) pool.machineType = types.workers;
}

/** An update that leaves a group's machine type out keeps the one it has (pools matched by name). */
function keepMachineTypes(cluster: ClusterObject, old: ClusterObject): void {
  const spec = cluster.spec;
  const cp = old.spec.controlPlane.machineType;
  if (spec.controlPlane.machineType === undefined && cp !== undefined) spec.controlPlane.machineType = cp;
  for (const pool of spec.workers ?? []) {
    const had = old.spec.workers?.find((p) => p.name === pool.name)?.machineType;
    if (pool.machineType === undefined && had !== undefined) pool.machineType = had;
  }
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

/**
 * A move to another template is an upgrade: only to one of the current template's upgradeTargets, and
 * the cluster takes the new template's Kubernetes version unless the update names another one itself
 * (the version-skew rules then judge that version, in the cluster's own validation).
 */
async function moveTemplate(request: WriteAdmission, cluster: ClusterObject, old: ClusterObject): Promise<void> {
  const from = old.spec.templateName;
  const to = cluster.spec.templateName!;
  if (!from || from === to) return;
  const def = request.objects.registry.byKind(`${clusterTemplateKind.group}/${clusterTemplateKind.version}`, clusterTemplateKind.kind)!;
  const current = (await request.objects.tryGet(def, undefined, from)) as ClusterTemplateObject | undefined;
  const targets = current?.spec.upgradeTargets ?? [];
  if (current && !targets.includes(to)) {
    throw new InvalidError(refOf(request.def, cluster.metadata.name), [
      invalid("spec.templateName", to, `not an upgrade target of ClusterTemplate ${from} (its upgradeTargets: ${targets.length > 0 ? targets.join(", ") : "none"})`),
    ]);
  }
  const next = await templateOf(request, cluster);
  if (cluster.spec.kubernetesVersion === old.spec.kubernetesVersion && next.spec.kubernetesVersion) cluster.spec.kubernetesVersion = next.spec.kubernetesVersion;
}

export const clusterTemplateAdmission: AdmissionPlugin = {
  name: "ClusterTemplate",
  async mutate(request) {
    if (!isCluster(request.def) || request.request.resource.subresource === "status") return;
    const cluster = request.object as ClusterObject;
    // A registered cluster (Slipway did not build it) has nothing a template could fill.
    if (!cluster.spec?.templateName || isRegistered(cluster) || !cluster.spec.controlPlane) return;
    const creating = request.operation === "CREATE";
    const old = creating ? undefined : (request.oldObject as ClusterObject | undefined);
    // An update keeps the machine types the cluster has; the template is read for what is still missing.
    if (old) keepMachineTypes(cluster, old);
    const needsTemplate = creating || cluster.spec.controlPlane.machineType === undefined || (cluster.spec.workers ?? []).some((w) => w.machineType === undefined);
    const template = needsTemplate ? await templateOf(request, cluster) : undefined;
    fillFromTemplate(cluster, template, old);
    if (old) await moveTemplate(request, cluster, old);
    if (creating && template?.spec.deprecated) {
      const targets = template.spec.upgradeTargets?.length ? `; consider ${template.spec.upgradeTargets.join(", ")}` : "";
      request.warnings.push(`ClusterTemplate ${template.metadata.name} is deprecated${targets}`);
    }
  },
};
