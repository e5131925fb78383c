// Scale sets, as public clouds have them (AWS Auto Scaling groups, Azure VM scale sets, GCP managed
// instance groups): a launch template (machine type, image, user data, security groups, tags), the
// subnets — one per zone — its instances go in, and a desired capacity between a minimum and a maximum.
// The cloud keeps the set at its desired capacity itself: its reconciliation runs on the cloud's clock
// whenever the set changes or one of its instances stops, is terminated or dies, and launches, replaces
// and removes ordinary instances (the same launch, boot, faults and latencies as `createInstance`),
// spread over the zones. A launch the quota or the zones' capacity refuses is an activity that failed,
// the set's `statusMessage` says why, and the launch is retried. Scale-in never removes an instance
// protected from it; `removeScaleSetInstance` removes a chosen one (AWS's
// TerminateInstanceInAutoScalingGroup), with or without lowering the desired capacity.
import { Type, type Static } from "@sinclair/typebox";
import { createHash } from "node:crypto";
import { image, machineType } from "./catalog.ts";
import type { CloudCore } from "./core.ts";
import { InvalidParameterError, NotFoundError, SimCloudError } from "./errors.ts";
import { instanceServiceOf, type InstanceService } from "./instance-service.ts";
import { findOwned, requireReady } from "./lookup.ts";
import type { InstanceRecord, Transition } from "./records.ts";
import { action, defineResource, type ResourceView, type StoredResource } from "./resource-kinds.ts";
import { CreateCommon, MAX_USER_DATA_BYTES, Strict, TagsSchema, checkInput, type Tags } from "./schemas.ts";
import type { InstanceState, StateReason } from "./types.ts";
import { plainView } from "./views.ts";

/** The tag every instance of a scale set carries: the set's id (as AWS tags aws:autoscaling:groupName). */
export const SCALE_SET_TAG = "sim:scale-set";

/** Most instances one scale set may hold. */
export const MAX_SCALE_SET_SIZE = 1000;

/** Activities a scale set keeps (older ones drop off). */
const ACTIVITY_LIMIT = 50;

/** How long, in simulated milliseconds, a scale set waits before retrying launches that failed. */
const RETRY_DELAY = { instant: [1000, 1000], fast: [1000, 1000], demo: [5000, 5000], realistic: [10_000, 10_000] } as const;

const Id = Type.String({ minLength: 1, maxLength: 64 });
const Size = Type.Integer({ minimum: 0, maximum: MAX_SCALE_SET_SIZE });

export const LaunchTemplateSchema = Strict({
  machineType: Type.String({ minLength: 1 }),
  imageId: Id,
  userData: Type.Optional(Type.String({ description: "Read by every instance at boot (cloud-init); never returned." })),
  securityGroupIds: Type.Optional(Type.Array(Id, { maxItems: 5 })),
  keyPairId: Type.Optional(Id),
  assignPublicIp: Type.Optional(Type.Boolean()),
  tags: Type.Optional(TagsSchema),
});

export const CreateScaleSetInputSchema = Strict({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: "^[a-zA-Z0-9._-]+$" })),
  subnetIds: Type.Array(Id, { minItems: 1, maxItems: 6, description: "One subnet per zone; instances are spread over them." }),
  launchTemplate: LaunchTemplateSchema,
  minSize: Size,
  maxSize: Size,
  desiredCapacity: Size,
  ...CreateCommon,
});

export const UpdateScaleSetInputSchema = Strict({
  minSize: Type.Optional(Size),
  maxSize: Type.Optional(Size),
  desiredCapacity: Type.Optional(Size),
  /** A new template (a new version): instances launched from now on use it; running ones are kept. */
  launchTemplate: Type.Optional(LaunchTemplateSchema),
});

export type LaunchTemplateInput = Static<typeof LaunchTemplateSchema>;
export type CreateScaleSetInput = Static<typeof CreateScaleSetInputSchema>;
export type UpdateScaleSetInput = Static<typeof UpdateScaleSetInputSchema>;

/** The launch template as shown: the user data only as its SHA-256. */
export interface LaunchTemplate {
  version: number;
  machineType: string;
  imageId: string;
  securityGroupIds: string[];
  keyPairId?: string;
  assignPublicIp: boolean;
  tags: Tags;
  userDataSha256?: string;
}

