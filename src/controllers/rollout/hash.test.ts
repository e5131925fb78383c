import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { templateHash } from "./hash.ts";

describe("template hashes", () => {
  it("are equal for equal templates whatever the key order, and differ when a field does", () => {
    const a = templateHash({ machineType: "s1.small", image: "ubuntu-22.04", labels: { b: "2", a: "1" } });
    assert.equal(a, templateHash({ labels: { a: "1", b: "2" }, image: "ubuntu-22.04", machineType: "s1.small" }));
    assert.match(a, /^[0-9a-f]{10}$/);
    assert.notEqual(a, templateHash({ machineType: "s1.medium", image: "ubuntu-22.04", labels: { a: "1", b: "2" } }));
    assert.equal(templateHash({ x: 1, y: undefined }), templateHash({ x: 1 }), "an absent field is not a field");
  });
});
