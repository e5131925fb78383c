// Finding the control plane: `--kubeconfig`, else `$KUBECONFIG`, else the kubeconfig `slipway up` writes
// into ~/.slipway; and the namespace: `-n`, else the kubeconfig context's, else "default".
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import type { Command } from "commander";
import { KubeconfigError } from "../bootstrap/kubeconfig.ts";
import { KubeClient, KubeNotFoundError, type ApiResource } from "../kubeclient/index.ts";
import { CliError } from "./errors.ts";
import type { Output } from "./output.ts";

/** Flags every client command takes. */
export interface GlobalFlags {
  kubeconfig?: string;
  namespace?: string;
}

/** A connection to the control plane, for one command. */
export interface Session {
  client: KubeClient;
  /** The namespace objects are read from and written to. */
  namespace: string;
  kubeconfigPath: string;
  out: Output;
  err: Output;
}

export function defaultKubeconfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.HOME || homedir(), ".slipway", "kubeconfig");
}

/** The first file `$KUBECONFIG` names (it may list several, as kubectl allows). */
export function firstKubeconfigEntry(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.KUBECONFIG?.split(delimiter).find((entry) => entry.trim() !== "");
}

/** Which kubeconfig leads to the control plane, and how the user chose it (for messages). */
export function kubeconfigPath(flags: GlobalFlags, env: NodeJS.ProcessEnv = process.env): { path: string; from: string } {
  if (flags.kubeconfig) return { path: flags.kubeconfig, from: "--kubeconfig" };
  const fromEnv = firstKubeconfigEntry(env);
  if (fromEnv) return { path: fromEnv, from: "$KUBECONFIG" };
  return { path: defaultKubeconfigPath(env), from: "the default location" };
}

export function connect(flags: GlobalFlags, streams: { out?: Output; err?: Output } = {}): Session {
  const { path, from } = kubeconfigPath(flags);
  if (!existsSync(path)) {
    throw new CliError(
      from === "the default location"
        ? `no kubeconfig at ${path}: start the control plane with "slipway up", or name a kubeconfig with --kubeconfig or $KUBECONFIG`
        : `the kubeconfig ${path} (from ${from}) does not exist`,
    );
  }
  let client: KubeClient;
  try {
    client = KubeClient.fromKubeconfig(readFileSync(path, "utf8"));
  } catch (error) {
    if (error instanceof KubeconfigError) throw new CliError(`cannot use the kubeconfig ${path}: ${error.message}`, { cause: error });
    throw error;
  }
  return { client, namespace: flags.namespace || client.namespace, kubeconfigPath: path, out: streams.out ?? process.stdout, err: streams.err ?? process.stderr };
}

/** Runs a command with a session and closes its connections afterwards, so that the process can end. */
export async function withSession<T>(command: Command, run: (session: Session) => Promise<T>): Promise<T> {
  const session = connect(command.optsWithGlobals<GlobalFlags>());
  try {
    return await run(session);
  } finally {
    session.client.close();
  }
}

/** The resource a user names (`cl`, `clusters`, `cluster.slipway.dev`), or a one-line error. */
export async function findResource(session: Session, name: string): Promise<ApiResource> {
  try {
    return await session.client.findResource(name);
  } catch (error) {
    if (error instanceof KubeNotFoundError) throw new CliError(`the server doesn't have a resource type "${name}"`, { cause: error });
    throw error;
  }
}

/** The URL path of an object (or, without a name, its collection) of a resource in the session's namespace. */
export function objectPath(session: Session, resource: ApiResource, name?: string, options: { allNamespaces?: boolean; subresource?: string } = {}): Promise<string> {
  return session.client.resourcePath({
    apiVersion: resource.apiVersion,
    kind: resource.kind,
    ...(resource.namespaced && !options.allNamespaces ? { namespace: session.namespace } : {}),
    ...(name === undefined ? {} : { name }),
    ...(options.subresource === undefined ? {} : { subresource: options.subresource }),
  });
}
