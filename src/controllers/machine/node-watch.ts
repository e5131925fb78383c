// One watch of the nodes of each workload cluster (list, then watch: LiveCollection), shared by the
// cluster's machines: a machine reads its node from it instead of asking the cluster's API for it on
// every check, and a node that joins, turns Ready or not Ready, changes version or goes requeues its
// machines at once. A cluster's watch starts when one of its machines first looks for its node, with
// the client the machine would have asked; it starts again with the new client when the cluster's
// kubeconfig changes, and stops when the cluster has no machines left. While a watch is not current
// (not listed yet, or its cluster's API does not answer) the machine asks for its node as before.
import { LiveCollection, type KubeClient, type KubeUnreachableError } from "../../kubeclient/index.ts";
import type { EventSource } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import { nodeIsReady, type WorkloadNode } from "./node.ts";

export interface NodeWatchOptions {
  /** The keys of the machines whose node is `node` in the cluster `<namespace>/<cluster>`. */
  machinesOf: (clusterKey: string, node: string) => readonly string[];
  enqueue: (key: string) => void;
  onRetry?: (clusterKey: string, error: KubeUnreachableError) => void;
  /** Told when a cluster's watch starts: its client is to be kept open while it runs. */
  onStart?: (namespace: string, cluster: string) => void;
  /** Told when a cluster's watch stops. */
  onStop?: (namespace: string, cluster: string) => void;
}

interface ClusterNodes {
  namespace: string;
  cluster: string;
  client: KubeClient;
  nodes: LiveCollection<WorkloadNode>;
  /** Listed, and its watch not broken since. */
  current: boolean;
  /** What machines read of each node, as last seen: a change of it requeues them. */
  seen: Map<string, string>;
}

/**
 * What a machine reads of its node (findNode, observeNode): its name, uid, provider ID, Ready condition
 * and kubelet version. A watch keeps only that of each node — the rest (images, capacity, addresses, the
 * other conditions) is most of a node's size, held for every node of every cluster.
 */
export function nodeAsRead(node: WorkloadNode): WorkloadNode {
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  const kubeletVersion = node.status?.nodeInfo?.kubeletVersion;
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: node.metadata.name, uid: node.metadata.uid, resourceVersion: node.metadata.resourceVersion },
    ...(node.spec?.providerID ? { spec: { providerID: node.spec.providerID } } : {}),
    status: { ...(ready ? { conditions: [ready] } : {}), ...(kubeletVersion ? { nodeInfo: { kubeletVersion } } : {}) },
  };
}

/** What a machine reads of its node; anything else (labels, addresses, heartbeats) requeues nothing. */
function fingerprint(node: WorkloadNode): string {
  return JSON.stringify([node.metadata.uid, node.spec?.providerID, nodeIsReady(node), node.status?.nodeInfo?.kubeletVersion]);
}

export class NodeWatch implements EventSource {
  private readonly clusters = new Map<string, ClusterNodes>();

  constructor(private readonly options: NodeWatchOptions) {}

  /**
   * The node `name` of a cluster as its watch holds it ({} when the cluster has no such node), or
   * undefined while the watch is not current: the caller asks the cluster's API. Starts the watch
   * through `client` if it is not running with it.
   */
  lookup(namespace: string, cluster: string, client: KubeClient, name: string): { node?: WorkloadNode } | undefined {
    const clusterKey = keyFor(namespace, cluster);
    let entry = this.clusters.get(clusterKey);
    if (entry && entry.client !== client) {
      this.forget(namespace, cluster);
      entry = undefined;
    }
    if (!entry) entry = this.open(namespace, cluster, client);
    if (!entry.current) return undefined;
    const node = entry.nodes.items.get(name);
    return node ? { node } : {};
  }

  /** Whether a cluster's nodes are watched now (and the watch is current). */
  watching(namespace: string, cluster: string): boolean {
    return this.clusters.get(keyFor(namespace, cluster))?.current ?? false;
  }

  /** Stops a cluster's watch (its machines are gone). */
  forget(namespace: string, cluster: string): void {
    const clusterKey = keyFor(namespace, cluster);
    const entry = this.clusters.get(clusterKey);
    if (entry) this.end(clusterKey, entry);
  }

  start(): void {}

  /** Stops every watch (the controller stops). */
  stop(): void {
    for (const [clusterKey, entry] of [...this.clusters]) this.end(clusterKey, entry);
  }

  private end(clusterKey: string, entry: ClusterNodes): void {
    if (this.clusters.get(clusterKey) !== entry) return;
    this.clusters.delete(clusterKey);
    entry.nodes.stop();
    this.options.onStop?.(entry.namespace, entry.cluster);
  }

  private open(namespace: string, cluster: string, client: KubeClient): ClusterNodes {
    const clusterKey = keyFor(namespace, cluster);
    const entry: ClusterNodes = {
      namespace,
      cluster,
      client,
      current: false,
      seen: new Map(),
      nodes: new LiveCollection<WorkloadNode>(
        client,
        "/api/v1/nodes",
        {},
        () => {
          entry.current = true;
          this.changed(clusterKey, entry);
        },
        (error) => {
          entry.current = false;
          this.options.onRetry?.(clusterKey, error);
        },
        { keep: nodeAsRead },
      ),
    };
    this.clusters.set(clusterKey, entry);
    this.options.onStart?.(namespace, cluster);
    // A watch that cannot start (the API does not answer yet) or ends with an error is dropped: the next
    // machine that looks for its node starts it again.
    const drop = () => this.end(clusterKey, entry);
    entry.nodes.start().then(
      ({ watching }) => {
        if (this.clusters.get(clusterKey) !== entry) return;
        entry.current = true;
        this.changed(clusterKey, entry);
        watching.then(drop, drop);
      },
      drop,
    );
    return entry;
  }

  /** Requeues the machines of every node whose fingerprint changed, appeared or went. */
  private changed(clusterKey: string, entry: ClusterNodes): void {
    const touched: string[] = [];
    for (const [name, node] of entry.nodes.items) {
      const print = fingerprint(node);
      if (entry.seen.get(name) === print) continue;
      entry.seen.set(name, print);
      touched.push(name);
    }
    for (const name of entry.seen.keys()) {
      if (entry.nodes.items.has(name)) continue;
      entry.seen.delete(name);
      touched.push(name);
    }
    for (const name of touched) for (const key of this.options.machinesOf(clusterKey, name)) this.options.enqueue(key);
  }
}
