// The bundles Slipway ships (bundles/<name>/<version>/ at the top of the repository): bundle.yaml says
// what it is, its parameters with their defaults and the user-facing Services it declares;
// manifests.yaml holds its objects, ${parameter} where a value goes. Read once, then kept.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import type { AddonService } from "../../api/slipway/addon.ts";

export const BUNDLES_DIR = fileURLToPath(new URL("../../../bundles/", import.meta.url));

export interface Bundle {
  name: string;
  version: string;
  description: string;
  parameters: Record<string, string>;
  services: AddonService[];
  /** manifests.yaml, before substitution. */
  manifests: string;
}

export class BundleError extends Error {
  override name = "BundleError";
}

/** Newest first: versions compared number by number (1.10.0 after 1.9.2). */
export function compareVersions(a: string, b: string): number {
  const pa = a.replace(/^v/, "").split(/[.-]/);
  const pb = b.replace(/^v/, "").split(/[.-]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? "";
    const y = pb[i] ?? "";
    const nx = Number(x);
    const ny = Number(y);
    const d = Number.isNaN(nx) || Number.isNaN(ny) ? x.localeCompare(y) : nx - ny;
    if (d !== 0) return d;
  }
  return 0;
}

const listDirs = (dir: string) => (existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name) : []);

export class Bundles {
  private readonly cache = new Map<string, Bundle>();

  constructor(private readonly dir: string = BUNDLES_DIR) {}

  /** Every bundle shipped, with its versions (newest first). */
  catalogue(): { name: string; versions: string[] }[] {
    return listDirs(this.dir)
      .sort()
      .map((name) => ({ name, versions: listDirs(join(this.dir, name)).sort((a, b) => compareVersions(b, a)) }))
      .filter((b) => b.versions.length > 0);
  }

  /** A bundle by name and version (default: the newest); BundleError naming the field when there is none. */
  get(name: string, version?: string): Bundle {
    const entry = this.catalogue().find((b) => b.name === name);
    if (!entry) throw new BundleError(`spec.bundle.name: no bundle named ${name} is shipped (there are: ${this.catalogue().map((b) => b.name).join(", ")})`);
    const chosen = version ?? entry.versions[0]!;
    if (!entry.versions.includes(chosen)) throw new BundleError(`spec.bundle.version: bundle ${name} has no version ${version} (there are: ${entry.versions.join(", ")})`);
    const key = `${name}/${chosen}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    const dir = join(this.dir, name, chosen);
    const meta = (parse(readFileSync(join(dir, "bundle.yaml"), "utf8")) ?? {}) as Partial<Bundle>;
    const bundle: Bundle = {
      name,
      version: chosen,
      description: meta.description ?? "",
      parameters: Object.fromEntries(Object.entries(meta.parameters ?? {}).map(([k, v]) => [k, String(v)])),
      services: meta.services ?? [],
      manifests: readFileSync(join(dir, "manifests.yaml"), "utf8"),
    };
    this.cache.set(key, bundle);
    return bundle;
  }
}
