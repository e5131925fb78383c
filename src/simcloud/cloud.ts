// The in-process sim cloud. `SimCloud` is the cloud for the default account plus its operator controls
// (faults, quotas, capacity, accounts, hooks); `forAccount` gives the same API for another account. Every
// call passes the account's throttling bucket and the fault injector before it runs.
import { createHash } from "node:crypto";
import pino, { type Logger } from "pino";
import { checkRegion, imagesOf, machineTypesOf, regions, zonesOf } from "./catalog.ts";
import { SystemClock, type Clock } from "./clock.ts";
import { CloudCore, type SimCloudHooks } from "./core.ts";
import { InternalError, InvalidParameterError } from "./errors.ts";
import type { FaultConfig } from "./faults.ts";
import { InstanceService } from "./instance-service.ts";
import { KeyPairService } from "./keypair-service.ts";
import { LoadBalancerService, type ConnectionSource, type LoadBalancerRoute } from "./loadbalancer-service.ts";
import { findOwned, hasTags, listOwned } from "./lookup.ts";
import { NetworkService } from "./network-service.ts";
import type { OperationName } from "./operations.ts";
import { profileNamed, type DelayName, type LatencyProfile, type ProfileName } from "./profiles.ts";
import { PublicIpService } from "./publicip-service.ts";
import { DEFAULT_QUOTA, DEFAULT_ZONE_CAPACITY } from "./quotas.ts";
import type { RecordOfKind } from "./records.ts";
import { QuotaLimitsPatchSchema, ResourceFilterSchema, checkInput, type QuotaLimitsPatch } from "./schemas.ts";
import { StateStore } from "./state.ts";
import type * as T from "./types.ts";
import { instanceView, loadBalancerView, subnetView, viewOf } from "./views.ts";

export const DEFAULT_ACCOUNT = "default";
export const DEFAULT_TOKEN = "sim-default-token";

export interface SimCloudOptions {
  /** State file; ":memory:" (the default) keeps nothing after close. */
  state?: string;
  /** Latency profile (default "instant"). */
  profile?: ProfileName;
  /** Multiplies every delay: 0.1 runs ten times faster (default 1). */
  timeScale?: number;
  /** Seed of ids, jitter and faults (default 1). A state file keeps its own sequence position. */
  seed?: number;
  faults?: FaultConfig;
  clock?: Clock;
  /** Bearer token of the default account (default "sim-default-token"). */
  defaultToken?: string;
  /** Further accounts and their bearer tokens. */
  accounts?: { id: string; token: string }[];
  /** Default limits per account and region (overridable at run time with setQuota). */
  quota?: Partial<T.QuotaLimits>;
  /** Instances of one machine type a zone holds, unless set with setCapacity (default 1000). */
  zoneCapacity?: number;
  /** How long terminated instances stay visible, in simulated milliseconds (default 60 000). */
  terminatedRetentionMs?: number;
  /** Throttling buckets; default the profile's, false for none. */
  rateLimits?: LatencyProfile["rateLimits"] | false;
  hooks?: SimCloudHooks;
  logger?: Logger;
}

interface Services {
  networks: NetworkService;
  keyPairs: KeyPairService;
  publicIps: PublicIpService;
  instances: InstanceService;
  loadBalancers: LoadBalancerService;
}

function tokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** The cloud as one account sees it. */
export class AccountCloud implements T.CloudApi {
  constructor(
    protected readonly core: CloudCore,
    protected readonly services: Services,
    readonly account: string,
  ) {}

  /** Throttling, then a drawn fault (before the change, or after it for some InternalErrors), then `run`. */
  private async call<R>(operation: OperationName, region: string | undefined, run: () => R): Promise<R> {
    if (this.core.isClosed) throw new InternalError("the sim cloud is shut down");
    this.core.limiter?.take(this.account, region ?? "global", operation);
    const fault = this.core.faults.draw(operation);
    if (fault && !fault.afterCommit) throw fault.error;
    const result = run();
    if (fault) throw fault.error;
    return result;
  }

  private getOne<K extends keyof RecordOfKind, V>(op: OperationName, region: string, kind: K, id: string, view: (r: RecordOfKind[K]) => V) {
    return this.call(op, region, () => view(findOwned(this.core, this.account, region, kind, id)));
  }

  private listMine<K extends keyof RecordOfKind, V>(op: OperationName, region: string, kind: K, filter: T.ListFilter | undefined, view: (r: RecordOfKind[K]) => V) {
    return this.call(op, region, () => listOwned(this.core, this.account, region, kind, filter).map(view));
  }

