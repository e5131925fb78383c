// What the workload emulator remembers beside the clusters' own objects: each cluster (its CA, serving
// certificate, endpoint, network) and each machine running kubeadm (its plan, its progress, its next
// step and when it is due). Kept in memory with indexes, written through to the store so a restarted
// emulator resumes where it stopped.
import type { KeyPairPem } from "../../bootstrap/pki.ts";
import type { CniName } from "../../bootstrap/cni.ts";
import { KeyExistsError, KeyNotFoundError, RevisionMismatchError, type Store } from "../../store/store.ts";
import type { KubeadmPlan } from "./kubeadm-plan.ts";

export interface ClusterRecord {
  /** The id in the API path /clusters/<id>: the id of the load balancer in front, or of the first machine. */
  id: string;
  name: string;
  /** kubeadm's controlPlaneEndpoint, host:port. */
  endpoint: string;
  /** The TLS server name clients use (the load balancer's DNS name, or the endpoint's host). */
  serverName: string;
  account: string;
  region: string;
  kubernetesVersion: string;
  podSubnet: string;
  serviceSubnet: string;
  dnsDomain: string;
  ca: KeyPairPem;
  /** Names and addresses the API server's certificate is valid for. */
  servingNames: { dnsNames: string[]; ipAddresses: string[] };
  /** The API server's certificate, issued by the CA when a client first connects. */
  serving?: KeyPairPem;
  createdAt: string;
  /** The network plugin, once its DaemonSet was applied. */
  cni?: CniName;
  /** /24s of the pod range handed to nodes so far. */
  podCidrsAllocated: number;
}

export type MachineState = "pending" | "waiting" | "joined" | "failed" | "lost";

export type MachineAction = "init" | "join" | "give-up" | "ready" | "remove";

export interface MachineRecord {
  instanceId: string;
  account: string;
  region: string;
  zone: string;
  machineType: string;
  vcpus: number;
  memoryMiB: number;
  privateIp: string;
  publicIp?: string;
  role: "init" | "control-plane" | "worker";
  nodeName: string;
  endpoint: string;
  state: MachineState;
  /** The plan read from the user data, until the machine joined or failed. */
  plan?: KubeadmPlan;
  /** Lines kubeadm prints when it runs (a configuration it refused). */
  failure?: string[];
  clusterId?: string;
  /** The next step and when it is due (epoch ms of the cloud's clock). */
  due?: { action: MachineAction; at: number };
  /** Since when a join waits for its control plane (epoch ms). */
  waitingSince?: number;
}

const CLUSTERS = "/emulator/clusters/";
const MACHINES = "/emulator/machines/";

/** JSON values under a prefix, written through in order per key. */
class RecordTable<T> {
  private readonly revisions = new Map<string, number>();
  private readonly writes = new Map<string, Promise<void>>();

  constructor(
    private readonly store: Store,
    private readonly prefix: string,
  ) {}

  async load(): Promise<T[]> {
    const out: T[] = [];
    let continueAfter: string | undefined;
    while (true) {
      const page = await this.store.list(this.prefix, { limit: 1000, continueAfter });
      for (const kv of page.items) {
        this.revisions.set(kv.key.slice(this.prefix.length), kv.modRevision);
        out.push(JSON.parse(kv.value) as T);
      }
      if (!page.more) return out;
      continueAfter = page.items[page.items.length - 1]?.key;
    }
  }

  /** Writes `value()` as it is when the write runs (later saves of the same key queue behind it). */
  save(id: string, value: () => T | undefined): Promise<void> {
    const previous = this.writes.get(id) ?? Promise.resolve();
    const next = previous.then(() => this.write(id, value()));
    const tracked = next.finally(() => {
      if (this.writes.get(id) === tracked) this.writes.delete(id);
    });
    this.writes.set(id, tracked);
    return next;
  }

  private async write(id: string, value: T | undefined): Promise<void> {
    const key = this.prefix + id;
    for (let attempt = 0; attempt < 5; attempt++) {
      const revision = this.revisions.get(id);
      try {
        if (value === undefined) {
          if (revision !== undefined) await this.store.delete(key);
          this.revisions.delete(id);
          return;
        }
        const text = JSON.stringify(value);
        const kv = revision === undefined ? await this.store.create(key, text) : await this.store.update(key, text, revision);
        this.revisions.set(id, kv.modRevision);
        return;
      } catch (error) {
        if (error instanceof KeyNotFoundError && value === undefined) {
          this.revisions.delete(id);
          return;
        }
        if (!(error instanceof KeyExistsError || error instanceof RevisionMismatchError || error instanceof KeyNotFoundError)) throw error;
        const current = await this.store.get(key);
        if (current) this.revisions.set(id, current.modRevision);
        else this.revisions.delete(id);
      }
    }
    throw new Error(`could not write ${key}: it keeps changing`);
  }

  /** Resolves when every queued write has landed. */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.writes.values()]);
  }
}

export class EmulatorRecords {
  private readonly clusters = new Map<string, ClusterRecord>();
  private readonly machines = new Map<string, MachineRecord>();
  private readonly byEndpoint = new Map<string, string>();
  /** Endpoints by their host (every port): joins look clusters up by host. */
  private readonly endpointsByHost = new Map<string, Set<string>>();
  private readonly byServerName = new Map<string, string>();
  private readonly machinesByCluster = new Map<string, Set<string>>();
  private readonly waiting = new Map<string, Set<string>>();
  /** Where each machine is indexed (records change in place, so the previous state is kept here). */
  private readonly indexedAs = new Map<string, { clusterId?: string; waitingOn?: string }>();
  private readonly clusterTable: RecordTable<ClusterRecord>;
  private readonly machineTable: RecordTable<MachineRecord>;