/** Pending (booting), InService (running), Terminating (leaving the set). */
export type ScaleSetLifecycleState = "Pending" | "InService" | "Terminating";

export interface ScaleSetInstance {
  instanceId: string;
  zone: string;
  subnetId: string;
  lifecycleState: ScaleSetLifecycleState;
  /** Healthy while the instance is pending or running. */
  healthStatus: "Healthy" | "Unhealthy";
  /** The instance's own state, for messages. */
  instanceState: InstanceState | "gone";
  protectedFromScaleIn: boolean;
  /** The launch template version it was launched from. */
  templateVersion: number;
}

export interface ScaleSetActivity {
  at: string;
  status: "Successful" | "Failed";
  /** What was done, e.g. "Launching a new instance: i-…". */
  description: string;
  /** Why, e.g. "the scale set had 2 of 3 instances". */
  cause: string;
  /** Why it failed. */
  statusMessage?: string;
  /** How many times in a row this same failure happened (retries are not logged again). */
  attempts?: number;
}

export interface ScaleSet extends ResourceView<"scaleSet"> {
  /** active, deleting (its instances are being terminated), deleted (seen only through an idempotency token). */
  state: "active" | "deleting" | "deleted";
  name: string;
  subnetIds: string[];
  /** The zones of the subnets, in the same order. */
  zones: string[];
  launchTemplate: LaunchTemplate;
  minSize: number;
  maxSize: number;
  desiredCapacity: number;
  /** Its instances, those on their way out included (lifecycle Terminating). */
  instances: ScaleSetInstance[];
  /** Instances that count towards the desired capacity (pending or in service). */
  instanceCount: number;
  /** Instances running. */
  inServiceCount: number;
  /** Why the set is not at its desired capacity, while it is not for a reason (quota, capacity, protected instances). */
  statusMessage?: string;
  /** What the set did and why, oldest first (the last 50). */
  activities: ScaleSetActivity[];
}

interface StoredTemplate extends LaunchTemplate {
  userData: string;
}

interface Member {
  instanceId: string;
  zone: string;
  subnetId: string;
  protectedFromScaleIn: boolean;
  templateVersion: number;
  /** Taken out of the set (scale-in, removal, replacement, delete): terminating, no longer counted. */
  leaving?: boolean;
}

export type ScaleSetRecord = Omit<ScaleSet, "instances" | "instanceCount" | "inServiceCount" | "launchTemplate"> & {
  launchTemplate: StoredTemplate;
  members: Member[];
  transition?: Transition<"reconcile">;
};

function invalid(field: string, message: string): InvalidParameterError {
  return new InvalidParameterError(`${field}: ${message}`, { details: { field } });
}

/** min ≤ desired ≤ max, naming the field that breaks it. */
function checkSizes(minSize: number, maxSize: number, desiredCapacity: number): void {
  if (maxSize < minSize) throw invalid("scaleSet.maxSize", `${maxSize} is less than minSize ${minSize}`);
  if (desiredCapacity > maxSize) throw invalid("scaleSet.desiredCapacity", `${desiredCapacity} is more than maxSize ${maxSize}`);
  if (desiredCapacity < minSize) throw invalid("scaleSet.desiredCapacity", `${desiredCapacity} is less than minSize ${minSize}`);
}

function checkUserData(template: LaunchTemplateInput | undefined): void {
  const bytes = Buffer.byteLength(template?.userData ?? "");
  if (bytes > MAX_USER_DATA_BYTES) throw invalid("scaleSet.launchTemplate.userData", `${bytes} bytes, more than ${MAX_USER_DATA_BYTES}`);
}

function checkCreate(input: CreateScaleSetInput): void {
  checkSizes(input.minSize, input.maxSize, input.desiredCapacity);
  checkUserData(input.launchTemplate);
}

function sameFailure(a: ScaleSetActivity | undefined, b: ScaleSetActivity): boolean {
  return a !== undefined && a.status === "Failed" && a.description === b.description && a.cause === b.cause && a.statusMessage === b.statusMessage;
}

