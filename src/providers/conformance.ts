// The one suite every provider must pass: each MUST rule of `provider.ts`, checked as a controller relies
// on it. Every case opens the provider afresh, tags what it builds with names of its own, and deletes all of
// it afterwards, so the suite can also run against a real cloud account.
import { describe, it, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { createPrivateKey, createPublicKey, createHash } from "node:crypto";
import {
  ProviderError,
  isProviderError,
  type CloudProvider,
  type InstanceInfo,
  type ProviderErrorKind,
  type QuotaResources,
  type ResourceInfos,
  type ResourceKind,
  type Tags,
} from "./provider.ts";

/**
 * A fault the cloud is made to answer with. "lostAnswer": the cloud makes the change, then the answer is
 * lost (a transient error); "transient": a transient error before anything changed.
 */
export type InjectedFault = "lostAnswer" | "transient" | "throttled" | "capacity";

/** The provider operation a fault applies to. */
export type FaultOperation = `create:${ResourceKind}`;

export interface ProviderUnderTest {
  provider: CloudProvider;
  /** The same account in another region; the suite asks for one that does not exist. */
  inRegion?(region: string): CloudProvider;
  /** Makes every call of `operation` fail with `fault` until `clearFaults` is called. */
  injectFault?(operation: FaultOperation, fault: InjectedFault): Promise<void>;
  clearFaults?(): Promise<void>;
  /** Sets some of the account's limits in the provider's region. */
  setQuota?(limits: Partial<QuotaResources>): Promise<void>;
  close(): Promise<void>;
}

export interface ProviderConformanceOptions {
  /** How long a case waits for a resource to reach a state (default 10 s). */
  timeoutMs?: number;
  /** Pause between two polls of a resource (default 10 ms). */
  pollMs?: number;
}

const ORDER: ResourceKind[] = ["network", "subnet", "securityGroup", "keyPair", "loadBalancer", "instance"];

/** Names unique to this run, so that leftovers of other runs in a real account are never mistaken for ours. */
const RUN = `conf-${Date.now().toString(36)}-${process.pid.toString(36)}`;

/** An OpenSSH ed25519 public key derived from a fixed seed (valid, and the same in every run). */
export function conformancePublicKey(seed = "slipway-conformance"): string {
  const secret = createHash("sha256").update(seed).digest();
  const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), secret]);
  const publicJwk = createPublicKey(createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" })).export({ format: "jwk" });
  const raw = Buffer.from(publicJwk.x ?? "", "base64url");
  const type = Buffer.from("ssh-ed25519");
  const blob = Buffer.alloc(8 + type.length + raw.length);
  blob.writeUInt32BE(type.length, 0);
  type.copy(blob, 4);
  blob.writeUInt32BE(raw.length, 4 + type.length);
  raw.copy(blob, 8 + type.length);
  return `ssh-ed25519 ${blob.toString("base64")} ${seed}`;
}

/** Resolves with the ProviderError `promise` rejects with, after checking its kind. */
async function rejectsWith(promise: Promise<unknown>, kind: ProviderErrorKind, what: string): Promise<ProviderError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  }, `${what} should fail`);
  assert.ok(caught instanceof ProviderError, `${what}: expected a ProviderError, got ${String(caught)}`);
  assert.equal(caught.kind, kind, `${what}: expected a ${kind} error, got ${caught.kind}: ${caught.message}`);
  assert.ok(caught.message.length > 0, `${what}: the error says what happened`);
  return caught;
}

/** One case: its provider, its names and tags, and what it built (deleted in reverse order afterwards). */
class Case {
  private readonly built: { kind: ResourceKind; id: string }[] = [];
  readonly tags: Tags;
  readonly cluster: string;

  constructor(
    readonly h: ProviderUnderTest,
    readonly label: string,
    private readonly options: Required<ProviderConformanceOptions>,
  ) {
    this.cluster = `${RUN}-${label}`;
    this.tags = { "slipway.dev/cluster": this.cluster, "slipway.dev/owner": `conformance-${label}` };
  }

