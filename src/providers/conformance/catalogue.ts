// Conformance of the catalogue capability: a region described truthfully, and an unknown region refused.
import { it } from "node:test";
import assert from "node:assert/strict";
import { rejectsWith, type CaseStarter } from "./case.ts";

export function catalogueConformance(start: CaseStarter): void {
  it("describes its region: zones, machine types, images and quota", async (t) => {
    const { catalogue } = await start(t, "describe");
    const zones = await catalogue.zones();
    assert.ok(zones.length > 0 && zones.every((z) => typeof z === "string" && z.length > 0), `zones: ${JSON.stringify(zones)}`);
    const types = await catalogue.machineTypes();
    assert.ok(types.length > 0);
    for (const type of types) assert.ok(type.name && type.vcpus > 0 && type.memoryMiB > 0, `machine type ${JSON.stringify(type)}`);
    const images = await catalogue.images();
    assert.ok(images.length > 0 && images.every((i) => i.id && i.name), `images: ${JSON.stringify(images)}`);
    const quota = await catalogue.quota();
    for (const key of ["vcpus", "instances", "networks", "loadBalancers", "publicIps"] as const) {
      assert.ok(Number.isInteger(quota.limits[key]) && quota.limits[key] >= 0, `limit ${key}`);
      assert.ok(Number.isInteger(quota.usage[key]) && quota.usage[key] >= 0, `usage ${key}`);
    }
  });

  it("refuses a region that does not exist with an invalid error naming it", async (t) => {
    const c = await start(t, "region");
    if (!c.h.inRegion) return t.skip("the harness cannot open another region");
    const elsewhere = c.h.inRegion("nowhere-9").capabilities.catalogue;
    assert.ok(elsewhere, "the provider offers a catalogue in every region it opens");
    const error = await rejectsWith(elsewhere.zones(), "invalid", "zones of an unknown region");
    assert.match(error.message, /nowhere-9/);
    assert.equal(error.retryable, false);
  });
}
