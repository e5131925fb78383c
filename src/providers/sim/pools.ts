// The sim provider's pool infrastructure: the sim cloud's scale sets through the poolInfrastructure
// capability of the contract. The pool's tags go on the scale set and, through its launch template, on
// every instance it launches.
import type { ScaleSet } from "../../simcloud/scaleset-service.ts";
import type * as Sim from "../../simcloud/types.ts";
import {
  type CreateOptions,
  type PoolChange,
  type PoolInfo,
  type PoolInfrastructure,
  type PoolInstanceInfo,
  type PoolSpec,
  type PoolTemplate,
  type ResourceState,
  type Tags,
} from "../provider.ts";
import { unlessNotFound } from "./errors.ts";
import type { CloudCall } from "./reservations.ts";
import { simProviderId } from "./views.ts";

function poolState(state: ScaleSet["state"]): ResourceState {
  return state === "active" ? "ready" : state === "deleting" ? "deleting" : "gone";
}

export function poolInfo(set: ScaleSet): PoolInfo {
  // A view kept by an idempotency token after its set vanished lacks the live fields.
  const instances: PoolInstanceInfo[] = (set.instances ?? []).map((i) => ({
    instanceId: i.instanceId,
    providerId: simProviderId(set.region, i.instanceId),
    zone: i.zone,
    state: i.lifecycleState === "Pending" ? "pending" : i.lifecycleState === "InService" ? "ready" : "leaving",
    healthy: i.healthStatus === "Healthy",
    protected: i.protectedFromScaleIn,
    upToDate: i.templateVersion === set.launchTemplate.version,
  }));
  return {
    id: set.id,
    name: set.name,
    state: poolState(set.state),
    cloudState: set.state,
    tags: { ...set.tags },
    zones: [...set.zones],
    minSize: set.minSize,
    maxSize: set.maxSize,
    desired: set.desiredCapacity,
    replicas: set.instanceCount ?? 0,
    readyReplicas: set.inServiceCount ?? 0,
    instances,
    ...(set.statusMessage ? { message: set.statusMessage } : {}),
  };
}

export class SimPools implements PoolInfrastructure {
  constructor(
    private readonly api: Sim.CloudApi,
    private readonly region: string,
    private readonly call: CloudCall,
  ) {}

  private template(template: PoolTemplate, placement: PoolSpec["placement"], tags: Tags) {
    return {
      machineType: template.machineType,
      imageId: template.imageId,
      userData: template.userData,
      securityGroupIds: placement.securityGroupIds,
      ...(placement.keyPairId === undefined ? {} : { keyPairId: placement.keyPairId }),
      ...(placement.publicIp ? { assignPublicIp: true } : {}),
      tags,
    };
  }

  async create(spec: PoolSpec, { token, tags }: CreateOptions): Promise<PoolInfo> {
    const created = await this.call(`create scale set ${spec.name}`, () =>
      this.api.createScaleSet(this.region, {
        name: spec.name.replace(/[^a-zA-Z0-9._-]/g, "-").slice(0, 64),
        subnetIds: spec.placement.subnetIds,
        launchTemplate: this.template(spec, spec.placement, tags),
        minSize: spec.minSize,
        maxSize: spec.maxSize,
        desiredCapacity: spec.desired,
        tags,
        clientToken: token,
      }),
    );
    return poolInfo(created);
  }

  async get(id: string): Promise<PoolInfo | undefined> {
    const found = await unlessNotFound(() => this.call(`get scale set ${id}`, () => this.api.getScaleSet(this.region, id)));
    const info = found && poolInfo(found);
    return info?.state === "gone" ? undefined : info;
  }

  async findTagged(tags: Tags): Promise<PoolInfo[]> {
    const found = await this.call("list scale sets", () => this.api.listScaleSets(this.region, { tags }));
    return found.map(poolInfo);
  }

  async update(id: string, change: PoolChange): Promise<PoolInfo> {
    const current = await this.call(`get scale set ${id}`, () => this.api.getScaleSet(this.region, id));
    const template = change.template;
    const updated = await this.call(`update scale set ${id}`, () =>
      this.api.updateScaleSet(this.region, id, {
        ...(change.minSize === undefined ? {} : { minSize: change.minSize }),
        ...(change.maxSize === undefined ? {} : { maxSize: change.maxSize }),
        ...(change.desired === undefined ? {} : { desiredCapacity: change.desired }),
        ...(template
          ? {
              launchTemplate: this.template(
                template,
                { subnetIds: current.subnetIds, securityGroupIds: current.launchTemplate.securityGroupIds, ...(current.launchTemplate.keyPairId ? { keyPairId: current.launchTemplate.keyPairId } : {}), publicIp: current.launchTemplate.assignPublicIp },
                current.launchTemplate.tags,
              ),
            }
          : {}),
      }),
    );
    return poolInfo(updated);
  }

  async instances(id: string): Promise<PoolInstanceInfo[]> {
    const set = await this.call(`get scale set ${id}`, () => this.api.getScaleSet(this.region, id));
    return poolInfo(set).instances;
  }

  /** An instance, or a whole pool, that is gone leaves nothing to remove. */
  async removeInstance(id: string, instanceId: string, { decrementDesired }: { decrementDesired: boolean }): Promise<void> {
    await unlessNotFound(() =>
      this.call(`remove instance ${instanceId} from scale set ${id}`, () => this.api.removeScaleSetInstance(this.region, id, instanceId, decrementDesired)),
    );
  }

  async protect(id: string, instanceIds: string[], protect: boolean): Promise<void> {
    if (instanceIds.length === 0) return;
    await this.call(`protect instances of scale set ${id}`, () => this.api.setScaleSetInstanceProtection(this.region, id, instanceIds, protect));
  }

  async delete(id: string): Promise<void> {
    await unlessNotFound(() => this.call(`delete scale set ${id}`, () => this.api.deleteScaleSet(this.region, id)));
  }
}
