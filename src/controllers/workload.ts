// Clients of the workload clusters' own Kubernetes APIs, made from each cluster's admin kubeconfig
// Secret (`<cluster>-kubeconfig`, key `value`) and kept while the Secret does not change. The Secret is
// read again at most every `recheckMs`: machines ask for their cluster's client on every reconcile, and
// reading (and decrypting) the Secret each time was a sizeable share of a large fleet's work. Clients
// not used for `idleMs` are closed.
import type { ClusterObject, SecretObject } from "../api/kinds.ts";
import { secretKind } from "../api/core.ts";
import { KubeApiError, KubeClient, KubeUnreachableError } from "../kubeclient/index.ts";
import type { Client } from "../runtime/client.ts";
import { systemClock, type Clock } from "../runtime/clock.ts";
import { names } from "../api/slipway/names.ts";

export interface WorkloadClientsOptions {
  clock?: Clock;
  /** How long a client is handed out before its Secret is read again. Default 30 s. */
  recheckMs?: number;
  /**
   * A client not asked for in this long is closed (its TLS context and kept-alive connections go), and
   * made again when needed. Default 2 minutes; a fleet of clusters at rest then holds no clients.
   */
  idleMs?: number;
  /** How long a request to a workload cluster may take (default 10 s). */
  timeoutMs?: number;
}

/**
 * What a failed request to a workload cluster says about the cluster, for a status message: it does not
 * answer, or it refused; undefined for any other error (a bug, to be retried as such).
 */
export function workloadProblem(error: unknown): string | undefined {
  if (error instanceof KubeUnreachableError) return `the cluster's API does not answer: ${error.message}`;
  if (error instanceof KubeApiError) return `the cluster's API refused: ${error.message}`;
  return undefined;
}

/** Where a cluster's kubeconfig is: a Secret of the cluster's namespace, and the key of its data. */
export interface KubeconfigSource {
  name: string;
  key: string;
}

export class WorkloadClients {
  private readonly clients = new Map<string, { version: string; client: KubeClient; checkedAt: number; usedAt: number }>();
  /** Clusters whose client a watch keeps open (see hold): not closed as idle. */
  private readonly held = new Map<string, number>();
  private readonly clock: Clock;
  private readonly recheckMs: number;
  private readonly idleMs: number;
  private readonly timeoutMs: number;
  private sweptAt: number;

  constructor(
    private readonly client: Client,
    options: WorkloadClientsOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.recheckMs = options.recheckMs ?? 30_000;
    this.idleMs = options.idleMs ?? 120_000;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.sweptAt = this.clock.now();
  }

  /**
   * The client of a cluster's API, or undefined while its kubeconfig does not exist yet. A registered
   * cluster's kubeconfig is in the Secret its registration names (`source`); a built one's in
   * `<cluster>-kubeconfig`. A kubeconfig that cannot be read throws (KubeconfigError).
   */
  async forCluster(namespace: string, cluster: string, source: KubeconfigSource = { name: names.kubeconfigSecret(cluster), key: "value" }): Promise<KubeClient | undefined> {
    const key = `${namespace}/${cluster}`;
    const now = this.clock.now();
    this.closeIdle(now);
    const cached = this.clients.get(key);
    if (cached) cached.usedAt = now;
    if (cached && now - cached.checkedAt < this.recheckMs) return cached.client;
    const secret = await this.client.of<SecretObject>(secretKind).tryGet(namespace, source.name);
    const value = secret?.data?.[source.key];
    if (!secret || !value) {
      this.forget(namespace, cluster);
      return undefined;
    }
    if (cached && cached.version === secret.metadata.resourceVersion) {
      cached.checkedAt = now;
      return cached.client;
    }
    cached?.client.close();
    const client = KubeClient.fromKubeconfig(Buffer.from(value, "base64").toString("utf8"), { timeoutMs: this.timeoutMs });
    this.clients.set(key, { version: secret.metadata.resourceVersion ?? "", client, checkedAt: now, usedAt: now });
    return client;
  }

  /** Closes the clients not asked for in `idleMs`; looks at most every tenth of that. */
  private closeIdle(now: number): void {
    if (now - this.sweptAt < this.idleMs / 10) return;
    this.sweptAt = now;
    for (const [key, entry] of this.clients) {
      if (now - entry.usedAt < this.idleMs || this.held.has(key)) continue;
      entry.client.close();
      this.clients.delete(key);
    }
  }

  /** Keeps a cluster's client open while a watch runs through it, however long it is not asked for. */
  hold(namespace: string, cluster: string): void {
    const key = `${namespace}/${cluster}`;
    this.held.set(key, (this.held.get(key) ?? 0) + 1);
  }

  /** Ends a hold: the client may be closed once idle again. */
  release(namespace: string, cluster: string): void {
    const key = `${namespace}/${cluster}`;
    const count = (this.held.get(key) ?? 0) - 1;
    if (count > 0) this.held.set(key, count);
    else this.held.delete(key);
  }

  /** Whether a watch keeps the cluster's client open now. */
  holds(namespace: string, cluster: string): boolean {
    return this.held.has(`${namespace}/${cluster}`);
  }

  /** Clients open now. */
  get size(): number {
    return this.clients.size;
  }

  /** The client of a cluster's API, built or registered (see forCluster). */
  forClusterObject(cluster: ClusterObject): Promise<KubeClient | undefined> {
    const ref = cluster.spec.registration?.kubeconfigSecretRef;
    const namespace = cluster.metadata.namespace!;
    const name = cluster.metadata.name!;
    return ref ? this.forCluster(namespace, name, { name: ref.name, key: ref.key ?? "value" }) : this.forCluster(namespace, name);
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
