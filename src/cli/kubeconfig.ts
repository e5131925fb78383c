// `slipway kubeconfig CLUSTER [--merge]`: the admin kubeconfig of a workload cluster, printed, or merged
// into the user's kubectl configuration. `slipway kubeconfig --logical-cloud NAME --user USER`: a logical
// cloud user's kubeconfig instead, one context per member cluster.
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
import { UsageError } from "./usage.ts";
import { clusterClient, oidcKubeconfig } from "./login.ts";
import { userKubeconfigSecret, type LogicalCloudObject } from "../api/slipway/logicalcloud.ts";

interface KubeconfigFlags {
  merge?: boolean;
  oidc?: boolean;
  logicalCloud?: string;
  user?: string;
}

export function registerKubeconfigCommand(program: Command): void {
  program
    .command("kubeconfig")
    .description("print the admin kubeconfig of a cluster (or a logical cloud user's), or merge it into ~/.kube/config")
    .argument("[cluster]", "name of the cluster")
    .option("--oidc", "a kubeconfig whose user signs in to the cluster's realm (kubectl's oidc auth provider; `slipway login REALM` fills in the tokens)")
    .option("--merge", "add the cluster, user and context to ~/.kube/config (or the first file of $KUBECONFIG)")
    .option("--logical-cloud <name>", "a logical cloud's user's kubeconfig (with --user): one context per member cluster")
    .option("--user <name>", "the logical cloud user")
    .action(async (name: string | undefined, flags: KubeconfigFlags, command: Command) => {
      if (flags.logicalCloud === undefined && flags.user !== undefined) throw new UsageError("--user goes with --logical-cloud");
      if (flags.logicalCloud !== undefined && (flags.user === undefined || name !== undefined)) {
        throw new UsageError("with --logical-cloud, name the user with --user and no cluster: slipway kubeconfig --logical-cloud NAME --user USER");
      }
      if (flags.oidc && flags.logicalCloud !== undefined) throw new UsageError("--oidc goes with a cluster, not --logical-cloud");
      if (flags.logicalCloud === undefined && name === undefined) throw new UsageError("name a cluster, or a logical cloud and a user: slipway kubeconfig CLUSTER | --logical-cloud NAME --user USER");
      await withSession(command, async (session) => {
        const kubeconfig =
          flags.logicalCloud !== undefined
            ? await logicalCloudKubeconfig(session, flags.logicalCloud, flags.user!)
            : flags.oidc
              ? await oidcKubeconfig(session, await clusterClient(session, name!))
              : await clusterKubeconfig(session, name!);
        if (!flags.merge) {
          session.out.write(kubeconfig.endsWith("\n") ? kubeconfig : `${kubeconfig}\n`);
          return;
        }
        const target = kubectlConfigPath();
        const context = mergeInto(target, kubeconfig);
        const what = flags.logicalCloud !== undefined ? `logical cloud ${flags.logicalCloud} (user ${flags.user})` : `cluster ${name}`;
        session.out.write(`${what} merged into ${target} as context "${context}"\nuse it with: kubectl --context ${context} get ${flags.logicalCloud !== undefined ? "pods" : "nodes"}\n`);
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
  return kubeconfigIn(session, secretName, `cluster "${name}"`, () =>
    new CliError(`cluster "${name}" has no kubeconfig yet (phase ${cluster.status?.phase ?? "Pending"}): it is written once the control plane is up; follow it with: slipway describe cluster ${name}`),
  );
}

/** The kubeconfig in a Secret's key `value`; `missing` says why there is no such Secret yet. */
async function kubeconfigIn(session: Session, secretName: string, owner: string, missing: () => CliError): Promise<string> {
  const path = await session.client.resourcePath({ apiVersion: "v1", kind: "Secret", namespace: session.namespace, name: secretName });
  let secret: SecretObject;
  try {
    secret = await session.client.get<SecretObject>(path);
  } catch (error) {
    if (!(error instanceof KubeNotFoundError)) throw error;
    throw missing();
  }
  const value = secret.data?.value;
  if (value === undefined) throw new CliError(`the Secret ${secretName} of ${owner} has no key "value"`);
  return Buffer.from(value, "base64").toString("utf8");
}

async function logicalCloudKubeconfig(session: Session, logicalCloud: string, user: string): Promise<string> {
  const cloudPath = await session.client.resourcePath({ apiVersion: "slipway.dev/v1alpha1", kind: "LogicalCloud", namespace: session.namespace, name: logicalCloud });
  let cloud: LogicalCloudObject;
  try {
    cloud = await session.client.get<LogicalCloudObject>(cloudPath);
  } catch (error) {
    if (!(error instanceof KubeNotFoundError)) throw error;
    throw new CliError(`logical cloud "${logicalCloud}" not found in namespace ${session.namespace}`);
  }
  if (!(cloud.spec.users ?? []).some((u) => u.name === user)) {
    throw new CliError(`logical cloud "${logicalCloud}" has no user "${user}"; its users: ${(cloud.spec.users ?? []).map((u) => u.name).join(", ") || "none"}`);
  }
  return kubeconfigIn(session, userKubeconfigSecret(logicalCloud, user), `user "${user}" of logical cloud "${logicalCloud}"`, () =>
    new CliError(`user "${user}" of logical cloud "${logicalCloud}" has no kubeconfig yet (phase ${cloud.status?.phase ?? "Pending"}); follow it with: slipway describe logicalcloud ${logicalCloud}`),
  );
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
