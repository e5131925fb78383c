// Conformance of the machines capability: instances made once per token, tagged, found by their tags,
// booted to ready with console output, their user data kept secret, and deleted tolerantly. Where the
// provider also has cluster infrastructure, each instance is placed in a foundation built for it.
import { it } from "node:test";
import assert from "node:assert/strict";
import type { InstanceInfo, ResourceSpecs } from "../provider.ts";
import { machineTemplate, rejectsWith, type Case, type CaseStarter } from "./case.ts";
import { buildFoundation } from "./cluster-infrastructure.ts";

/** User data carrying a secret that must never come back from the provider. */
const SECRET = "conformance-bootstrap-secret-0d6f";
const USER_DATA = `#cloud-config\nwrite_files:\n  - path: /etc/slipway/token\n    content: ${SECRET}\n`;

/** What the case's instances are made from, placed in a new foundation when the provider has cluster infrastructure. */
export async function instanceSpec(c: Case): Promise<ResourceSpecs["instance"]> {
  const template = await machineTemplate(c);
  if (!c.has("clusterInfrastructure")) return { ...template, userData: USER_DATA };
  const f = await buildFoundation(c);
  return { ...template, zone: f.zone, userData: USER_DATA, placement: { subnetId: f.subnetId, securityGroupIds: [f.securityGroupId], keyPairId: f.keyPairId } };
}

export function machinesConformance(start: CaseStarter): void {
  it("tags every instance it creates and finds it by its tags", async (t) => {
    const c = await start(t, "machine-tags");
    const instance = await c.machines.create("instance", await instanceSpec(c), { token: c.token("instance"), tags: c.tagsFor("instance") });
    c.track("instance", instance.id);
    const info = await c.machines.get("instance", instance.id);
    assert.ok(info, "the instance exists");
    assert.equal(info.kind, "instance");
    for (const [key, value] of Object.entries(c.tagsFor("instance"))) assert.equal(info.tags[key], value, `the instance carries tag ${key}`);
    assert.deepEqual((await c.machines.findTagged("instance", c.tags)).map((r) => r.id), [instance.id], "findTagged finds exactly the one built");
    assert.deepEqual((await c.machines.findTagged("instance", { ...c.tags, "slipway.dev/part": "instance" })).map((r) => r.id), [instance.id]);
    assert.deepEqual(await c.machines.findTagged("instance", { ...c.tags, "slipway.dev/cluster": `${c.cluster}-other` }), []);
  });

  it("makes no second instance when a create's answer was lost and the create is retried", async (t) => {
    const c = await start(t, "machine-lost");
    const { h } = c;
    if (!h.injectFault || !h.clearFaults) return t.skip("the harness cannot inject faults");
    const spec = await instanceSpec(c);
    const create = () => c.machines.create("instance", spec, { token: c.token("instance"), tags: c.tagsFor("instance") });
    await h.injectFault("create:instance", "lostAnswer");
    const error = await rejectsWith(create(), "transient", "create instance whose answer is lost");
    assert.equal(error.retryable, true);
    await h.clearFaults();
    const instance = await create();
    c.track("instance", instance.id);
    const found = await c.machines.findTagged("instance", c.tags);
    assert.deepEqual(found.map((r) => r.id), [instance.id], "exactly one instance after a lost answer");
  });

  it("classifies a capacity failure as retryable and leaves nothing behind", async (t) => {
    const c = await start(t, "machine-capacity");
    const { h } = c;
    if (!h.injectFault || !h.clearFaults) return t.skip("the harness cannot inject faults");
    const spec = await instanceSpec(c);
    await h.injectFault("create:instance", "capacity");
    const capacity = await rejectsWith(
      c.machines.create("instance", spec, { token: c.token("instance"), tags: c.tagsFor("instance") }),
      "capacity",
      "create instance (capacity)",
    );
    assert.equal(capacity.retryable, true);
    await h.clearFaults();
    assert.deepEqual(await c.machines.findTagged("instance", c.tags), [], "a create refused for capacity leaves nothing");
  });

  it("refuses invalid input with an invalid error", async (t) => {
    const c = await start(t, "machine-invalid");
    const spec = await instanceSpec(c);
    const bad = await rejectsWith(
      c.machines.create("instance", { ...spec, machineType: "no-such-type" }, { token: c.token("bad-instance"), tags: c.tags }),
      "invalid",
      "create instance of an unknown machine type",
    );
    assert.equal(bad.retryable, false);
    if (c.has("clusterInfrastructure")) {
      const { placement: _placement, ...unplaced } = spec;
      await rejectsWith(
        c.machines.create("instance", unplaced, { token: c.token("unplaced-instance"), tags: c.tags }),
        "invalid",
        "create instance without a placement, in a provider that has cluster infrastructure",
      );
    }
    assert.deepEqual(await c.machines.findTagged("instance", c.tags), []);
  });

  it("boots an instance to ready, shows its console, keeps its user data secret, and deletes it", async (t) => {
    const c = await start(t, "instance");
    const machines = c.machines;
    const spec = await instanceSpec(c);
    const create = () => machines.create("instance", spec, { token: c.token("instance"), tags: c.tagsFor("instance") });
    const created = await create();
    c.track("instance", created.id);
    assert.equal((await create()).id, created.id, "the same token returns the same instance");
    assert.ok(["pending", "ready"].includes(created.state), `a new instance is pending or ready, not ${created.state}`);
    const ready: InstanceInfo = await c.waitFor("instance", created.id, "ready");
    assert.equal(ready.zone, spec.zone);
    assert.ok(ready.providerId.length > 0 && ready.providerId.includes(created.id), `providerId ${ready.providerId}`);
    assert.ok(ready.privateIp, "a ready instance has a private address");
    const lines = await c.eventually("console output", async () => {
      const output = await machines.consoleOutput(created.id);
      return output.length > 0 ? output : undefined;
    });
    assert.ok(lines.every((line) => typeof line === "string" && line.length > 0));
    const seen = JSON.stringify([created, ready, await machines.findTagged("instance", c.tags), lines]);
    assert.ok(!seen.includes(SECRET), "user data never comes back from the provider");

    await machines.delete("instance", created.id);
    const leaving = await machines.get("instance", created.id);
    assert.ok(leaving === undefined || ["deleting", "gone"].includes(leaving.state), `a deleted instance is deleting or gone, not ${leaving?.state}`);
    await machines.delete("instance", created.id);
    await c.waitGone("instance", created.id);
    await machines.delete("instance", created.id);
    assert.deepEqual(await machines.findTagged("instance", c.tags), [], "a gone instance is not found by its tags");
  });
}
