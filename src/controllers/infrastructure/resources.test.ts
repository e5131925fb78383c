import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { SimProvider } from "../../providers/sim/index.ts";
import { SimCloud, type SimCloudOptions } from "../../simcloud/cloud.ts";
import { TAG_OWNER_UID, TAG_ROLE } from "../contract.ts";
import { deleteOwned, findOrCreate, type ResourceIntent } from "./resources.ts";

const REGION = "sim-east-1";
const OWNER = "0b7c6a1e-0000-4000-8000-000000000001";
const IDENTITY = { [TAG_OWNER_UID]: OWNER, [TAG_ROLE]: "network" };

const clouds: SimCloud[] = [];
after(async () => {
  for (const cloud of clouds) await cloud.close();
});

function setup(options: SimCloudOptions = {}) {
  const cloud = new SimCloud({ profile: "instant", seed: 3, ...options });
  clouds.push(cloud);
  const provider = new SimProvider(cloud, REGION);
  const intent = (recordedId?: string): ResourceIntent<"network"> => ({
    kind: "network",
    ...(recordedId ? { recordedId } : {}),
    identity: IDENTITY,
    tags: { ...IDENTITY, extra: "yes" },
    ownerUid: OWNER,
    purpose: () => "network",
    spec: () => ({ cidr: "10.0.0.0/16" }),
  });
  const liveNetworks = async () => (await cloud.listNetworks(REGION, { tags: IDENTITY })).map((n) => n.id);
  return { cloud, provider, intent, liveNetworks };
}

describe("findOrCreate", () => {
  it("makes a resource once: found again by its recorded id, or by its tags when the id was lost", async () => {
    const { provider, intent, liveNetworks } = setup();
    const made = await findOrCreate(provider, intent());
    assert.equal(made.origin, "created");
    assert.equal(made.info.tags.extra, "yes");

    const recorded = await findOrCreate(provider, intent(made.info.id));
    assert.equal(recorded.origin, "recorded");
    assert.equal(recorded.info.id, made.info.id);

    const adopted = await findOrCreate(provider, intent());
    assert.equal(adopted.origin, "adopted");
    assert.equal(adopted.info.id, made.info.id);
    assert.deepEqual(await liveNetworks(), [made.info.id]);
  });

  it("gets the same resource back from a retried create whose answer was lost", async () => {
    const { cloud, provider, intent, liveNetworks } = setup();
    cloud.setFaults({ errors: { createNetwork: { InternalError: 1 } }, failAfterCommit: 1 });
    await assert.rejects(findOrCreate(provider, intent()), (e: Error) => e.name === "ProviderError");
    cloud.setFaults({});
    // Even a provider that could not see the tags would get the same network from the token.
    const retried = await findOrCreate(provider, { ...intent(), identity: { [TAG_OWNER_UID]: "someone-else" } });
    assert.equal(retried.origin, "created");
    assert.deepEqual(await liveNetworks(), [retried.info.id]);
  });

  it("makes a resource deleted behind its back again, with the next token of the chain, every time", async () => {
    const { cloud, provider, intent, liveNetworks } = setup();
    const first = await findOrCreate(provider, intent());
    await cloud.deleteNetwork(REGION, first.info.id);

    const second = await findOrCreate(provider, intent(first.info.id));
    assert.equal(second.origin, "created");
    assert.equal(second.lostId, first.info.id);
    assert.notEqual(second.info.id, first.info.id);
    assert.deepEqual(await liveNetworks(), [second.info.id]);

    // The status write was lost: the stale id leads to the same replacement, not a third network.
    const again = await findOrCreate(provider, intent(first.info.id));
    assert.equal(again.info.id, second.info.id);

    await cloud.deleteNetwork(REGION, second.info.id);
    const third = await findOrCreate(provider, intent(second.info.id));
    assert.ok(![first.info.id, second.info.id].includes(third.info.id));
    assert.deepEqual(await liveNetworks(), [third.info.id]);
  });

  it("keeps one of several resources carrying the same identity and deletes the others", async () => {
    const { cloud, provider, intent, liveNetworks } = setup();
    const a = await cloud.createNetwork(REGION, { cidr: "10.0.0.0/16", tags: IDENTITY });
    const b = await cloud.createNetwork(REGION, { cidr: "10.1.0.0/16", tags: IDENTITY });
    const found = await findOrCreate(provider, intent());
    assert.equal(found.origin, "adopted");
    assert.deepEqual([found.info.id, ...found.duplicates].sort(), [a.id, b.id].sort());
    assert.deepEqual(await liveNetworks(), [found.info.id]);
  });
});

describe("deleteOwned", () => {
  it("deletes what is recorded and what carries the owner's tags, tolerating what is already gone", async () => {
    const { cloud, provider, liveNetworks } = setup();
    const tagged = await cloud.createNetwork(REGION, { cidr: "10.0.0.0/16", tags: IDENTITY });
    const gone = await cloud.createNetwork(REGION, { cidr: "10.1.0.0/16", tags: {} });
    await cloud.deleteNetwork(REGION, gone.id);
    const result = await deleteOwned(provider, "network", [gone.id, undefined], { [TAG_OWNER_UID]: OWNER });
    assert.deepEqual(result.deleted.sort(), [gone.id, tagged.id].sort());
    assert.deepEqual(result.remaining, []);
    assert.deepEqual(await liveNetworks(), []);
  });

  it("reports a load balancer still on its way out", async () => {
    const { cloud, provider } = setup({ profile: "fast" });
    const network = await cloud.createNetwork(REGION, { cidr: "10.0.0.0/16" });
    await waitUntil(async () => (await cloud.getNetwork(REGION, network.id)).state === "available");
    const subnet = await cloud.createSubnet(REGION, { networkId: network.id, zone: `${REGION}a`, cidr: "10.0.0.0/24" });
    await waitUntil(async () => (await cloud.getSubnet(REGION, subnet.id)).state === "available");
    const lb = await cloud.createLoadBalancer(REGION, {
      subnetIds: [subnet.id],
      listeners: [{ port: 6443, protocol: "tcp", targetPort: 6443 }],
      tags: { [TAG_OWNER_UID]: OWNER },
    });
    const first = await deleteOwned(provider, "loadBalancer", [], { [TAG_OWNER_UID]: OWNER });
    assert.deepEqual(first.remaining.map((r) => [r.id, r.state]), [[lb.id, "deleting"]]);
    await waitUntil(async () => (await deleteOwned(provider, "loadBalancer", [lb.id], { [TAG_OWNER_UID]: OWNER })).remaining.length === 0);
  });
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}
