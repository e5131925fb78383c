import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { formatSelector, selectorMatches } from "./selector.ts";

describe("label selectors", () => {
  it("match when every label and every requirement holds", () => {
    const labels = { tier: "edge", zone: "a" };
    assert.equal(selectorMatches({}, labels), true);
    assert.equal(selectorMatches({ matchLabels: { tier: "edge" } }, labels), true);
    assert.equal(selectorMatches({ matchLabels: { tier: "core" } }, labels), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: "zone", operator: "In", values: ["a", "b"] }] }, labels), true);
    assert.equal(selectorMatches({ matchExpressions: [{ key: "zone", operator: "NotIn", values: ["a"] }] }, labels), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: "gpu", operator: "NotIn", values: ["yes"] }] }, labels), true);
    assert.equal(selectorMatches({ matchExpressions: [{ key: "gpu", operator: "Exists" }] }, labels), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: "gpu", operator: "DoesNotExist" }] }, undefined), true);
    assert.equal(selectorMatches({ matchLabels: { tier: "edge" }, matchExpressions: [{ key: "zone", operator: "Exists" }] }, { tier: "edge" }), false);
  });

  it("are written in Kubernetes' string form, as a Scale's status.selector", () => {
    assert.equal(formatSelector({ matchLabels: { "slipway.dev/cluster": "demo", "slipway.dev/pool": "demo-w" } }), "slipway.dev/cluster=demo,slipway.dev/pool=demo-w");
    const expressions = [
      { key: "zone", operator: "In", values: ["a", "b"] },
      { key: "tier", operator: "NotIn", values: ["edge"] },
      { key: "gpu", operator: "Exists" },
      { key: "spot", operator: "DoesNotExist" },
    ];
    assert.equal(formatSelector({ matchLabels: { role: "worker" }, matchExpressions: expressions }), "role=worker,zone in (a,b),tier notin (edge),gpu,!spot");
    assert.equal(formatSelector({}), "");
  });
});
