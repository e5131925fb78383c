// What cloud-init does with a machine's user data at first boot, as far as a Kubernetes node depends on
// it: it writes the files, adds the apt sources, installs the packages, then runs `runcmd` line by line
// (a failing line does not stop the next). The result is the machine as kubeadm finds it: the software
// installed and its versions, swap, IP forwarding, the ports services listen on, and the kubeadm command
// the user data runs. Read independently of the writer (bootstrap/cloudinit.ts), as a machine would.
import { parse } from "yaml";
import type { Image } from "../types.ts";
import { PackageIndex, containerRuntimeOf, kubernetesVersionOf, type AptSource } from "./packages.ts";

/** The parts of a #cloud-config document a node's bootstrap uses. */
export interface CloudConfig {
  files: Map<string, string>;
  aptSources: AptSource[];
  packages: string[];
  commands: string[];
}

/** The machine after cloud-init ran, up to the kubeadm command. */
export interface MachineSetup {
  files: Map<string, string>;
  /** Installed packages and their versions. */
  installed: Map<string, string>;
  /** Versions the binaries report (v1.31.2), when installed. */
  kubeletVersion?: string;
  kubeadmVersion?: string;
  /** containerd://1.7.12, when a container runtime is installed. */
  containerRuntime?: string;
  swapOn: boolean;
  ipForward: boolean;
  /** Ports services started by the user data listen on. */
  listening: number[];
  /** The kubeadm command line the user data runs, when kubeadm is installed to run it. */
  kubeadmCommand?: string;
  /** The user data waits for the control plane's join turn (`slipway-join-turn`) before kubeadm runs. */
  awaitsTurn?: boolean;
  /** What cloud-init and the commands printed (errors included). */
  output: string[];
}

/**
 * Reads a secret of the machine's cloud with the machine's own identity (its instance), as the bootstrap
 * fetch command does at boot; throws with the cloud's reason when it may not or the secret is gone.
 */
export type SecretReader = (reference: { id: string; region: string }) => string;

/** The command of the user data that writes the machine's secret files from a cloud secret (bootstrap/cloudinit.ts). */
const FETCH_COMMAND = "slipway-bootstrap-fetch";
/** The command of the user data that waits for the control plane's join turn (bootstrap/cloudinit.ts). */
const TURN_COMMAND = "slipway-join-turn";
/** The command of the user data that fills the machine's addresses into kubeadm's configuration (bootstrap/cloudinit.ts). */
const ADDRESSES_COMMAND = "slipway-node-addresses";

/** What the cloud's instance metadata service tells a machine about itself (cloud-init's ds.meta_data). */
export interface InstanceMetadata {
  localIpv4: string;
  /** The cloud's public address of the instance, where it has one (no interface of the machine holds it). */
  publicIpv4?: string;
}

export class UserDataError extends Error {
  override readonly name = "UserDataError";
}

const RUNCMD_SCRIPT = "/var/lib/cloud/instance/scripts/runcmd";

function asString(value: unknown, what: string): string {
  if (typeof value !== "string") throw new UserDataError(`${what} must be a string`);
  return value;
}

/** Reads a #cloud-config document; undefined when the user data is something else (a script, nothing). */
export function readCloudConfig(userData: string): CloudConfig | undefined {
  if (!userData.startsWith("#cloud-config")) return undefined;
  let doc: unknown;
  try {
    doc = parse(userData);
  } catch (error) {
    throw new UserDataError(`Failed loading yaml blob. ${(error as Error).message.split("\n")[0]}`);
  }
  if (doc === null || doc === undefined) return { files: new Map(), aptSources: [], packages: [], commands: [] };
  if (typeof doc !== "object" || Array.isArray(doc)) throw new UserDataError("the cloud-config document is not a mapping");
  const d = doc as { write_files?: unknown; apt?: unknown; packages?: unknown; runcmd?: unknown };
  const files = new Map<string, string>();
  for (const [i, entry] of (Array.isArray(d.write_files) ? d.write_files : []).entries()) {
    const f = entry as { path?: unknown; content?: unknown; append?: unknown };
    const path = asString(f.path, `write_files[${i}].path`);
    const content = f.content === undefined ? "" : asString(f.content, `write_files[${i}].content`);
    files.set(path, f.append === true ? (files.get(path) ?? "") + content : content);
  }
  const sources = ((d.apt as { sources?: unknown } | undefined)?.sources ?? {}) as Record<string, { source?: unknown; keyid?: unknown; key?: unknown }>;
  const aptSources = Object.entries(sources).map(([name, s]) => ({
    line: asString(s.source, `apt.sources.${name}.source`),
    ...(s.keyid === undefined ? {} : { keyid: String(s.keyid) }),
    ...(s.key === undefined ? {} : { key: asString(s.key, `apt.sources.${name}.key`) }),
  }));
  const packages = (Array.isArray(d.packages) ? d.packages : []).map((p, i) =>
    Array.isArray(p) ? `${asString(p[0], `packages[${i}][0]`)}=${asString(p[1], `packages[${i}][1]`)}` : asString(p, `packages[${i}]`),
  );
  const commands = (Array.isArray(d.runcmd) ? d.runcmd : []).map((c) => (Array.isArray(c) ? c.map(String).join(" ") : String(c)));
  return { files, aptSources, packages, commands };
}

