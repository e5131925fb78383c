// The in-process sim cloud. `SimCloud` is the cloud for the default account plus its operator controls
// (faults, quotas, capacity, accounts, hooks); `forAccount` gives the same API for another account. Every
// call passes the account's throttling bucket and the fault injector before it runs. The operations on
// resources are made from the registered kinds' descriptors (services.ts).
import { createHash } from "node:crypto";
import pino, { type Logger } from "pino";
import { checkRegion, imagesOf, machineTypesOf, regions, zonesOf } from "./catalog.ts";
import { SystemClock, type Clock } from "./clock.ts";
import { CloudCore, type SimCloudHooks } from "./core.ts";
import { InternalError, InvalidParameterError } from "./errors.ts";
import type { FaultConfig, FaultCounts } from "./faults.ts";
import { dnsRecords, type Resolution } from "./dns-service.ts";
import { instances } from "./instance-service.ts";
import { loadBalancers, type ConnectionSource, type LoadBalancerRoute } from "./loadbalancer-service.ts";
import { findOwned, hasTags, listOwned } from "./lookup.ts";
import { publicRoute, type PublicRoute } from "./public-network.ts";
import { profileNamed, type DelayName, type LatencyProfile, type ProfileName } from "./profiles.ts";
import { DEFAULT_QUOTA, DEFAULT_ZONE_CAPACITY } from "./quotas.ts";
import { ResourceRegistry } from "./registry.ts";
import { secrets, type SecretValue } from "./secret-service.ts";
import {
  flatMethods,
  operationNames,
  type AnyDescriptor,
  type ResourceApi,
  type ServiceFactory,
  type ServiceOf,
  type StoredResource,
} from "./resource-kinds.ts";
import { QuotaLimitsPatchSchema, ResourceFilterSchema, checkInput, type ListFilter, type QuotaLimitsPatch } from "./schemas.ts";
import { BUILTIN_RESOURCES } from "./services.ts";
import { StateStore } from "./state.ts";
import type * as T from "./types.ts";
import { instanceView, loadBalancerView, viewOf } from "./views.ts";

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
  /** Where its public addresses come from (an IPv4 CIDR); default the documentation ranges. Clouds on one public network need ranges of their own. */
  publicRange?: string;
  /** Throttling buckets; default the profile's, false for none. */
  rateLimits?: LatencyProfile["rateLimits"] | false;
  /** The kinds of resource the cloud serves (default every built-in kind, BUILTIN_RESOURCES). */
  resources?: readonly AnyDescriptor[];
  hooks?: SimCloudHooks;
  /**
   * Leave the transitions a state file holds (an instance booting, a load balancer coming up) unarmed
   * until `resumeTransitions()`: for a caller that attaches hooks after construction, so that none falls
   * due with nobody listening.
   */
  deferTransitions?: boolean;
  logger?: Logger;
}

/** The services of one cloud: one per factory, shared by the kinds that name it, built at start. */
class ServiceSet {
  private readonly byFactory = new Map<ServiceFactory<unknown>, unknown>();

  constructor(private readonly core: CloudCore) {
    for (const descriptor of core.registry.descriptors) {
      if (!this.byFactory.has(descriptor.service)) this.byFactory.set(descriptor.service, descriptor.service(core));
    }
  }

  of<D extends AnyDescriptor>(descriptor: D): ServiceOf<D> {
    if (!this.core.registry.has(descriptor)) throw new Error(`resource kind "${descriptor.kind}" is not registered in this cloud`);
    return this.byFactory.get(descriptor.service) as ServiceOf<D>;
  }
}

function tokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

type Call = (region: string, ...args: never[]) => Promise<unknown>;

/** The cloud as one account sees it. */
class AccountCloudBase {
  private readonly apis = new Map<AnyDescriptor, Record<string, Call>>();

  constructor(
    protected readonly core: CloudCore,
    protected readonly services: ServiceSet,
    readonly account: string,
  ) {
    Object.assign(this, flatMethods(core.registry.descriptors, (descriptor) => this.kindApi(descriptor)));
  }