  private plain = <V>(record: RecordOfKind[keyof RecordOfKind]) => viewOf(this.core, record) as V;
  private subnet = (record: RecordOfKind["subnet"]) => subnetView(this.core, record);
  private loadBalancer = (record: RecordOfKind["loadBalancer"]) => loadBalancerView(this.core, record);

  describeRegions = () => this.call("describeRegions", undefined, () => regions().map((r) => ({ ...r, expectedDurationsMs: this.expectedDurations() })));

  /** The profile's mean of each duration a client may plan with, in real milliseconds. */
  private expectedDurations(): T.ExpectedDurations {
    const { profile, timeScale } = this.core;
    const mean = ([min, max]: readonly [number, number]) => Math.round(((min + max) / 2) * timeScale);
    return {
      networkCreate: mean(profile.networkCreate),
      subnetCreate: mean(profile.subnetCreate),
      securityGroupCreate: mean(profile.securityGroupCreate),
      loadBalancerProvision: mean(profile.loadBalancerProvision),
      targetHealthy: mean(profile.targetHealthy),
      instanceBoot: mean(profile.instanceBoot),
      kubeadmInit: mean(profile.kubeadmInit),
      kubeadmJoin: mean(profile.kubeadmJoin),
    };
  }
  describeZones = (region: string) => this.call("describeZones", region, () => zonesOf(region));
  describeMachineTypes = (region: string) => this.call("describeMachineTypes", region, () => machineTypesOf(region));
  describeImages = (region: string) => this.call("describeImages", region, () => imagesOf(region));

  getQuota(region: string): Promise<T.Quota> {
    return this.call("getQuota", region, () => {
      checkRegion(region);
      return this.core.quotas.quota(this.account, region);
    });
  }

  listResources(filter: T.ResourceFilter = {}): Promise<T.CloudResource[]> {
    return this.call("listResources", filter.region, () => {
      const { tags, region } = checkInput(ResourceFilterSchema, filter, "filter");
      if (region !== undefined) checkRegion(region);
      return this.core.state
        .everything()
        .filter((r) => r.account === this.account && (region === undefined || r.region === region) && hasTags(r.tags, tags))
        .map((r) => viewOf(this.core, r));
    });
  }

  createNetwork = (region: string, input: T.CreateNetworkInput) =>
    this.call("createNetwork", region, () => this.services.networks.createNetwork(this.account, region, input));
  getNetwork = (region: string, id: string) => this.getOne("getNetwork", region, "network", id, this.plain<T.Network>);
  listNetworks = (region: string, filter?: T.ListFilter) => this.listMine("listNetworks", region, "network", filter, this.plain<T.Network>);
  deleteNetwork = (region: string, id: string) =>
    this.call("deleteNetwork", region, () => this.services.networks.deleteNetwork(this.account, region, id));

  createSubnet = (region: string, input: T.CreateSubnetInput) =>
    this.call("createSubnet", region, () => this.services.networks.createSubnet(this.account, region, input));
  getSubnet = (region: string, id: string) => this.getOne("getSubnet", region, "subnet", id, this.subnet);
  listSubnets = (region: string, filter?: T.ListFilter) => this.listMine("listSubnets", region, "subnet", filter, this.subnet);
  deleteSubnet = (region: string, id: string) =>
    this.call("deleteSubnet", region, () => this.services.networks.deleteSubnet(this.account, region, id));

  createSecurityGroup = (region: string, input: T.CreateSecurityGroupInput) =>
    this.call("createSecurityGroup", region, () => this.services.networks.createSecurityGroup(this.account, region, input));
  getSecurityGroup = (region: string, id: string) =>
    this.getOne("getSecurityGroup", region, "securityGroup", id, this.plain<T.SecurityGroup>);
  listSecurityGroups = (region: string, filter?: T.ListFilter) =>
    this.listMine("listSecurityGroups", region, "securityGroup", filter, this.plain<T.SecurityGroup>);
  deleteSecurityGroup = (region: string, id: string) =>
    this.call("deleteSecurityGroup", region, () => this.services.networks.deleteSecurityGroup(this.account, region, id));

  createKeyPair = (region: string, input: T.CreateKeyPairInput) =>
    this.call("createKeyPair", region, () => this.services.keyPairs.createKeyPair(this.account, region, input));
  getKeyPair = (region: string, id: string) => this.getOne("getKeyPair", region, "keyPair", id, this.plain<T.KeyPair>);
  listKeyPairs = (region: string, filter?: T.ListFilter) => this.listMine("listKeyPairs", region, "keyPair", filter, this.plain<T.KeyPair>);
  deleteKeyPair = (region: string, id: string) =>
    this.call("deleteKeyPair", region, () => this.services.keyPairs.deleteKeyPair(this.account, region, id));