/** sysctl settings of a file: "net.ipv4.ip_forward = 1" lines. */
function sysctlSettings(text: string): Map<string, string> {
  const settings = new Map<string, string>();
  for (const line of text.split("\n")) {
    const match = /^\s*([\w.]+)\s*=\s*(\S+)\s*$/.exec(line);
    if (match && !line.trim().startsWith("#")) settings.set(match[1]!, match[2]!);
  }
  return settings;
}

/** Ports an haproxy configuration binds ("bind *:6443", "bind 0.0.0.0:8443 ssl …"). */
function haproxyPorts(config: string | undefined): number[] {
  const ports: number[] = [];
  for (const match of (config ?? "").matchAll(/^\s*bind\s+\S*:(\d+)/gm)) ports.push(Number(match[1]));
  return ports;
}

/** What a fresh machine of the image has before its user data runs. */
function baseline(image: Image): MachineSetup {
  const baked = image.kubernetes;
  const installed = new Map<string, string>();
  if (baked) {
    const release = `${baked.version.replace(/^v/, "")}-1.1`;
    for (const name of ["kubelet", "kubeadm", "kubectl"]) installed.set(name, release);
  }
  return {
    files: new Map(),
    installed,
    ...(baked ? { kubeletVersion: baked.version, kubeadmVersion: baked.version, containerRuntime: baked.containerRuntime } : {}),
    swapOn: false,
    ipForward: baked !== undefined,
    listening: [],
    output: [],
  };
}

function install(machine: MachineSetup, index: PackageIndex, requests: readonly string[], how: string): void {
  if (requests.length === 0) return;
  const result = index.resolve(requests);
  if ("errors" in result) {
    machine.output.push(...result.errors, `${how}: failed to install packages: ${requests.join(" ")}`);
    return;
  }
  for (const [name, version] of result.installed) machine.installed.set(name, version);
  const kubelet = machine.installed.get("kubelet");
  const kubeadm = machine.installed.get("kubeadm");
  if (kubelet) machine.kubeletVersion = kubernetesVersionOf(kubelet);
  if (kubeadm) machine.kubeadmVersion = kubernetesVersionOf(kubeadm);
  machine.containerRuntime = containerRuntimeOf(machine.installed) ?? machine.containerRuntime;
}