  constructor(store: Store) {
    this.clusterTable = new RecordTable(store, CLUSTERS);
    this.machineTable = new RecordTable(store, MACHINES);
  }

  async load(): Promise<void> {
    for (const cluster of await this.clusterTable.load()) this.indexCluster(cluster);
    for (const machine of await this.machineTable.load()) this.indexMachine(machine);
  }

  cluster(id: string): ClusterRecord | undefined {
    return this.clusters.get(id);
  }

  clusterAt(endpoint: string): ClusterRecord | undefined {
    const id = this.byEndpoint.get(endpoint);
    return id === undefined ? undefined : this.clusters.get(id);
  }

  clusterServedAs(serverName: string): ClusterRecord | undefined {
    const id = this.byServerName.get(serverName);
    return id === undefined ? undefined : this.clusters.get(id);
  }

  /** Clusters whose endpoint names `host` (on any port). */
  clustersOnHost(host: string): ClusterRecord[] {
    return [...(this.endpointsByHost.get(host) ?? [])].flatMap((endpoint) => this.clusterAt(endpoint) ?? []);
  }

  get clusterCount(): number {
    return this.clusters.size;
  }

  machine(instanceId: string): MachineRecord | undefined {
    return this.machines.get(instanceId);
  }

  allMachines(): MachineRecord[] {
    return [...this.machines.values()];
  }

  machinesOf(clusterId: string): MachineRecord[] {
    return [...(this.machinesByCluster.get(clusterId) ?? [])].map((id) => this.machines.get(id)).filter((m): m is MachineRecord => m !== undefined);
  }

  /** Machines waiting for a control plane at `endpoint` to come up. */
  waitingFor(endpoint: string): MachineRecord[] {
    return [...(this.waiting.get(endpoint) ?? [])].map((id) => this.machines.get(id)).filter((m): m is MachineRecord => m !== undefined);
  }

  saveCluster(cluster: ClusterRecord): Promise<void> {
    this.indexCluster(cluster);
    return this.clusterTable.save(cluster.id, () => this.clusters.get(cluster.id));
  }

  removeCluster(id: string): Promise<void> {
    const cluster = this.clusters.get(id);
    if (cluster) {
      this.clusters.delete(id);
      if (this.byEndpoint.get(cluster.endpoint) === id) {
        this.byEndpoint.delete(cluster.endpoint);
        const endpoints = this.endpointsByHost.get(hostOf(cluster.endpoint));
        endpoints?.delete(cluster.endpoint);
        if (endpoints?.size === 0) this.endpointsByHost.delete(hostOf(cluster.endpoint));
      }
      if (this.byServerName.get(cluster.serverName) === id) this.byServerName.delete(cluster.serverName);
    }
    return this.clusterTable.save(id, () => this.clusters.get(id));
  }

  saveMachine(machine: MachineRecord): Promise<void> {
    this.indexMachine(machine);
    return this.machineTable.save(machine.instanceId, () => this.machines.get(machine.instanceId));
  }

  removeMachine(instanceId: string): Promise<void> {
    this.unindexMachine(instanceId);
    this.machines.delete(instanceId);
    return this.machineTable.save(instanceId, () => this.machines.get(instanceId));
  }

  async flush(): Promise<void> {
    await Promise.all([this.clusterTable.flush(), this.machineTable.flush()]);
  }

  private indexCluster(cluster: ClusterRecord): void {
    this.clusters.set(cluster.id, cluster);
    this.byEndpoint.set(cluster.endpoint, cluster.id);
    const host = hostOf(cluster.endpoint);
    let endpoints = this.endpointsByHost.get(host);
    if (!endpoints) this.endpointsByHost.set(host, (endpoints = new Set()));
    endpoints.add(cluster.endpoint);
    this.byServerName.set(cluster.serverName, cluster.id);
  }

  private indexMachine(machine: MachineRecord): void {
    const id = machine.instanceId;
    this.unindexMachine(id);
    this.machines.set(id, machine);
    const waitingOn = machine.state === "waiting" ? machine.endpoint : undefined;
    if (machine.clusterId) addTo(this.machinesByCluster, machine.clusterId, id);
    if (waitingOn) addTo(this.waiting, waitingOn, id);
    this.indexedAs.set(id, { clusterId: machine.clusterId, waitingOn });
  }

  private unindexMachine(id: string): void {
    const indexed = this.indexedAs.get(id);
    if (!indexed) return;
    if (indexed.clusterId) removeFrom(this.machinesByCluster, indexed.clusterId, id);
    if (indexed.waitingOn) removeFrom(this.waiting, indexed.waitingOn, id);
    this.indexedAs.delete(id);
  }
}

function addTo(index: Map<string, Set<string>>, key: string, id: string): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(id);
}

function removeFrom(index: Map<string, Set<string>>, key: string, id: string): void {
  const set = index.get(key);
  set?.delete(id);
  if (set?.size === 0) index.delete(key);
}

/** "host:port" → "host". */
export function hostOf(endpoint: string): string {
  return endpoint.slice(0, endpoint.lastIndexOf(":"));
}
