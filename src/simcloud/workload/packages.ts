// The package repositories a sim cloud machine reaches through apt: the Ubuntu archive of its release,
// and the repositories user data adds — Kubernetes' community repositories (pkgs.k8s.io, one per minor
// version) and Docker's. What a repository carries decides what `apt-get install` gets: a version that
// is not there is not installed, and a repository whose signing key is missing is not read at all.

/** A repository an apt source line names, with what it carries. */
interface Repository {
  /** How apt names it in its messages. */
  label: string;
  /** The long id of the key that signs it (apt prints the last 16 digits). */
  keyFingerprint?: string;
  /** Package → versions, oldest first (the last is what an unpinned install gets). */
  packages: Map<string, string[]>;
}

/** The newest patch release of each minor the mirror of pkgs.k8s.io carries. */
const NEWEST_PATCH: Readonly<Record<number, number>> = { 28: 15, 29: 15, 30: 14, 31: 13, 32: 9, 33: 5 };
/** cri-tools and kubernetes-cni of each minor's repository (kubeadm and kubelet depend on them). */
const CRI_TOOLS = (minor: number) => `1.${minor}.1-1.1`;
const KUBERNETES_CNI = "1.5.1-1.1";
export const KUBERNETES_REPO_KEY = "DE15B14486CD377B9E876E1A234654DA9A296436";
export const DOCKER_REPO_KEY = "9DC858229FC7DD38854AE2D88D81803C0EBFCD88";

/** The Ubuntu archive of each release: the packages a Kubernetes node may need from it. */
const UBUNTU_ARCHIVE: Readonly<Record<string, Record<string, string>>> = {
  "22.04": {
    containerd: "1.7.12-0ubuntu2~22.04.1",
    runc: "1.1.12-0ubuntu2~22.04.1",
    haproxy: "2.4.24-0ubuntu0.22.04.1",
    "apt-transport-https": "2.4.13",
    "ca-certificates": "20240203~22.04.1",
    curl: "7.81.0-1ubuntu1.20",
    gpg: "2.2.27-3ubuntu2.1",
    gnupg: "2.2.27-3ubuntu2.1",
    socat: "1.7.4.1-3ubuntu4",
    conntrack: "1:1.4.6-2build2",
    ebtables: "2.0.11-4build2",
    ethtool: "1:5.16-1ubuntu0.1",
    jq: "1.6-2.1ubuntu3",
  },
  "24.04": {
    containerd: "1.7.12-0ubuntu4.1",
    runc: "1.1.12-0ubuntu3.1",
    haproxy: "2.8.5-1ubuntu3",
    "apt-transport-https": "2.7.14build2",
    "ca-certificates": "20240203",
    curl: "8.5.0-2ubuntu10.6",
    gpg: "2.4.4-2ubuntu17",
    gnupg: "2.4.4-2ubuntu17",
    socat: "1.8.0.0-4build3",
    conntrack: "1:1.4.8-1ubuntu1",
    ebtables: "2.0.11-6build1",
    ethtool: "1:6.7-1build1",
    jq: "1.7.1-3build1",
  },
};

const KUBERNETES_SOURCE = /^https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.(\d+)\/deb\/?$/;
const DOCKER_SOURCE = /^https:\/\/download\.docker\.com\/linux\/ubuntu\/?$/;

function ubuntuArchive(release: string): Repository {
  const packages = Object.entries(UBUNTU_ARCHIVE[release] ?? UBUNTU_ARCHIVE["22.04"]!).map(([name, version]): [string, string[]] => [name, [version]]);
  return { label: `http://archive.ubuntu.com/ubuntu ${release}`, packages: new Map(packages) };
}

function kubernetesRepository(url: string, minor: number): Repository | undefined {
  const newest = NEWEST_PATCH[minor];
  if (newest === undefined) return undefined;
  const releases = Array.from({ length: newest + 1 }, (_, patch) => `1.${minor}.${patch}-1.1`);
  return {
    label: url,
    keyFingerprint: KUBERNETES_REPO_KEY,
    packages: new Map([
      ["kubelet", releases],
      ["kubeadm", releases],
      ["kubectl", releases],
      ["cri-tools", [CRI_TOOLS(minor)]],
      ["kubernetes-cni", [KUBERNETES_CNI]],
    ]),
  };
}

