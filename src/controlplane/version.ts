// What the control plane's /version says: the Kubernetes API level it serves (kubectl picks its
// behaviour, and the dispatcher of /usr/bin/kubectl its version, from major and minor) and Slipway's
// own release from package.json, with the git commit it runs — from the build (SLIPWAY_GIT_COMMIT,
// SLIPWAY_BUILD_DATE) or, in a checkout, from git at start — instead of a constant.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { promisify } from "node:util";

/** The Kubernetes API Slipway serves, as kube-apiserver 1.31 does. */
export const API_LEVEL = { major: "1", minor: "31" } as const;

/** Fields of kube-apiserver's /version (version.Info). */
export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
  gitCommit: string;
  gitTreeState: string;
  buildDate: string;
  goVersion: string;
  compiler: string;
  platform: string;
}

const ROOT = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

/** Slipway's release, from package.json. */
export function packageVersion(root = ROOT): string {
  const { version } = JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as { version?: unknown };
  return typeof version === "string" ? version : "0.0.0";
}

/** The commit, its date and whether files differ from it, when `root` is a git checkout and git answers. */
async function fromGit(root: string): Promise<{ commit: string; date: string; treeState: string } | undefined> {
  const git = async (...args: string[]) => (await run("git", ["-C", root, ...args], { timeout: 2000, windowsHide: true })).stdout.trim();
  try {
    const [head, changes] = await Promise.all([git("show", "-s", "--format=%H %cI", "HEAD"), git("status", "--porcelain", "--untracked-files=no")]);
    const [commit = "", date = ""] = head.split(" ");
    if (!/^[0-9a-f]{40}$/.test(commit)) return undefined;
    return { commit, date: new Date(date).toISOString().replace(/\.\d{3}Z$/, "Z"), treeState: changes === "" ? "clean" : "dirty" };
  } catch {
    return undefined;
  }
}

export async function slipwayVersion(options: { root?: string; env?: NodeJS.ProcessEnv } = {}): Promise<VersionInfo> {
  const root = options.root ?? ROOT;
  const env = options.env ?? process.env;
  const built = env.SLIPWAY_GIT_COMMIT ? { commit: env.SLIPWAY_GIT_COMMIT, date: env.SLIPWAY_BUILD_DATE ?? "", treeState: "clean" } : await fromGit(root);
  return {
    ...API_LEVEL,
    gitVersion: `v${API_LEVEL.major}.${API_LEVEL.minor}.0-slipway.${packageVersion(root)}`,
    gitCommit: built?.commit ?? "",
    gitTreeState: built?.treeState ?? "",
    buildDate: built?.date ?? "",
    goVersion: "",
    compiler: `node ${process.version}`,
    platform: `${process.platform}/${process.arch}`,
  };
}
