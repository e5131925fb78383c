// cloud-init user data: the files a machine needs and the commands it runs at first boot.
import { parse, stringify } from "yaml";
import {
  parseKubeadmConfig,
  pkiFiles,
  renderInitConfiguration,
  renderJoinConfiguration,
  type ClusterPki,
  type InitInput,
  type JoinInput,
} from "./kubeadm.ts";

export const KUBEADM_CONFIG_PATH = "/run/kubeadm/kubeadm.yaml";

export interface CloudInitFile {
  path: string;
  content: string;
  permissions?: string;
  owner?: string;
}

export interface CloudConfig {
  files: CloudInitFile[];
  commands: string[];
}

export class CloudInitError extends Error {
  override readonly name = "CloudInitError";
}

export function renderCloudConfig(config: CloudConfig): string {
  const doc = {
    write_files: config.files.map((f) => ({ path: f.path, owner: f.owner ?? "root:root", permissions: f.permissions ?? "0640", content: f.content })),
    runcmd: config.commands,
  };
  return `#cloud-config\n${stringify(doc, { lineWidth: 0 })}`;
}

export function parseCloudConfig(userData: string): CloudConfig {
  if (!userData.startsWith("#cloud-config")) throw new CloudInitError("user data is not a #cloud-config document");
  let doc: { write_files?: { path?: unknown; content?: unknown; permissions?: unknown }[]; runcmd?: unknown[] };
  try {
    doc = (parse(userData) ?? {}) as typeof doc;
  } catch (e) {
    throw new CloudInitError(`user data is not valid YAML: ${(e as Error).message}`);
  }
  const files = (doc.write_files ?? []).map((f) => {
    if (typeof f.path !== "string" || typeof f.content !== "string") throw new CloudInitError("every write_files entry needs a path and a content");
    return { path: f.path, content: f.content, permissions: typeof f.permissions === "string" ? f.permissions : undefined };
  });
  const commands = (doc.runcmd ?? []).map((c) => (Array.isArray(c) ? c.join(" ") : String(c)));
  return { files, commands };
}

/** User data of the first control-plane machine: the cluster PKI, kubeadm's config, `kubeadm init`. */
export function initUserData(input: InitInput, pki: ClusterPki): string {
  return renderCloudConfig({
    files: [...pkiFiles(pki), { path: KUBEADM_CONFIG_PATH, content: renderInitConfiguration(input), permissions: "0640" }],
    commands: [`kubeadm init --config ${KUBEADM_CONFIG_PATH}`],
  });
}

/** User data of a joining machine; control-plane machines also carry the cluster PKI. */
export function joinUserData(input: JoinInput, pki?: ClusterPki): string {
  return renderCloudConfig({
    files: [...(input.controlPlane && pki ? pkiFiles(pki) : []), { path: KUBEADM_CONFIG_PATH, content: renderJoinConfiguration(input), permissions: "0640" }],
    commands: [`kubeadm join --config ${KUBEADM_CONFIG_PATH}`],
  });
}

/** What a booting machine would do with its user data, as far as kubeadm is concerned. */
export function readKubeadmBootstrap(userData: string): { config: ReturnType<typeof parseKubeadmConfig>; files: Map<string, string>; command: "init" | "join" } | undefined {
  const cloud = parseCloudConfig(userData);
  const command = cloud.commands.find((c) => c.startsWith("kubeadm init") || c.startsWith("kubeadm join"));
  if (!command) return undefined;
  const files = new Map(cloud.files.map((f) => [f.path, f.content]));
  const configText = files.get(KUBEADM_CONFIG_PATH);
  if (!configText) throw new CloudInitError(`${command.split(" ").slice(0, 2).join(" ")} runs without ${KUBEADM_CONFIG_PATH}`);
  return { config: parseKubeadmConfig(configText), files, command: command.startsWith("kubeadm init") ? "init" : "join" };
}
