// The `ssh` provider: machines on hosts one already has (Host objects labelled with the Connection),
// reached over SSH. It offers the machines capability only — hosts are not created, they are claimed: a
// "create" claims a free, reachable host for the cluster named in the tags and bootstraps it with the
// user data (bootstrap.ts); a "delete" cleans the host back to how it was found (steps.ts) and releases
// it. A host is never claimed twice: the claim is recorded on the Host, fenced against other writers.
// The contract's rules hold: the same token gets the same host, claims carry the tags, a host already
// released is NotFound (success), failures are classified, and user data and keys never come back.
// Without a cloud load balancer, it serves each cluster's control-plane endpoint itself (`endpoints`): a
// host is reserved for it before any machine exists, the machine whose user data runs `kubeadm init` is
// placed there, and haproxy on it fronts the control plane's API servers (haproxy.ts).
import {
  ProviderError,
  type ControlPlaneEndpoints,
  type CreateOptions,
  type EndpointMember,
  type InstanceInfo,
  type Machines,
  type Provider,
  type ResourceSpecs,
  type Tags,
} from "../provider.ts";
import { bootstrapHost, type BootstrapControl } from "./bootstrap.ts";
import { API_LOAD_BALANCER_PORT, ensureApiLoadBalancer } from "./haproxy.ts";
import { HostTakenError, isClaimable, type HostClaimRecord, type HostDirectory, type HostRecord } from "./hosts.ts";
import { bootstrapPlan, type BootstrapPlan } from "./plan.ts";
import { HostPools } from "./pools.ts";
import { SshError, withSession, type SshTarget } from "./session.ts";
import { StepFailedError, cleanHost } from "./steps.ts";

export const SSH_PROVIDER = "ssh";
/** The one machine type: a whole host, whatever it has (its facts are on the Host). */
export const HOST_MACHINE_TYPE = "host";
/**
 * The tag of a host reserved to serve a cluster's control-plane endpoint: the reservation's token. It stays
 * on the claim when the cluster's first control plane takes the host, so the reservation is found again.
 */
export const TAG_API_ENDPOINT = "slipway.dev/api-endpoint";
const TAG_CLUSTER = "slipway.dev/cluster";
const TAG_CLUSTER_UID = "slipway.dev/cluster-uid";

interface Job {
  token: string;
  control: BootstrapControl;
  state: "running" | "done" | "failed" | "retry";
  failure?: { code: string; message: string };
  lines: string[];
  running: Promise<void>;
}

interface Cleanup {
  state: "running" | "done" | "failed";
  message?: string;
  running: Promise<void>;
}

export interface SshProviderOptions {
  /** Pause between two looks at a running bootstrap unit (default 500 ms). */
  pollMs?: number;
  /** How long a login may take (default 10 s). */
  connectTimeoutMs?: number;
}

function matches(tags: Tags, wanted: Tags): boolean {
  return Object.entries(wanted).every(([k, v]) => tags[k] === v);
}

/** A reservation no machine has taken yet. */
function isBareReservation(claim: HostClaimRecord): boolean {
  return !claim.releasing && claim.token === claim.tags[TAG_API_ENDPOINT];
}

export class SshProvider implements Provider, Machines, ControlPlaneEndpoints {
  readonly provider = SSH_PROVIDER;
  readonly capabilities = { machines: this, poolInfrastructure: new HostPools(this) };
  /** The control-plane endpoint is haproxy on a host reserved for it (haproxy.ts). */
  readonly endpoints: ControlPlaneEndpoints = this;
  private readonly jobs = new Map<string, Job>();
  private readonly cleanups = new Map<string, Cleanup>();

  constructor(
    private readonly directory: HostDirectory,
    /** namespace/name of the Connection. */
    private readonly connection: string,
    readonly region: string,
    private readonly options: SshProviderOptions = {},
  ) {}

