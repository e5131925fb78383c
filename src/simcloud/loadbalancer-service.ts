// Load balancers: provisioning → active after the profile's delay, deleting → gone; targets are instances
// of the same network, and their health is derived on read (see views.ts). A connection to a load
// balancer's name and port reaches the healthy targets of that port's listener, and nothing else.
import type { CloudCore, SimCloudHooks } from "./core.ts";
import { InvalidParameterError } from "./errors.ts";
import { findOwned, requireReady } from "./lookup.ts";
import type { LoadBalancerRecord, Transition } from "./records.ts";
import { action, defineResource } from "./resource-kinds.ts";
import {
  CreateLoadBalancerInputSchema,
  TargetsInputSchema,
  checkInput,
  type CreateLoadBalancerInput,
} from "./schemas.ts";
import type { LoadBalancer } from "./types.ts";
import { checkTarget, loadBalancerView } from "./views.ts";

/** Where a connection comes from: an instance's network, or outside the cloud (no network). */
export interface ConnectionSource {
  networkId?: string;
}

/**
 * Where a connection to a load balancer lands: the healthy targets of the listener (instance ids, and
 * the port they are reached on), or the error a client sees, phrased as Go's net package phrases it,
 * with when a target turns healthy if one is about to.
 */
export type LoadBalancerRoute = { targets: string[]; targetPort: number } | { error: string; retryAt?: number };

export class LoadBalancerService {
  constructor(private readonly core: CloudCore) {
    core.onTransition("loadBalancer", (record, action) => this.transition(record as LoadBalancerRecord, action));
  }

  private view = (record: LoadBalancerRecord): LoadBalancer => loadBalancerView(this.core, record);

  /** Makes a load balancer over subnets of one network (provisioning → active); runs once per idempotency token. */
  createLoadBalancer(account: string, region: string, input: CreateLoadBalancerInput): LoadBalancerRecord {
    const subnets = [...new Set(input.subnetIds)].map((id) => findOwned(this.core, account, region, "subnet", id));
    subnets.forEach((subnet) => requireReady(this.core, subnet));
    const networkId = subnets[0]?.networkId ?? "";
    if (subnets.some((s) => s.networkId !== networkId)) {
      throw new InvalidParameterError("loadBalancer.subnetIds: the subnets belong to different networks", {
        details: { field: "loadBalancer.subnetIds" },
      });
    }
    if (new Set(subnets.map((s) => s.zone)).size !== subnets.length) {
      throw new InvalidParameterError("loadBalancer.subnetIds: give at most one subnet per zone", {
        details: { field: "loadBalancer.subnetIds" },
      });
    }
    this.core.quotas.requireRoom(account, region, { loadBalancers: 1 });
    const id = this.core.newId("loadBalancer");
    const name = input.name ?? id;
    const dnsName = `${name}-${id.slice(3, 11)}.${region}.lb.simcloud.internal`.toLowerCase();
    const record: LoadBalancerRecord = {
      ...this.core.newRecord("loadBalancer", account, region, input.tags, id),
      state: "provisioning",
      name,
      scheme: input.scheme ?? "internet-facing",
      networkId,
      subnetIds: subnets.map((s) => s.id),
      listeners: structuredClone(input.listeners),
      targets: [],
      dnsName,
      host: dnsName,
      port: input.listeners[0]?.port ?? 0,
    };
    this.core.schedule(record, "active", this.core.sampleDelay("loadBalancerProvision"));
    return record;
  }

  deleteLoadBalancer(account: string, region: string, id: string): void {
    const record = findOwned(this.core, account, region, "loadBalancer", id);
    if (record.state === "deleting") return;
    this.core.write(() => {
      record.state = "deleting";
      this.core.schedule(record, "gone", this.core.sampleDelay("loadBalancerDelete"));
    });
  }

  registerTargets(account: string, region: string, id: string, instanceIds: string[]): LoadBalancer {
    const record = findOwned(this.core, account, region, "loadBalancer", id);
    const wanted = [...new Set(checkInput(TargetsInputSchema, { instanceIds }, "targets").instanceIds)];
    if (record.state === "deleting") throw new InvalidParameterError(`load balancer ${id} is being deleted`);
    for (const instanceId of wanted) {
      const instance = this.core.state.get("instance", instanceId);
      if (!instance || instance.account !== account || instance.region !== region) {
        throw new InvalidParameterError(`target ${instanceId}: no such instance in ${region}`, { details: { field: "instanceIds" } });
      }
      if (instance.state === "terminated") {
        throw new InvalidParameterError(`target ${instanceId} is terminated`, { details: { field: "instanceIds" } });
      }
      if (instance.networkId !== record.networkId) {
        throw new InvalidParameterError(`target ${instanceId} is in ${instance.networkId}, not in ${record.networkId}`, {
          details: { field: "instanceIds" },
        });
      }
    }
    const registered = new Set(record.targets.map((t) => t.instanceId));
    const registeredAt = this.core.iso();
    this.core.write(() => {
      for (const instanceId of wanted.filter((i) => !registered.has(i))) {
        record.targets.push({ instanceId, registeredAt, healthCheckMs: this.core.sampleDelay("targetHealthy") });
      }
      this.core.state.put(record);
    });
    return this.targetsChanged(record);
  }

  deregisterTargets(account: string, region: string, id: string, instanceIds: string[]): LoadBalancer {
    const record = findOwned(this.core, account, region, "loadBalancer", id);
    const leaving = new Set(checkInput(TargetsInputSchema, { instanceIds }, "targets").instanceIds);
    this.core.write(() => {
      record.targets = record.targets.filter((t) => !leaving.has(t.instanceId));
      this.core.state.put(record);
    });
    return this.targetsChanged(record);
  }

