// Instances: launch (pending → running, the boot reads the user data and runs the boot hooks), stop and
// start, terminate (stopping → terminated, visible for a retention period, then purged), and death.
import { createHash } from "node:crypto";
import { image, machineType } from "./catalog.ts";
import type { CloudCore } from "./core.ts";
import { InvalidParameterError, NotFoundError } from "./errors.ts";
import { lowestFreeAddress, parseCidr } from "./ipam.ts";
import { findOwned, requireReady } from "./lookup.ts";
import { allocatePublicAddress } from "./publicip-service.ts";
import type { InstanceRecord, Transition } from "./records.ts";
import { requireReservationRoom } from "./reservation-service.ts";
import { action, defineResource } from "./resource-kinds.ts";
import { CreateInstanceInputSchema, MAX_USER_DATA_BYTES, type CreateInstanceInput } from "./schemas.ts";
import type { Instance, StateReason } from "./types.ts";
import { instanceView } from "./views.ts";

const BOOT_LOG_LINES = 50;

function describeUserData(userData: string): string {
  if (userData === "") return "no user data";
  const bytes = Buffer.byteLength(userData);
  const firstLine = userData.split("\n", 1)[0] ?? "";
  const format = firstLine.startsWith("#cloud-config") ? "cloud-config" : firstLine.startsWith("#!") ? "script" : "raw data";
  return `user data: ${bytes} bytes (${format})`;
}

function log(record: InstanceRecord, at: string, line: string): void {
  record.bootLog = [...record.bootLog, `${at} ${line}`].slice(-BOOT_LOG_LINES);
}

export class InstanceService {
  constructor(private readonly core: CloudCore) {
    core.onTransition("instance", (record, action) => this.transition(record as InstanceRecord, action));
  }

  /** Launches an instance (pending → running); runs once per idempotency token. */
  launch(account: string, region: string, input: CreateInstanceInput): InstanceRecord {
    const core = this.core;
    const userData = input.userData ?? "";
    const subnet = findOwned(core, account, region, "subnet", input.subnetId);
    requireReady(core, subnet);
    const type = machineType(region, input.machineType);
    image(region, input.imageId);
    if (input.keyPairId) findOwned(core, account, region, "keyPair", input.keyPairId);
    const securityGroupIds = [...new Set(input.securityGroupIds ?? [])];
    for (const id of securityGroupIds) {
      const group = findOwned(core, account, region, "securityGroup", id);
      requireReady(core, group);
      if (group.networkId !== subnet.networkId) {
        throw new InvalidParameterError(`security group ${id} belongs to ${group.networkId}, not to the subnet's ${subnet.networkId}`, {
          details: { field: "instance.securityGroupIds" },
        });
      }
    }
    const publicIp = input.publicIpId ? findOwned(core, account, region, "publicIp", input.publicIpId) : undefined;
    if (publicIp && publicIp.state !== "available") {
      throw new InvalidParameterError(`public IP ${publicIp.id} is already held by ${publicIp.instanceId}`, {
        details: { field: "instance.publicIpId" },
      });
    }
    core.quotas.requireRoom(account, region, { vcpus: type.vcpus, instances: 1, ...(input.assignPublicIp ? { publicIps: 1 } : {}) });
    if (input.reservationId) requireReservationRoom(core, account, region, input.reservationId, subnet.zone, type.name);
    else core.quotas.requireCapacity(region, subnet.zone, type.name);
    const used = new Set(
      core.instancesBySubnet.get(subnet.id).map((i) => i.privateIp),
    );
    const privateIp = lowestFreeAddress(parseCidr(subnet.cidr), used);
    if (!privateIp) {
      throw new InvalidParameterError(`subnet ${subnet.id} has no free addresses left`, { details: { field: "instance.subnetId" } });
    }
    const plan = core.faults.planBoot();
    const id = core.newId("instance");
    const record: InstanceRecord = {
      ...core.newRecord("instance", account, region, input.tags, id),
      state: "pending",
      zone: subnet.zone,
      networkId: subnet.networkId,
      subnetId: subnet.id,
      machineType: type.name,
      vcpus: type.vcpus,
      memoryMiB: type.memoryMiB,
      imageId: input.imageId,
      ...(input.keyPairId ? { keyPairId: input.keyPairId } : {}),
      securityGroupIds,
      privateIp,
      ...(userData ? { userDataSha256: createHash("sha256").update(userData).digest("hex") } : {}),
      bootLog: [],
      userData,
      bootCount: 0,
      slowFactor: plan.slowFactor,
      ...(plan.dieAfterMs === undefined ? {} : { dieAfterMs: plan.dieAfterMs }),
      ephemeralPublicIp: input.assignPublicIp === true,
      ...(input.reservationId ? { reservationId: input.reservationId } : {}),
    };
    if (input.assignPublicIp) record.publicIp = allocatePublicAddress(core);
    if (publicIp) {
      record.publicIp = publicIp.address;
      record.publicIpId = publicIp.id;
      publicIp.state = "in-use";
      publicIp.instanceId = id;
      core.state.put(publicIp);
    }
    core.schedule(record, "boot", core.sampleDelay("instanceBoot") * plan.slowFactor);
    return record;
  }

