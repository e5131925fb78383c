// A kind of resource defined in this file only — block volumes — and handed to the cloud with the built-in
// ones: its HTTP routes, its client calls, idempotency, throttling and fault names, and its rows in
// `slipway sim-cloud resources` all follow from its descriptor, with no other file changed.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { Type, type Static } from "@sinclair/typebox";
import { Command } from "commander";
import { checkZone } from "./catalog.ts";
import { registerSimCloudCommands, type CliOutput } from "./cli.ts";
import { SimCloudClient } from "./client.ts";
import { ManualClock } from "./clock.ts";
import { SimCloud, type SimCloudOptions } from "./cloud.ts";
import type { CloudCore } from "./core.ts";
import { DependencyViolationError, InternalError, InvalidParameterError, NotFoundError, ThrottlingError } from "./errors.ts";
import { checkFaultConfig } from "./faults.ts";
import { findOwned, findOwnedOf, requireUnused } from "./lookup.ts";
import type { Transition } from "./records.ts";
import { ResourceRegistry } from "./registry.ts";
import { action, defineResource, type AnyDescriptor, type ResourceView } from "./resource-kinds.ts";
import { CreateCommon, Strict } from "./schemas.ts";
import { startSimCloudServer, type SimCloudServer } from "./server.ts";
import { BUILTIN_RESOURCES } from "./services.ts";
import { readyNetwork, settle } from "./test-support.ts";
import { plainView } from "./views.ts";

const REGION = "sim-east-1";
const ZONE = "sim-east-1a";

// ---- the service: everything a new kind needs ----

const CreateVolumeInputSchema = Strict({
  zone: Type.String({ minLength: 1 }),
  sizeGiB: Type.Integer({ minimum: 1, maximum: 16384 }),
  ...CreateCommon,
});
type CreateVolumeInput = Static<typeof CreateVolumeInputSchema>;

interface Volume extends ResourceView<"volume"> {
  state: "creating" | "available" | "in-use" | "deleted";
  zone: string;
  sizeGiB: number;
  instanceId?: string;
}
type VolumeRecord = Volume & { transition?: Transition<"available"> };

/** Simulated milliseconds from creating to available, per profile. */
const VOLUME_CREATE = { instant: [0, 0], fast: [20, 40], demo: [500, 1000], realistic: [2000, 4000] } as const;

class VolumeService {
  constructor(private readonly core: CloudCore) {
    core.onTransition("volume", (record) =>
      core.write(() => {
        core.cancelTransition(record);
        record.state = "available";
        core.state.put(record);
      }),
    );
  }

  create(account: string, region: string, input: CreateVolumeInput): VolumeRecord {
    checkZone(region, input.zone);
    const record: VolumeRecord = {
      ...this.core.newRecord("volume", account, region, input.tags),
      state: "creating",
      zone: input.zone,
      sizeGiB: input.sizeGiB,
    };
    this.core.schedule(record, "available", this.core.sampleDelayIn(VOLUME_CREATE));
    return record;
  }

  attach(account: string, region: string, id: string, instanceId: string): Volume {
    const volume = findOwnedOf(this.core, account, region, volumes, id);
    const instance = findOwned(this.core, account, region, "instance", instanceId);
    if (volume.state !== "available" || instance.zone !== volume.zone) {
      throw new InvalidParameterError(`volume ${id} is ${volume.state} in ${volume.zone}; it cannot attach to ${instanceId}`, {
        details: { field: "instanceId" },
      });
    }
    this.core.write(() => this.core.state.put(Object.assign(volume, { state: "in-use", instanceId })));
    return plainView(volume);
  }

  delete(account: string, region: string, id: string): void {
    const volume = findOwnedOf(this.core, account, region, volumes, id);
    const holder = volume.instanceId ? this.core.state.get("instance", volume.instanceId) : undefined;
    requireUnused(this.core, volume, holder ? [holder] : []);
    this.core.write(() => {
      this.core.cancelTransition(volume);
      this.core.state.remove(volume.id, { ...plainView(volume), state: "deleted" });
    });
  }
}

const volumes = defineResource({
  kind: "volume",
  noun: "volume",
  names: { one: "Volume", many: "Volumes" },
  collection: "volumes",
  idPrefix: "vol",
  service: (core) => new VolumeService(core),
  create: {
    input: CreateVolumeInputSchema,
    check: (input) => {
      if (input.sizeGiB % 8 !== 0) throw new InvalidParameterError("volume.sizeGiB: a multiple of 8 is required", { details: { field: "volume.sizeGiB" } });
    },
    build: (service, account, region, input) => service.create(account, region, input),
  },
  delete: { run: (service, account, region, id) => service.delete(account, region, id) },
  view: (_core, record: VolumeRecord): Volume => plainView(record),
  actions: {
    attachVolume: action({
      path: "attach",
      body: (instanceId: string) => ({ instanceId }),
      parse: (body): [string] => {
        const instanceId = (body as { instanceId?: unknown } | undefined)?.instanceId;
        if (typeof instanceId !== "string") throw new InvalidParameterError("attach.instanceId: a string is required", { details: { field: "instanceId" } });
        return [instanceId];
      },
      run: (service: VolumeService, account: string, region: string, id: string, instanceId: string) => service.attach(account, region, id, instanceId),
    }),
  },
});

