// What a host is, as Slipway records it in the Host's status after it logs in: operating system, kernel,
// processors, memory and architecture, read from the host itself (os-release, uname, nproc, meminfo), and
// its host name, which a kubelet told no node name registers its node under.
import { CommandFailedError, type SshSession } from "./session.ts";

export interface HostFacts {
  os: string;
  kernel: string;
  architecture: string;
  cpus: number;
  memoryMiB: number;
  /** The host's name as its kubelet names its node by default (uname -n, in lower case). */
  hostname?: string;
}

const SCRIPT = [
  '. /etc/os-release 2>/dev/null; echo "os=${PRETTY_NAME:-$(uname -s)}"',
  'echo "kernel=$(uname -r)"',
  'echo "architecture=$(uname -m)"',
  'echo "cpus=$(nproc)"',
  'echo "hostname=$(uname -n)"',
  "echo \"memoryKiB=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)\"",
].join("\n");

/** How long reading the facts may take: a host whose login shell hangs is reported, not waited on. */
export const FACTS_TIMEOUT_MS = 30_000;

/** Reads the host's facts; fails when the host does not answer them within `timeoutMs`. */
export async function gatherFacts(session: SshSession, timeoutMs = FACTS_TIMEOUT_MS): Promise<HostFacts> {
  const result = await session.exec("sh -s", SCRIPT, { timeoutMs });
  if (result.code !== 0) throw new CommandFailedError(`${session.target.address}:${session.target.port}`, "gather facts", result);
  const values = new Map(result.stdout.split("\n").map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)] as const));
  return {
    os: values.get("os") ?? "unknown",
    kernel: values.get("kernel") ?? "unknown",
    architecture: values.get("architecture") ?? "unknown",
    cpus: Number(values.get("cpus") ?? 0),
    memoryMiB: Math.floor(Number(values.get("memoryKiB") ?? 0) / 1024),
    ...(values.get("hostname") ? { hostname: values.get("hostname")!.trim().toLowerCase() } : {}),
  };
}