  userDataOf(account: string, region: string, id: string): { instanceId: string; userData: string } {
    const record = findOwned(this.core, account, region, "instance", id);
    return { instanceId: record.id, userData: record.userData };
  }

  stopInstance(account: string, region: string, id: string): Instance {
    const record = findOwned(this.core, account, region, "instance", id);
    if (record.state === "stopped" || (record.state === "stopping" && record.transition?.action === "stopped")) {
      return instanceView(record);
    }
    if (record.state !== "running") {
      throw new InvalidParameterError(`instance ${id} is ${this.stateWord(record)}; only a running instance can be stopped`);
    }
    this.core.write(() => {
      record.state = "stopping";
      record.stateReason = { code: "UserInitiatedShutdown", message: "stopped at the user's request" };
      this.core.schedule(record, "stopped", this.core.sampleDelay("instanceStop"));
    });
    this.notify(record, "onInstanceStopping");
    return instanceView(record);
  }

  startInstance(account: string, region: string, id: string): Instance {
    const record = findOwned(this.core, account, region, "instance", id);
    if (record.state === "pending" || record.state === "running") return instanceView(record);
    if (record.state !== "stopped") {
      throw new InvalidParameterError(`instance ${id} is ${this.stateWord(record)}; only a stopped instance can be started`);
    }
    if (record.reservationId) requireReservationRoom(this.core, account, region, record.reservationId, record.zone, record.machineType);
    else this.core.quotas.requireCapacity(region, record.zone, record.machineType);
    this.core.write(() => {
      const plan = this.core.faults.planBoot();
      record.state = "pending";
      delete record.stateReason;
      record.slowFactor = plan.slowFactor;
      if (plan.dieAfterMs === undefined) delete record.dieAfterMs;
      else record.dieAfterMs = plan.dieAfterMs;
      this.core.schedule(record, "boot", this.core.sampleDelay("instanceBoot") * plan.slowFactor);
    });
    return instanceView(record);
  }

  /** Terminates an instance (stopping → terminated); `reason` says who asked (a scale set scaling in). */
  terminateInstance(account: string, region: string, id: string, reason?: StateReason): Instance {
    const record = findOwned(this.core, account, region, "instance", id);
    if (record.state === "terminated" || record.transition?.action === "terminated") return instanceView(record);
    const wasUp = record.state === "running" || record.state === "pending";
    this.core.write(() => {
      record.state = "stopping";
      record.stateReason = reason ?? { code: "UserInitiatedShutdown", message: "terminated at the user's request" };
      this.core.schedule(record, "terminated", this.core.sampleDelay("instanceTerminate"));
    });
    if (wasUp) this.notify(record, "onInstanceStopping");
    return instanceView(record);
  }

