// What the ssh provider does on a host with a machine's user data, as cloud-init would do it at first
// boot, but step by step over SSH: the #cloud-config document is turned into named steps, each a shell
// script that runs once (a marker under /var/lib/slipway records it) with its output kept for messages.
// Before anything changes, the host as found is recorded — which paths the steps will touch exist, and a
// copy of each file among them — so that the cleanup removes what Slipway added and puts back what it
// changed. The kubeadm command runs as a unit (systemd where the host has it, else detached with nohup),
// so that it outlives the SSH session that started it.
import { parse } from "yaml";
import { ProviderError } from "../provider.ts";
import { shellQuote } from "./session.ts";

/** Where Slipway keeps its state on a host: markers, logs, the record of the host as found. */
export const SLIPWAY_DIR = "/var/lib/slipway";
/** The unit that runs the kubeadm command. */
export const BOOTSTRAP_UNIT = "slipway-bootstrap";

export interface HostFile {
  path: string;
  content: string;
  permissions: string;
  owner: string;
}

/** One step of a host's bootstrap: a script run once, under its name. */
export interface HostStep {
  name: string;
  /** Runs with `sh -s` (read from standard input, so secrets in it never show in a process list). */
  script: string;
  /**
   * Set when the step (re)starts a service (`systemctl restart containerd`): on a host without systemd
   * the service's program is started detached instead, as a Slipway unit.
   */
  service?: string;
}

export interface BootstrapPlan {
  steps: HostStep[];
  /** The command the bootstrap unit runs (kubeadm init/join), if the user data has one. */
  unitCommand?: string;
}

interface CloudConfigDocument {
  write_files?: { path?: unknown; content?: unknown; permissions?: unknown; owner?: unknown }[];
  apt?: { sources?: Record<string, { source?: unknown }> };
  packages?: unknown[];
  runcmd?: unknown[];
}

function invalid(message: string): ProviderError {
  return new ProviderError("invalid", `user data: ${message}`);
}