  private target(host: HostRecord): SshTarget {
    if (!host.target.privateKey) throw new ProviderError("permission", `host ${host.name}: ${host.keyProblem ?? "no SSH key"}`);
    return { ...host.target, privateKey: host.target.privateKey };
  }

  /** The Connection's hosts as they are now, for validation before anything is claimed. */
  hostRecords(): Promise<HostRecord[]> {
    return this.directory.hosts(this.connection);
  }

  private async host(id: string): Promise<HostRecord | undefined> {
    return (await this.directory.hosts(this.connection)).find((h) => h.name === id);
  }

  private view(host: HostRecord): InstanceInfo {
    const job = this.jobs.get(host.name);
    const cleanup = this.cleanups.get(host.name);
    let state: InstanceInfo["state"] = "pending";
    let cloudState = "claimed";
    if (host.claim?.releasing) {
      state = "deleting";
      cloudState = cleanup?.state === "failed" ? "cleanup-failed" : "cleaning";
    } else if (job?.state === "done") {
      state = "ready";
      cloudState = "bootstrapped";
    } else if (job?.state === "failed") {
      state = "failed";
      cloudState = "bootstrap-failed";
    } else if (job) {
      cloudState = "bootstrapping";
    }
    return {
      id: host.name,
      kind: "instance",
      state,
      cloudState,
      tags: { ...(host.claim?.tags ?? {}) },
      zone: this.region,
      privateIp: host.target.address,
      providerId: `${SSH_PROVIDER}://${this.connection}/${host.name}`,
      ...(host.claim ? { createdAt: host.claim.claimedAt } : {}),
      ...(state === "failed" && job?.failure ? { reason: job.failure } : {}),
      ...(state === "deleting" && cleanup?.state === "failed" ? { reason: { code: "CleanupFailed", message: cleanup.message ?? "" } } : {}),
    };
  }

  /** Starts (or resumes, after a restart, from the scripts on the host) the bootstrap of a claimed host. */
  private bootstrap(host: HostRecord, plan: BootstrapPlan | undefined): void {
    const existing = this.jobs.get(host.name);
    if (existing && existing.token === host.claim?.token && existing.state !== "retry") return;
    const job: Job = { token: host.claim?.token ?? "", control: { cancelled: false, pollMs: this.options.pollMs ?? 500 }, state: "running", lines: existing?.lines ?? [], running: Promise.resolve() };
    const target = this.target(host);
    job.running = bootstrapHost(target, plan, (line) => job.lines.push(line), job.control).then(
      () => {
        job.state = job.control.cancelled ? "failed" : "done";
      },
      (error: unknown) => {
        if (error instanceof StepFailedError) {
          job.state = "failed";
          job.failure = { code: "BootstrapFailed", message: error.message };
        } else if (error instanceof SshError && error.reason !== "Unreachable") {
          job.state = "failed";
          job.failure = { code: error.reason, message: error.message };
        } else {
          // The host did not answer: the next look tries again from where the host is.
          job.state = "retry";
          job.lines.push(`lost contact: ${(error as Error).message}`);
        }
        if (job.failure) job.lines.push(job.failure.message);
      },
    );
    this.jobs.set(host.name, job);
  }

