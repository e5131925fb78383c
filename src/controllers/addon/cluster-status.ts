// The addons of each cluster in its own status: `status.addons` (every addon targeting it, with its
// phase, version and message there; addons gone are dropped), `status.services` (the user-facing
// Services of its addons, with the URL Slipway serves each at) and the condition AddonsReady. Written
// here, through the status subresource and fenced by resourceVersion, one cluster at a time; a cluster no
// addon ever targeted is left alone, and so is a cluster being built or changed (until it is Running or
// Failed again), so building a cluster never waits on this. A cluster made from a
// ClusterTemplate that lists addons gets, once it is Running, an Addon `<cluster>-<addon>` per entry (the bundle of
// that name and version, on that cluster, owned by the Cluster): edited or deleted afterwards, it is the
// user's.
import type { ClusterObject } from "../../api/kinds.ts";
import { LABEL_ADDON_CLUSTER, addonKind, type AddonObject } from "../../api/slipway/addon.ts";
import { clusterTemplateKind } from "../../api/slipway/clustertemplate.ts";
import { SLIPWAY_API_VERSION } from "../../api/slipway/group.ts";
import { createIfAbsent } from "../../api/presence.ts";
import { controllerRef } from "../contract.ts";
import { clusterKind, type ClusterStatus } from "../../api/slipway/cluster.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { getCondition, setCondition } from "../../runtime/conditions.ts";
import type { Controller, ReconcileContext } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { ADDON_COMPONENT } from "./controller.ts";

export const CONDITION_ADDONS_READY = "AddonsReady";
/** The cluster phases in which this writes the cluster's status. */
const SETTLED = new Set(["Running", "Failed"]);

/** Where Slipway serves a cluster's service: `<url>/services/<namespace>/<cluster>/<service>/`. */
export function serviceUrl(base: string, namespace: string, cluster: string, service: string): string {
  return `${base}/services/${encodeURIComponent(namespace)}/${encodeURIComponent(cluster)}/${encodeURIComponent(service)}/`;
}

/** The addons part of a cluster's status, from the addons of its namespace. */
export function addonsStatus(cluster: ClusterObject, addons: readonly AddonObject[], baseUrl: string): Pick<ClusterStatus, "addons" | "services"> {
  const name = cluster.metadata.name!;
  const namespace = cluster.metadata.namespace!;
  const mine = addons
    .filter((a) => a.metadata.namespace === namespace && !a.metadata.deletionTimestamp)
    .map((a) => ({ addon: a, entry: a.status?.clusters?.find((c) => c.name === name) }))
    .filter((m) => m.entry !== undefined)
    .sort((a, b) => (a.addon.metadata.name! < b.addon.metadata.name! ? -1 : 1));
  const entries = mine.map(({ addon, entry }) => ({
    name: addon.metadata.name!,
    phase: entry!.phase,
    ...(addon.status?.version ? { version: addon.status.version } : {}),
    ...(entry!.message ? { message: entry!.message } : {}),
  }));
  const services = mine.flatMap(({ addon }) =>
    (addon.status?.services ?? []).map((s) => ({
      name: s.name,
      label: s.label ?? s.name,
      ...(s.icon ? { icon: s.icon } : {}),
      url: serviceUrl(baseUrl, namespace, name, s.name),
      addon: addon.metadata.name!,
      namespace: s.namespace,
      service: s.service ?? s.name,
      ...(s.port ? { port: s.port } : {}),
    })),
  );
  return { addons: entries, services };
}

/** Marks the Addons made from a cluster's template (the value is the template's name). */
export const ANNOTATION_TEMPLATE_ADDON = "slipway.dev/from-template";
/** Set on a cluster once its template's addons were made. */
export const ANNOTATION_TEMPLATE_ADDONS_MADE = "slipway.dev/template-addons";

