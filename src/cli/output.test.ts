import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parse } from "yaml";
import { fitWidth, formatAge, renderObjects, renderTable, resourceLabel } from "./output.ts";

describe("renderTable", () => {
  it("aligns columns three spaces apart and leaves no trailing spaces", () => {
    assert.equal(
      renderTable(["NAME", "PHASE", "AGE"], [["demo", "Running", "3m"], ["a-longer-name", "", "12s"]]),
      "NAME            PHASE     AGE\ndemo            Running   3m\na-longer-name             12s\n",
    );
  });
});

describe("formatAge", () => {
  const now = Date.parse("2026-01-01T12:00:00Z");
  it("prints ages as kubectl does", () => {
    assert.equal(formatAge("2026-01-01T11:59:15Z", now), "45s");
    assert.equal(formatAge("2026-01-01T11:56:48Z", now), "3m12s");
    assert.equal(formatAge("2026-01-01T07:00:00Z", now), "5h");
    assert.equal(formatAge(undefined, now), "<unknown>");
  });
});

describe("renderObjects", () => {
  it("prints several objects as a List, one as itself", () => {
    const object = { apiVersion: "v1", kind: "Namespace", metadata: { name: "a" } };
    assert.deepEqual(parse(renderObjects("yaml", [object])), { apiVersion: "v1", kind: "List", metadata: { resourceVersion: "" }, items: [object] });
    assert.deepEqual(JSON.parse(renderObjects("json", object)), object);
  });
});

describe("resourceLabel and fitWidth", () => {
  it("names resources as kubectl does and cuts long lines with an ellipsis", () => {
    assert.equal(resourceLabel({ singularName: "cluster", group: "slipway.dev" }), "cluster.slipway.dev");
    assert.equal(resourceLabel({ singularName: "secret", group: "" }), "secret");
    assert.equal(fitWidth("abcdef", 4), "abc…");
    assert.equal(fitWidth("abc", 4), "abc");
  });
});