  async create(_kind: "instance", spec: ResourceSpecs["instance"], options: CreateOptions): Promise<InstanceInfo> {
    if (spec.machineType !== HOST_MACHINE_TYPE) throw new ProviderError("invalid", `claim a host: machine type ${spec.machineType} is not offered (offered: ${HOST_MACHINE_TYPE})`);
    if (spec.zone !== this.region) throw new ProviderError("invalid", `claim a host: zone ${spec.zone} does not exist (the hosts of ${this.connection} are in zone ${this.region})`);
    const plan = bootstrapPlan(spec.userData);
    const hosts = await this.directory.hosts(this.connection);
    const mine = hosts.find((h) => h.claim?.token === options.token && !h.claim.releasing);
    if (mine) {
      if (!this.jobs.has(mine.name)) this.bootstrap(mine, plan);
      return this.view(mine);
    }
    // The machine that initialises the cluster goes to the host reserved for the cluster's endpoint.
    if (plan.unitCommand && /^(sudo\s+)?kubeadm\s+init\b/.test(plan.unitCommand.trim())) {
      const reserved = hosts.find((h) => h.claim && isBareReservation(h.claim) && this.sameCluster(h.claim.tags, options.tags));
      if (reserved?.claim) {
        const claim = { token: options.token, tags: { ...options.tags, [TAG_API_ENDPOINT]: reserved.claim.token }, claimedAt: new Date().toISOString() };
        try {
          await this.directory.transfer(this.connection, reserved.name, reserved.claim.token, claim);
        } catch (error) {
          throw new ProviderError("transient", `take the host ${reserved.name} reserved for the endpoint: ${(error as Error).message}`, { cause: error });
        }
        const claimed = { ...reserved, claim };
        this.jobs.delete(reserved.name);
        this.bootstrap(claimed, plan);
        return this.view(claimed);
      }
    }
    const claimed = await this.claimFree(hosts, { token: options.token, tags: { ...options.tags }, claimedAt: new Date().toISOString() });
    this.jobs.delete(claimed.name);
    this.bootstrap(claimed, plan);
    return this.view(claimed);
  }

  /** Claims one of `hosts` with `claim` and starts bootstrapping it with `userData` (for pools of hosts, pools.ts). */
  async claimOneOf(hosts: HostRecord[], claim: HostClaimRecord, userData: string): Promise<InstanceInfo> {
    const claimed = await this.claimFree(hosts, claim);
    this.jobs.delete(claimed.name);
    this.bootstrap(claimed, bootstrapPlan(userData));
    return this.view(claimed);
  }

  private sameCluster(a: Tags, b: Tags): boolean {
    return a[TAG_CLUSTER] === b[TAG_CLUSTER] && a[TAG_CLUSTER_UID] === b[TAG_CLUSTER_UID];
  }

  /** Claims the first free, reachable host with a pinned key; a capacity error names why each host cannot serve. */
  private async claimFree(hosts: HostRecord[], claim: HostClaimRecord): Promise<HostRecord & { claim: HostClaimRecord }> {
    // The tag is "<namespace>/<name>"; a Host names the cluster in its own namespace.
    const cluster = (claim.tags[TAG_CLUSTER] ?? "").split("/").pop() ?? "";
    for (const host of hosts.filter(isClaimable)) {
      try {
        await this.directory.claim(this.connection, host.name, claim, cluster);
      } catch (error) {
        if (error instanceof HostTakenError) continue;
        throw new ProviderError("transient", `claim host ${host.name}: ${(error as Error).message}`, { cause: error });
      }
      return { ...host, claim };
    }
    throw new ProviderError("capacity", `claim a host: no free reachable host in ${this.connection} (${this.describeHosts(hosts)})`);
  }

  // ---- the control-plane endpoint ----

  async reserve(options: CreateOptions): Promise<{ id: string; host: string; port: number }> {
    const hosts = await this.directory.hosts(this.connection);
    const held = hosts.find((h) => h.claim && !h.claim.releasing && (h.claim.token === options.token || h.claim.tags[TAG_API_ENDPOINT] === options.token));
    const host = held ?? (await this.claimFree(hosts, { token: options.token, tags: { ...options.tags, [TAG_API_ENDPOINT]: options.token }, claimedAt: new Date().toISOString() }));
    return { id: host.name, host: host.target.address, port: API_LOAD_BALANCER_PORT };
  }

  async setMembers(id: string, members: EndpointMember[]): Promise<void> {
    const host = await this.host(id);
    if (!host?.claim || host.claim.releasing) throw new ProviderError("notFound", `host ${id} serves no endpoint in ${this.connection}`);
    try {
      await withSession(this.target(host), (session) => ensureApiLoadBalancer(session, { members }), { timeoutMs: this.options.connectTimeoutMs ?? 10_000 });
    } catch (error) {
      if (error instanceof StepFailedError) throw new ProviderError("invalid", error.message, { cause: error });
      throw new ProviderError("transient", `serve the endpoint on host ${id}: ${(error as Error).message}`, { cause: error });
    }
  }