  /** Throttling, then a drawn fault (before the change, or after it for some InternalErrors), then `run`. */
  private async call<R>(operation: string, region: string | undefined, run: () => R): Promise<R> {
    if (this.core.isClosed) throw new InternalError("the sim cloud is shut down");
    this.core.limiter?.take(this.account, region ?? "global", operation);
    const fault = this.core.faults.draw(operation);
    if (fault && !fault.afterCommit) throw fault.error;
    const result = run();
    if (fault) throw fault.error;
    return result;
  }

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
        .map((r) => viewOf(this.core, r) as T.CloudResource);
    });
  }

  describeInstanceEvents(region: string, after?: number, epoch?: string): Promise<T.InstanceEvents> {
    return this.call("describeInstanceEvents", region, () => {
      checkRegion(region);
      return this.core.instanceEvents.since(this.account, region, after, epoch);
    });
  }

  /** The operations of one kind of resource (registered in this cloud), e.g. `resources(instances).stopInstance(region, id)`. */
  resources<D extends AnyDescriptor>(descriptor: D): ResourceApi<D> {
    return this.kindApi(descriptor) as unknown as ResourceApi<D>;
  }

  private kindApi(descriptor: AnyDescriptor): Record<string, Call> {
    const known = this.apis.get(descriptor);
    if (known) return known;
    const { core, account } = this;
    const service = this.services.of(descriptor);
    const names = operationNames(descriptor);
    const view = (record: StoredResource) => descriptor.view(core, record);
    const api: Record<string, Call> = {
      create: (region: string, input: unknown) =>
        this.call(names.create, region, () => {
          checkRegion(region);
          const checked = checkInput(descriptor.create.input, input, descriptor.kind);
          descriptor.create.check?.(checked);
          // Every create schema carries the optional `clientToken` (CreateCommon in schemas.ts).
          const request = checked as { clientToken?: string };
          return core.createOnce(account, descriptor.kind, region, request, view, () => descriptor.create.build(service, account, region, checked));
        }),
      get: (region: string, id: string) => this.call(names.get, region, () => view(findOwned(core, account, region, descriptor.kind, id))),
      list: (region: string, filter?: ListFilter) =>
        this.call(names.list, region, () => listOwned(core, account, region, descriptor.kind, filter).map(view)),
    };
    for (const [name, action] of Object.entries(descriptor.actions)) {
      api[name] = (region: string, id: string, ...args: unknown[]) => this.call(name, region, () => action.run(service, account, region, id, ...args));
    }
    const removal = descriptor.delete;
    api.delete =
      "action" in removal
        ? api[removal.action]!
        : (region: string, id: string) => this.call(names.delete, region, () => removal.run(service, account, region, id));
    this.apis.set(descriptor, api);
    return api;
  }
}

/** The cloud as one account sees it: the catalogue, and the operations of every registered kind (CloudApi). */
export type AccountCloud = AccountCloudBase & T.CloudApi;
export const AccountCloud = AccountCloudBase as new (core: CloudCore, services: ServiceSet, account: string) => AccountCloud;

function assemble(options: SimCloudOptions): { core: CloudCore; services: ServiceSet } {
  const profile = profileNamed(options.profile ?? "instant");
  const core = new CloudCore({
    registry: new ResourceRegistry(options.resources ?? BUILTIN_RESOURCES),
    state: new StateStore(options.state ?? ":memory:"),
    clock: options.clock ?? new SystemClock(),
    profile,
    timeScale: options.timeScale ?? 1,
    seed: options.seed ?? 1,
    faults: options.faults ?? {},
    quota: { ...DEFAULT_QUOTA, ...options.quota },
    zoneCapacity: options.zoneCapacity ?? DEFAULT_ZONE_CAPACITY,
    terminatedRetentionMs: options.terminatedRetentionMs ?? 60_000,
    ...(options.publicRange ? { publicRange: options.publicRange } : {}),
    rateLimits: options.rateLimits ?? profile.rateLimits,
    logger: options.logger ?? pino({ level: "silent" }),
  });
  return { core, services: new ServiceSet(core) };
}

