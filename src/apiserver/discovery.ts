// Discovery documents: what kubectl reads to map kinds, short names and verbs to URLs.
import { SCALE_GROUP, SCALE_SUBRESOURCE, SCALE_VERSION } from "./scale.ts";
import type { KindDefinition, Registry } from "../api/registry.ts";

export const SERVER_VERSION = {
  major: "1",
  minor: "31",
  gitVersion: "v1.31.0-slipway.0.1.0",
  gitCommit: "",
  gitTreeState: "clean",
  buildDate: "2026-11-01T00:00:00Z",
  goVersion: "",
  compiler: "node",
  platform: `${process.platform}/${process.arch}`,
};

const VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/** A subresource with a handler of its own, as discovery lists it. */
export interface ExtraSubresource {
  group: string;
  version: string;
  kind: string;
}

/**
 * A kind that is only ever created, its answer computed and never stored (SelfSubjectAccessReview,
 * SelfSubjectReview): discovery lists it with the verb create alone.
 */
export interface CreateOnlyKind {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
}

function resources(defs: KindDefinition[], extra: Record<string, ExtraSubresource>, createOnly: readonly CreateOnlyKind[]) {
  const computed = createOnly.map((k) => ({ name: k.plural, singularName: k.singular, namespaced: k.namespaced, kind: k.kind, verbs: ["create"] }));
  return [...defs.flatMap((d) => [
    {
      name: d.plural,
      singularName: d.singular,
      namespaced: d.namespaced,
      kind: d.kind,
      verbs: VERBS,
      ...(d.shortNames.length > 0 ? { shortNames: d.shortNames } : {}),
      ...(d.categories ? { categories: d.categories } : {}),
    },
    ...(d.subresources.status
      ? [{ name: `${d.plural}/status`, singularName: "", namespaced: d.namespaced, kind: d.kind, verbs: ["get", "patch", "update"] }]
      : []),
    ...(d.subresources.scale
      ? [{ name: `${d.plural}/${SCALE_SUBRESOURCE}`, singularName: "", namespaced: d.namespaced, group: SCALE_GROUP, version: SCALE_VERSION, kind: "Scale", verbs: ["get", "patch", "update"] }]
      : []),
    ...Object.entries(extra)
      .filter(([name]) => name.startsWith(`${d.plural}/`))
      .map(([name, sub]) => ({ name, singularName: "", namespaced: d.namespaced, group: sub.group, version: sub.version, kind: sub.kind, verbs: ["create"] })),
  ]), ...computed];
}

export function apiVersions(serverAddress: string) {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

export function resourceList(registry: Registry, group: string, version: string, extra: Record<string, ExtraSubresource> = {}, createOnly: readonly CreateOnlyKind[] = []) {
  const defs = registry.inGroupVersion(group, version);
  const computed = createOnly.filter((k) => k.group === group && k.version === version);
  if (defs.length === 0 && computed.length === 0) return undefined;
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: group ? `${group}/${version}` : version,
    resources: resources(defs, extra, computed),
  };
}

/** Every group and version served: the registry's, then those only create-only kinds have. */
function groupVersions(registry: Registry, createOnly: readonly CreateOnlyKind[]): { group: string; version: string }[] {
  const served = registry.groupVersions();
  const seen = new Set(served.map((gv) => `${gv.group}/${gv.version}`));
  const extra = createOnly.filter((k) => !seen.has(`${k.group}/${k.version}`) && seen.add(`${k.group}/${k.version}`));
  return [...served, ...extra.map((k) => ({ group: k.group, version: k.version }))];
}

function apiGroup(registry: Registry, group: string, createOnly: readonly CreateOnlyKind[]) {
  const versions = groupVersions(registry, createOnly)
    .filter((gv) => gv.group === group)
    .map((gv) => ({ groupVersion: `${gv.group}/${gv.version}`, version: gv.version }));
  if (versions.length === 0) return undefined;
  return { kind: "APIGroup", apiVersion: "v1", name: group, versions, preferredVersion: versions[0] };
}

export function groupList(registry: Registry, createOnly: readonly CreateOnlyKind[] = []) {
  const groups = [...new Set(groupVersions(registry, createOnly).filter((gv) => gv.group !== "").map((gv) => gv.group))];
  return { kind: "APIGroupList", apiVersion: "v1", groups: groups.map((g) => apiGroup(registry, g, createOnly)) };
}

export function group(registry: Registry, name: string, createOnly: readonly CreateOnlyKind[] = []) {
  return apiGroup(registry, name, createOnly);
}
