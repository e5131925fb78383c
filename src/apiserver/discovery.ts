// Discovery documents: what kubectl reads to map kinds, short names and verbs to URLs.
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

function resources(defs: KindDefinition[], extra: Record<string, ExtraSubresource>) {
  return defs.flatMap((d) => [
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
    ...Object.entries(extra)
      .filter(([name]) => name.startsWith(`${d.plural}/`))
      .map(([name, sub]) => ({ name, singularName: "", namespaced: d.namespaced, group: sub.group, version: sub.version, kind: sub.kind, verbs: ["create"] })),
  ]);
}

export function apiVersions(serverAddress: string) {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

export function resourceList(registry: Registry, group: string, version: string, extra: Record<string, ExtraSubresource> = {}) {
  const defs = registry.inGroupVersion(group, version);
  if (defs.length === 0) return undefined;
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: group ? `${group}/${version}` : version,
    resources: resources(defs, extra),
  };
}

function apiGroup(registry: Registry, group: string) {
  const versions = registry
    .groupVersions()
    .filter((gv) => gv.group === group)
    .map((gv) => ({ groupVersion: `${gv.group}/${gv.version}`, version: gv.version }));
  if (versions.length === 0) return undefined;
  return { kind: "APIGroup", apiVersion: "v1", name: group, versions, preferredVersion: versions[0] };
}

export function groupList(registry: Registry) {
  const groups = [...new Set(registry.groupVersions().filter((gv) => gv.group !== "").map((gv) => gv.group))];
  return { kind: "APIGroupList", apiVersion: "v1", groups: groups.map((g) => apiGroup(registry, g)) };
}

export function group(registry: Registry, name: string) {
  return apiGroup(registry, name);
}