/** The sim cloud: the default account's API, plus the operator's controls. */
export class SimCloud extends AccountCloud {
  private readonly tokens: Map<string, string>;
  private readonly accounts = new Map<string, AccountCloud>();

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
    if (!options.deferTransitions) core.resumeTransitions();
  }

  /** Arms the pending transitions of the state file (once the hooks that must see them are attached). */
  resumeTransitions(): void {
    this.core.resumeTransitions();
  }

  /** The same API acting as another account. */
  forAccount(account: string): AccountCloud {
    if (account === DEFAULT_ACCOUNT) return this;
    let api = this.accounts.get(account);
    if (!api) this.accounts.set(account, (api = new AccountCloud(this.core, this.services, account)));
    return api;
  }

  /** The kinds of resource this cloud serves, in listing order. */
  get resourceKinds(): readonly AnyDescriptor[] {
    return this.core.registry.descriptors;
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

  /** Faults injected since this cloud started. */
  get faultCounts(): FaultCounts {
    return this.core.faults.counts;
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
    return this.services.of(instances).killInstance(id, reason, code);
  }

  /**
   * Attaches workload-emulator hooks; returns a function that detaches them. Active load balancers are
   * offered to `onLoadBalancerActive` at once, so an emulator that restarted publishes its endpoints again.
   */
  addHooks(hooks: SimCloudHooks): () => void {
    const detach = this.core.addHooks(hooks);
    this.services.of(loadBalancers).republishEndpoints(hooks);
    return detach;
  }

  /** Appends lines to an instance's boot log, whatever its account (kubeadm's output, for the emulator). */
  appendBootLog(instanceId: string, lines: string[]): void {
    this.services.of(instances).appendBootLog(instanceId, lines);
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

  /** Whether an instance of any account has that id (terminated ones too), without making its view. */
  hasInstance(instanceId: string): boolean {
    return this.core.state.get("instance", instanceId) !== undefined;
  }

  /**
   * The network of the load balancer with that id, of any account (a workload cluster's id is its load
   * balancer's), without making its view: the workload API asks at every request.
   */
  loadBalancerNetworkId(id: string): string | undefined {
    return this.core.state.get("loadBalancer", id)?.networkId;
  }

    /** Where a connection to a load balancer's `dnsName:port` from `source` lands (for the workload emulator). */
  routeThroughLoadBalancer(dnsName: string, port: number, source: ConnectionSource): LoadBalancerRoute {
    return this.services.of(loadBalancers).route(dnsName, port, source);
  }

  /** Where a connection from another cloud's public address `from` to `host:port` lands here (public-network.ts). */
  routeFromPublic(from: string | undefined, host: string, port: number): PublicRoute {
    return publicRoute(this.core, (dnsName, p) => this.routeThroughLoadBalancer(dnsName, p, {}), from, host, port);
  }

  /** What a name resolves to for an account's machines, through its DNS zones: a load balancer, addresses, or nothing. */
  resolveName(account: string, name: string): Resolution {
    return this.services.of(dnsRecords).resolve(account, name);
  }

  /** The names whose A record is an alias of the load balancer with that DNS name. */
  namesAliasing(loadBalancerDnsName: string): string[] {
    return this.services.of(dnsRecords).aliasesOf(loadBalancerDnsName);
  }

  /**
   * A secret's value as a running instance reads it with its own identity (its account, its tags), for the
   * workload emulator's boot: the secret must grant instances with those tags access (secret-service.ts).
   */
  getSecretValueAsInstance(instanceId: string, region: string, secretId: string): SecretValue {
    checkRegion(region);
    return this.services.of(secrets).getSecretValueAsInstance(instanceId, region, secretId);
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