export class ScaleSetService {
  /** Sets being reconciled now: changes they make to their own instances need no second pass. */
  private readonly reconciling = new Set<string>();

  constructor(
    private readonly core: CloudCore,
    private readonly instances: InstanceService,
  ) {
    core.onTransition("scaleSet", (record) => this.reconcile(record));
    core.state.onChange((record, removed) => this.instanceChanged(record, removed));
  }

  createScaleSet(account: string, region: string, input: CreateScaleSetInput): ScaleSetRecord {
    const core = this.core;
    const subnets = this.checkSubnets(account, region, input.subnetIds);
    const id = core.newId("scaleSet");
    const record: ScaleSetRecord = {
      ...core.newRecord("scaleSet", account, region, input.tags, id),
      state: "active",
      name: input.name ?? id,
      subnetIds: subnets.map((s) => s.id),
      zones: subnets.map((s) => s.zone),
      launchTemplate: this.template(account, region, subnets[0]!.networkId, input.launchTemplate, 1),
      minSize: input.minSize,
      maxSize: input.maxSize,
      desiredCapacity: input.desiredCapacity,
      members: [],
      activities: [],
    };
    core.schedule(record, "reconcile", 0);
    return record;
  }

  updateScaleSet(account: string, region: string, id: string, change: UpdateScaleSetInput): ScaleSet {
    const core = this.core;
    const record = this.active(account, region, id);
    const checked = checkInput(UpdateScaleSetInputSchema, change, "scaleSet");
    const minSize = checked.minSize ?? record.minSize;
    const maxSize = checked.maxSize ?? record.maxSize;
    const desiredCapacity = checked.desiredCapacity ?? record.desiredCapacity;
    checkSizes(minSize, maxSize, desiredCapacity);
    checkUserData(checked.launchTemplate);
    const subnet = core.state.get("subnet", record.subnetIds[0]!);
    const template = checked.launchTemplate
      ? this.template(account, region, subnet?.networkId ?? "", checked.launchTemplate, record.launchTemplate.version + 1)
      : undefined;
    core.write(() => {
      if (template) record.launchTemplate = template;
      record.minSize = minSize;
      record.maxSize = maxSize;
      record.desiredCapacity = desiredCapacity;
      this.nudge(record);
      core.state.put(record);
    });
    return scaleSetView(core, record);
  }

  /** Protects instances from scale-in (or lifts it); every id must be an instance of the set. */
  setInstanceProtection(account: string, region: string, id: string, instanceIds: string[], protectedFromScaleIn: boolean): ScaleSet {
    const core = this.core;
    const record = this.active(account, region, id);
    const members = instanceIds.map((instanceId) => {
      const member = record.members.find((m) => m.instanceId === instanceId && !m.leaving);
      if (!member) throw invalid("instanceIds", `instance ${instanceId} is not in scale set ${id}`);
      return member;
    });
    core.write(() => {
      for (const member of members) member.protectedFromScaleIn = protectedFromScaleIn;
      if (!protectedFromScaleIn) this.nudge(record);
      core.state.put(record);
    });
    return scaleSetView(core, record);
  }

  /**
   * Terminates a chosen instance of the set, protected or not. With `decrementDesiredCapacity` the set
   * shrinks by one (refused below its minimum); without, the set launches a replacement. Removing an
   * instance that is already leaving, or that was in the set and is gone, changes nothing.
   */
  removeInstance(account: string, region: string, id: string, instanceId: string, decrementDesiredCapacity: boolean): ScaleSet {
    const core = this.core;
    const record = this.active(account, region, id);
    const member = record.members.find((m) => m.instanceId === instanceId);
    if (!member || member.leaving) {
      const instance = core.state.get("instance", instanceId);
      if (!instance || instance.account !== account || instance.region !== region) {
        throw new NotFoundError(`instance ${instanceId} not found in ${region}`, { details: { kind: "instance", id: instanceId } });
      }
      if (instance.tags[SCALE_SET_TAG] !== id) throw invalid("instanceId", `instance ${instanceId} is not in scale set ${id}`);
      return scaleSetView(core, record);
    }
    if (decrementDesiredCapacity && record.desiredCapacity - 1 < record.minSize) {
      throw invalid("desiredCapacity", `removing ${instanceId} would take the desired capacity below minSize ${record.minSize}; lower minSize first`);
    }
    core.write(() => {
      const cause = decrementDesiredCapacity
        ? `instance ${instanceId} was removed on request, lowering the desired capacity from ${record.desiredCapacity} to ${record.desiredCapacity - 1}`
        : `instance ${instanceId} was removed on request; the scale set replaces it`;
      if (decrementDesiredCapacity) record.desiredCapacity -= 1;
      this.takeOut(record, member, { code: "ScaleSetRemoval", message: `removed from scale set ${id} on request` }, cause);
      if (!decrementDesiredCapacity) this.nudge(record);
      core.state.put(record);
    });
    return scaleSetView(core, record);
  }