  createPublicIp = (region: string, input: T.CreatePublicIpInput) =>
    this.call("createPublicIp", region, () => this.services.publicIps.createPublicIp(this.account, region, input));
  getPublicIp = (region: string, id: string) => this.getOne("getPublicIp", region, "publicIp", id, this.plain<T.PublicIp>);
  listPublicIps = (region: string, filter?: T.ListFilter) => this.listMine("listPublicIps", region, "publicIp", filter, this.plain<T.PublicIp>);
  deletePublicIp = (region: string, id: string) =>
    this.call("deletePublicIp", region, () => this.services.publicIps.deletePublicIp(this.account, region, id));

  createInstance = (region: string, input: T.CreateInstanceInput) =>
    this.call("createInstance", region, () => this.services.instances.createInstance(this.account, region, input));
  getInstance = (region: string, id: string) => this.getOne("getInstance", region, "instance", id, instanceView);
  listInstances = (region: string, filter?: T.ListFilter) => this.listMine("listInstances", region, "instance", filter, instanceView);
  stopInstance = (region: string, id: string) =>
    this.call("stopInstance", region, () => this.services.instances.stopInstance(this.account, region, id));
  startInstance = (region: string, id: string) =>
    this.call("startInstance", region, () => this.services.instances.startInstance(this.account, region, id));
  terminateInstance = (region: string, id: string) =>
    this.call("terminateInstance", region, () => this.services.instances.terminateInstance(this.account, region, id));

  createLoadBalancer = (region: string, input: T.CreateLoadBalancerInput) =>
    this.call("createLoadBalancer", region, () => this.services.loadBalancers.createLoadBalancer(this.account, region, input));
  getLoadBalancer = (region: string, id: string) => this.getOne("getLoadBalancer", region, "loadBalancer", id, this.loadBalancer);
  listLoadBalancers = (region: string, filter?: T.ListFilter) =>
    this.listMine("listLoadBalancers", region, "loadBalancer", filter, this.loadBalancer);
  deleteLoadBalancer = (region: string, id: string) =>
    this.call("deleteLoadBalancer", region, () => this.services.loadBalancers.deleteLoadBalancer(this.account, region, id));
  registerTargets = (region: string, id: string, instanceIds: string[]) =>
    this.call("registerTargets", region, () => this.services.loadBalancers.registerTargets(this.account, region, id, instanceIds));
  deregisterTargets = (region: string, id: string, instanceIds: string[]) =>
    this.call("deregisterTargets", region, () => this.services.loadBalancers.deregisterTargets(this.account, region, id, instanceIds));
}

function assemble(options: SimCloudOptions): { core: CloudCore; services: Services } {
  const profile = profileNamed(options.profile ?? "instant");
  const core = new CloudCore({
    state: new StateStore(options.state ?? ":memory:"),
    clock: options.clock ?? new SystemClock(),
    profile,
    timeScale: options.timeScale ?? 1,
    seed: options.seed ?? 1,
    faults: options.faults ?? {},
    quota: { ...DEFAULT_QUOTA, ...options.quota },
    zoneCapacity: options.zoneCapacity ?? DEFAULT_ZONE_CAPACITY,
    terminatedRetentionMs: options.terminatedRetentionMs ?? 60_000,
    rateLimits: options.rateLimits ?? profile.rateLimits,
    logger: options.logger ?? pino({ level: "silent" }),
  });
  const services: Services = {
    networks: new NetworkService(core),
    keyPairs: new KeyPairService(core),
    publicIps: new PublicIpService(core),
    instances: new InstanceService(core),
    loadBalancers: new LoadBalancerService(core),
  };
  return { core, services };
}

/** The sim cloud: the default account's API, plus the operator's controls. */
export class SimCloud extends AccountCloud {
  private readonly tokens: Map<string, string>;

  constructor(options: SimCloudOptions = {}) {
    const { core, services } = assemble(options);
    super(core, services, DEFAULT_ACCOUNT);
    this.tokens = new Map();
    for (const [key, value] of core.state.settingsWithPrefix<{ tokenSha256: string }>("account/")) {
      this.tokens.set(value.tokenSha256, key.slice("account/".length));
    }
    this.setAccount(DEFAULT_ACCOUNT, options.defaultToken ?? DEFAULT_TOKEN);
    for (const account of options.accounts ?? []) this.setAccount(account.id, account.token);
    if (options.hooks) core.addHooks(options.hooks);
    core.resumeTransitions();
  }

