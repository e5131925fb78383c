import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { sampledBetween, summarizeProfile } from "./cpu-summary.ts";

// A profile of three functions: `build` for the first 2 s, then idle, then `check` once a second.
const nodes = [
  { id: 1, callFrame: { functionName: "(root)", url: "", lineNumber: 0 }, children: [2, 3, 4] },
  { id: 2, callFrame: { functionName: "build", url: "file:///app/build.js", lineNumber: 0 } },
  { id: 3, callFrame: { functionName: "(idle)", url: "", lineNumber: 0 } },
  { id: 4, callFrame: { functionName: "check", url: "file:///app/check.js", lineNumber: 9 } },
];
const samples: number[] = [];
const timeDeltas: number[] = [];
const sample = (id: number, ms: number) => {
  samples.push(id);
  timeDeltas.push(ms * 1000);
};
for (let i = 0; i < 20; i++) sample(2, 100);
for (let s = 0; s < 4; s++) {
  sample(4, 100);
  for (let i = 0; i < 9; i++) sample(3, 100);
}

describe("cpu-summary", () => {
  it("summarises only the samples of a stretch of the profile", () => {
    const whole = summarizeProfile({ nodes, samples, timeDeltas });
    assert.equal(Math.round(whole.functions.find((f) => f.name.startsWith("build "))!.ms), 2_000);
    const idle = summarizeProfile(sampledBetween({ nodes, samples, timeDeltas }, 2_000, 6_000));
    const names = idle.functions.map((f) => f.name.split(" ")[0]);
    assert.ok(!names.includes("build"), "nothing of the first 2 s");
    const check = idle.functions.find((f) => f.name.startsWith("check "))!;
    assert.equal(Math.round(check.share * 100), 10, "check ran a tenth of the idle stretch");
  });
});