  /** Deletes the set: its instances, protected ones too, are terminated; the set goes once they are. */
  deleteScaleSet(account: string, region: string, id: string): void {
    const core = this.core;
    const record = findOwned(core, account, region, "scaleSet", id);
    if (record.state !== "active") return;
    core.write(() => {
      record.state = "deleting";
      for (const member of record.members.filter((m) => !m.leaving)) {
        this.takeOut(record, member, { code: "ScaleSetDeleted", message: `scale set ${id} was deleted` }, `scale set ${id} was deleted`);
      }
      this.finishDelete(record);
    });
  }

  private active(account: string, region: string, id: string): ScaleSetRecord {
    const record = findOwned(this.core, account, region, "scaleSet", id);
    if (record.state !== "active") throw new InvalidParameterError(`scale set ${id} is being deleted`, { details: { kind: "scaleSet", id } });
    return record;
  }

  /** Subnets that are available, of one network, at most one per zone. */
  private checkSubnets(account: string, region: string, subnetIds: string[]) {
    const subnets = [...new Set(subnetIds)].map((id) => findOwned(this.core, account, region, "subnet", id));
    subnets.forEach((subnet) => requireReady(this.core, subnet));
    const networkId = subnets[0]!.networkId;
    if (subnets.some((s) => s.networkId !== networkId)) throw invalid("scaleSet.subnetIds", "the subnets belong to different networks");
    if (new Set(subnets.map((s) => s.zone)).size !== subnets.length) throw invalid("scaleSet.subnetIds", "give at most one subnet per zone");
    return subnets;
  }

  /** A launch template, checked against the catalogue and the network's security groups and the key pairs. */
  private template(account: string, region: string, networkId: string, input: LaunchTemplateInput, version: number): StoredTemplate {
    const core = this.core;
    const field = "scaleSet.launchTemplate";
    let type;
    try {
      type = machineType(region, input.machineType);
      image(region, input.imageId);
    } catch (error) {
      if (error instanceof InvalidParameterError) throw invalid(field, error.message);
      throw error;
    }
    const securityGroupIds = [...new Set(input.securityGroupIds ?? [])];
    for (const id of securityGroupIds) {
      const group = findOwned(core, account, region, "securityGroup", id);
      if (group.networkId !== networkId) throw invalid(`${field}.securityGroupIds`, `security group ${id} belongs to ${group.networkId}, not to the subnets' ${networkId}`);
    }
    if (input.keyPairId) findOwned(core, account, region, "keyPair", input.keyPairId);
    const userData = input.userData ?? "";
    return {
      version,
      machineType: type.name,
      imageId: input.imageId,
      securityGroupIds,
      ...(input.keyPairId ? { keyPairId: input.keyPairId } : {}),
      assignPublicIp: input.assignPublicIp === true,
      tags: { ...input.tags },
      userData,
      ...(userData ? { userDataSha256: createHash("sha256").update(userData).digest("hex") } : {}),
    };
  }

  /** An instance of a set stopped, is terminating, was terminated or vanished: the set looks again. */
  private instanceChanged(record: StoredResource, removed: boolean): void {
    if (record.kind !== "instance") return;
    const setId = record.tags[SCALE_SET_TAG];
    if (setId === undefined || this.reconciling.has(setId)) return;
    const state = (record as InstanceRecord).state;
    if (!removed && (state === "pending" || state === "running")) return;
    const set = this.core.state.get("scaleSet", setId);
    if (!set || !set.members.some((m) => m.instanceId === record.id)) return;
    this.nudge(set);
  }

