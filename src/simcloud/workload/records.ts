// What the workload emulator remembers beside the clusters' own objects: each cluster (its CA, serving
// certificate, endpoint, network) and each machine running kubeadm (its plan, its progress, its next
// step and when it is due). Kept in memory with indexes, written through to the store so a restarted
// emulator resumes where it stopped.
import type { KeyPairPem } from "../../bootstrap/pki.ts";
import { KeyExistsError, KeyNotFoundError, RevisionMismatchError, type Store } from "../../store/store.ts";
import type { EtcdRecord } from "./etcd.ts";
import type { KubeadmPlan, NodeSoftware, OidcSettings } from "./kubeadm-plan.ts";

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
  /**
   * Digests of the other keys every control-plane machine must share (SHA-256 of the public key): the
   * front-proxy CA, the etcd CA and the service-account key.
   */
  shared?: { frontProxyCa: string; etcdCa: string; serviceAccount: string };
  /** Names and addresses the API server's certificate is valid for. */
  servingNames: { dnsNames: string[]; ipAddresses: string[] };
  /** The API server's certificate, issued by the CA when a client first connects. */
  serving?: KeyPairPem;
  createdAt: string;
  /** /24s of the pod range handed to nodes so far. */
  podCidrsAllocated: number;
  /** The OpenID Connect issuer whose ID tokens the API server accepts (kubeadm's apiServer oidc-* flags). */
  oidc?: OidcSettings;
  /** The control plane's etcd: its members and how membership and health went (etcd.ts). */
  etcd?: EtcdRecord;
  /**
   * The Lease kube-system/slipway-control-plane-join: the control-plane machine whose join goes on now
   * (`slipway-join-turn`), until when at the latest. Free once its holder joined, failed or is gone.
   */
  joinLease?: { holder: string; instanceId: string; until: number };
}

/**
 * pending: kubeadm has not run yet; starting: `kubeadm init` brought the API server up and goes on
 * through the control-plane endpoint; waiting: `kubeadm join` retries discovery; joined: the node is
 * registered; failed: kubeadm gave up (the machine runs on without a node); lost: the node's machine is
 * gone and its node is about to be removed.
 */
export type MachineState = "pending" | "starting" | "waiting" | "joined" | "failed" | "lost";

/**
 * init: kubeadm init up to a running API server; upload: init's phases through the control-plane
 * endpoint; join: discovery and the join; fail: kubeadm gives up after waiting for the kubelet; ready:
 * the network plugin's pod on the node started; silent: the node-monitor grace period of a machine that
 * stopped ran out; remove: the node of a vanished machine is deleted; promote: a control-plane join's etcd
 * learner caught up and is promoted, and the join ends. ("give-up" is kept for records of earlier
 * versions: a join attempt.)
 */
export type MachineAction = "init" | "upload" | "join" | "give-up" | "fail" | "ready" | "silent" | "remove" | "promote";

