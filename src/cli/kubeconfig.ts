// `slipway kubeconfig CLUSTER [--merge]`: the admin kubeconfig of a workload cluster, printed, or merged
// into the user's kubectl configuration.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import { parse } from "yaml";
import type { SecretObject } from "../api/kinds.ts";
import { mergeKubeconfig } from "../bootstrap/kubeconfig.ts";
import { names } from "../api/slipway/names.ts";
import { KubeNotFoundError } from "../kubeclient/index.ts";
import { getCluster } from "./clusters.ts";
import { firstKubeconfigEntry, withSession, type Session } from "./connect.ts";
import { CliError } from "./errors.ts";

interface KubeconfigFlags {
  merge?: boolean;
}

export function registerKubeconfigCommand(program: Command): void {
  program
    .command("kubeconfig")
    .description("print the admin kubeconfig of a cluster, or merge it into ~/.kube/config")
    .argument("<cluster>", "name of the cluster")
    .option("--merge", "add the cluster, user and context to ~/.kube/config (or the first file of $KUBECONFIG)")
    .action(async (name: string, flags: KubeconfigFlags, command: Command) => {
      await withSession(command, async (session) => {
        const kubeconfig = await clusterKubeconfig(session, name);
        if (!flags.merge) {
          session.out.write(kubeconfig.endsWith("\n") ? kubeconfig : `${kubeconfig}\n`);
          return;
        }
        const target = kubectlConfigPath();
        const context = mergeInto(target, kubeconfig);
        session.out.write(`cluster ${name} merged into ${target} as context "${context}"\nuse it with: kubectl --context ${context} get nodes\n`);
      });
    });
}

/** The file kubectl reads first: $KUBECONFIG's first entry, else ~/.kube/config. */
export function kubectlConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return firstKubeconfigEntry(env) ?? join(homedir(), ".kube", "config");
}

async function clusterKubeconfig(session: Session, name: string): Promise<string> {
  const cluster = await getCluster(session, name);
  const secretName = cluster.status?.kubeconfigSecretName ?? names.kubeconfigSecret(name);
  const path = await session.client.resourcePath({ apiVersion: "v1", kind: "Secret", namespace: session.namespace, name: secretName });
  let secret: SecretObject;
  try {
    secret = await session.client.get<SecretObject>(path);
  } catch (error) {
    if (!(error instanceof KubeNotFoundError)) throw error;
    throw new CliError(
      `cluster "${name}" has no kubeconfig yet (phase ${cluster.status?.phase ?? "Pending"}): it is written once the control plane is up; follow it with: slipway describe cluster ${name}`,
    );
  }
  const value = secret.data?.value;
  if (value === undefined) throw new CliError(`the Secret ${secretName} of cluster "${name}" has no key "value"`);
  return Buffer.from(value, "base64").toString("utf8");
}

/** Merges the kubeconfig into the file (made if missing, readable by its owner only); answers its context. */
function mergeInto(target: string, kubeconfig: string): string {
  const existing = existsSync(target) ? readFileSync(target, "utf8") : undefined;
  const merged = mergeKubeconfig(existing, kubeconfig);
  mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
  writeFileSync(target, merged, { mode: 0o600 });
  const context = (parse(kubeconfig) as { "current-context"?: unknown } | null)?.["current-context"];
  return typeof context === "string" ? context : "";
}