  /** Reconciles the set on the next tick, unless it is due sooner. */
  private nudge(record: ScaleSetRecord): void {
    if (record.transition && record.transition.at <= this.core.now()) return;
    this.core.schedule(record, "reconcile", 0);
  }

  private activity(record: ScaleSetRecord, entry: Omit<ScaleSetActivity, "at">): void {
    const full: ScaleSetActivity = { at: this.core.iso(), ...entry };
    const last = record.activities.at(-1);
    if (sameFailure(last, full)) {
      last!.at = full.at;
      last!.attempts = (last!.attempts ?? 1) + 1;
      return;
    }
    record.activities = [...record.activities, full].slice(-ACTIVITY_LIMIT);
  }

  /** Marks a member as leaving and terminates its instance (the instance's own transition). */
  private takeOut(record: ScaleSetRecord, member: Member, reason: StateReason, cause: string): void {
    member.leaving = true;
    this.reconciling.add(record.id);
    try {
      if (this.core.state.get("instance", member.instanceId)) this.instances.terminateInstance(record.account, record.region, member.instanceId, reason);
    } finally {
      this.reconciling.delete(record.id);
    }
    this.activity(record, { status: "Successful", description: `Terminating instance ${member.instanceId}`, cause });
  }

  private finishDelete(record: ScaleSetRecord): void {
    if (record.members.length > 0) {
      this.core.state.put(record);
      return;
    }
    this.core.cancelTransition(record);
    this.core.state.remove(record.id, { ...scaleSetView(this.core, record), state: "deleted" });
  }

  /** Brings the set to its desired capacity: drops what is gone, replaces what is unhealthy, launches or removes. */
  private reconcile(record: ScaleSetRecord): void {
    const core = this.core;
    core.write(() => {
      core.cancelTransition(record);
      this.reconciling.add(record.id);
      try {
        const failedBoot = this.dropDeparted(record);
        if (record.state !== "active") return this.finishDelete(record);
        const live = record.members.filter((m) => !m.leaving);
        const blocked =
          live.length < record.desiredCapacity
            ? failedBoot
              ? { message: `${failedBoot}; launching a replacement shortly`, retry: true }
              : this.launch(record, record.desiredCapacity - live.length)
            : live.length > record.desiredCapacity
              ? this.scaleIn(record, live.length - record.desiredCapacity)
              : undefined;
        if (blocked) record.statusMessage = blocked.message;
        else delete record.statusMessage;
        if (blocked?.retry) core.schedule(record, "reconcile", core.sampleDelayIn(RETRY_DELAY));
        else core.state.put(record);
      } finally {
        this.reconciling.delete(record.id);
      }
    });
  }

  /**
   * Forgets members whose instance is terminated or gone; takes stopped or stopping ones out, to be
   * replaced. Answers what failed to boot, if an instance did: its replacement waits a little, so that
   * user data that always fails does not spin launches.
   */
  private dropDeparted(record: ScaleSetRecord): string | undefined {
    let failedBoot: string | undefined;
    for (const member of [...record.members]) {
      const instance = this.core.state.get("instance", member.instanceId);
      if (!instance || instance.state === "terminated") {
        record.members = record.members.filter((m) => m !== member);
        if (!member.leaving && record.state === "active") {
          const why = instance?.stateReason ? `${instance.stateReason.code}: ${instance.stateReason.message}` : "it is gone";
          if (instance?.stateReason?.code === "BootFailed") failedBoot = `instance ${member.instanceId} failed to boot (${instance.stateReason.message})`;
          this.activity(record, {
            status: "Successful",
            description: `Removing instance ${member.instanceId}`,
            cause: `instance ${member.instanceId} was terminated (${why}); the scale set replaces it`,
          });
        }
        continue;
      }
      if (!member.leaving && (instance.state === "stopped" || instance.state === "stopping")) {
        this.takeOut(
          record,
          member,
          { code: "ScaleSetUnhealthy", message: `scale set ${record.id} replaced the instance because it was ${instance.state}` },
          `instance ${member.instanceId} was ${instance.state}, so it is unhealthy; the scale set replaces it`,
        );
      }
    }
    return failedBoot;
  }

