import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterStep } from "../api/kinds.ts";
import { progressChanges, type ClusterProgress } from "../views/progress.ts";
import { LiveProgress, PlainProgress, changeText, progressReporter } from "./progress.ts";

const ESCAPE_SEQUENCE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, "g");
const T0 = Date.parse("2026-01-01T00:00:00Z");
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

function progress(steps: ClusterStep[], overrides: Partial<ClusterProgress> = {}): ClusterProgress {
  return { label: "cluster/q", phase: "Provisioning", deleting: false, steps, machines: { desired: 3, created: 0, booted: 0, joined: 0, ready: 0 }, ...overrides };
}

function recorder(isTTY: boolean, columns = 80) {
  const writes: string[] = [];
  return { writes, out: { write: (text: string) => writes.push(text), isTTY, columns } };
}

const validating: ClusterStep = { name: "Validate", startedAt: at(0), outcome: "Running" };
const validated: ClusterStep = { ...validating, finishedAt: at(1.2), outcome: "Succeeded" };
const network: ClusterStep = { name: "Network east", startedAt: at(1.2), outcome: "Running" };

describe("changeText", () => {
  it("reports a step once when it starts and once when it ends, with its duration", () => {
    const first = progressChanges(undefined, progress([validating]), T0);
    assert.deepEqual(
      first.map(changeText),
      ["phase Provisioning", "▸ Validate", "machines 0/3 created, 0 booted, 0 joined, 0 ready"],
    );
    const second = progressChanges(progress([validating]), progress([validated, network]), T0);
    assert.deepEqual(
      second.map((c) => [changeText(c), c.lasting]),
      [
        ["✓ Validate (1.2s)", true],
        ["▸ Network east", false],
      ],
    );
    assert.deepEqual(progressChanges(progress([validated, network]), progress([validated, network]), T0), [], "no change, no line");
  });

  it("reports a failed step with its message, a reason, and machines left while deleting", () => {
    const failed: ClusterStep = { ...network, finishedAt: at(4.2), outcome: "Failed", message: "CreateNetworkFailed: quota" };
    const changes = progressChanges(progress([network]), progress([failed], { reason: "ReplacingMachine", message: "q-east-0 BootFailed" }), T0);
    assert.deepEqual(
      changes.map(changeText),
      ["ReplacingMachine: q-east-0 BootFailed", "✗ Network east (3.0s): CreateNetworkFailed: quota"],
    );
    const deleting = progressChanges(progress([]), progress([], { phase: "Deleting", deleting: true, machines: { desired: 3, created: 2, booted: 2, joined: 2, ready: 2 } }), T0);
    assert.deepEqual(
      deleting.map(changeText),
      ["phase Deleting", "machines 2 left"],
    );
  });
});

describe("PlainProgress", () => {
  it("prints one stamped line per change, without carriage returns or escape codes", () => {
    let now = T0;
    const { writes, out } = recorder(false);
    const reporter = new PlainProgress(out, () => now);
    reporter.update(progress([validating]));
    now += 12_345;
    reporter.update(progress([validated, network]));
    reporter.finish("cluster/q", { result: "failed", reason: "QuotaExceeded", message: "needs 12 vCPU" });
    const text = writes.join("");
    assert.ok(!text.includes("\r") && !text.includes("\x1b"), "no carriage returns or escape codes");
    assert.deepEqual(text.trimEnd().split("\n"), [
      "[   0.0s] cluster/q  phase Provisioning",
      "[   0.0s] cluster/q  ▸ Validate",
      "[   0.0s] cluster/q  machines 0/3 created, 0 booted, 0 joined, 0 ready",
      "[  12.3s] cluster/q  ✓ Validate (1.2s)",
      "[  12.3s] cluster/q  ▸ Network east",
      "[  12.3s] cluster/q  ✗ Failed: QuotaExceeded: needs 12 vCPU",
    ]);
  });
});

describe("following a cluster already under way", () => {
  it("says how many steps are done instead of repeating them, and leaves the steps of its making out while it is deleted", () => {
    const { writes, out } = recorder(false);
    const reporter = new PlainProgress(out, () => T0);
    const made = [validated, { ...network, finishedAt: at(2), outcome: "Succeeded" as const }];
    reporter.update(progress([...made, { name: "Worker q-0", startedAt: at(2), outcome: "Running" }]));
    assert.deepEqual(writes.splice(0).map((l) => l.slice(10).trimEnd()), ["cluster/q  phase Provisioning", "cluster/q  2 steps done", "cluster/q  ▸ Worker q-0", "cluster/q  machines 0/3 created, 0 booted, 0 joined, 0 ready"]);

    const deleting = { phase: "Deleting", deleting: true, machines: { desired: 3, created: 1, booted: 1, joined: 1, ready: 0 } };
    reporter.update(progress([...made, { name: "Worker q-0", startedAt: at(9), outcome: "Running" }, { name: "Network east", startedAt: at(3), outcome: "Running" }], deleting));
    reporter.update(progress([{ name: "DeleteNetwork east", startedAt: at(10), outcome: "Running" }], { ...deleting, machines: { ...deleting.machines, created: 0 } }));
    assert.deepEqual(writes.map((l) => l.slice(10).trimEnd()), ["cluster/q  phase Deleting", "cluster/q  machines 1 left", "cluster/q  ▸ DeleteNetwork east", "cluster/q  machines 0 left"]);
  });
});

describe("LiveProgress", () => {
  it("redraws its block in place, keeping finished steps above it", () => {
    let now = T0 + 1500;
    const { writes, out } = recorder(true);
    const reporter = new LiveProgress(out, () => now, { tickMs: 0, color: false });
    reporter.update(progress([validating]));
    assert.equal(writes[0], "\x1b[2K[   0.0s] cluster/q  phase Provisioning\n\x1b[2K⠋ cluster/q  Provisioning  0.0s\n\x1b[2K    ⠋ Validate  1.5s\n\x1b[2K    machines 0/3 created · 0 booted · 0 joined · 0 ready\n\x1b[J");
    now += 1000;
    reporter.update(progress([validated, network]));
    assert.ok(writes[1]!.startsWith("\x1b[3A\r\x1b[2K[   1.0s] cluster/q  ✓ Validate (1.2s)\n"), "moves up over the 3-line block, then writes the finished step");
    assert.match(writes[1]!, /⠋ Network east {2}1\.3s\n/);
    reporter.finish("cluster/q", { result: "ready" });
    assert.equal(writes[2], "\x1b[3A\r\x1b[2K[   1.0s] cluster/q  ✓ Ready after 1.0s\n\x1b[J", "the block goes, the outcome stays");
    reporter.close();
  });

  it("cuts lines to the terminal's width so that redrawing never wraps", () => {
    const { writes, out } = recorder(true, 50);
    const reporter = new LiveProgress(out, () => T0, { tickMs: 0, color: false });
    reporter.update(progress([{ name: "Worker a-very-long-machine-name-that-goes-on-and-on-0", startedAt: at(0), outcome: "Running" }]));
    for (const line of writes.join("").split("\n")) assert.ok([...line.replace(ESCAPE_SEQUENCE, "").replace("\r", "")].length <= 50, line);
    reporter.close();
  });
});

describe("progressReporter", () => {
  it("draws live only in a terminal outside CI", () => {
    const tty = { write: () => true, isTTY: true };
    const live = progressReporter(tty, {});
    assert.ok(live instanceof LiveProgress);
    live.close();
    assert.ok(progressReporter(tty, { CI: "true" }) instanceof PlainProgress);
    assert.ok(progressReporter({ write: () => true, isTTY: false }, {}) instanceof PlainProgress);
  });
});
