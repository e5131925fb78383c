// A lab of real hosts for the ssh provider's tests: each host is a Linux network namespace joined to a
// bridge by a veth pair (addresses in a private 10.250.N.0/24, nothing else), running a real OpenSSH
// server with its own host key and the lab's key in its authorized keys. Each host has its own view of
// the file system where Slipway writes: /etc, /var/lib and /usr/local are overlays whose changes land in
// the host's own directory, and /run and root's home are fresh tmpfs, so two hosts never see each
// other's files and the machine running the test is left untouched (nor do its shell start-up files run). The lab installs stand-ins for what a node's software does
// to the kernel and for kubeadm (in /usr/local/sbin, first on the session's PATH), since no container
// runtime exists here: everything Slipway does over SSH is real, only the effect of those programs is
// emulated. Needs root, `ip`, `unshare`, `nsenter`, `ssh-keygen` and /usr/sbin/sshd; `stop()` removes
// every namespace, link, process and file it made, also after a failed start.
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, mkdir, readFile, readdir, rm, writeFile, chmod } from "node:fs/promises";
import { existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { fingerprintOf, type CommandResult } from "../session.ts";
import { STAND_IN_PROGRAMS, standIns } from "./stand-ins.ts";

const run = promisify(execFile);
const SSHD = "/usr/sbin/sshd";
/** Directories given an overlay per host: what Slipway and the node's programs write to. */
const OVERLAID = ["/etc", "/var/lib", "/usr/local"];

export interface LabHost {
  name: string;
  netns: string;
  address: string;
  port: number;
  user: string;
  /** The fingerprint of the host key sshd presents now. */
  hostKeyFingerprint: string;
  /** The lab's directory of this host (its sshd configuration, keys and overlay layers). */
  dir: string;
}

interface RunningHost extends LabHost {
  index: number;
  sshd?: ChildProcess;
}

/** Why the lab cannot run here, or undefined when it can. */
export function labUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return "the SSH host lab needs root (network namespaces, mounts)";
  for (const tool of [SSHD, "/usr/bin/ssh-keygen", "/usr/bin/unshare", "/usr/bin/nsenter"]) {
    if (!existsSync(tool)) return `the SSH host lab needs ${tool}`;
  }
  return undefined;
}

async function sh(command: string, args: string[]): Promise<void> {
  await run(command, args, { timeout: 20_000 });
}

async function generateKey(path: string, comment: string): Promise<{ privateKey: string; publicKey: string }> {
  await run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path], { timeout: 20_000 });
  return { privateKey: await readFile(path, "utf8"), publicKey: (await readFile(`${path}.pub`, "utf8")).trim() };
}

function fingerprintOfPublicKey(publicKey: string): string {
  return fingerprintOf(Buffer.from(publicKey.split(/\s+/)[1] ?? "", "base64"));
}

/**
 * Takes a free 10.250.N.0/24 by making its bridge, named after N: `ip link add` fails when another lab
 * (another test file running at the same time) holds that N, and the next N is tried.
 */
async function takeSubnet(): Promise<{ octet: number; bridge: string }> {
  const { stdout } = await run("ip", ["-o", "-4", "addr", "show"]);
  for (let i = 0; i < 240; i++) {
    const octet = ((process.pid + i) % 240) + 10;
    if (stdout.includes(`10.250.${octet}.`)) continue;
    const bridge = `slw-br${octet}`;
    const made = await sh("ip", ["link", "add", bridge, "type", "bridge"]).then(
      () => true,
      () => false,
    );
    if (made) return { octet, bridge };
  }
  throw new Error("no free 10.250.N.0/24 for the SSH host lab");
}

let labsStarted = 0;
/** Labs not stopped yet: removed when the process exits or is told to stop, should a test not get to it. */
const live = new Set<SshLab>();

function removeLeftLabs(): void {
  for (const lab of live) lab.removeNow();
}

process.on("exit", removeLeftLabs);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    removeLeftLabs();
    process.exit(signal === "SIGINT" ? 130 : 143);
  });
}

