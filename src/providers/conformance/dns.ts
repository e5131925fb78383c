// Conformance of the dns capability: the connection's zone, the same on every call; records made once per
// token, tagged, found by their tags, refused when outside the zone or already there, deleted tolerantly.
// Where the provider also has cluster infrastructure, an A record aliases a load balancer.
import { it } from "node:test";
import assert from "node:assert/strict";
import type { DnsRecordInfo } from "../provider.ts";
import { rejectsWith, type Case, type CaseStarter } from "./case.ts";
import { buildFoundation } from "./cluster-infrastructure.ts";

/** A DNS label of the case's cluster name. */
function label(c: Case): string {
  return c.cluster.toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 63);
}

/** Deletes the record when the case ends. */
function made(c: Case, record: DnsRecordInfo): DnsRecordInfo {
  c.onTeardown(() => c.capability("dns").delete(record.id));
  return record;
}

export function dnsConformance(start: CaseStarter): void {
  it("keeps one zone, makes a record once per token, tagged, and deletes it tolerantly", async (t) => {
    const c = await start(t, "dns");
    const dns = c.capability("dns");
    const zone = await dns.zone();
    assert.deepEqual(await dns.zone(), zone, "the same zone on every call");
    const name = `api.${label(c)}.${zone.name}`;
    const create = () => dns.create({ name, type: "A", values: ["10.42.0.7"] }, { token: c.token("api"), tags: c.tagsFor("dns") });
    const record = made(c, await create());
    assert.equal((await create()).id, record.id, "the same token returns the same record");
    assert.deepEqual([record.name, record.type, record.values], [name, "A", ["10.42.0.7"]]);
    const srv = made(c, await dns.create({ name: `_https._tcp.${label(c)}.${zone.name}`, type: "SRV", values: [`0 10 6443 ${name}`] }, { token: c.token("srv"), tags: c.tags }));
    assert.deepEqual((await dns.findTagged(c.tags)).map((r) => r.id).sort(), [record.id, srv.id].sort(), "findTagged finds exactly the ones made");

    await dns.delete(record.id);
    await dns.delete(record.id);
    await dns.delete(srv.id);
    assert.deepEqual(await dns.findTagged(c.tags), [], "deleted records are gone");
  });

  it("refuses a name outside its zone or one already taken as invalid, and writes nothing", async (t) => {
    const c = await start(t, "dns-refused");
    const dns = c.capability("dns");
    const zone = await dns.zone();
    await rejectsWith(dns.create({ name: `api.${label(c)}.elsewhere.example`, type: "A", values: ["10.42.0.8"] }, { token: c.token("outside"), tags: c.tags }), "invalid", "a name outside the zone");
    const name = `api.${label(c)}.${zone.name}`;
    made(c, await dns.create({ name, type: "A", values: ["10.42.0.8"] }, { token: c.token("first"), tags: c.tags }));
    await rejectsWith(dns.create({ name, type: "A", values: ["10.42.0.9"] }, { token: c.token("second"), tags: c.tags }), "invalid", "a second A record of the name");
    assert.equal((await dns.findTagged(c.tags)).length, 1);
  });

  it("aliases a load balancer of the cluster infrastructure", async (t) => {
    const c = await start(t, "dns-alias");
    if (!c.has("clusterInfrastructure")) return t.skip("no cluster infrastructure");
    const f = await buildFoundation(c);
    const lb = await c.infrastructure.create(
      "loadBalancer",
      { name: `${label(c)}-api`.slice(0, 32), networkId: f.networkId, subnetIds: [f.subnetId], listeners: [{ port: 6443, targetPort: 6443 }] },
      { token: c.token("lb"), tags: c.tagsFor("loadBalancer") },
    );
    c.track("loadBalancer", lb.id);
    const dns = c.capability("dns");
    const zone = await dns.zone();
    const record = made(c, await dns.create({ name: `api.${label(c)}.${zone.name}`, type: "A", loadBalancerId: lb.id }, { token: c.token("alias"), tags: c.tags }));
    assert.equal(record.loadBalancerId, lb.id);
    assert.equal(record.values, undefined);
  });
}