  get provider(): CloudProvider {
    return this.h.provider;
  }

  token(name: string): string {
    return `${this.cluster}-${name}`.slice(0, 64);
  }

  tagsFor(name: string): Tags {
    return { ...this.tags, "slipway.dev/part": name };
  }

  track(kind: ResourceKind, id: string): void {
    if (!this.built.some((b) => b.kind === kind && b.id === id)) this.built.push({ kind, id });
  }

  /** Polls until `check` answers something; retryable provider errors count as "not yet". */
  async eventually<R>(what: string, check: () => Promise<R | undefined>): Promise<R> {
    const deadline = Date.now() + this.options.timeoutMs;
    let last: unknown;
    while (true) {
      try {
        const result = await check();
        if (result !== undefined) return result;
      } catch (error) {
        if (!isProviderError(error) || !error.retryable) throw error;
        last = error;
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${this.options.timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ""}`);
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.pollMs));
    }
  }

  async waitFor<K extends ResourceKind>(kind: K, id: string, state: "ready"): Promise<ResourceInfos[K]> {
    return this.eventually(`${kind} ${id} to be ${state}`, async () => {
      const info = await this.provider.get(kind, id);
      assert.ok(info, `${kind} ${id} exists`);
      assert.notEqual(info.state, "failed", `${kind} ${id} failed: ${JSON.stringify(info)}`);
      return info.state === state ? info : undefined;
    });
  }

  async waitGone(kind: ResourceKind, id: string): Promise<void> {
    await this.eventually(`${kind} ${id} to be gone`, async () => {
      const info = await this.provider.get(kind, id);
      return info === undefined || info.state === "gone" ? true : undefined;
    });
  }

  /** Deletes what the case built, newest first, retrying while something else still holds a resource. */
  async teardown(): Promise<void> {
    for (const { kind, id } of [...this.built].reverse()) {
      await this.eventually(`delete of ${kind} ${id}`, async () => {
        await this.provider.delete(kind, id);
        return true;
      });
      await this.waitGone(kind, id);
    }
  }
}

/** The network, subnet, security group and key pair an instance or load balancer needs, all ready. */
interface Foundation {
  zone: string;
  networkId: string;
  subnetId: string;
  securityGroupId: string;
  keyPairId: string;
  machineType: string;
  imageId: string;
}

const NETWORK_CIDR = "10.42.0.0/16";
const SUBNET_CIDR = "10.42.1.0/24";

async function smallestMachineType(provider: CloudProvider): Promise<string> {
  const types = await provider.machineTypes();
  const sorted = [...types].sort((a, b) => a.vcpus - b.vcpus || a.memoryMiB - b.memoryMiB);
  assert.ok(sorted[0], "the region offers machine types");
  return sorted[0].name;
}

/** Builds a foundation; `create` lets a case wrap each create (e.g. to lose its first answer). */
async function buildFoundation(
  c: Case,
  create: <K extends ResourceKind>(kind: K, run: () => Promise<ResourceInfos[K]>) => Promise<ResourceInfos[K]> = (_kind, run) => run(),
): Promise<Foundation> {
  const { provider } = c;
  const zone = (await provider.zones())[0];
  assert.ok(zone, "the region has zones");
  const network = await create("network", () => provider.create("network", { cidr: NETWORK_CIDR }, { token: c.token("network"), tags: c.tagsFor("network") }));
  c.track("network", network.id);
  await c.waitFor("network", network.id, "ready");
  const subnet = await create("subnet", () =>
    provider.create("subnet", { networkId: network.id, zone, cidr: SUBNET_CIDR }, { token: c.token("subnet"), tags: c.tagsFor("subnet") }),
  );
  c.track("subnet", subnet.id);
  const securityGroup = await create("securityGroup", () =>
    provider.create(
      "securityGroup",
      {
        networkId: network.id,
        name: `${c.cluster}-nodes`,
        description: "conformance nodes",
        rules: [
          { direction: "ingress", protocol: "tcp", fromPort: 6443, toPort: 6443, cidr: "0.0.0.0/0" },
          { direction: "egress", protocol: "all", cidr: "0.0.0.0/0" },
        ],
      },
      { token: c.token("security-group"), tags: c.tagsFor("securityGroup") },
    ),
  );
  c.track("securityGroup", securityGroup.id);
  const keyPair = await create("keyPair", () =>
    provider.create("keyPair", { name: c.cluster, publicKey: conformancePublicKey() }, { token: c.token("key-pair"), tags: c.tagsFor("keyPair") }),
  );
  c.track("keyPair", keyPair.id);
  await c.waitFor("subnet", subnet.id, "ready");
  await c.waitFor("securityGroup", securityGroup.id, "ready");
  await c.waitFor("keyPair", keyPair.id, "ready");
  const image = (await provider.images())[0];
  assert.ok(image, "the region has images");
  return {
    zone,
    networkId: network.id,
    subnetId: subnet.id,
    securityGroupId: securityGroup.id,
    keyPairId: keyPair.id,
    machineType: await smallestMachineType(provider),
    imageId: image.id,
  };
}

/** User data carrying a secret that must never come back from the provider. */
const SECRET = "conformance-bootstrap-secret-0d6f";
const USER_DATA = `#cloud-config\nwrite_files:\n  - path: /etc/slipway/token\n    content: ${SECRET}\n`;

function instanceSpec(f: Foundation) {
  return {
    zone: f.zone,
    subnetId: f.subnetId,
    machineType: f.machineType,
    imageId: f.imageId,
    keyPairId: f.keyPairId,
    securityGroupIds: [f.securityGroupId],
    userData: USER_DATA,
  };
}

function loadBalancerSpec(c: Case, f: Foundation) {
  return { name: `${c.cluster}-api`, networkId: f.networkId, subnetIds: [f.subnetId], listeners: [{ port: 6443, targetPort: 6443 }] };
}

export function runProviderConformance(
  name: string,
  open: () => Promise<ProviderUnderTest>,
  options: ProviderConformanceOptions = {},
): void {
  const settings: Required<ProviderConformanceOptions> = { timeoutMs: options.timeoutMs ?? 10_000, pollMs: options.pollMs ?? 10 };

  /** Opens the provider for one case; afterwards deletes what the case built and closes it. */
  async function start(t: TestContext, label: string): Promise<Case> {
    const h = await open();
    const c = new Case(h, label, settings);
    t.after(async () => {
      try {
        await h.clearFaults?.();
        await c.teardown();
      } finally {
        await h.close();
      }
    });
    return c;
  }

  describe(`provider conformance: ${name}`, () => {
    it("describes its region: zones, machine types, images and quota", async (t) => {
      const { provider } = await start(t, "describe");
      assert.ok(provider.region.length > 0 && provider.provider.length > 0);
      const zones = await provider.zones();
      assert.ok(zones.length > 0 && zones.every((z) => typeof z === "string" && z.length > 0), `zones: ${JSON.stringify(zones)}`);
      const types = await provider.machineTypes();
      assert.ok(types.length > 0);
      for (const type of types) assert.ok(type.name && type.vcpus > 0 && type.memoryMiB > 0, `machine type ${JSON.stringify(type)}`);
      const images = await provider.images();
      assert.ok(images.length > 0 && images.every((i) => i.id && i.name), `images: ${JSON.stringify(images)}`);
      const quota = await provider.quota();
      for (const key of ["vcpus", "instances", "networks", "loadBalancers", "publicIps"] as const) {
        assert.ok(Number.isInteger(quota.limits[key]) && quota.limits[key] >= 0, `limit ${key}`);
        assert.ok(Number.isInteger(quota.usage[key]) && quota.usage[key] >= 0, `usage ${key}`);
      }
    });

    it("refuses a region that does not exist with an invalid error naming it", async (t) => {
      const c = await start(t, "region");
      if (!c.h.inRegion) return t.skip("the harness cannot open another region");
      const error = await rejectsWith(c.h.inRegion("nowhere-9").zones(), "invalid", "zones of an unknown region");
      assert.match(error.message, /nowhere-9/);
      assert.equal(error.retryable, false);
    });

    it("tags every resource it creates and finds each by its tags", async (t) => {
      const c = await start(t, "tags");
      const f = await buildFoundation(c);
      const instance = await c.provider.create("instance", instanceSpec(f), { token: c.token("instance"), tags: c.tagsFor("instance") });
      c.track("instance", instance.id);
      const lb = await c.provider.create("loadBalancer", loadBalancerSpec(c, f), { token: c.token("lb"), tags: c.tagsFor("loadBalancer") });
      c.track("loadBalancer", lb.id);
      const ids: Record<ResourceKind, string> = {
        network: f.networkId,
        subnet: f.subnetId,
        securityGroup: f.securityGroupId,
        keyPair: f.keyPairId,
        loadBalancer: lb.id,
        instance: instance.id,
      };
      for (const kind of ORDER) {
        const info = await c.provider.get(kind, ids[kind]);
        assert.ok(info, `${kind} exists`);
        assert.equal(info.kind, kind);
        for (const [key, value] of Object.entries(c.tagsFor(kind))) assert.equal(info.tags[key], value, `${kind} carries tag ${key}`);
        const found = await c.provider.findTagged(kind, c.tags);
        assert.deepEqual(found.map((r) => r.id), [ids[kind]], `findTagged(${kind}) finds exactly the one built`);
        const byPart = await c.provider.findTagged(kind, { ...c.tags, "slipway.dev/part": kind });
        assert.deepEqual(byPart.map((r) => r.id), [ids[kind]]);
        assert.deepEqual(await c.provider.findTagged(kind, { ...c.tags, "slipway.dev/cluster": `${c.cluster}-other` }), []);
      }
    });

    it("returns the same resource for the same token instead of making a second one", async (t) => {
      const c = await start(t, "token");
      const first = await c.provider.create("network", { cidr: NETWORK_CIDR }, { token: c.token("network"), tags: c.tags });
      c.track("network", first.id);
      const again = await c.provider.create("network", { cidr: NETWORK_CIDR }, { token: c.token("network"), tags: c.tags });
      assert.equal(again.id, first.id);
      assert.deepEqual((await c.provider.findTagged("network", c.tags)).map((r) => r.id), [first.id]);
    });

    it("makes no second copy when a create's answer was lost and the create is retried", async (t) => {
      const c = await start(t, "lost");
      const { h } = c;
      if (!h.injectFault || !h.clearFaults) return t.skip("the harness cannot inject faults");
      const lostFirst = async <K extends ResourceKind>(kind: K, run: () => Promise<ResourceInfos[K]>): Promise<ResourceInfos[K]> => {
        await h.injectFault!(`create:${kind}`, "lostAnswer");
        const error = await rejectsWith(run(), "transient", `create ${kind} whose answer is lost`);
        assert.equal(error.retryable, true);
        await h.clearFaults!();
        return run();
      };
      const f = await buildFoundation(c, lostFirst);
      const instance = await lostFirst("instance", () =>
        c.provider.create("instance", instanceSpec(f), { token: c.token("instance"), tags: c.tagsFor("instance") }),
      );
      c.track("instance", instance.id);
      const lb = await lostFirst("loadBalancer", () =>
        c.provider.create("loadBalancer", loadBalancerSpec(c, f), { token: c.token("lb"), tags: c.tagsFor("loadBalancer") }),
      );
      c.track("loadBalancer", lb.id);
      for (const kind of ORDER) {
        const found = await c.provider.findTagged(kind, c.tags);
        assert.equal(found.length, 1, `exactly one ${kind} after a lost answer: ${found.map((r) => r.id).join(", ")}`);
      }
    });

    it("classifies transient, throttled and capacity failures as retryable", async (t) => {
      const c = await start(t, "faults");
      const { h } = c;
      if (!h.injectFault || !h.clearFaults) return t.skip("the harness cannot inject faults");
      const f = await buildFoundation(c);
      const createNetwork = () => c.provider.create("network", { cidr: "10.43.0.0/16" }, { token: c.token("network-2"), tags: c.tagsFor("network-2") });

      await h.injectFault("create:network", "transient");
      assert.equal((await rejectsWith(createNetwork(), "transient", "create network (transient)")).retryable, true);
      await h.injectFault("create:network", "throttled");
      const throttled = await rejectsWith(createNetwork(), "throttled", "create network (throttled)");
      assert.equal(throttled.retryable, true);
      assert.ok((throttled.retryAfterMs ?? 0) > 0, "a throttled error says how long to wait");
      await h.injectFault("create:instance", "capacity");
      const capacity = await rejectsWith(
        c.provider.create("instance", instanceSpec(f), { token: c.token("instance"), tags: c.tagsFor("instance") }),
        "capacity",
        "create instance (capacity)",
      );
      assert.equal(capacity.retryable, true);
      await h.clearFaults();
      assert.deepEqual(await c.provider.findTagged("network", c.tagsFor("network-2")), [], "a create refused before it started leaves nothing");
      assert.deepEqual(await c.provider.findTagged("instance", c.tags), [], "a create refused for capacity leaves nothing");
    });

    it("treats deleting a resource that does not exist (any more) as success", async (t) => {
      const c = await start(t, "delete");
      const keyPair = await c.provider.create("keyPair", { name: c.cluster, publicKey: conformancePublicKey() }, { token: c.token("key-pair"), tags: c.tags });
      const network = await c.provider.create("network", { cidr: NETWORK_CIDR }, { token: c.token("network"), tags: c.tags });
      await c.waitFor("network", network.id, "ready");
      for (const [kind, id] of [["keyPair", keyPair.id], ["network", network.id]] as const) {
        await c.provider.delete(kind, id);
        await c.waitGone(kind, id);
        assert.equal(await c.provider.get(kind, id), undefined, `get of a deleted ${kind} answers undefined`);
        await c.provider.delete(kind, id);
        assert.deepEqual(await c.provider.findTagged(kind, c.tags), []);
      }
    });

    it("refuses to delete a network still in use with a dependency error", async (t) => {
      const c = await start(t, "dependency");
      const f = await buildFoundation(c);
      const error = await rejectsWith(c.provider.delete("network", f.networkId), "dependency", "delete of a network with a subnet");
      assert.equal(error.retryable, true);
      const network = await c.provider.get("network", f.networkId);
      assert.equal(network?.state, "ready", "the network is still there");
    });

    it("refuses a create past the quota with a quota error, and accepts it once the limit is raised", async (t) => {
      const c = await start(t, "quota");
      const { h } = c;
      if (!h.setQuota) return t.skip("the harness cannot change quotas");
      const before = await c.provider.quota();
      try {
        await h.setQuota({ networks: before.usage.networks });
        assert.equal((await c.provider.quota()).limits.networks, before.usage.networks, "quota() reports the new limit");
        const create = () => c.provider.create("network", { cidr: NETWORK_CIDR }, { token: c.token("network"), tags: c.tags });
        const error = await rejectsWith(create(), "quota", "create network past the quota");
        assert.equal(error.retryable, false);
        assert.deepEqual(await c.provider.findTagged("network", c.tags), []);
        await h.setQuota({ networks: before.usage.networks + 1 });
        const network = await create();
        c.track("network", network.id);
        assert.equal((await c.provider.quota()).usage.networks, before.usage.networks + 1);
      } finally {
        await h.setQuota({ networks: before.limits.networks });
      }
    });

    it("refuses invalid input with an invalid error", async (t) => {
      const c = await start(t, "invalid");
      const bad = await rejectsWith(
        c.provider.create("network", { cidr: "10.0.0.0/33" }, { token: c.token("bad-network"), tags: c.tags }),
        "invalid",
        "create network with a malformed CIDR",
      );
      assert.equal(bad.retryable, false);
      const f = await buildFoundation(c);
      await rejectsWith(
        c.provider.create("instance", { ...instanceSpec(f), machineType: "no-such-type" }, { token: c.token("bad-instance"), tags: c.tags }),
        "invalid",
        "create instance of an unknown machine type",
      );
      assert.deepEqual(await c.provider.findTagged("instance", c.tags), []);
    });

    it("boots an instance to ready, shows its console, keeps its user data secret, and deletes it", async (t) => {
      const c = await start(t, "instance");
      const f = await buildFoundation(c);
      const create = () => c.provider.create("instance", instanceSpec(f), { token: c.token("instance"), tags: c.tagsFor("instance") });
      const created = await create();
      c.track("instance", created.id);
      assert.equal((await create()).id, created.id, "the same token returns the same instance");
      assert.ok(["pending", "ready"].includes(created.state), `a new instance is pending or ready, not ${created.state}`);
      const ready: InstanceInfo = await c.waitFor("instance", created.id, "ready");
      assert.equal(ready.zone, f.zone);
      assert.ok(ready.providerId.length > 0 && ready.providerId.includes(created.id), `providerId ${ready.providerId}`);
      assert.ok(ready.privateIp, "a ready instance has a private address");
      const lines = await c.eventually("console output", async () => {
        const output = await c.provider.consoleOutput(created.id);
        return output.length > 0 ? output : undefined;
      });
      assert.ok(lines.every((line) => typeof line === "string" && line.length > 0));
      const seen = JSON.stringify([created, ready, await c.provider.findTagged("instance", c.tags), lines]);
      assert.ok(!seen.includes(SECRET), "user data never comes back from the provider");

      await c.provider.delete("instance", created.id);
      const leaving = await c.provider.get("instance", created.id);
      assert.ok(leaving === undefined || ["deleting", "gone"].includes(leaving.state), `a deleted instance is deleting or gone, not ${leaving?.state}`);
      await c.provider.delete("instance", created.id);
      await c.waitGone("instance", created.id);
      await c.provider.delete("instance", created.id);
      assert.deepEqual(await c.provider.findTagged("instance", c.tags), [], "a gone instance is not found by its tags");
    });

    it("brings a load balancer to ready with a URL, tracks its targets, and deletes it", async (t) => {
      const c = await start(t, "lb");
      const f = await buildFoundation(c);
      const instance = await c.provider.create("instance", instanceSpec(f), { token: c.token("instance"), tags: c.tagsFor("instance") });
      c.track("instance", instance.id);
      const spec = loadBalancerSpec(c, f);
      const created = await c.provider.create("loadBalancer", spec, { token: c.token("lb"), tags: c.tagsFor("loadBalancer") });
      c.track("loadBalancer", created.id);
      const ready = await c.waitFor("loadBalancer", created.id, "ready");
      assert.ok(ready.dnsName.length > 0, "a ready load balancer has a DNS name");
      assert.equal(ready.port, 6443);
      const url = new URL(ready.url);
      assert.equal(url.protocol, "https:", `url ${ready.url}`);

      await c.waitFor("instance", instance.id, "ready");
      await c.provider.registerTargets(created.id, [instance.id]);
      await c.provider.registerTargets(created.id, [instance.id]);
      const registered = await c.provider.get("loadBalancer", created.id);
      assert.deepEqual(registered?.targets.map((target) => target.instanceId), [instance.id], "registering twice keeps one target");
      await c.provider.deregisterTargets(created.id, [instance.id]);
      assert.deepEqual((await c.provider.get("loadBalancer", created.id))?.targets, []);

      await c.provider.delete("loadBalancer", created.id);
      await c.provider.delete("loadBalancer", created.id);
      await c.waitGone("loadBalancer", created.id);
      assert.deepEqual(await c.provider.findTagged("loadBalancer", c.tags), []);
    });
  });
}