  /** Adds lines to what an instance printed (a workload emulator reporting kubeadm's output). */
  appendBootLog(id: string, lines: string[]): void {
    const record = this.core.state.get("instance", id);
    if (!record) throw new NotFoundError(`instance ${id} not found`, { details: { kind: "instance", id } });
    const at = this.core.iso();
    this.core.write(() => {
      for (const line of lines) log(record, at, line);
      this.core.state.put(record);
    });
  }

  /** Terminates an instance of any account at once, as a host failure would. */
  killInstance(id: string, message: string, code: string): Instance {
    const record = this.core.state.get("instance", id);
    if (!record) throw new NotFoundError(`instance ${id} not found`, { details: { kind: "instance", id } });
    if (record.state !== "terminated") this.terminateNow(record, { code, message });
    return instanceView(record);
  }

  private stateWord(record: InstanceRecord): string {
    return record.transition?.action === "terminated" ? "terminating" : record.state;
  }

  private async transition(record: InstanceRecord, action: Transition["action"]): Promise<void> {
    switch (action) {
      case "boot":
        return this.boot(record);
      case "die":
        if (record.state !== "running") return;
        this.core.faults.countDeath();
        this.terminateNow(record, { code: "InstanceFailure", message: "the instance's host failed" });
        return;
      case "stopped":
        this.core.write(() => {
          this.core.cancelTransition(record);
          record.state = "stopped";
          delete record.runningSince;
          log(record, this.core.iso(), "stopped");
          this.core.state.put(record);
        });
        return;
      case "terminated":
        this.terminateNow(record, record.stateReason ?? { code: "UserInitiatedShutdown", message: "terminated" });
        return;
      case "purge":
        this.core.write(() => {
          this.core.cancelTransition(record);
          this.core.state.remove(record.id, instanceView(record));
        });
        return;
    }
  }

  private async boot(record: InstanceRecord): Promise<void> {
    const transition = record.transition;
    const at = this.core.iso();
    log(record, at, `booting ${record.machineType} in ${record.zone} from ${record.imageId}; ${describeUserData(record.userData)}`);
    const booted: Instance = { ...instanceView(record), state: "running", launchedAt: at };
    let failure: string | undefined;
    for (const hooks of this.core.hooks) {
      if (!hooks.onInstanceBooted) continue;
      try {
        const outcome = await hooks.onInstanceBooted(booted, record.userData, { firstBoot: record.bootCount === 0 });
        if (outcome) failure = outcome.fail;
      } catch (error) {
        failure = error instanceof Error ? error.message : String(error);
      }
      if (failure !== undefined) break;
    }
    if (!this.core.stillDue(record, transition)) return;
    if (failure !== undefined) {
      this.terminateNow(record, { code: "BootFailed", message: failure });
      return;
    }
    this.core.write(() => {
      this.core.cancelTransition(record);
      record.state = "running";
      record.bootCount += 1;
      record.runningSince = this.core.now();
      record.launchedAt = this.core.iso(record.runningSince);
      delete record.stateReason;
      log(record, record.launchedAt, "running");
      if (record.dieAfterMs === undefined) this.core.state.put(record);
      else this.core.schedule(record, "die", this.core.scale(record.dieAfterMs));
    });
  }

  private terminateNow(record: InstanceRecord, reason: StateReason): void {
    this.core.write(() => {
      this.core.cancelTransition(record);
      const at = this.core.now();
      record.state = "terminated";
      record.stateReason = reason;
      record.terminatedAt = this.core.iso(at);
      delete record.runningSince;
      const held = record.publicIpId ? this.core.state.get("publicIp", record.publicIpId) : undefined;
      if (held) {
        held.state = "available";
        delete held.instanceId;
        this.core.state.put(held);
      }
      delete record.publicIp;
      delete record.publicIpId;
      log(record, record.terminatedAt, `terminated: ${reason.message}`);
      this.core.schedule(record, "purge", this.core.scale(this.core.terminatedRetentionMs));
    });
    if (reason.code !== "UserInitiatedShutdown") {
      this.core.logger.info({ instance: record.id, reason: reason.code, message: reason.message }, "sim cloud instance terminated");
    }
    this.notify(record, "onInstanceTerminated");
  }