  /** Launches `count` instances, each in the zone with the fewest; answers why it could not launch them all. */
  private launch(record: ScaleSetRecord, count: number): { message: string; retry: boolean } | undefined {
    const core = this.core;
    const template = record.launchTemplate;
    for (let launched = 0; launched < count; launched++) {
      const live = record.members.filter((m) => !m.leaving);
      const cause = `the scale set had ${live.length} of ${record.desiredCapacity} instances`;
      const inZone = (zone: string) => live.filter((m) => m.zone === zone).length;
      const order = record.subnetIds.map((subnetId, i) => ({ subnetId, zone: record.zones[i]! })).sort((a, b) => inZone(a.zone) - inZone(b.zone));
      const failures: string[] = [];
      let placed = false;
      // A launch draws the createInstance faults, as a createInstance call would.
      const fault = core.faults.draw("createInstance");
      if (fault) failures.push(fault.error.message);
      for (const { subnetId, zone } of fault ? [] : order) {
        try {
          const instance = this.instances.launch(record.account, record.region, {
            subnetId,
            machineType: template.machineType,
            imageId: template.imageId,
            securityGroupIds: template.securityGroupIds,
            ...(template.keyPairId ? { keyPairId: template.keyPairId } : {}),
            ...(template.assignPublicIp ? { assignPublicIp: true } : {}),
            userData: template.userData,
            tags: { ...template.tags, [SCALE_SET_TAG]: record.id },
          });
          record.members.push({ instanceId: instance.id, zone, subnetId, protectedFromScaleIn: false, templateVersion: template.version });
          this.activity(record, { status: "Successful", description: `Launching a new instance: ${instance.id} in ${zone}`, cause });
          placed = true;
          break;
        } catch (error) {
          if (!(error instanceof SimCloudError)) throw error;
          failures.push(`${zone}: ${error.message}`);
          // Quotas are regional: another zone fares no better.
          if (error.code === "QuotaExceeded") break;
        }
      }
      if (placed) continue;
      const message = `cannot launch ${count - launched} of the ${record.desiredCapacity} instances wanted: ${failures.join("; ")}`;
      this.activity(record, { status: "Failed", description: "Launching a new instance", cause, statusMessage: failures.join("; ") });
      return { message, retry: true };
    }
    return undefined;
  }

  /**
   * Removes `count` unprotected instances: from the zone with the most, then launched from the oldest
   * template version, then the most recently launched (long-running instances stay).
   */
  private scaleIn(record: ScaleSetRecord, count: number): { message: string; retry: boolean } | undefined {
    const from = record.members.filter((m) => !m.leaving).length;
    for (let removed = 0; removed < count; removed++) {
      const live = record.members.filter((m) => !m.leaving);
      const inZone = (zone: string) => live.filter((m) => m.zone === zone).length;
      const index = (m: Member) => record.members.indexOf(m);
      const victim = live
        .filter((m) => !m.protectedFromScaleIn)
        .sort((a, b) => inZone(b.zone) - inZone(a.zone) || a.templateVersion - b.templateVersion || index(b) - index(a))[0];
      if (!victim) {
        const protectedCount = live.filter((m) => m.protectedFromScaleIn).length;
        return { message: `cannot scale in to ${record.desiredCapacity}: ${protectedCount} instances are protected from scale-in`, retry: false };
      }
      this.takeOut(
        record,
        victim,
        { code: "ScaleSetScaleIn", message: `scale set ${record.id} scaled in` },
        `the desired capacity is ${record.desiredCapacity} and the scale set had ${from} instances`,
      );
    }
    return undefined;
  }
}

function instanceOf(core: CloudCore, member: Member): ScaleSetInstance {
  const instance = core.state.get("instance", member.instanceId);
  const state = instance?.state ?? "gone";
  const lifecycleState: ScaleSetLifecycleState = member.leaving || (state !== "pending" && state !== "running") ? "Terminating" : state === "pending" ? "Pending" : "InService";
  return {
    instanceId: member.instanceId,
    zone: member.zone,
    subnetId: member.subnetId,
    lifecycleState,
    healthStatus: state === "pending" || state === "running" ? "Healthy" : "Unhealthy",
    instanceState: state,
    protectedFromScaleIn: member.protectedFromScaleIn,
    templateVersion: member.templateVersion,
  };
}