  private targetsChanged(record: LoadBalancerRecord): LoadBalancer {
    const view = this.view(record);
    for (const hooks of this.core.hooks) hooks.onTargetsChanged?.(view);
    return view;
  }

  /**
   * A connection to `dnsName:port` from `source`. The name resolves once the load balancer is active;
   * an internal one is not reachable from outside its network; a port without a listener, or a load
   * balancer being deleted, drops the connection (a timeout); with no healthy target on the listener's
   * target port the connection is refused.
   */
  route(dnsName: string, port: number, source: ConnectionSource): LoadBalancerRoute {
    const address = `${dnsName}:${port}`;
    const record = this.core.loadBalancersByDnsName.get(dnsName.toLowerCase())[0];
    if (!record || record.state === "provisioning") return { error: `dial tcp: lookup ${dnsName}: no such host` };
    const timeout = { error: `dial tcp ${address}: i/o timeout` };
    if (record.state !== "active") return timeout;
    if (record.scheme === "internal" && source.networkId !== record.networkId) return timeout;
    const listener = record.listeners.find((l) => l.port === port);
    if (!listener) return timeout;
    const checks = record.targets.map((t) => checkTarget(this.core, record, t, [listener.targetPort]));
    const healthy = checks.filter((c) => c.health === "healthy").map((c) => c.instanceId);
    if (healthy.length > 0) return { targets: healthy, targetPort: listener.targetPort };
    const upcoming = checks.flatMap((c) => (c.healthyAt !== undefined && c.health !== "unused" ? [c.healthyAt] : []));
    const refused = { error: `dial tcp ${address}: connect: connection refused` };
    return upcoming.length > 0 ? { ...refused, retryAt: Math.min(...upcoming) } : refused;
  }

  private transition(record: LoadBalancerRecord, action: Transition["action"]): void {
    if (action === "gone") {
      this.core.write(() => {
        this.core.cancelTransition(record);
        this.core.state.remove(record.id, { ...this.view(record), state: "deleted" });
      });
      return;
    }
    if (action !== "active") return;
    this.core.write(() => {
      this.core.cancelTransition(record);
      record.state = "active";
      this.publishEndpoint(record, this.core.hooks);
      this.core.state.put(record);
    });
  }

  /** Lets `hooks` publish the endpoint of every active load balancer (e.g. after an emulator restarted on another port). */
  republishEndpoints(hooks: SimCloudHooks): void {
    if (!hooks.onLoadBalancerActive) return;
    this.core.write(() => {
      for (const record of this.core.state.all("loadBalancer")) {
        if (record.state !== "active") continue;
        this.publishEndpoint(record, [hooks]);
        this.core.state.put(record);
      }
    });
  }

  private publishEndpoint(record: LoadBalancerRecord, hookSets: readonly SimCloudHooks[]): void {
    for (const hooks of hookSets) {
      const endpoint = hooks.onLoadBalancerActive?.(this.view(record));
      if (!endpoint) continue;
      record.host = endpoint.host;
      record.port = endpoint.port;
      if (endpoint.path) record.path = endpoint.path;
      else delete record.path;
    }
  }
}

/** Checks of the listeners that need no other resource. */
function checkListeners(input: CreateLoadBalancerInput): void {
  const ports = input.listeners.map((l) => l.port);
  if (new Set(ports).size !== ports.length) {
    throw new InvalidParameterError("loadBalancer.listeners: two listeners use the same port", {
      details: { field: "loadBalancer.listeners" },
    });
  }
}

/** The instance ids of a targets request body. */
function instanceIdsOf(body: unknown): [string[]] {
  const ids = (body as { instanceIds?: unknown } | undefined)?.instanceIds;
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string")) {
    throw new InvalidParameterError("targets.instanceIds: an array of instance ids is required", { details: { field: "instanceIds" } });
  }
  return [ids];
}

export const loadBalancers = defineResource({
  kind: "loadBalancer",
  noun: "load balancer",
  names: { one: "LoadBalancer", many: "LoadBalancers" },
  collection: "load-balancers",
  idPrefix: "lb",
  service: (core) => new LoadBalancerService(core),
  create: {
    input: CreateLoadBalancerInputSchema,
    check: checkListeners,
    build: (service, account, region, input) => service.createLoadBalancer(account, region, input),
  },
  /** deleting → gone; a no-op while already deleting. */
  delete: { run: (service, account, region, id) => service.deleteLoadBalancer(account, region, id) },
  view: loadBalancerView,
  actions: {
    /** Adds instances of the load balancer's network as targets (already registered ones are kept). */
    registerTargets: action({
      path: "targets/register",
      body: (instanceIds: string[]) => ({ instanceIds }),
      parse: instanceIdsOf,
      run: (service: LoadBalancerService, account: string, region: string, id: string, instanceIds: string[]) =>
        service.registerTargets(account, region, id, instanceIds),
    }),
    /** Removes targets (ids not registered are ignored). */
    deregisterTargets: action({
      path: "targets/deregister",
      body: (instanceIds: string[]) => ({ instanceIds }),
      parse: instanceIdsOf,
      run: (service: LoadBalancerService, account: string, region: string, id: string, instanceIds: string[]) =>
        service.deregisterTargets(account, region, id, instanceIds),
    }),
  },
  quota: () => ({ loadBalancers: 1 }),
});