/** The value of an option of a command line ("--secret-id X"). */
function option(args: readonly string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

/**
 * The bootstrap fetch: reads the secret the user data names, once, and writes the files it holds. True
 * when it failed: the machine stops there (its error printed) and never runs kubeadm.
 */
function fetchSecretFiles(machine: MachineSetup, args: readonly string[], readSecret: SecretReader | undefined): boolean {
  const id = option(args, "--secret-id");
  const region = option(args, "--region");
  const failed = (why: string) => (machine.output.push(`${FETCH_COMMAND}: error: ${why}`), true);
  if (!id || !region) return failed("usage: --secret-id ID --region REGION [--endpoint URL]");
  if (!readSecret) return failed(`secret ${id}: this machine has no cloud identity to read secrets with`);
  let value: string;
  try {
    value = readSecret({ id, region });
  } catch (error) {
    return failed(`secret ${id} could not be read: ${(error as Error).message}`);
  }
  let entries: unknown;
  try {
    entries = parse(value);
  } catch {
    entries = undefined;
  }
  if (!Array.isArray(entries)) return failed(`secret ${id} does not hold a list of files`);
  const files = new Map<string, string>();
  for (const [i, entry] of entries.entries()) {
    const f = (entry ?? {}) as { path?: unknown; content?: unknown };
    if (typeof f.path !== "string" || (f.content !== undefined && typeof f.content !== "string")) return failed(`secret ${id}: files[${i}] needs a path and text content`);
    files.set(f.path, f.content ?? "");
  }
  for (const [path, content] of files) machine.files.set(path, content);
  machine.output.push(`${FETCH_COMMAND}: wrote ${entries.length} file(s) from secret ${id}`);
  return false;
}

/**
 * The addresses step: replaces the instance-data placeholders of the file named by --config with the
 * machine's addresses from the metadata service. True when it failed (a placeholder the metadata has no
 * value for, or no such file): the machine stops there and never runs kubeadm.
 */
function fillAddresses(machine: MachineSetup, args: readonly string[], metadata: InstanceMetadata | undefined): boolean {
  const failed = (why: string) => (machine.output.push(`${ADDRESSES_COMMAND}: error: ${why}`), true);
  const path = option(args, "--config");
  if (!path) return failed("usage: --config FILE");
  const text = machine.files.get(path);
  if (text === undefined) return failed(`${path}: no such file or directory`);
  if (!metadata) return failed("the instance metadata service does not answer");
  const values: Record<string, string | undefined> = { local_ipv4: metadata.localIpv4, public_ipv4: metadata.publicIpv4 };
  let missing: string | undefined;
  const filled = text.replace(/\{\{\s*ds\.meta_data\.(\w+)\s*\}\}/g, (placeholder, key: string) => values[key] ?? ((missing ??= key), placeholder));
  if (missing) return failed(`the instance metadata has no ${missing.replace("_", "-")}${missing === "public_ipv4" ? " (the instance was launched without a public address)" : ""}`);
  machine.files.set(path, filled);
  machine.output.push(`${ADDRESSES_COMMAND}: ${path}: local-ipv4 ${metadata.localIpv4}${metadata.publicIpv4 ? `, public-ipv4 ${metadata.publicIpv4}` : ""}`);
  return false;
}

/** Runs one command of runcmd; true when cloud-init stops there: at the kubeadm command (it hands over), a failed fetch or addresses step. */
function run(machine: MachineSetup, index: PackageIndex, command: string, line: number, readSecret: SecretReader | undefined, metadata: InstanceMetadata | undefined): boolean {
  const words = command.trim().replace(/^sudo\s+/, "").split(/\s+/);
  const [program = "", ...args] = words;
  switch (program) {
    case FETCH_COMMAND:
      return fetchSecretFiles(machine, args, readSecret);
    case ADDRESSES_COMMAND:
      return fillAddresses(machine, args, metadata);
    case TURN_COMMAND:
      // It runs while the machine boots through to kubeadm: the emulator takes the turn before the join.
      machine.awaitsTurn = true;
      return false;
    case "kubeadm":
      if (!machine.kubeadmVersion) {
        machine.output.push(`${RUNCMD_SCRIPT}: ${line}: kubeadm: not found`);
        return false;
      }
      machine.kubeadmCommand = words.join(" ");
      return true;
    case "swapoff":
      if (args.includes("-a")) machine.swapOn = false;
      return false;
    case "swapon":
      if (!args.includes("--show") && !args.includes("-s")) machine.swapOn = true;
      return false;
    case "sysctl": {
      let settings = new Map<string, string>();
      if (args[0] === "--system") {
        for (const [path, content] of [...machine.files].sort(([a], [b]) => a.localeCompare(b))) {
          if (path === "/etc/sysctl.conf" || (path.startsWith("/etc/sysctl.d/") && path.endsWith(".conf"))) settings = new Map([...settings, ...sysctlSettings(content)]);
        }
      } else if (args[0] === "-p") {
        settings = sysctlSettings(machine.files.get(args[1] ?? "/etc/sysctl.conf") ?? "");
      } else {
        settings = sysctlSettings(args.filter((a) => a !== "-w").join("\n"));
      }
      const forward = settings.get("net.ipv4.ip_forward");
      if (forward !== undefined) machine.ipForward = forward === "1";
      return false;
    }
    case "systemctl": {
      const starts = ["start", "restart", "reload-or-restart"].includes(args[0] ?? "") || (args[0] === "enable" && args.includes("--now"));
      if (starts && args.some((a) => a === "haproxy" || a === "haproxy.service")) {
        machine.listening = [...new Set([...machine.listening, ...haproxyPorts(machine.files.get("/etc/haproxy/haproxy.cfg"))])];
      }
      return false;
    }
    case "apt-get":
    case "apt":
      if (args.includes("install")) install(machine, index, args.filter((a) => !a.startsWith("-") && a !== "install"), `${RUNCMD_SCRIPT}: ${line}`);
      return false;
    default:
      return false;
  }
}

/** Runs the user data of a machine made from `image`, as cloud-init would at first boot. */
export function runCloudInit(config: CloudConfig, image: Image, readSecret?: SecretReader, metadata?: InstanceMetadata): MachineSetup {
  const machine = baseline(image);
  machine.files = new Map(config.files);
  const index = new PackageIndex(image.version, config.aptSources);
  machine.output.push(...index.output);
  install(machine, index, config.packages, "cc_package_update_upgrade_install.py[WARNING]");
  for (const [i, entry] of config.commands.entries()) {
    // Each runcmd entry is one line of a shell script after its "#!/bin/sh" line.
    for (const command of entry.split(/&&|;/)) {
      if (run(machine, index, command, i + 2, readSecret, metadata)) return machine;
    }
  }
  return machine;
}