/** Paths a shell line names under the directories a node's bootstrap writes to. */
function pathsNamed(command: string): string[] {
  return [...command.matchAll(/(?:^|[\s'"=>])(\/(?:etc|var|run|opt|usr\/local)\/[^\s'";|&>)]+)/g)].map((m) => m[1]!.replace(/\/+$/, ""));
}

/** A path and its parents, up to (not including) the top directory. */
function withParents(path: string): string[] {
  const parts = path.split("/").filter(Boolean);
  const all: string[] = [];
  for (let i = parts.length; i >= 2; i--) all.push(`/${parts.slice(0, i).join("/")}`);
  return all;
}

/** The directories kubeadm writes to; its reset empties them, the cleanup removes those it made. */
const KUBEADM_PATHS = ["/etc/kubernetes", "/var/lib/kubelet", "/var/lib/etcd"];

/** Records which of `paths` exist and copies the files among them, once; the cleanup reads it back. */
function recordHostAsFound(paths: string[]): string {
  const lines = [`mkdir -p ${SLIPWAY_DIR}/backup ${SLIPWAY_DIR}/steps`, `: > ${SLIPWAY_DIR}/found.tmp`];
  for (const path of paths) {
    const p = shellQuote(path);
    lines.push(
      `if [ -e ${p} ]; then echo "present ${path}" >> ${SLIPWAY_DIR}/found.tmp;`,
      `  if [ -f ${p} ]; then mkdir -p "${SLIPWAY_DIR}/backup$(dirname ${p})" && cp -p ${p} "${SLIPWAY_DIR}/backup"${p}; fi`,
      `else echo "absent ${path}" >> ${SLIPWAY_DIR}/found.tmp; fi`,
    );
  }
  lines.push(`mv ${SLIPWAY_DIR}/found.tmp ${SLIPWAY_DIR}/found`);
  return lines.join("\n");
}

function writeFiles(files: HostFile[]): string {
  return files
    .map((f) => {
      const p = shellQuote(f.path);
      const encoded = Buffer.from(f.content).toString("base64").replace(/(.{76})/g, "$1\n");
      return [`mkdir -p "$(dirname ${p})"`, `base64 -d > ${p} <<'SLIPWAY_EOF'`, encoded, "SLIPWAY_EOF", `chmod ${f.permissions} ${p}`, `chown ${shellQuote(f.owner)} ${p}`].join("\n");
    })
    .join("\n");
}

/**
 * Packages: each one whose program is already on the host is kept as it is (a host may come with its
 * node software); the missing ones are installed from the apt sources and recorded, so the cleanup
 * removes only what Slipway installed.
 */
function installPackages(packages: string[], sources: { name: string; line: string }[]): string {
  const lines = ["missing=''"];
  for (const request of packages) {
    const name = request.split("=")[0]!;
    lines.push(`command -v ${shellQuote(name)} >/dev/null 2>&1 && echo "${name}: already installed, kept" || missing="$missing ${request}"`);
  }
  lines.push('[ -z "$missing" ] && exit 0');
  for (const source of sources) {
    lines.push(`echo ${shellQuote(source.line.replace(/\[signed-by=\$KEY_FILE\]\s*/, ""))} > /etc/apt/sources.list.d/${shellQuote(source.name)}`);
  }
  lines.push(
    "apt-get update -q",
    "DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing",
    `for p in $missing; do echo "\${p%%=*}" >> ${SLIPWAY_DIR}/installed-packages; done`,
  );
  return lines.join("\n");
}

/** Reads a #cloud-config user data into the steps that do on the host what cloud-init would. */
export function bootstrapPlan(userData: string): BootstrapPlan {
  if (!userData.startsWith("#cloud-config")) throw invalid("only #cloud-config user data can be run over SSH");
  let doc: CloudConfigDocument;
  try {
    doc = (parse(userData) ?? {}) as CloudConfigDocument;
  } catch (error) {
    throw invalid(`not YAML: ${(error as Error).message.split("\n")[0]}`);
  }
  const files: HostFile[] = (doc.write_files ?? []).map((f, i) => {
    if (typeof f.path !== "string" || !f.path.startsWith("/")) throw invalid(`write_files[${i}].path must be an absolute path`);
    return { path: f.path, content: typeof f.content === "string" ? f.content : "", permissions: typeof f.permissions === "string" ? f.permissions : "0644", owner: typeof f.owner === "string" ? f.owner : "root:root" };
  });
  const sources = Object.entries(doc.apt?.sources ?? {}).map(([name, s]) => ({ name, line: String(s.source ?? "") }));
  const packages = (doc.packages ?? []).map(String);
  const commands = (doc.runcmd ?? []).map((c) => (Array.isArray(c) ? c.map((w) => shellQuote(String(w))).join(" ") : String(c)));
  const kubeadmAt = commands.findIndex((c) => /^(sudo\s+)?kubeadm\s+(init|join)\b/.test(c.trim()));
  const unitCommand = kubeadmAt >= 0 ? commands[kubeadmAt] : undefined;
  const preparation = kubeadmAt >= 0 ? commands.slice(0, kubeadmAt) : commands;

  const touched = new Set<string>();
  for (const path of [...files.map((f) => f.path), ...preparation.flatMap(pathsNamed), ...(unitCommand ? KUBEADM_PATHS : [])]) {
    for (const p of withParents(path)) touched.add(p);
  }
  touched.add(`/etc/apt/sources.list.d`);
  for (const source of sources) touched.add(`/etc/apt/sources.list.d/${source.name}`);
  const steps: HostStep[] = [{ name: "record-host", script: recordHostAsFound([...touched].sort()) }];
  if (files.length > 0) steps.push({ name: "write-files", script: writeFiles(files) });
  if (packages.length > 0) steps.push({ name: "install-packages", script: installPackages(packages, sources) });
  preparation.forEach((command, i) => {
    const service = /^(?:sudo\s+)?systemctl\s+(?:restart|start|enable\s+--now)\s+([\w@.-]+?)(?:\.service)?\s*$/.exec(command.trim())?.[1];
    steps.push({ name: `command-${i + 1}`, script: command, ...(service ? { service } : {}) });
  });
  return { steps, ...(unitCommand ? { unitCommand } : {}) };
}
