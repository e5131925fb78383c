// kubeconfig files as kubectl reads and writes them: rendering one for a cluster, reading the
// connection details of its current context, and merging one into another.
import { parse, stringify } from "yaml";

export class KubeconfigError extends Error {
  override readonly name = "KubeconfigError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export interface KubeconfigOptions {
  clusterName: string;
  /** The API server URL, e.g. `https://127.0.0.1:6443`. */
  server: string;
  caCertPem: string;
  user: string;
  token?: string;
  clientCertPem?: string;
  clientKeyPem?: string;
  /** Context name; defaults to `user@clusterName`, as kubeadm names it. */
  context?: string;
  namespace?: string;
  /** The name to verify the server's certificate against (and send in SNI) when it differs from the URL's host. */
  tlsServerName?: string;
}

export interface KubeconfigConnection {
  contextName: string;
  server: string;
  caCertPem: string;
  token?: string;
  clientCertPem?: string;
  clientKeyPem?: string;
  namespace?: string;
  tlsServerName?: string;
}

interface NamedEntry {
  name: string;
  [field: string]: unknown;
}

export function renderKubeconfig(options: KubeconfigOptions): string {
  for (const field of ["clusterName", "server", "caCertPem", "user"] as const) {
    if (options[field].trim() === "") throw new KubeconfigError(`kubeconfig option ${field} must not be empty`);
  }
  const hasClientCert = options.clientCertPem !== undefined || options.clientKeyPem !== undefined;
  if (hasClientCert && (options.clientCertPem === undefined || options.clientKeyPem === undefined)) {
    throw new KubeconfigError("a client certificate needs both clientCertPem and clientKeyPem");
  }
  const user: Record<string, string> = {};
  if (options.token !== undefined) user.token = options.token;
  if (options.clientCertPem !== undefined && options.clientKeyPem !== undefined) {
    user["client-certificate-data"] = base64(options.clientCertPem);
    user["client-key-data"] = base64(options.clientKeyPem);
  }
  const contextName = options.context ?? `${options.user}@${options.clusterName}`;
  const context: Record<string, string> = { cluster: options.clusterName, user: options.user };
  if (options.namespace !== undefined) context.namespace = options.namespace;
  const cluster: Record<string, string> = { server: options.server, "certificate-authority-data": base64(options.caCertPem) };
  if (options.tlsServerName !== undefined) cluster["tls-server-name"] = options.tlsServerName;
  const document = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: options.clusterName, cluster }],
    users: [{ name: options.user, user }],
    contexts: [{ name: contextName, context }],
    "current-context": contextName,
    preferences: {},
  };
  return stringify(document, { lineWidth: 0 });
}

/**
 * The server, CA and credentials of a context (default: the current one). Only embedded data is
 * read: a kubeconfig naming files (`certificate-authority`, `client-certificate`) is refused.
 */
export function parseKubeconfig(text: string, options: { context?: string } = {}): KubeconfigConnection {
  const config = parseDocument(text);
  const contextName = options.context ?? optionalString(config["current-context"], "current-context");
  if (contextName === undefined || contextName === "") {
    throw new KubeconfigError("the kubeconfig has no current-context and no context was named");
  }
  const contextEntry = findEntry(config, "contexts", contextName);
  const context = section(contextEntry, "context", `context "${contextName}"`);
  const clusterName = requiredString(context.cluster, `context "${contextName}" cluster`);
  const userName = optionalString(context.user, `context "${contextName}" user`);
  const namespace = optionalString(context.namespace, `context "${contextName}" namespace`);

  const cluster = section(findEntry(config, "clusters", clusterName), "cluster", `cluster "${clusterName}"`);
  const server = requiredString(cluster.server, `cluster "${clusterName}" server`);
  if (cluster["certificate-authority"] !== undefined && cluster["certificate-authority-data"] === undefined) {
    throw new KubeconfigError(
      `cluster "${clusterName}" names a certificate-authority file; embed it instead (kubectl config view --flatten)`,
    );
  }
  const caData = requiredString(cluster["certificate-authority-data"], `cluster "${clusterName}" certificate-authority-data`);
  const result: KubeconfigConnection = { contextName, server, caCertPem: decodePem(caData, `cluster "${clusterName}" certificate-authority-data`) };
  const tlsServerName = optionalString(cluster["tls-server-name"], `cluster "${clusterName}" tls-server-name`);
  if (tlsServerName !== undefined && tlsServerName !== "") result.tlsServerName = tlsServerName;
  if (namespace !== undefined) result.namespace = namespace;

  if (userName !== undefined && userName !== "") {
    const user = section(findEntry(config, "users", userName), "user", `user "${userName}"`);
    const where = `user "${userName}"`;
    for (const fileField of ["client-certificate", "client-key", "tokenFile"]) {
      if (user[fileField] !== undefined) {
        throw new KubeconfigError(`${where} names a file in ${fileField}; embed it instead (kubectl config view --flatten)`);
      }
    }
    const token = optionalString(user.token, `${where} token`);
    if (token !== undefined) result.token = token;
    const certData = optionalString(user["client-certificate-data"], `${where} client-certificate-data`);
    const keyData = optionalString(user["client-key-data"], `${where} client-key-data`);
    if ((certData === undefined) !== (keyData === undefined)) {
      throw new KubeconfigError(`${where} needs both client-certificate-data and client-key-data`);
    }
    if (certData !== undefined && keyData !== undefined) {
      result.clientCertPem = decodePem(certData, `${where} client-certificate-data`);
      result.clientKeyPem = decodePem(keyData, `${where} client-key-data`);
    }
  }
  return result;
}

