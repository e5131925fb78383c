import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { SimCloud } from "./cloud.ts";
import { DependencyViolationError, InvalidParameterError, NotFoundError } from "./errors.ts";
import { readyNetwork } from "./test-support.ts";

const REGION = "sim-east-1";
const clouds: SimCloud[] = [];
after(async () => {
  for (const cloud of clouds) await cloud.close();
});

function instantCloud(hooks = {}): SimCloud {
  const cloud = new SimCloud({ hooks, accounts: [{ id: "other", token: "other-token" }] });
  clouds.push(cloud);
  return cloud;
}

describe("DNS", () => {
  it("resolves an alias A record to its load balancer and addresses to themselves, and forgets deleted records", async () => {
    const changed: string[] = [];
    const cloud = instantCloud({ onNameChanged: (name: string) => changed.push(name) });
    const net = await readyNetwork(cloud);
    const lb = await cloud.createLoadBalancer(REGION, { name: "api", subnetIds: [net.subnet.id], listeners: [{ port: 6443, protocol: "tcp", targetPort: 6443 }] });
    const zone = await cloud.createDnsZone(REGION, { name: "Sim-East-1.sim.slipway.internal", tags: { owner: "t" } });
    assert.equal(zone.name, "sim-east-1.sim.slipway.internal");

    const api = await cloud.createDnsRecord(REGION, { zoneId: zone.id, name: "api.c1.sim-east-1.sim.slipway.internal", type: "A", aliasTarget: { loadBalancerId: lb.id }, tags: { cluster: "c1" } });
    const db = await cloud.createDnsRecord(REGION, { zoneId: zone.id, name: "db.sim-east-1.sim.slipway.internal", type: "A", values: ["10.0.0.5"] });
    await cloud.createDnsRecord(REGION, { zoneId: zone.id, name: "_https._tcp.c1.sim-east-1.sim.slipway.internal", type: "SRV", values: ["0 10 6443 api.c1.sim-east-1.sim.slipway.internal"] });

    assert.deepEqual(cloud.resolveName("default", "API.c1.sim-east-1.sim.slipway.internal"), { loadBalancer: lb.dnsName });
    assert.deepEqual(cloud.resolveName("default", "db.sim-east-1.sim.slipway.internal"), { addresses: ["10.0.0.5"] });
    assert.equal(cloud.resolveName("default", "nothing.sim-east-1.sim.slipway.internal"), undefined);
    assert.deepEqual(cloud.namesAliasing(lb.dnsName), [api.name]);
    assert.deepEqual((await cloud.listDnsRecords(REGION, { tags: { cluster: "c1" } })).map((r) => r.id), [api.id]);

    await assert.rejects(cloud.deleteDnsZone(REGION, zone.id), DependencyViolationError, "a zone holding records stays");
    await cloud.deleteDnsRecord(REGION, api.id);
    assert.equal(cloud.resolveName("default", api.name), undefined);
    assert.deepEqual(changed.slice(0, 1), [api.name]);
    assert.ok(changed.includes(api.name) && changed.lastIndexOf(api.name) > 0, "deleting the record is announced too");
    for (const r of await cloud.listDnsRecords(REGION)) await cloud.deleteDnsRecord(REGION, r.id);
    await cloud.deleteDnsZone(REGION, zone.id);
    await assert.rejects(cloud.getDnsRecord(REGION, db.id), NotFoundError);
  });

  it("refuses records outside their zone, duplicates in an account, and values their type cannot hold, naming the field", async () => {
    const cloud = instantCloud();
    const zone = await cloud.createDnsZone(REGION, { name: "z.example" });
    const refused = async (input: Parameters<SimCloud["createDnsRecord"]>[1], field: RegExp) => {
      const error = await cloud.createDnsRecord(REGION, input).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof InvalidParameterError, `refused: ${JSON.stringify(input)}`);
      assert.match(error.message, field);
    };
    await refused({ zoneId: zone.id, name: "a.other.example", type: "A", values: ["10.0.0.1"] }, /dnsRecord\.name: a\.other\.example is not inside zone z\.example/);
    await refused({ zoneId: zone.id, name: "a.z.example", type: "A", values: ["not-an-ip"] }, /dnsRecord\.values\[0\]: "not-an-ip" is not an IPv4 address/);
    await refused({ zoneId: zone.id, name: "a.z.example", type: "A" }, /dnsRecord\.values: required/);
    await refused({ zoneId: zone.id, name: "a.z.example", type: "SRV", values: ["x"] }, /dnsRecord\.values\[0\]/);
    await refused({ zoneId: zone.id, name: "a.z.example", type: "SRV", aliasTarget: { loadBalancerId: "lb-1" } }, /dnsRecord\.aliasTarget: only an A record/);
    await refused({ zoneId: zone.id, name: "bad..name", type: "A", values: ["10.0.0.1"] }, /name/);
    await cloud.createDnsRecord(REGION, { zoneId: zone.id, name: "a.z.example", type: "A", values: ["10.0.0.1"] });
    await refused({ zoneId: zone.id, name: "A.z.example", type: "A", values: ["10.0.0.2"] }, /a\.z\.example already has an A record/);
    await assert.rejects(cloud.createDnsZone(REGION, { name: "z.example" }), /dnsZone\.name: zone z\.example already exists/);
    const other = cloud.forAccount("other");
    const theirs = await other.createDnsZone(REGION, { name: "z.example" });
    await other.createDnsRecord(REGION, { zoneId: theirs.id, name: "a.z.example", type: "A", values: ["10.9.9.9"] });
    assert.deepEqual(cloud.resolveName("other", "a.z.example"), { addresses: ["10.9.9.9"] }, "each account resolves through its own zones");
    assert.deepEqual(cloud.resolveName("default", "a.z.example"), { addresses: ["10.0.0.1"] });
    assert.equal((await cloud.listDnsRecords(REGION)).length, 1, "nothing refused was written");
  });

  it("returns the same record for the same client token", async () => {
    const cloud = instantCloud();
    const zone = await cloud.createDnsZone(REGION, { name: "t.example", clientToken: "zone-t" });
    assert.equal((await cloud.createDnsZone(REGION, { name: "t.example", clientToken: "zone-t" })).id, zone.id);
    const input = { zoneId: zone.id, name: "x.t.example", type: "A" as const, values: ["10.0.0.9"], clientToken: "rec-x" };
    assert.equal((await cloud.createDnsRecord(REGION, input)).id, (await cloud.createDnsRecord(REGION, input)).id);
  });
});