  /** The same API acting as another account. */
  forAccount(account: string): T.CloudApi {
    return account === DEFAULT_ACCOUNT ? this : new AccountCloud(this.core, this.services, account);
  }

  /** Creates an account or replaces its bearer token (kept in the state file as a hash). */
  setAccount(account: string, token: string): void {
    if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(account)) throw new InvalidParameterError(`account id "${account}" must be lowercase letters, digits and dashes`);
    if (token.length < 8) throw new InvalidParameterError("an account token needs at least 8 characters");
    for (const [hash, id] of this.tokens) if (id === account) this.tokens.delete(hash);
    this.tokens.set(tokenHash(token), account);
    this.core.state.setSetting(`account/${account}`, { tokenSha256: tokenHash(token) });
  }

  /** The account a bearer token belongs to, if any. */
  authenticate(token: string): string | undefined {
    return this.tokens.get(tokenHash(token));
  }

  /** Replaces the fault configuration (takes effect with the next call). */
  setFaults(config: FaultConfig): void {
    this.core.faults.config = config;
  }

  get faults(): FaultConfig {
    return this.core.faults.config;
  }

  /** Changes some of an account's limits in a region. */
  setQuota(account: string, region: string, patch: QuotaLimitsPatch): T.Quota {
    checkRegion(region);
    this.core.quotas.setLimits(account, region, checkInput(QuotaLimitsPatchSchema, patch, "quota"));
    return this.core.quotas.quota(account, region);
  }

  /** Sets how many instances of a machine type a zone can run, across all accounts. */
  setCapacity(region: string, zone: string, machineTypeName: string, instances: number): void {
    checkRegion(region);
    if (!zonesOf(region).some((z) => z.name === zone)) throw new InvalidParameterError(`zone "${zone}" is not in ${region}`);
    if (!Number.isInteger(instances) || instances < 0) throw new InvalidParameterError("capacity must be a whole number ≥ 0");
    this.core.quotas.setCapacity(region, zone, machineTypeName, instances);
  }

  /** Terminates an instance at once, as if its host failed (or with the given reason). */
  killInstance(id: string, reason = "the instance's host failed", code = "InstanceFailure"): T.Instance {
    return this.services.instances.killInstance(id, reason, code);
  }

  /**
   * Attaches workload-emulator hooks; returns a function that detaches them. Active load balancers are
   * offered to `onLoadBalancerActive` at once, so an emulator that restarted publishes its endpoints again.
   */
  addHooks(hooks: SimCloudHooks): () => void {
    const detach = this.core.addHooks(hooks);
    this.services.loadBalancers.republishEndpoints(hooks);
    return detach;
  }

  /** Appends lines to an instance's boot log, whatever its account (kubeadm's output, for the emulator). */
  appendBootLog(instanceId: string, lines: string[]): void {
    this.services.instances.appendBootLog(instanceId, lines);
  }

  /** An instance of any account, without throttling or faults (for the workload emulator). */
  findInstance(instanceId: string): T.Instance | undefined {
    const record = this.core.state.get("instance", instanceId);
    return record ? instanceView(record) : undefined;
  }

  /** The load balancer, of any account, with that DNS name (kubeadm's endpoints name them). */
  findLoadBalancerByDnsName(dnsName: string): T.LoadBalancer | undefined {
    const wanted = dnsName.toLowerCase();
    const record = this.core.loadBalancersByDnsName.get(wanted)[0];
    return record ? loadBalancerView(this.core, record) : undefined;
  }

  /** Where a connection to a load balancer's `dnsName:port` from `source` lands (for the workload emulator). */
  routeThroughLoadBalancer(dnsName: string, port: number, source: ConnectionSource): LoadBalancerRoute {
    return this.services.loadBalancers.route(dnsName, port, source);
  }

  /** DNS names of the load balancers an instance is registered with. */
  loadBalancersTargeting(instanceId: string): string[] {
    return this.core.loadBalancersByTarget.get(instanceId).map((lb) => lb.dnsName);
  }

  /** The state file (":memory:" when the state is kept in memory only). */
  get statePath(): string {
    return this.core.state.path;
  }

  get profile(): LatencyProfile {
    return this.core.profile;
  }

  get timeScale(): number {
    return this.core.timeScale;
  }

  get clock(): Clock {
    return this.core.clock;
  }

  /** Draws a duration of the profile in real milliseconds (e.g. "kubeadmInit" for the workload emulator). */
  sampleDelay(name: DelayName): number {
    return this.core.sampleDelay(name);
  }

  /** Stops timers and closes the state file; pending transitions resume when the file is opened again. */
  async close(): Promise<void> {
    this.core.close();
  }
}