export interface MachineRecord {
  instanceId: string;
  account: string;
  region: string;
  zone: string;
  networkId: string;
  machineType: string;
  vcpus: number;
  memoryMiB: number;
  privateIp: string;
  publicIp?: string;
  /** What the machine installed: the kubelet's version and the container runtime, as its node reports them. */
  software?: NodeSoftware;
  /** The API server's port on a control-plane machine. */
  bindPort?: number;
  /** Since when its API server answers (epoch ms of the cloud's clock). */
  servingSince?: number;
  /** Since when the machine is down (stopping, stopped or terminated): its kubelet posts nothing. */
  silentSince?: number;
  /** The instance is terminated: its node goes once the node monitor notices. */
  terminated?: boolean;
  /** The last error kubeadm met trying the control-plane endpoint (discovery, or init's later phases). */
  lastError?: string;
  /** Lines kubeadm prints when the kubelet it waits for never comes up. */
  pendingFailure?: string[];
  role: "init" | "control-plane" | "worker";
  nodeName: string;
  endpoint: string;
  state: MachineState;
  /** The plan read from the user data, until the machine joined or failed. */
  plan?: KubeadmPlan;
  /** Lines kubeadm prints when it runs (a configuration it refused). */
  failure?: string[];
  clusterId?: string;
  /** A machine of another cloud that joined through the public network (public-join.ts): its instance is not in this cloud. */
  guest?: boolean;
  /** The next step and when it is due (epoch ms of the cloud's clock). */
  due?: { action: MachineAction; at: number };
  /** Since when kubeadm tries the control-plane endpoint (epoch ms): discovery, or init's later phases. */
  waitingSince?: number;
  /** The user data waits for the control plane's join turn (`slipway-join-turn`) before `kubeadm join`, and has not had it yet. */
  awaitsTurn?: boolean;
  /** The cluster whose etcd holds this machine's member as a learner while its control-plane join goes on. */
  joining?: string;
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
  private readonly byServerName = new Map<string, string>();
  private readonly machinesByCluster = new Map<string, Set<string>>();
  /** Machines trying a control-plane endpoint, by the endpoint's host. */
  private readonly waiting = new Map<string, Set<string>>();
  /** Machines by address: "<network>/<private IP>" and "public/<public IP>". */
  private readonly byAddress = new Map<string, Set<string>>();
  /** Where each machine is indexed (records change in place, so the previous state is kept here). */
  private readonly indexedAs = new Map<string, { clusterId?: string; waitingOn?: string; addresses: string[] }>();
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

  clusterServedAs(serverName: string): ClusterRecord | undefined {
    const id = this.byServerName.get(serverName);
    return id === undefined ? undefined : this.clusters.get(id);
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

  /** Machines trying a control-plane endpoint on `host` (a load balancer's name or an address). */
  waitingOn(host: string): MachineRecord[] {
    return [...(this.waiting.get(host) ?? [])].map((id) => this.machines.get(id)).filter((m): m is MachineRecord => m !== undefined);
  }

  /**
   * The machine at an address, as seen from a network: its private address there, or a public address.
   * From outside the cloud (no network) a private address of any network is found too: the emulator's
   * port stands in for a route into the network.
   */
  machineAt(address: string, networkId: string | undefined): MachineRecord | undefined {
    const keys = networkId === undefined ? [`public/${address}`, `any/${address}`] : [`${networkId}/${address}`, `public/${address}`];
    for (const key of keys) {
      for (const id of this.byAddress.get(key) ?? []) {
        const machine = this.machines.get(id);
        if (machine) return machine;
      }
    }
    return undefined;
  }

  saveCluster(cluster: ClusterRecord): Promise<void> {
    this.indexCluster(cluster);
    return this.clusterTable.save(cluster.id, () => this.clusters.get(cluster.id));
  }

  removeCluster(id: string): Promise<void> {
    const cluster = this.clusters.get(id);
    if (cluster) {
      this.clusters.delete(id);
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
    this.byServerName.set(cluster.serverName, cluster.id);
  }

  private indexMachine(machine: MachineRecord): void {
    const id = machine.instanceId;
    this.unindexMachine(id);
    this.machines.set(id, machine);
    const waitingOn = machine.state === "waiting" || machine.state === "starting" ? hostOf(machine.endpoint) : undefined;
    const addresses = [`${machine.networkId}/${machine.privateIp}`, `any/${machine.privateIp}`, ...(machine.publicIp ? [`public/${machine.publicIp}`] : [])];
    if (machine.clusterId) addTo(this.machinesByCluster, machine.clusterId, id);
    if (waitingOn) addTo(this.waiting, waitingOn, id);
    for (const address of addresses) addTo(this.byAddress, address, id);
    this.indexedAs.set(id, { clusterId: machine.clusterId, waitingOn, addresses });
  }

  private unindexMachine(id: string): void {
    const indexed = this.indexedAs.get(id);
    if (!indexed) return;
    if (indexed.clusterId) removeFrom(this.machinesByCluster, indexed.clusterId, id);
    if (indexed.waitingOn) removeFrom(this.waiting, indexed.waitingOn, id);
    for (const address of indexed.addresses) removeFrom(this.byAddress, address, id);
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

/** "host:port" → port. */
export function portOf(endpoint: string): number {
  return Number(endpoint.slice(endpoint.lastIndexOf(":") + 1));
}