// ---- the tests ----

const RESOURCES = [...BUILTIN_RESOURCES, volumes];
const clouds: { close(): Promise<void> }[] = [];
after(async () => {
  for (const cloud of clouds) await cloud.close();
});

function open(options: SimCloudOptions = {}): SimCloud {
  const cloud = new SimCloud({ profile: "instant", resources: RESOURCES, ...options });
  clouds.push(cloud);
  return cloud;
}

async function serve(): Promise<SimCloudServer> {
  const server = await startSimCloudServer({ port: 0, profile: "instant", resources: RESOURCES, workloadPort: false });
  clouds.push(server);
  return server;
}

async function launch(cloud: SimCloud, clock: ManualClock) {
  const net = await readyNetwork(cloud, { tick: () => clock.advance(1000) });
  return cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId });
}

describe("a resource kind registered by its descriptor", () => {
  it("is served in process: created once per token, its transition, its action, its delete", async () => {
    const clock = new ManualClock();
    const cloud = open({ profile: "demo", clock });
    const api = cloud.resources(volumes);
    const created = await api.create(REGION, { zone: ZONE, sizeGiB: 64, tags: { team: "blue" }, clientToken: "v1" });
    assert.match(created.id, /^vol-[0-9a-f]{17}$/);
    assert.equal(created.state, "creating");
    assert.equal((await api.create(REGION, { sizeGiB: 64, zone: ZONE, tags: { team: "blue" }, clientToken: "v1" })).id, created.id);
    await assert.rejects(
      api.create(REGION, { zone: ZONE, sizeGiB: 128, clientToken: "v1" }),
      (e: unknown) => e instanceof InvalidParameterError && e.message === "idempotency token reused with different parameters",
    );
    await assert.rejects(api.create(REGION, { zone: ZONE, sizeGiB: 0 }), (e: unknown) => e instanceof InvalidParameterError && e.details?.field === "volume.sizeGiB");
    await assert.rejects(api.create(REGION, { zone: ZONE, sizeGiB: 12 }), /volume.sizeGiB: a multiple of 8 is required/);
    await assert.rejects(api.create(REGION, { zone: "sim-west-1a", sizeGiB: 8 }), /zone "sim-west-1a" is not in sim-east-1/);

    clock.advance(1000);
    assert.equal((await api.get(REGION, created.id)).state, "available", "its transition ran");
    assert.deepEqual((await api.list(REGION, { tags: { team: "blue" } })).map((v) => v.id), [created.id]);
    await assert.rejects(api.get("sim-west-1", created.id), (e: unknown) => e instanceof NotFoundError && e.message === `volume ${created.id} not found in sim-west-1`);

    const instance = await launch(cloud, clock);
    clock.advance(10_000);
    const attached = await api.attachVolume(REGION, created.id, instance.id);
    assert.deepEqual([attached.state, attached.instanceId], ["in-use", instance.id]);
    await assert.rejects(api.delete(REGION, created.id), (e: unknown) => e instanceof DependencyViolationError && e.message === `volume ${created.id} is still used by instance ${instance.id}`);

    const spare = await api.create(REGION, { zone: ZONE, sizeGiB: 8, clientToken: "spare" });
    await api.delete(REGION, spare.id);
    assert.equal((await api.create(REGION, { zone: ZONE, sizeGiB: 8, clientToken: "spare" })).state, "deleted", "the token answers its last view");
    const listed = (await cloud.listResources({ region: REGION })).map((r) => r.id);
    assert.deepEqual(listed.filter((id) => id.startsWith("vol-")), [created.id], "listed with every other resource");
  });

  it("is served over HTTP by routes and client calls made from the same descriptor", async () => {
    const server = await serve();
    const client = new SimCloudClient({ endpoint: server.url, token: "sim-default-token" });
    const api = client.resources(volumes);
    const created = await api.create(REGION, { zone: ZONE, sizeGiB: 16, tags: { team: "red" }, clientToken: "http-1" });
    assert.equal((await api.create(REGION, { zone: ZONE, sizeGiB: 16, tags: { team: "red" }, clientToken: "http-1" })).id, created.id);
    await settle();
    assert.deepEqual(await api.get(REGION, created.id), { ...created, state: "available" });
    assert.deepEqual((await api.list(REGION, { tags: { team: "red" } })).map((v) => v.id), [created.id]);

    const raw = await fetch(`${server.url}/v1/regions/${REGION}/volumes`, {
      method: "POST",
      headers: { authorization: "Bearer sim-default-token", "content-type": "application/json" },
      body: JSON.stringify({ zone: ZONE, sizeGiB: 8, colour: "green" }),
    });
    assert.equal(raw.status, 400);
    const body = (await raw.json()) as { error: { code: string; message: string; details: { field: string } } };
    assert.equal(body.error.code, "InvalidParameter");
    assert.equal(body.error.details.field, "volume.colour");
    const attach = await fetch(`${server.url}/v1/regions/${REGION}/volumes/${created.id}/attach`, {
      method: "POST",
      headers: { authorization: "Bearer sim-default-token", "content-type": "application/json" },
      body: JSON.stringify({ instanceId: 7 }),
    });
    assert.equal(attach.status, 400);
    assert.match(await attach.text(), /attach.instanceId: a string is required/);
    await assert.rejects(api.attachVolume(REGION, created.id, "i-00000000000000000"), NotFoundError);
    assert.equal((await fetch(`${server.url}/v1/regions/${REGION}/volumes`)).status, 401);

    assert.equal(await api.delete(REGION, created.id), undefined);
    await assert.rejects(api.get(REGION, created.id), NotFoundError);
  });

  it("is throttled and faulted under its own operation names", async () => {
    const clock = new ManualClock();
    const limits = { mutating: { capacity: 2, refillPerSecond: 1 }, describe: { capacity: 10, refillPerSecond: 10 } };
    const cloud = open({ clock, rateLimits: limits });
    const api = cloud.resources(volumes);
    await api.create(REGION, { zone: ZONE, sizeGiB: 8 });
    await api.create(REGION, { zone: ZONE, sizeGiB: 8 });
    await assert.rejects(api.create(REGION, { zone: ZONE, sizeGiB: 8 }), (e: unknown) => {
      assert.ok(e instanceof ThrottlingError);
      assert.deepEqual([e.retryAfterMs, e.details?.operation], [1000, "createVolume"]);
      return true;
    });
    assert.equal((await api.list(REGION)).length, 2, "listVolumes has a bucket of its own, at the describe rate");
    clock.advance(1000);
    await api.create(REGION, { zone: ZONE, sizeGiB: 8 });

    assert.throws(() => checkFaultConfig({ errors: { createVolume: { InternalError: 1 } } }), /unknown operation "createVolume"/, "not a built-in operation");
    cloud.setFaults({ errors: { createVolume: { InternalError: 1 } }, failAfterCommit: 1 });
    clock.advance(10_000);
    await assert.rejects(api.create(REGION, { zone: ZONE, sizeGiB: 8, clientToken: "lost" }), InternalError);
    cloud.setFaults({});
    const again = await api.create(REGION, { zone: ZONE, sizeGiB: 8, clientToken: "lost" });
    assert.equal((await api.list(REGION)).filter((v) => v.id === again.id).length, 1, "the answer was lost, the volume was made once");
  });

  it("is listed by `slipway sim-cloud resources`, after the built-in kinds of its region", async () => {
    const server = await serve();
    const client = new SimCloudClient({ endpoint: server.url, token: "sim-default-token" });
    const volume = await client.resources(volumes).create(REGION, { zone: ZONE, sizeGiB: 8, tags: { team: "blue" } });
    const network = await client.createNetwork(REGION, { cidr: "10.4.0.0/16" });
    let out = "";
    const io: CliOutput = { out: (text) => void (out += text), err: (text) => assert.fail(text) };
    const program = new Command().exitOverride();
    registerSimCloudCommands(program, io);
    await program.parseAsync(["node", "slipway", "sim-cloud", "resources", "--endpoint", server.url, "--token", "sim-default-token"]);
    const rows = out.trimEnd().split("\n").slice(1);
    assert.equal(rows.length, 2);
    assert.match(rows[0]!, new RegExp(`^network\\s+${network.id}\\s+sim-east-1\\s+\\w+$`));
    assert.match(rows[1]!, new RegExp(`^volume\\s+${volume.id}\\s+sim-east-1\\s+\\w+\\s+team=blue$`));
  });

  it("is refused when it takes a name, path, id prefix or operation of another kind", () => {
    const clash = (changes: Partial<AnyDescriptor>, why: RegExp) =>
      assert.throws(() => new ResourceRegistry([...BUILTIN_RESOURCES, { ...volumes, ...changes }]), why);
    clash({ kind: "instance" }, /"instance": the kind is registered twice/);
    clash({ collection: "instances" }, /the collection "instances" is registered twice/);
    clash({ idPrefix: "i" }, /the id prefix "i" is registered twice/);
    clash({ names: { one: "Instance", many: "Volumes" } }, /the operation "createInstance" is registered twice/);
    clash({ delete: { action: "detachVolume" } }, /names the action "detachVolume", which it does not have/);
  });
});
