// The engine under every operation: state, clock and seeded generators, persisted transitions with their
// timers, idempotency tokens, and the hooks a workload emulator attaches to instance boots.
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import type { Clock, TimerHandle } from "./clock.ts";
import { InvalidParameterError } from "./errors.ts";
import { FaultInjector, type FaultConfig } from "./faults.ts";
import { parseCidr } from "./ipam.ts";
import type { DelayName, DelayRange, LatencyProfile, ProfileName } from "./profiles.ts";
import { QuotaBook } from "./quotas.ts";
import { InstanceEventLog } from "./instance-events.ts";
import { RecordIndex } from "./record-index.ts";
import { TagIndex } from "./tag-index.ts";
import { Prng, type PrngState } from "./random.ts";
import { RateLimiter } from "./ratelimit.ts";
import type { RecordFor, Transition, TransitionAction } from "./records.ts";
import type { ResourceRegistry } from "./registry.ts";
import type { StoredResource } from "./resource-kinds.ts";
import type { StateStore } from "./state.ts";
import type { Instance, LoadBalancer, QuotaLimits } from "./types.ts";

export interface BootContext {
  /** True on the first boot; later boots follow a stop and start (cloud-init runs user data once). */
  firstBoot: boolean;
}

/** What a boot hook answers: nothing to let the boot succeed, or `{ fail }` to fail it with a reason. */
export type BootOutcome = void | { fail: string };

/** Where clients reach what a load balancer fronts, as a workload emulator publishes it. */
export interface PublishedEndpoint {
  host: string;
  port: number;
  /** A path prefix on that host and port, e.g. /clusters/lb-0123. */
  path?: string;
}

/** Extension points for the workload-cluster emulator. Every hook is optional. */
export interface SimCloudHooks {
  /** Called when an instance finishes booting, with its user data; may fail the boot (→ terminated). */
  onInstanceBooted?(instance: Instance, userData: string, context: BootContext): BootOutcome | Promise<BootOutcome>;
  /** Called when an instance starts to shut down (stop or terminate): its operating system stops. */
  onInstanceStopping?(instance: Instance): void | Promise<void>;
  /** Called once an instance is terminated (by request, by failure or by the operator). */
  onInstanceTerminated?(instance: Instance): void | Promise<void>;
  /**
   * Since when (the cloud clock's epoch ms) a running instance answers on `port`, or undefined while it
   * does not. Health checks pass once it has answered for the load balancer's check time; a target that
   * does not answer is unhealthy. Default: since the instance runs.
   */
  targetServingSince?(instanceId: string, port: number): number | undefined;
  /** Called after targets were registered with or deregistered from a load balancer. */
  onTargetsChanged?(loadBalancer: LoadBalancer): void;
  /**
   * Called when a load balancer becomes active (and for every active one when the hooks are attached);
   * may publish the endpoint clients should use, with a path when one port serves several APIs.
   */
  onLoadBalancerActive?(loadBalancer: LoadBalancer): PublishedEndpoint | void;
  /** Called after a DNS record of `name` was created or deleted (what the name resolves to may have changed). */
  onNameChanged?(name: string): void;
}

type TransitionHandler<R extends StoredResource> = (record: R, action: TransitionAction<R>) => void | Promise<void>;

export interface CoreOptions {
  /** The kinds of resource the cloud serves. */
  registry: ResourceRegistry;
  state: StateStore;
  clock: Clock;
  profile: LatencyProfile;
  timeScale: number;
  seed: number;
  faults: FaultConfig;
  quota: QuotaLimits;
  zoneCapacity: number;
  /** How long terminated instances stay visible, in simulated milliseconds. */
  terminatedRetentionMs: number;
  /** The range public addresses come from (default: the documentation ranges). */
  publicRange?: string;
  rateLimits: LatencyProfile["rateLimits"] | false;
  logger: Logger;
}

interface SavedGenerators {
  ids: PrngState;
  latency: PrngState;
  faults: PrngState;
}