/** The Addons a cluster's template lists, made once each (a later edit or deletion is the user's). */
async function templateAddons(ctx: ReconcileContext, cluster: ClusterObject, templates: { get(key: string): { spec: { addons?: { name: string; version?: string }[] } } | undefined }): Promise<void> {
  const templateName = cluster.spec.templateName;
  const annotations = cluster.metadata.annotations ?? {};
  if (!templateName || annotations[ANNOTATION_TEMPLATE_ADDONS_MADE] !== undefined) return;
  const template = templates.get(keyFor(undefined, templateName));
  if (!template) return;
  const name = cluster.metadata.name!;
  if ((template.spec.addons ?? []).length === 0) return;
  for (const entry of template.spec.addons ?? []) {
    const addon = {
      apiVersion: SLIPWAY_API_VERSION,
      kind: "Addon",
      metadata: { name: `${name}-${entry.name}`, namespace: cluster.metadata.namespace, labels: { [LABEL_ADDON_CLUSTER]: name }, annotations: { [ANNOTATION_TEMPLATE_ADDON]: templateName }, ownerReferences: [controllerRef(cluster)] },
      spec: { clusterName: name, bundle: { name: entry.name, ...(entry.version ? { version: entry.version } : {}) } },
    } as AddonObject;
    await createIfAbsent(() => ctx.client.of<AddonObject>(addonKind).create(addon));
  }
  await ctx.client.of<ClusterObject>(clusterKind).patch(cluster.metadata.namespace, name, "merge", { metadata: { annotations: { [ANNOTATION_TEMPLATE_ADDONS_MADE]: templateName } } });
}

export function registerClusterAddonsController(manager: ControllerManager, options: { url: () => string }): Controller<ClusterObject> {
  const clusters = manager.informer(clusterKind);
  const addons = manager.informer(addonKind);
  const templates = manager.informer(clusterTemplateKind);
  const reconcile = async (ctx: ReconcileContext) => {
    const cluster = clusters.cache.get(ctx.key);
    if (!cluster || cluster.metadata.deletionTimestamp) return {};
    // While the cluster controller is building or changing the cluster, the cluster is left to it (a write
    // here would make its next one conflict and back off): the template's addons and the status follow
    // once it settles.
    if (!SETTLED.has(cluster.status?.phase ?? "")) return {};
    await templateAddons(ctx, cluster, templates.cache);
    const status: ClusterStatus = structuredClone(cluster.status ?? {});
    const { addons: entries, services } = addonsStatus(cluster, addons.cache.list(), options.url());
    const had = (status.addons ?? []).length > 0 || getCondition(status.conditions, CONDITION_ADDONS_READY) !== undefined;
    if (entries!.length === 0 && !had) return {};
    const at = nowTimestamp(new Date(ctx.clock.now()));
    const unready = entries!.filter((e) => e.phase !== "Ready");
    if (entries!.length > 0) status.addons = entries;
    else delete status.addons;
    if (services!.length > 0) status.services = services;
    else delete status.services;
    const failed = unready.some((e) => e.phase === "Failed");
    setCondition(
      status,
      entries!.length === 0
        ? { type: CONDITION_ADDONS_READY, status: "True", reason: "NoAddons", message: "no addon targets the cluster" }
        : unready.length === 0
          ? { type: CONDITION_ADDONS_READY, status: "True", reason: "AddonsReady", message: `${entries!.length} addon(s) ready` }
          : { type: CONDITION_ADDONS_READY, status: "False", reason: failed ? "AddonFailed" : "AddonsInstalling", message: unready.map((e) => `${e.name}: ${e.message ?? e.phase}`).join("; ") },
      at,
    );
    if (JSON.stringify(status) === JSON.stringify(cluster.status ?? {})) return {};
    await ctx.client.of<ClusterObject>(clusterKind).updateStatus({ ...cluster, status });
    return {};
  };
  const controller = manager.add<ClusterObject>({
    name: "cluster-addons",
    component: ADDON_COMPONENT,
    informer: clusters,
    reconcile,
    concurrency: 2,
    // The cluster and its addons are watched; templates are not: a cluster whose template's addons are not
    // made yet is looked at again (its template may appear later).
    resyncs: (cluster) => cluster.spec.templateName !== undefined && cluster.metadata.annotations?.[ANNOTATION_TEMPLATE_ADDONS_MADE] === undefined,
    // Only what this writes from matters: its own writes (and the cluster controller's) need no second look.
    changed: (previous, cluster) =>
      previous.metadata.deletionTimestamp !== cluster.metadata.deletionTimestamp ||
      previous.status?.phase !== cluster.status?.phase ||
      JSON.stringify(previous.status?.addons) !== JSON.stringify(cluster.status?.addons),
  });
  const view = (a: AddonObject) => JSON.stringify([a.status?.clusters, a.status?.version, a.status?.services, a.metadata.deletionTimestamp]);
  controller.watch(
    addons,
    (addon) => clusters.cache.list().filter((c) => c.metadata.namespace === addon.metadata.namespace).map((c) => keyFor(c.metadata.namespace, c.metadata.name!)),
    (previous, addon) => view(previous) !== view(addon),
  );
  return controller;
}