  async release(id: string, token: string): Promise<void> {
    const host = await this.host(id);
    if (host?.claim?.token === token && isBareReservation(host.claim)) await this.directory.release(this.connection, id, token);
  }

  /** Why each host cannot be claimed, for the capacity message. */
  private describeHosts(hosts: HostRecord[]): string {
    if (hosts.length === 0) return `no Host is labelled slipway.dev/connection=${this.connection.split("/")[1]}`;
    return hosts
      .map((h) => {
        if (h.claim) return `${h.name}: used by cluster ${h.claim.tags["slipway.dev/cluster"] ?? "?"}`;
        if (h.heldAs) return `${h.name}: the same machine is used as ${h.heldAs}`;
        if (!h.target.privateKey) return `${h.name}: ${h.keyProblem ?? "no SSH key"}`;
        if (!h.reachable) return `${h.name}: ${h.unreachableReason ?? "not checked yet"}`;
        return `${h.name}: no pinned host key yet`;
      })
      .join("; ");
  }

  async get(_kind: "instance", id: string): Promise<InstanceInfo | undefined> {
    const host = await this.host(id);
    if (!host?.claim) return undefined;
    if (host.claim.releasing) this.clean(host);
    else {
      const job = this.jobs.get(host.name);
      if (!job || job.token !== host.claim.token || job.state === "retry") this.bootstrap(host, undefined);
    }
    return this.view(host);
  }

  async findTagged(_kind: "instance", tags: Tags): Promise<InstanceInfo[]> {
    const hosts = await this.directory.hosts(this.connection);
    return hosts.filter((h) => h.claim && matches(h.claim.tags, tags)).map((h) => this.view(h));
  }

  async delete(_kind: "instance", id: string): Promise<void> {
    const host = await this.host(id);
    if (!host?.claim) return;
    if (!host.claim.releasing) await this.directory.markReleasing(this.connection, host.name, host.claim.token);
    this.clean({ ...host, claim: { ...host.claim, releasing: true } });
  }

  /** Stops the bootstrap, cleans the host over SSH, then releases it; a failed cleanup is tried again on the next look. */
  private clean(host: HostRecord): void {
    const existing = this.cleanups.get(host.name);
    if (existing && existing.state !== "failed") return;
    const token = host.claim!.token;
    const cleanup: Cleanup = { state: "running", running: Promise.resolve() };
    const job = this.jobs.get(host.name);
    if (job) job.control.cancelled = true;
    cleanup.running = (async () => {
      await job?.running;
      await withSession(this.target(host), cleanHost, { timeoutMs: this.options.connectTimeoutMs ?? 10_000 });
      await this.directory.release(this.connection, host.name, token);
      this.jobs.delete(host.name);
    })().then(
      () => {
        cleanup.state = "done";
        this.cleanups.delete(host.name);
      },
      (error: unknown) => {
        cleanup.state = "failed";
        cleanup.message = `cleaning host ${host.name}: ${(error as Error).message}`;
      },
    );
    this.cleanups.set(host.name, cleanup);
  }

  async consoleOutput(id: string): Promise<string[]> {
    const host = await this.host(id);
    if (!host?.claim) throw new ProviderError("notFound", `host ${id} is not claimed in ${this.connection}`);
    return [...(this.jobs.get(id)?.lines ?? [])];
  }

  /** Waits for the bootstraps and cleanups in flight (for tests and shutdown). */
  async settle(): Promise<void> {
    await Promise.all([...this.jobs.values()].map((j) => j.running));
    await Promise.all([...this.cleanups.values()].map((c) => c.running));
  }
}
