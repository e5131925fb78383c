// Clients of the workload clusters' own Kubernetes APIs, made from each cluster's admin kubeconfig
// Secret (`<cluster>-kubeconfig`, key `value`) and kept while the Secret does not change.
import type { SecretObject } from "../api/kinds.ts";
import { secretKind } from "../api/core.ts";
import { KubeClient } from "../kubeclient/index.ts";
import type { Client } from "../runtime/client.ts";
import { names } from "./contract.ts";

export class WorkloadClients {
  private readonly clients = new Map<string, { version: string; client: KubeClient }>();

  constructor(private readonly client: Client) {}

  /** The client of a cluster's API, or undefined while its kubeconfig does not exist yet. */
  async forCluster(namespace: string, cluster: string): Promise<KubeClient | undefined> {
    const secret = await this.client.of<SecretObject>(secretKind).tryGet(namespace, names.kubeconfigSecret(cluster));
    const value = secret?.data?.value;
    if (!secret || !value) return undefined;
    const key = `${namespace}/${cluster}`;
    const cached = this.clients.get(key);
    if (cached && cached.version === secret.metadata.resourceVersion) return cached.client;
    cached?.client.close();
    const client = KubeClient.fromKubeconfig(Buffer.from(value, "base64").toString("utf8"), { timeoutMs: 10_000 });
    this.clients.set(key, { version: secret.metadata.resourceVersion ?? "", client });
    return client;
  }

  forget(namespace: string, cluster: string): void {
    const key = `${namespace}/${cluster}`;
    this.clients.get(key)?.client.close();
    this.clients.delete(key);
  }

  close(): void {
    for (const { client } of this.clients.values()) client.close();
    this.clients.clear();
  }
}