export function scaleSetView(core: CloudCore, record: ScaleSetRecord): ScaleSet {
  const { members, launchTemplate, ...rest } = plainView(record);
  const { userData: _userData, ...template } = launchTemplate;
  const instances = members.map((m) => instanceOf(core, m));
  return {
    ...rest,
    launchTemplate: template,
    instances,
    instanceCount: instances.filter((i) => i.lifecycleState !== "Terminating").length,
    inServiceCount: instances.filter((i) => i.lifecycleState === "InService").length,
  };
}

/** The body of an action naming instances. */
function protectionOf(body: unknown): [string[], boolean] {
  const { instanceIds, protectedFromScaleIn } = (body ?? {}) as { instanceIds?: unknown; protectedFromScaleIn?: unknown };
  if (!Array.isArray(instanceIds) || instanceIds.length === 0 || !instanceIds.every((id) => typeof id === "string")) {
    throw invalid("instanceIds", "a non-empty array of instance ids is required");
  }
  if (typeof protectedFromScaleIn !== "boolean") throw invalid("protectedFromScaleIn", "true or false is required");
  return [instanceIds, protectedFromScaleIn];
}

function removalOf(body: unknown): [string, boolean] {
  const { instanceId, decrementDesiredCapacity } = (body ?? {}) as { instanceId?: unknown; decrementDesiredCapacity?: unknown };
  if (typeof instanceId !== "string" || instanceId === "") throw invalid("instanceId", "an instance id is required");
  if (typeof decrementDesiredCapacity !== "boolean") throw invalid("decrementDesiredCapacity", "true or false is required");
  return [instanceId, decrementDesiredCapacity];
}

export const scaleSets = defineResource({
  kind: "scaleSet",
  noun: "scale set",
  names: { one: "ScaleSet", many: "ScaleSets" },
  collection: "scale-sets",
  idPrefix: "ss",
  service: (core) => new ScaleSetService(core, instanceServiceOf(core)),
  create: {
    input: CreateScaleSetInputSchema,
    check: checkCreate,
    build: (service, account, region, input) => service.createScaleSet(account, region, input),
  },
  /** deleting (its instances terminate) → gone; a no-op while already deleting. */
  delete: { run: (service, account, region, id) => service.deleteScaleSet(account, region, id) },
  view: scaleSetView,
  actions: {
    /** Changes the sizes and/or the launch template (a new version, used by instances launched from now on). */
    updateScaleSet: action({
      path: "update",
      body: (change: UpdateScaleSetInput) => change,
      parse: (body: unknown): [UpdateScaleSetInput] => [checkInput(UpdateScaleSetInputSchema, body ?? {}, "scaleSet")],
      run: (service: ScaleSetService, account: string, region: string, id: string, change: UpdateScaleSetInput) =>
        service.updateScaleSet(account, region, id, change),
    }),
    /** Protects instances from scale-in, or lifts the protection. */
    setScaleSetInstanceProtection: action({
      path: "instances/protection",
      body: (instanceIds: string[], protectedFromScaleIn: boolean) => ({ instanceIds, protectedFromScaleIn }),
      parse: protectionOf,
      run: (service: ScaleSetService, account: string, region: string, id: string, instanceIds: string[], protectedFromScaleIn: boolean) =>
        service.setInstanceProtection(account, region, id, instanceIds, protectedFromScaleIn),
    }),
    /** Terminates a chosen instance of the set, lowering the desired capacity or having it replaced. */
    removeScaleSetInstance: action({
      path: "instances/remove",
      body: (instanceId: string, decrementDesiredCapacity: boolean) => ({ instanceId, decrementDesiredCapacity }),
      parse: removalOf,
      run: (service: ScaleSetService, account: string, region: string, id: string, instanceId: string, decrementDesiredCapacity: boolean) =>
        service.removeInstance(account, region, id, instanceId, decrementDesiredCapacity),
    }),
  },
});