/** An apt source as cloud-init's `apt.sources` (or a sources.list line) gives it. */
export interface AptSource {
  /** "deb [options] URL SUITE [COMPONENTS]". */
  line: string;
  /** A key id or fingerprint to trust (cloud-init fetches it from a keyserver). */
  keyid?: string;
  /** An ASCII-armoured key given inline. */
  key?: string;
}

/** What apt can install after `apt-get update` with these sources, and what it printed doing so. */
export class PackageIndex {
  private readonly repositories: Repository[] = [];
  readonly output: string[] = [];

  constructor(release: string, sources: readonly AptSource[]) {
    this.repositories.push(ubuntuArchive(release));
    for (const source of sources) this.add(source);
  }

  private add(source: AptSource): void {
    const words = source.line.replace(/\[[^\]]*\]/, " ").trim().split(/\s+/);
    const url = words[1] ?? "";
    const minor = KUBERNETES_SOURCE.exec(url)?.[1];
    const repository = minor !== undefined ? kubernetesRepository(url, Number(minor)) : DOCKER_SOURCE.test(url) ? dockerRepository(url) : undefined;
    if (words[0] !== "deb" || !repository) {
      this.output.push(`E: Failed to fetch ${url}: 404  Not Found`, `E: The repository '${url} ${words[2] ?? ""} Release' does not have a Release file.`);
      return;
    }
    const fingerprint = repository.keyFingerprint ?? "";
    const keyid = source.keyid?.replace(/\s+/g, "").toUpperCase();
    const trusted = source.key?.includes("BEGIN PGP PUBLIC KEY BLOCK") || (keyid !== undefined && keyid.length >= 16 && fingerprint.endsWith(keyid));
    if (!trusted) {
      this.output.push(
        `W: GPG error: ${url} InRelease: The following signatures couldn't be verified because the public key is not available: NO_PUBKEY ${fingerprint.slice(-16)}`,
        `E: The repository '${url} InRelease' is not signed.`,
      );
      return;
    }
    this.repositories.push(repository);
  }

  /**
   * Resolves `apt-get install` of these requests ("name" or "name=version", the version an apt glob such
   * as 1.31.2-*): every package with the version it gets, or apt's errors (then nothing is installed).
   */
  resolve(requests: readonly string[]): { installed: Map<string, string> } | { errors: string[] } {
    const installed = new Map<string, string>();
    const errors: string[] = [];
    for (const request of requests) {
      const [name, wanted] = request.split("=", 2) as [string, string | undefined];
      const versions = this.repositories.flatMap((r) => r.packages.get(name) ?? []);
      if (versions.length === 0) {
        errors.push(`E: Unable to locate package ${name}`);
        continue;
      }
      const version = wanted === undefined ? versions[versions.length - 1]! : [...versions].reverse().find((v) => globMatches(wanted, v));
      if (version === undefined) {
        errors.push(`E: Version '${wanted}' for '${name}' was not found`);
        continue;
      }
      installed.set(name, version);
      for (const dependency of DEPENDENCIES[name] ?? []) {
        const found = this.repositories.flatMap((r) => r.packages.get(dependency) ?? []);
        if (found.length > 0 && !installed.has(dependency)) installed.set(dependency, found[found.length - 1]!);
      }
    }
    return errors.length > 0 ? { errors } : { installed };
  }
}

/** What installing a package pulls in with it (the Kubernetes packages' own dependencies). */
const DEPENDENCIES: Readonly<Record<string, string[]>> = {
  kubeadm: ["cri-tools", "kubernetes-cni"],
  kubelet: ["kubernetes-cni"],
  containerd: ["runc"],
};

function dockerRepository(url: string): Repository {
  return { label: url, keyFingerprint: DOCKER_REPO_KEY, packages: new Map([["containerd.io", ["1.7.21-1", "1.7.22-1"]]]) };
}

/** apt's version globs: `*` matches any run of characters, `?` one. */
function globMatches(pattern: string, version: string): boolean {
  const regex = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`);
  return regex.test(version);
}

/** "1.31.2-1.1" → "v1.31.2" (the version a Kubernetes binary reports). */
export function kubernetesVersionOf(packageVersion: string): string {
  return `v${packageVersion.split("-")[0]}`;
}

/** The container runtime version a node reports for an installed package: containerd://1.7.12. */
export function containerRuntimeOf(installed: ReadonlyMap<string, string>): string | undefined {
  const version = installed.get("containerd.io") ?? installed.get("containerd");
  return version === undefined ? undefined : `containerd://${version.replace(/^\d+:/, "").split("-")[0]}`;
}
