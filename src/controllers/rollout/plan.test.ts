import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { planRollout, rolloutStrategy, type RolloutMachine, type RolloutStrategy } from "./plan.ts";

const OLD = "old0000000";
const NEW = "new0000000";

function machine(name: string, templateHash: string, state: Partial<Omit<RolloutMachine, "name" | "templateHash">> = {}): RolloutMachine {
  return { name, templateHash, available: true, deleting: false, failed: false, ...state };
}

/**
 * Drives a rollout to its end as a caller would: creates what the plan asks (new machines become
 * available on the next step), deletes what it names (gone on the next step), and records, after each
 * step, how many machines exist and how many are available.
 */
function simulate(desired: number, machines: RolloutMachine[], strategy?: Partial<RolloutStrategy>) {
  let set = machines.map((m) => ({ ...m }));
  let next = 0;
  const history: { present: number; available: number }[] = [];
  for (let step = 0; step < 50; step++) {
    // What was deleted is gone, what was created has booted.
    set = set.filter((m) => !m.deleting).map((m) => (m.templateHash === NEW && !m.failed ? { ...m, available: true } : m));
    const plan = planRollout({ desired, templateHash: NEW, machines: set, strategy });
    if (plan.complete) return { set, history, steps: step };
    set = set.map((m) => (plan.delete.includes(m.name) ? { ...m, deleting: true } : m));
    for (let i = 0; i < plan.create; i++) set.push(machine(`new-${next++}`, NEW, { available: false }));
    history.push({ present: set.length, available: set.filter((m) => m.available && !m.deleting).length });
  }
  throw new Error("the rollout did not finish");
}

describe("planning a rollout", () => {
  it("creates a new machine first, and deletes an old one only once the new one is available", () => {
    const machines = [machine("a", OLD), machine("b", OLD), machine("c", OLD)];
    const first = planRollout({ desired: 3, templateHash: NEW, machines });
    assert.deepEqual([first.create, first.delete], [1, []], "surge 1: one new machine, nothing deleted yet");

    const booting = [...machines, machine("d", NEW, { available: false })];
    assert.deepEqual(planRollout({ desired: 3, templateHash: NEW, machines: booting }).delete, [], "never fewer than 3 available");

    const ready = [...machines, machine("d", NEW)];
    const third = planRollout({ desired: 3, templateHash: NEW, machines: ready });
    assert.deepEqual([third.create, third.delete], [0, ["a"]], "the first old machine in the list goes");
    assert.deepEqual([third.updated, third.updatedAvailable, third.outdated, third.complete], [1, 1, 3, false]);

    const draining = [machine("a", OLD, { deleting: true }), machine("b", OLD), machine("c", OLD), machine("d", NEW)];
    assert.equal(planRollout({ desired: 3, templateHash: NEW, machines: draining }).create, 0, "a machine being deleted still counts against the surge");
  });

  it("rolls a pool with the defaults (surge 1, none unavailable): never more than one extra, never fewer available", () => {
    const { set, history } = simulate(3, [machine("a", OLD), machine("b", OLD), machine("c", OLD)]);
    assert.deepEqual(set.map((m) => m.templateHash), [NEW, NEW, NEW]);
    for (const { present, available } of history) {
      assert.ok(present <= 4, `at most 4 machines: ${JSON.stringify(history)}`);
      assert.ok(available >= 3, `at least 3 available: ${JSON.stringify(history)}`);
    }
  });

  it("rolls without surge by taking machines down first, within maxUnavailable", () => {
    const { set, history } = simulate(3, [machine("a", OLD), machine("b", OLD), machine("c", OLD)], { maxSurge: 0, maxUnavailable: 1 });
    assert.equal(set.length, 3);
    for (const { present, available } of history) {
      assert.ok(present <= 3, JSON.stringify(history));
      assert.ok(available >= 2, JSON.stringify(history));
    }
  });

  it("goes faster with a larger surge", () => {
    const old = ["a", "b", "c", "d"].map((n) => machine(n, OLD));
    assert.ok(simulate(4, old, { maxSurge: 4 }).steps < simulate(4, old).steps);
  });

  it("removes old machines that are not available without waiting for the limits, once a new one serves", () => {
    // Old machines whose instances the cloud refuses (a machine type it no longer offers), fixed by a new template.
    const refused = [machine("a", OLD, { available: false }), machine("b", OLD, { available: false })];
    const { set, history } = simulate(2, refused);
    assert.deepEqual(set.map((m) => [m.templateHash, m.available]), [[NEW, true], [NEW, true]]);
    for (const { present } of history) assert.ok(present <= 3, JSON.stringify(history));
  });

  it("scales as well as it rolls: all missing machines at once, all surplus at once", () => {
    const two = [machine("a", NEW), machine("b", NEW)];
    assert.deepEqual(planRollout({ desired: 5, templateHash: NEW, machines: two }), { create: 3, delete: [], updated: 2, updatedAvailable: 2, outdated: 0, complete: false });
    const five = ["a", "b", "c", "d", "e"].map((n) => machine(n, NEW, { available: n !== "d" }));
    assert.deepEqual(planRollout({ desired: 2, templateHash: NEW, machines: five }).delete, ["d", "a", "b"], "the unavailable one first, then in the order given");
    assert.deepEqual(planRollout({ desired: 0, templateHash: NEW, machines: [machine("x", OLD), machine("y", NEW)] }).delete.sort(), ["x", "y"]);
  });

  it("replaces failed machines at once, whatever their template", () => {
    const plan = planRollout({ desired: 2, templateHash: NEW, machines: [machine("a", NEW), machine("b", NEW, { failed: true, available: false })] });
    assert.deepEqual([plan.create, plan.delete], [1, ["b"]]);
  });

  it("is complete only with exactly the wanted machines, all new and available", () => {
    const done = [machine("a", NEW), machine("b", NEW)];
    assert.equal(planRollout({ desired: 2, templateHash: NEW, machines: done }).complete, true);
    assert.equal(planRollout({ desired: 2, templateHash: NEW, machines: [...done, machine("c", OLD, { deleting: true })] }).complete, false, "one still leaving");
    assert.equal(planRollout({ desired: 2, templateHash: NEW, machines: [machine("a", NEW), machine("b", NEW, { available: false })] }).complete, false);
    const plan = planRollout({ desired: 2, templateHash: NEW, machines: done });
    assert.deepEqual([plan.create, plan.delete], [0, []]);
  });

  it("defaults to surge 1 and none unavailable, and never to both limits at 0", () => {
    assert.deepEqual(rolloutStrategy(undefined), { maxSurge: 1, maxUnavailable: 0 });
    assert.deepEqual(rolloutStrategy({ maxSurge: 0 }), { maxSurge: 1, maxUnavailable: 0 });
    assert.deepEqual(rolloutStrategy({ maxSurge: 0, maxUnavailable: 2 }), { maxSurge: 0, maxUnavailable: 2 });
  });
});
