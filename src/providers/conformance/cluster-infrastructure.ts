// Conformance of the cluster infrastructure capability: network, subnet, security group, key pair and
// load balancer made once per token, tagged, found by their tags, deleted tolerantly, and failures
// classified as the contract's rules say.
import { it } from "node:test";
import assert from "node:assert/strict";
import type { InfrastructureResourceKind, ResourceInfos } from "../provider.ts";
import { conformancePublicKey, machineTemplate, rejectsWith, type Case, type CaseStarter } from "./case.ts";

const ORDER: InfrastructureResourceKind[] = ["network", "subnet", "securityGroup", "keyPair", "loadBalancer"];

export const NETWORK_CIDR = "10.42.0.0/16";
const SUBNET_CIDR = "10.42.1.0/24";

/** The network, subnet, security group and key pair an instance or load balancer needs, all ready. */
export interface Foundation {
  zone: string;
  networkId: string;
  subnetId: string;
  securityGroupId: string;
  keyPairId: string;
}

type Create = <K extends InfrastructureResourceKind>(kind: K, run: () => Promise<ResourceInfos[K]>) => Promise<ResourceInfos[K]>;

/** Builds a foundation; `create` lets a case wrap each create (e.g. to lose its first answer). */
export async function buildFoundation(c: Case, create: Create = (_kind, run) => run()): Promise<Foundation> {
  const infra = c.infrastructure;
  const { zone } = await machineTemplate(c);
  const network = await create("network", () => infra.create("network", { cidr: NETWORK_CIDR }, { token: c.token("network"), tags: c.tagsFor("network") }));
  c.track("network", network.id);
  await c.waitFor("network", network.id, "ready");
  const subnet = await create("subnet", () =>
    infra.create("subnet", { networkId: network.id, zone, cidr: SUBNET_CIDR }, { token: c.token("subnet"), tags: c.tagsFor("subnet") }),
  );
  c.track("subnet", subnet.id);
  const securityGroup = await create("securityGroup", () =>
    infra.create(
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
    infra.create("keyPair", { name: c.cluster, publicKey: conformancePublicKey() }, { token: c.token("key-pair"), tags: c.tagsFor("keyPair") }),
  );
  c.track("keyPair", keyPair.id);
  await c.waitFor("subnet", subnet.id, "ready");
  await c.waitFor("securityGroup", securityGroup.id, "ready");
  await c.waitFor("keyPair", keyPair.id, "ready");
  return { zone, networkId: network.id, subnetId: subnet.id, securityGroupId: securityGroup.id, keyPairId: keyPair.id };
}

function loadBalancerSpec(c: Case, f: Foundation) {
  return { name: `${c.cluster}-api`, networkId: f.networkId, subnetIds: [f.subnetId], listeners: [{ port: 6443, targetPort: 6443 }] };
}

export function clusterInfrastructureConformance(start: CaseStarter): void {
  it("tags every resource it creates and finds each by its tags", async (t) => {
    const c = await start(t, "tags");
    const f = await buildFoundation(c);
    const lb = await c.infrastructure.create("loadBalancer", loadBalancerSpec(c, f), { token: c.token("lb"), tags: c.tagsFor("loadBalancer") });
    c.track("loadBalancer", lb.id);
    const ids: Record<InfrastructureResourceKind, string> = {
      network: f.networkId,
      subnet: f.subnetId,
      securityGroup: f.securityGroupId,
      keyPair: f.keyPairId,
      loadBalancer: lb.id,
    };
    for (const kind of ORDER) {
      const info = await c.infrastructure.get(kind, ids[kind]);
      assert.ok(info, `${kind} exists`);
      assert.equal(info.kind, kind);
      for (const [key, value] of Object.entries(c.tagsFor(kind))) assert.equal(info.tags[key], value, `${kind} carries tag ${key}`);
      const found = await c.infrastructure.findTagged(kind, c.tags);
      assert.deepEqual(found.map((r) => r.id), [ids[kind]], `findTagged(${kind}) finds exactly the one built`);
      const byPart = await c.infrastructure.findTagged(kind, { ...c.tags, "slipway.dev/part": kind });
      assert.deepEqual(byPart.map((r) => r.id), [ids[kind]]);
      assert.deepEqual(await c.infrastructure.findTagged(kind, { ...c.tags, "slipway.dev/cluster": `${c.cluster}-other` }), []);
    }
  });

  it("returns the same resource for the same token instead of making a second one", async (t) => {
    const c = await start(t, "token");
    const first = await c.infrastructure.create("network", { cidr: NETWORK_CIDR }, { token: c.token("network"), tags: c.tags });
    c.track("network", first.id);
    const again = await c.infrastructure.create("network", { cidr: NETWORK_CIDR }, { token: c.token("network"), tags: c.tags });
    assert.equal(again.id, first.id);
    assert.deepEqual((await c.infrastructure.findTagged("network", c.tags)).map((r) => r.id), [first.id]);
  });

  it("makes no second copy when a create's answer was lost and the create is retried", async (t) => {
    const c = await start(t, "lost");
    const { h } = c;
    if (!h.injectFault || !h.clearFaults) return t.skip("the harness cannot inject faults");
    const lostFirst: Create = async (kind, run) => {
      await h.injectFault!(`create:${kind}`, "lostAnswer");
      const error = await rejectsWith(run(), "transient", `create ${kind} whose answer is lost`);
      assert.equal(error.retryable, true);
      await h.clearFaults!();
      return run();
    };
    const f = await buildFoundation(c, lostFirst);
    const lb = await lostFirst("loadBalancer", () =>
      c.infrastructure.create("loadBalancer", loadBalancerSpec(c, f), { token: c.token("lb"), tags: c.tagsFor("loadBalancer") }),
    );
    c.track("loadBalancer", lb.id);
    for (const kind of ORDER) {
      const found = await c.infrastructure.findTagged(kind, c.tags);
      assert.equal(found.length, 1, `exactly one ${kind} after a lost answer: ${found.map((r) => r.id).join(", ")}`);
    }
  });

  it("classifies transient and throttled failures as retryable", async (t) => {
    const c = await start(t, "faults");
    const { h } = c;
    if (!h.injectFault || !h.clearFaults) return t.skip("the harness cannot inject faults");
    const createNetwork = () => c.infrastructure.create("network", { cidr: "10.43.0.0/16" }, { token: c.token("network-2"), tags: c.tagsFor("network-2") });

    await h.injectFault("create:network", "transient");
    assert.equal((await rejectsWith(createNetwork(), "transient", "create network (transient)")).retryable, true);
    await h.injectFault("create:network", "throttled");
    const throttled = await rejectsWith(createNetwork(), "throttled", "create network (throttled)");
    assert.equal(throttled.retryable, true);
    assert.ok((throttled.retryAfterMs ?? 0) > 0, "a throttled error says how long to wait");
    await h.clearFaults();
    assert.deepEqual(await c.infrastructure.findTagged("network", c.tagsFor("network-2")), [], "a create refused before it started leaves nothing");
  });

  it("treats deleting a resource that does not exist (any more) as success", async (t) => {
    const c = await start(t, "delete");
    const infra = c.infrastructure;
    const keyPair = await infra.create("keyPair", { name: c.cluster, publicKey: conformancePublicKey() }, { token: c.token("key-pair"), tags: c.tags });
    const network = await infra.create("network", { cidr: NETWORK_CIDR }, { token: c.token("network"), tags: c.tags });
    await c.waitFor("network", network.id, "ready");
    for (const [kind, id] of [["keyPair", keyPair.id], ["network", network.id]] as const) {
      await infra.delete(kind, id);
      await c.waitGone(kind, id);
      assert.equal(await infra.get(kind, id), undefined, `get of a deleted ${kind} answers undefined`);
      await infra.delete(kind, id);
      assert.deepEqual(await infra.findTagged(kind, c.tags), []);
    }
  });

  it("refuses to delete a network still in use with a dependency error", async (t) => {
    const c = await start(t, "dependency");
    const f = await buildFoundation(c);
    const error = await rejectsWith(c.infrastructure.delete("network", f.networkId), "dependency", "delete of a network with a subnet");
    assert.equal(error.retryable, true);
    const network = await c.infrastructure.get("network", f.networkId);
    assert.equal(network?.state, "ready", "the network is still there");
  });

  it("refuses a create past the quota with a quota error, and accepts it once the limit is raised", async (t) => {
    const c = await start(t, "quota");
    const { h } = c;
    if (!h.setQuota) return t.skip("the harness cannot change quotas");
    if (!c.has("catalogue")) return t.skip("the provider reports no quota (no catalogue)");
    const before = await c.catalogue.quota();
    try {
      await h.setQuota({ networks: before.usage.networks });
      assert.equal((await c.catalogue.quota()).limits.networks, before.usage.networks, "quota() reports the new limit");
      const create = () => c.infrastructure.create("network", { cidr: NETWORK_CIDR }, { token: c.token("network"), tags: c.tags });
      const error = await rejectsWith(create(), "quota", "create network past the quota");
      assert.equal(error.retryable, false);
      assert.deepEqual(await c.infrastructure.findTagged("network", c.tags), []);
      await h.setQuota({ networks: before.usage.networks + 1 });
      const network = await create();
      c.track("network", network.id);
      assert.equal((await c.catalogue.quota()).usage.networks, before.usage.networks + 1);
    } finally {
      await h.setQuota({ networks: before.limits.networks });
    }
  });

  it("refuses invalid input with an invalid error", async (t) => {
    const c = await start(t, "invalid");
    const bad = await rejectsWith(
      c.infrastructure.create("network", { cidr: "10.0.0.0/33" }, { token: c.token("bad-network"), tags: c.tags }),
      "invalid",
      "create network with a malformed CIDR",
    );
    assert.equal(bad.retryable, false);
    assert.deepEqual(await c.infrastructure.findTagged("network", c.tags), []);
  });

  it("brings a load balancer to ready with a URL, tracks its targets, and deletes it", async (t) => {
    const c = await start(t, "lb");
    if (!c.has("machines")) return t.skip("targets are instances, and the provider makes none (no machines)");
    const f = await buildFoundation(c);
    const template = await machineTemplate(c);
    const instance = await c.machines.create(
      "instance",
      { ...template, userData: "#cloud-config\n", placement: { subnetId: f.subnetId, securityGroupIds: [f.securityGroupId], keyPairId: f.keyPairId } },
      { token: c.token("instance"), tags: c.tagsFor("instance") },
    );
    c.track("instance", instance.id);
    const infra = c.infrastructure;
    const created = await infra.create("loadBalancer", loadBalancerSpec(c, f), { token: c.token("lb"), tags: c.tagsFor("loadBalancer") });
    c.track("loadBalancer", created.id);
    const ready = await c.waitFor("loadBalancer", created.id, "ready");
    assert.ok(ready.dnsName.length > 0, "a ready load balancer has a DNS name");
    assert.equal(ready.port, 6443);
    const url = new URL(ready.url);
    assert.equal(url.protocol, "https:", `url ${ready.url}`);

    await c.waitFor("instance", instance.id, "ready");
    await infra.registerTargets(created.id, [instance.id]);
    await infra.registerTargets(created.id, [instance.id]);
    const registered = await infra.get("loadBalancer", created.id);
    assert.deepEqual(registered?.targets.map((target) => target.instanceId), [instance.id], "registering twice keeps one target");
    await infra.deregisterTargets(created.id, [instance.id]);
    assert.deepEqual((await infra.get("loadBalancer", created.id))?.targets, []);

    await infra.delete("loadBalancer", created.id);
    await infra.delete("loadBalancer", created.id);
    await c.waitGone("loadBalancer", created.id);
    assert.deepEqual(await infra.findTagged("loadBalancer", c.tags), []);
  });
}
