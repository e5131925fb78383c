// Discovery: which resources a server offers (`/api`, `/apis` and each group version's resource list),
// cached, so that objects are addressed by apiVersion and kind, or by any name kubectl accepts.
import { KubeNotFoundError } from "./errors.ts";

/** One resource a server offers. */
export interface ApiResource {
  /** "" for the core group. */
  group: string;
  version: string;
  /** `v1` or `group/version`. */
  apiVersion: string;
  kind: string;
  /** The plural, as it appears in URLs. */
  name: string;
  singularName: string;
  namespaced: boolean;
  shortNames: string[];
  verbs: string[];
}

interface ResourceListDocument {
  groupVersion?: string;
  resources?: {
    name: string;
    singularName?: string;
    namespaced?: boolean;
    kind: string;
    verbs?: string[];
    shortNames?: string[];
  }[];
}

interface ApiVersionsDocument {
  versions?: string[];
}

interface ApiGroupListDocument {
  groups?: { name: string; preferredVersion?: { groupVersion: string }; versions?: { groupVersion: string }[] }[];
}

export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? { group: "", version: apiVersion } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** The URL prefix of a group version: `/api/v1` or `/apis/group/version`. */
export function groupVersionPrefix(apiVersion: string): string {
  const { group, version } = splitApiVersion(apiVersion);
  return group === "" ? `/api/${version}` : `/apis/${group}/${version}`;
}

export class Discovery {
  private readonly lists = new Map<string, Promise<ApiResource[]>>();
  private preferred: Promise<string[]> | undefined;

  /** `get` reads a discovery document (JSON) at a path of the server. */
  constructor(private readonly get: (path: string) => Promise<unknown>) {}

  /** Forgets what was discovered (e.g. after new kinds were installed). */
  invalidate(): void {
    this.lists.clear();
    this.preferred = undefined;
  }

  /** The resources of one group version (subresources left out). */
  resources(apiVersion: string): Promise<ApiResource[]> {
    let cached = this.lists.get(apiVersion);
    if (!cached) {
      cached = this.fetchResources(apiVersion);
      this.lists.set(apiVersion, cached);
      // A failed look-up is not kept: the next call asks again.
      cached.catch(() => this.lists.delete(apiVersion));
    }
    return cached;
  }

  private async fetchResources(apiVersion: string): Promise<ApiResource[]> {
    const { group, version } = splitApiVersion(apiVersion);
    const body = (await this.get(groupVersionPrefix(apiVersion))) as ResourceListDocument | undefined;
    return (body?.resources ?? [])
      .filter((r) => !r.name.includes("/"))
      .map((r) => ({
        group,
        version,
        apiVersion,
        kind: r.kind,
        name: r.name,
        singularName: r.singularName || r.kind.toLowerCase(),
        namespaced: r.namespaced ?? false,
        shortNames: r.shortNames ?? [],
        verbs: r.verbs ?? [],
      }));
  }

  /** The preferred version of every group, core first. */
  groupVersions(): Promise<string[]> {
    if (!this.preferred) {
      const preferred = (async () => {
        const [core, groups] = (await Promise.all([this.get("/api"), this.get("/apis")])) as [ApiVersionsDocument | undefined, ApiGroupListDocument | undefined];
        const named = (groups?.groups ?? []).flatMap((g) => {
          const version = g.preferredVersion?.groupVersion ?? g.versions?.[0]?.groupVersion;
          return version ? [version] : [];
        });
        return [...(core?.versions ?? []), ...named];
      })();
      this.preferred = preferred;
      preferred.catch(() => (this.preferred = undefined));
    }
    return this.preferred;
  }

  /** The resource of `kind` (or of that plural) in a group version; asks the server again once when unknown. */
  async resolve(apiVersion: string, kind: string): Promise<ApiResource> {
    const match = (list: ApiResource[]) => list.find((r) => r.kind === kind) ?? list.find((r) => r.name === kind);
    const found = match(await this.resources(apiVersion));
    if (found) return found;
    this.lists.delete(apiVersion);
    const again = match(await this.resources(apiVersion));
    if (again) return again;
    throw new KubeNotFoundError(404, "NotFound", `the server does not offer kind ${kind} in ${apiVersion}`);
  }

  /**
   * The resource a user names as kubectl accepts it: plural, singular, kind or short name, in any case,
   * optionally qualified by group (`clusters.slipway.dev`). Searches the preferred version of every group.
   */
  async find(name: string): Promise<ApiResource> {
    const wanted = name.toLowerCase();
    const dot = wanted.indexOf(".");
    const [bare, group] = dot < 0 ? [wanted, undefined] : [wanted.slice(0, dot), wanted.slice(dot + 1)];
    const matches = (r: ApiResource) =>
      (group === undefined || r.group === group) &&
      (r.name === bare || r.singularName === bare || r.kind.toLowerCase() === bare || r.shortNames.includes(bare));
    for (const apiVersion of await this.groupVersions()) {
      if (group !== undefined && splitApiVersion(apiVersion).group !== group) continue;
      const found = (await this.resources(apiVersion)).find(matches);
      if (found) return found;
    }
    throw new KubeNotFoundError(404, "NotFound", `the server doesn't have a resource type "${name}"`);
  }
}
