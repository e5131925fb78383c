import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { T0, journalled as cluster, step } from "../views/testing.ts";
import { bar, renderTimeline } from "./timeline.ts";

describe("bar", () => {
  it("starts on a whole cell, ends on an eighth, and marks an instant with a thin line", () => {
    assert.equal(bar(0, 2.5, 6, "█"), "██▌   ");
    assert.equal(bar(3, 6, 6, "█"), "   ███");
    assert.equal(bar(2, 2, 6, "█"), "  ▏   ");
    assert.equal(bar(1, 3, 6, "░"), " ░░   ");
    assert.equal([...bar(0, 9, 6, "█")].length, 6, "never wider than the field");
  });
});

describe("renderTimeline", () => {
  const steps = [step("Validate", 0, 1), step("Network east", 1, 3), step("Worker q-east-0", 3, 9, "Failed"), step("Worker q-east-1", 9)];

  it("fits the width, puts every step on one axis, and marks running and failed steps", () => {
    const text = renderTimeline(cluster(steps), { width: 72, now: T0 + 12_000 });
    const lines = text.trimEnd().split("\n");
    for (const line of lines) assert.ok([...line].length <= 72, `fits: ${line}`);
    assert.equal(lines[0], "cluster/q  Provisioning  12.0s from creation so far");
    const row = (name: string) => lines.find((l) => l.startsWith(`${name} `))!.split("|");
    assert.equal(row("Validate")[2], "  0.0s → 1.0s");
    assert.equal(row("Worker q-east-0")[2], "  3.0s → 9.0s ✗");
    assert.equal(row("Worker q-east-1")[2], "  9.0s → …");
    assert.match(row("Worker q-east-1")[1]!, /░+$/, "a running step reaches now, drawn lighter");
    assert.match(text, /^critical path \(12\.0s of 12\.0s\): Validate → Network east\n {2}→ Worker q-east-0 → Worker q-east-1$/m, "wrapped before the width");
  });

  it("says when there is nothing to draw yet", () => {
    assert.match(renderTimeline(cluster([], "Pending"), { width: 80, now: T0 }), /no steps recorded yet/);
  });
});