  /** Tells the hooks, after the change is written, without waiting for them. */
  private notify(record: InstanceRecord, hook: "onInstanceStopping" | "onInstanceTerminated"): void {
    const view = instanceView(record);
    for (const hooks of this.core.hooks) {
      if (!hooks[hook]) continue;
      Promise.resolve()
        .then(() => hooks[hook]?.(view))
        .catch((error: unknown) => this.core.logger.error({ err: error, instance: record.id, hook }, "instance hook failed"));
    }
  }
}

/** Checks of the launch request that need no other resource. */
function checkLaunch(input: CreateInstanceInput): void {
  const userData = input.userData ?? "";
  if (Buffer.byteLength(userData) > MAX_USER_DATA_BYTES) {
    throw new InvalidParameterError(`instance.userData: ${Buffer.byteLength(userData)} bytes, more than ${MAX_USER_DATA_BYTES}`, {
      details: { field: "instance.userData" },
    });
  }
  if (input.assignPublicIp && input.publicIpId) {
    throw new InvalidParameterError("instance: give either assignPublicIp or publicIpId, not both", {
      details: { field: "instance.publicIpId" },
    });
  }
}

/** An action on one instance that takes no arguments (its request body is ignored). */
function instanceAction(path: string, run: (service: InstanceService, account: string, region: string, id: string) => Instance) {
  return action({ path, body: () => ({}), parse: (): [] => [], run });
}

/** The cloud's one instance service (scale sets launch through it, on the same boot path). */
const servicesByCore = new WeakMap<CloudCore, InstanceService>();
export function instanceServiceOf(core: CloudCore): InstanceService {
  let service = servicesByCore.get(core);
  if (!service) servicesByCore.set(core, (service = new InstanceService(core)));
  return service;
}

export const instances = defineResource({
  kind: "instance",
  noun: "instance",
  names: { one: "Instance", many: "Instances" },
  collection: "instances",
  idPrefix: "i",
  service: instanceServiceOf,
  create: {
    input: CreateInstanceInputSchema,
    check: checkLaunch,
    build: (service, account, region, input) => service.launch(account, region, input),
  },
  /** Deleting an instance is terminating it. */
  delete: { action: "terminateInstance" },
  view: (_core, record: InstanceRecord) => instanceView(record),
  actions: {
    /** Stops a running instance (stopping → stopped); a no-op when already stopping or stopped. */
    stopInstance: instanceAction("stop", (service, account, region, id) => service.stopInstance(account, region, id)),
    /** Starts a stopped instance (pending → running); a no-op when pending or running. */
    startInstance: instanceAction("start", (service, account, region, id) => service.startInstance(account, region, id)),
    /**
     * The instance's user data (POST …/instances/{id}/user-data), to its account, as EC2's
     * DescribeInstanceAttribute answers it: whatever a launch puts there can be read back for the
     * instance's whole life, which is why bootstrap secrets go into a secret instead.
     */
    getInstanceUserData: action({
      path: "user-data",
      body: () => ({}),
      parse: (): [] => [],
      run: (service: InstanceService, account: string, region: string, id: string) => service.userDataOf(account, region, id),
    }),
    /** Terminates an instance (stopping → terminated); a no-op when terminated. */
    terminateInstance: instanceAction("terminate", (service, account, region, id) => service.terminateInstance(account, region, id)),
  },
  /** Instances count until they are terminated (stopped ones too). */
  quota: (record) =>
    record.state === "terminated" ? undefined : { vcpus: record.vcpus, instances: 1, publicIps: record.ephemeralPublicIp ? 1 : 0 },
});