export class SshLab {
  readonly hosts: LabHost[] = [];
  private readonly running: RunningHost[] = [];
  private bridgeMade = false;
  private readonly namespaces: string[] = [];
  private stopped = false;

  private constructor(
    readonly dir: string,
    /** The tag in every name the lab gives (namespaces, links). */
    readonly tag: string,
    readonly subnet: string,
    /** The key every host accepts. Secret. */
    readonly privateKey: string,
    readonly publicKey: string,
    private readonly bridge: string,
    private readonly emulateKubernetes: boolean,
  ) {}

  /**
   * Starts `count` hosts; on any failure removes what it made and rethrows. With `emulateKubernetes`, the
   * stand-in kubeadm brings up and joins an emulated cluster (stand-ins.ts); otherwise it only writes files.
   */
  static async start(count: number, options: { emulateKubernetes?: boolean } = {}): Promise<SshLab> {
    const dir = await mkdtemp(join(tmpdir(), "slipway-ssh-lab-"));
    // Names unique on the machine: this process's id and how many labs it started.
    const tag = `${(process.pid % 1_679_616).toString(36)}${(labsStarted++ % 36).toString(36)}`;
    let key: { privateKey: string; publicKey: string };
    let taken: { octet: number; bridge: string };
    try {
      key = await generateKey(join(dir, "lab_key"), "slipway-lab");
      taken = await takeSubnet();
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    const { octet, bridge } = taken;
    const lab = new SshLab(dir, tag.slice(0, 6), `10.250.${octet}`, key.privateKey, key.publicKey, bridge, options.emulateKubernetes ?? false);
    lab.bridgeMade = true;
    live.add(lab);
    try {
      await lab.makeBridge();
      for (let i = 0; i < count; i++) await lab.addHost(i);
      return lab;
    } catch (error) {
      await lab.stop();
      throw error;
    }
  }

  /** A new ed25519 key pair (OpenSSH format) kept in `dir` under `name`; e.g. a key no host accepts. */
  static keyPair(dir: string, name: string): Promise<{ privateKey: string; publicKey: string }> {
    return generateKey(join(dir, name), name);
  }

  /** The address of the machine running the test, as the hosts reach it. */
  get gateway(): string {
    return `${this.subnet}.1`;
  }

  private async makeBridge(): Promise<void> {
    await sh("ip", ["addr", "add", `${this.gateway}/24`, "dev", this.bridge]);
    await sh("ip", ["link", "set", this.bridge, "up"]);
  }

  private async addHost(index: number): Promise<void> {
    const name = `host-${index + 1}`;
    const netns = `slw${this.tag}-h${index + 1}`;
    const address = `${this.subnet}.${10 + index}`;
    const dir = join(this.dir, name);
    await mkdir(dir);
    await sh("ip", ["netns", "add", netns]);
    this.namespaces.push(netns);
    const outer = `slw${this.tag}v${index + 1}`;
    const inner = `slw${this.tag}p${index + 1}`;
    await sh("ip", ["link", "add", outer, "type", "veth", "peer", "name", inner]);
    await sh("ip", ["link", "set", inner, "netns", netns]);
    await sh("ip", ["-n", netns, "link", "set", inner, "name", "eth0"]);
    await sh("ip", ["-n", netns, "addr", "add", `${address}/24`, "dev", "eth0"]);
    await sh("ip", ["-n", netns, "link", "set", "eth0", "up"]);
    await sh("ip", ["-n", netns, "link", "set", "lo", "up"]);
    await sh("ip", ["link", "set", outer, "master", this.bridge, "up"]);
    for (const path of OVERLAID) await mkdir(join(dir, "upper", path), { recursive: true });
    for (const path of OVERLAID) await mkdir(join(dir, "work", path), { recursive: true });
    await mkdir(join(dir, "upper", "/usr/local", "sbin"), { recursive: true });
    for (const [program, script] of Object.entries(standIns(dir, { emulateKubernetes: this.emulateKubernetes }))) {
      const file = join(dir, "upper", "/usr/local", "sbin", program);
      await writeFile(file, script);
      await chmod(file, 0o755);
    }
    await writeFile(join(dir, "authorized_keys"), `${this.publicKey}\n`);
    const host: RunningHost = { name, netns, address, port: 22, user: "root", hostKeyFingerprint: "", dir, index };
    this.running.push(host);
    this.hosts.push(host);
    await this.startSshd(host, true);
  }

  /** (Re)starts the host's sshd, with a new host key when `newKey`. */
  private async startSshd(host: RunningHost, newKey: boolean): Promise<void> {
    const keyPath = join(host.dir, "ssh_host_ed25519_key");
    if (newKey) {
      await rm(keyPath, { force: true });
      await rm(`${keyPath}.pub`, { force: true });
      host.hostKeyFingerprint = fingerprintOfPublicKey((await generateKey(keyPath, host.name)).publicKey);
    }
    const config = join(host.dir, "sshd_config");
    await writeFile(
      config,
      [
        `ListenAddress ${host.address}:${host.port}`,
        `HostKey ${keyPath}`,
        `PidFile ${join(host.dir, "sshd.pid")}`,
        `AuthorizedKeysFile ${join(host.dir, "authorized_keys")}`,
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "LogLevel ERROR",
        "",
      ].join("\n"),
    );
    const mounts = OVERLAID.map((path) => `mount -t overlay overlay -o lowerdir=${path},upperdir=${join(host.dir, "upper", path)},workdir=${join(host.dir, "work", path)} ${path}`);
    // Root's home is the host's own and empty, as on a fresh host: the login shell sshd starts for each
    // command reads ~/.bashrc, and the machine's own (a tool's init script, its locks) must not run there.
    const home = "mount -n -t tmpfs -o mode=700 tmpfs /root";
    // Each host has its own host name (its own UTS namespace), as separate machines do: a kubelet told no
    // node name registers under it.
    const setup = [`hostname ${host.name}`, ...mounts, "mount -t tmpfs -o mode=755 tmpfs /run", home, "mkdir -p /run/sshd", `exec ${SSHD} -D -e -f ${config}`].join(" && ");
    const sshd = spawn("ip", ["netns", "exec", host.netns, "unshare", "--mount", "--uts", "--propagation", "private", "--", "sh", "-c", setup], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    sshd.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    host.sshd = sshd;
    await this.waitListening(host, () => stderr);
  }

  private async waitListening(host: RunningHost, stderr: () => string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (host.sshd?.exitCode !== null) throw new Error(`sshd of ${host.name} exited: ${stderr().trim()}`);
      const { stdout } = await run("ip", ["netns", "exec", host.netns, "ss", "-Hltn", `sport = :${host.port}`]).catch(() => ({ stdout: "" }));
      if (stdout.includes(`${host.address}:${host.port}`)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`sshd of ${host.name} did not listen within 10 s: ${stderr().trim()}`);
  }

  private find(host: LabHost): RunningHost {
    const found = this.running.find((h) => h.name === host.name);
    if (!found) throw new Error(`no lab host ${host.name}`);
    return found;
  }

  /** Runs a shell script on the host as root, in its namespaces, the way a person at its console would. */
  async exec(host: LabHost, script: string): Promise<CommandResult> {
    const pid = this.find(host).sshd?.pid;
    if (!pid) throw new Error(`${host.name} is not running`);
    return new Promise((resolve) => {
      execFile("nsenter", ["-t", String(pid), "-n", "-m", "-u", "--", "sh", "-c", script], { timeout: 20_000 }, (error, stdout, stderr) => {
        const code = error ? (typeof (error as { code?: unknown }).code === "number" ? ((error as { code: number }).code) : -1) : 0;
        resolve({ code, stdout, stderr });
      });
    });
  }

  /** Files the host's programs wrote under the overlaid directories and /run, besides the lab's own. */
  async writtenFiles(host: LabHost): Promise<string[]> {
    const running = this.find(host);
    const files: string[] = [];
    const walk = async (base: string, rel: string): Promise<void> => {
      for (const entry of await readdir(join(base, rel), { withFileTypes: true })) {
        const path = join(rel, entry.name);
        if (entry.isDirectory()) await walk(base, path);
        else files.push(path);
      }
    };
    await walk(join(running.dir, "upper"), "/");
    // A file copied up and put back as it was is no change.
    const changed: string[] = [];
    for (const file of files.splice(0)) {
      const upper = await readFile(join(running.dir, "upper", file)).catch(() => undefined);
      const lower = await readFile(file).catch(() => undefined);
      if (!upper || !lower || !upper.equals(lower)) changed.push(file);
    }
    files.push(...changed);
    const inRun = await this.exec(host, "find /run -mindepth 1 -not -path '/run/sshd*' -not -path '/run/netns*'");
    files.push(...inRun.stdout.split("\n").filter((l) => l.length > 0));
    const installed = new Set(STAND_IN_PROGRAMS.map((p) => `/usr/local/sbin/${p}`));
    return files.filter((f) => !installed.has(f)).sort();
  }

  /** The stand-in programs' invocations on the host, one line each ("kubeadm init --config …"). */
  async calls(host: LabHost): Promise<string[]> {
    const text = await readFile(join(this.find(host).dir, "calls.log"), "utf8").catch(() => "");
    return text.split("\n").filter((l) => l.length > 0);
  }

  /** Replaces the host's key and restarts its sshd, as a reinstalled (or impersonated) host would look. */
  async replaceHostKey(host: LabHost): Promise<string> {
    const running = this.find(host);
    await this.killSshd(running);
    await this.startSshd(running, true);
    return running.hostKeyFingerprint;
  }

  private async killSshd(host: RunningHost): Promise<void> {
    const sshd = host.sshd;
    if (!sshd || sshd.exitCode !== null) return;
    const exited = new Promise((resolve) => sshd.once("exit", resolve));
    sshd.kill("SIGTERM");
    const timer = setTimeout(() => sshd.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(timer);
  }

  /** Kills every process in a namespace (sshd, its sessions, and what Slipway started there). */
  private async killNamespace(netns: string): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const { stdout } = await run("ip", ["netns", "pids", netns]).catch(() => ({ stdout: "" }));
      const pids = stdout.split("\n").filter((l) => /^\d+$/.test(l.trim())).map(Number);
      if (pids.length === 0) return;
      for (const pid of pids) {
        try {
          process.kill(pid, attempt < 5 ? "SIGTERM" : "SIGKILL");
        } catch {
          // already gone
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Removes everything: processes, namespaces, links, files. Safe to call twice and after a failed start. */
  /** The same as `stop`, synchronously and quietly: for a process on its way out. */
  removeNow(): void {
    if (this.stopped) return;
    this.stopped = true;
    live.delete(this);
    const quiet = (command: string, args: string[]) => {
      try {
        return execFileSync(command, args, { timeout: 5000, stdio: ["ignore", "pipe", "ignore"] }).toString();
      } catch {
        return "";
      }
    };
    for (const netns of this.namespaces) {
      for (const pid of quiet("ip", ["netns", "pids", netns]).split("\n").filter((l) => /^\d+$/.test(l.trim()))) {
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {
          // already gone
        }
      }
      quiet("ip", ["netns", "del", netns]);
    }
    if (this.bridgeMade) quiet("ip", ["link", "del", this.bridge]);
    rmSync(this.dir, { recursive: true, force: true });
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    live.delete(this);
    const problems: string[] = [];
    for (const host of this.running) await this.killSshd(host).catch((e: Error) => problems.push(e.message));
    for (const netns of this.namespaces) {
      await this.killNamespace(netns);
      await sh("ip", ["netns", "del", netns]).catch((e: Error) => problems.push(`ip netns del ${netns}: ${e.message}`));
    }
    if (this.bridgeMade) await sh("ip", ["link", "del", this.bridge]).catch((e: Error) => problems.push(`ip link del ${this.bridge}: ${e.message}`));
    await rm(this.dir, { recursive: true, force: true });
    if (problems.length > 0) throw new Error(`the SSH host lab was not removed completely: ${problems.join("; ")}`);
  }
}