/**
 * Adds the clusters, users and contexts of `addedYaml` to `existingYaml`, replacing entries of the
 * same name and keeping all others. The existing current-context stays unless there is none.
 */
export function mergeKubeconfig(existingYaml: string | undefined, addedYaml: string): string {
  const added = parseDocument(addedYaml);
  const existing = existingYaml === undefined || existingYaml.trim() === "" ? emptyConfig() : parseDocument(existingYaml);
  const merged: Record<string, unknown> = { ...emptyConfig(), ...existing };
  for (const list of ["clusters", "users", "contexts"] as const) {
    const result = entries(existing, list);
    for (const entry of entries(added, list)) {
      const index = result.findIndex((candidate) => candidate.name === entry.name);
      if (index === -1) result.push(entry);
      else result[index] = entry;
    }
    merged[list] = result;
  }
  const current = existing["current-context"];
  if (typeof current !== "string" || current === "") {
    merged["current-context"] = added["current-context"] ?? "";
  }
  return stringify(merged, { lineWidth: 0 });
}

function emptyConfig(): Record<string, unknown> {
  return { apiVersion: "v1", kind: "Config", clusters: [], users: [], contexts: [], "current-context": "", preferences: {} };
}

function parseDocument(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = parse(text);
  } catch (error) {
    throw new KubeconfigError(`the kubeconfig is not valid YAML: ${(error as Error).message}`, { cause: error });
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new KubeconfigError("the kubeconfig is not a YAML mapping");
  }
  const config = value as Record<string, unknown>;
  if (config.kind !== undefined && config.kind !== "Config") {
    throw new KubeconfigError(`the kubeconfig has kind ${String(config.kind)}, expected Config`);
  }
  return config;
}

function entries(config: Record<string, unknown>, list: "clusters" | "users" | "contexts"): NamedEntry[] {
  const value = config[list];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new KubeconfigError(`the kubeconfig's ${list} is not a list`);
  return value.map((entry: unknown, index) => {
    if (entry === null || typeof entry !== "object" || typeof (entry as NamedEntry).name !== "string") {
      throw new KubeconfigError(`the kubeconfig's ${list}[${index}] has no name`);
    }
    return entry as NamedEntry;
  });
}

function findEntry(config: Record<string, unknown>, list: "clusters" | "users" | "contexts", name: string): NamedEntry {
  const entry = entries(config, list).find((candidate) => candidate.name === name);
  if (entry === undefined) throw new KubeconfigError(`the kubeconfig has no ${list.slice(0, -1)} named "${name}"`);
  return entry;
}

function section(entry: NamedEntry, field: string, where: string): Record<string, unknown> {
  const value = entry[field];
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new KubeconfigError(`${where} has no ${field} section`);
  }
  return value as Record<string, unknown>;
}

function optionalString(value: unknown, where: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new KubeconfigError(`${where} must be a string`);
  return value;
}

function requiredString(value: unknown, where: string): string {
  const text = optionalString(value, where);
  if (text === undefined || text === "") throw new KubeconfigError(`${where} is missing`);
  return text;
}

function base64(text: string): string {
  return Buffer.from(text, "utf8").toString("base64");
}

function decodePem(data: string, where: string): string {
  const compact = data.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) throw new KubeconfigError(`${where} is not base64`);
  const text = Buffer.from(compact, "base64").toString("utf8");
  if (!text.includes("-----BEGIN ")) throw new KubeconfigError(`${where} does not hold PEM data`);
  return text;
}