/** Key-sorted JSON, so equal inputs hash equally whatever their field order. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export class CloudCore {
  readonly registry: ResourceRegistry;
  readonly state: StateStore;
  readonly clock: Clock;
  readonly profile: LatencyProfile;
  readonly timeScale: number;
  readonly quotas: QuotaBook;
  readonly tagged: TagIndex;
  /** Instances not terminated, by subnet (the addresses they hold). */
  readonly instancesBySubnet: RecordIndex<"instance">;
  readonly instanceEvents: InstanceEventLog;
  /** Load balancers by DNS name (kubeadm's endpoints name them). */
  readonly loadBalancersByDnsName: RecordIndex<"loadBalancer">;
  /** Load balancers by the instances registered as their targets. */
  readonly loadBalancersByTarget: RecordIndex<"loadBalancer">;
  readonly faults: FaultInjector;
  readonly limiter: RateLimiter | undefined;
  readonly logger: Logger;
  readonly terminatedRetentionMs: number;
  readonly publicRange: string | undefined;
  private readonly ids: Prng;
  private readonly latency: Prng;
  private readonly faultRng: Prng;
  private readonly timers = new Map<string, TimerHandle>();
  private readonly handlers = new Map<string, TransitionHandler<StoredResource>>();
  private readonly hookSets: SimCloudHooks[] = [];
  private closed = false;

  constructor(options: CoreOptions) {
    if (!(options.timeScale > 0)) throw new InvalidParameterError(`timeScale must be above 0, not ${options.timeScale}`);
    this.registry = options.registry;
    this.state = options.state;
    this.clock = options.clock;
    this.profile = options.profile;
    this.timeScale = options.timeScale;
    this.logger = options.logger;
    this.terminatedRetentionMs = options.terminatedRetentionMs;
    if (options.publicRange) parseCidr(options.publicRange, "publicRange");
    this.publicRange = options.publicRange;
    this.ids = new Prng(options.seed, 1);
    this.latency = new Prng(options.seed, 2);
    this.faultRng = new Prng(options.seed, 3);
    // A restarted cloud continues its sequences rather than repeating ids it already handed out.
    const saved = this.state.setting<SavedGenerators>("generators");
    if (saved) {
      this.ids.state = saved.ids;
      this.latency.state = saved.latency;
      this.faultRng.state = saved.faults;
    }
    this.quotas = new QuotaBook(this.state, options.quota, options.zoneCapacity, (record) => this.registry.quotaOf(record));
    this.tagged = new TagIndex(this.state);
    this.instanceEvents = new InstanceEventLog(this.state);
    this.instancesBySubnet = new RecordIndex(this.state, "instance", (i) => (i.state === "terminated" ? [] : [i.subnetId]));
    this.loadBalancersByDnsName = new RecordIndex(this.state, "loadBalancer", (lb) => [lb.dnsName]);
    this.loadBalancersByTarget = new RecordIndex(this.state, "loadBalancer", (lb) => lb.targets.map((t) => t.instanceId));
    this.faults = new FaultInjector(this.faultRng, options.faults, (ms) => this.scale(ms), this.registry);
    this.limiter = options.rateLimits ? new RateLimiter(this.clock, options.rateLimits, this.timeScale, this.registry) : undefined;
  }

  /** Registers what happens when a transition of a kind falls due. */
  onTransition<K extends string>(kind: K, handler: TransitionHandler<RecordFor<K>>): void {
    this.handlers.set(kind, handler as TransitionHandler<StoredResource>);
  }

  /** Arms the timers of every persisted transition (those whose moment passed run on the next tick). */
  resumeTransitions(): void {
    for (const record of this.state.everything()) if (record.transition) this.arm(record.id, record.transition.at);
  }

  now(): number {
    return this.clock.now();
  }

  iso(ms = this.clock.now()): string {
    return new Date(ms).toISOString();
  }

  /** Real milliseconds for a span of simulated milliseconds. */
  scale(simulatedMs: number): number {
    return simulatedMs * this.timeScale;
  }

  /** Draws a duration of the profile (jittered, in real milliseconds). */
  sampleDelay(name: DelayName): number {
    const [min, max] = this.profile[name];
    return this.scale(this.latency.between(min, max));
  }

  /** Draws a duration from a service's own ranges per profile, e.g. a new kind's provisioning time. */
  sampleDelayIn(ranges: Readonly<Record<ProfileName, DelayRange>>): number {
    const [min, max] = ranges[this.profile.name];
    return this.scale(this.latency.between(min, max));
  }

  /** A new id of the kind: its prefix and 17 seeded hexadecimal digits. */
  newId(kind: string): string {
    const prefix = this.registry.idPrefix(kind);
    while (true) {
      const id = `${prefix}-${this.ids.hex(17)}`;
      if (!this.state.has(id)) return id;
    }
  }

  /**
   * What every new record of a kind starts with: its id (a new one unless given), the account and region
   * that own it, a copy of its tags and its creation time.
   */
  newRecord<K extends string>(kind: K, account: string, region: string, tags: Readonly<Record<string, string>> | undefined, id = this.newId(kind)) {
    return { id, kind, account, region, tags: { ...tags }, createdAt: this.iso() };
  }

  /** Runs a change in one transaction, with the generators' state saved beside it. */
  write<T>(fn: () => T): T {
    return this.state.transaction(() => {
      const result = fn();
      this.saveGenerators();
      return result;
    });
  }

  private saveGenerators(): void {
    const saved: SavedGenerators = { ids: this.ids.state, latency: this.latency.state, faults: this.faultRng.state };
    this.state.setSetting("generators", saved);
  }

  /**
   * Creates a resource once per idempotency token: a token seen before returns its resource (or the
   * resource's last view once it is gone); the same token with other parameters is refused.
   */
  createOnce<K extends string, V>(
    account: string,
    kind: K,
    region: string,
    input: { clientToken?: string },
    view: (record: RecordFor<K>) => V,
    build: () => RecordFor<K>,
  ): V {
    const token = input.clientToken;
    if (token === undefined) return view(this.write(build));
    const paramsHash = createHash("sha256").update(stableJson({ region, ...input, clientToken: undefined })).digest("hex");
    return this.write(() => {
      const seen = this.state.findToken(account, kind, token);
      if (seen) {
        if (seen.paramsHash !== paramsHash) {
          throw new InvalidParameterError("idempotency token reused with different parameters", { details: { field: "clientToken" } });
        }
        const record = this.state.get(kind, seen.resourceId);
        if (record) return view(record);
        return JSON.parse(seen.tombstone ?? "null") as V;
      }
      const record = build();
      this.state.saveToken(account, kind, token, paramsHash, record.id);
      return view(record);
    });
  }

  /** Sets the resource's next transition `delayMs` real milliseconds from now and saves the record. */
  schedule<R extends StoredResource>(record: R, action: TransitionAction<R>, delayMs: number): void {
    const stored: StoredResource = record;
    const at = this.clock.now() + Math.max(0, delayMs);
    stored.transition = { action, at };
    this.state.put(stored);
    this.arm(stored.id, at);
  }

  /** Drops the resource's pending transition (the caller saves the record). */
  cancelTransition(record: StoredResource): void {
    delete record.transition;
    const timer = this.timers.get(record.id);
    if (timer) this.clock.clearTimer(timer);
    this.timers.delete(record.id);
  }

  private arm(id: string, at: number): void {
    if (this.closed) return;
    const previous = this.timers.get(id);
    if (previous) this.clock.clearTimer(previous);
    this.timers.set(
      id,
      this.clock.setTimer(at - this.clock.now(), () => void this.fire(id, at)),
    );
  }

  private async fire(id: string, at: number): Promise<void> {
    this.timers.delete(id);
    const record = this.state.find(id);
    if (this.closed || !record?.transition || record.transition.at !== at) return;
    try {
      await this.handlers.get(record.kind)?.(record, record.transition.action);
    } catch (error) {
      if (!this.closed) this.logger.error({ err: error, id, action: record.transition?.action }, "sim cloud transition failed");
    }
  }

  /** True while a transition is still the one a handler started with (nothing replaced it meanwhile). */
  stillDue(record: StoredResource, transition: Transition | undefined): boolean {
    return !this.closed && transition !== undefined && record.transition?.at === transition.at && record.transition.action === transition.action;
  }

  /** Attaches hooks; returns a function that detaches them. */
  addHooks(hooks: SimCloudHooks): () => void {
    this.hookSets.push(hooks);
    return () => {
      const index = this.hookSets.indexOf(hooks);
      if (index >= 0) this.hookSets.splice(index, 1);
    };
  }

  get hooks(): readonly SimCloudHooks[] {
    return this.hookSets;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Stops every timer and closes the state file. Pending transitions resume on the next start. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers.values()) this.clock.clearTimer(timer);
    this.timers.clear();
    this.saveGenerators();
    this.state.close();
  }
}
