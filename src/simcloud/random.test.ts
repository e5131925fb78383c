import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Prng } from "./random.ts";

const draw = (prng: Prng, n: number) => Array.from({ length: n }, () => prng.nextUint32());

describe("seeded generator", () => {
  it("repeats its sequence for the same seed and stream, and differs otherwise", () => {
    assert.deepEqual(draw(new Prng(7), 20), draw(new Prng(7), 20));
    assert.notDeepEqual(draw(new Prng(7), 20), draw(new Prng(8), 20));
    assert.notDeepEqual(draw(new Prng(7, 1), 20), draw(new Prng(7, 2), 20));
  });

  it("continues from a saved state instead of starting over", () => {
    const original = new Prng(3);
    draw(original, 5);
    const resumed = new Prng(999);
    resumed.state = original.state;
    assert.deepEqual(draw(resumed, 10), draw(original, 10));
  });

  it("spreads floats over [0, 1) and hex digits over the whole alphabet", () => {
    const prng = new Prng(11);
    const floats = Array.from({ length: 10_000 }, () => prng.next());
    assert.ok(floats.every((f) => f >= 0 && f < 1));
    const mean = floats.reduce((a, b) => a + b, 0) / floats.length;
    assert.ok(Math.abs(mean - 0.5) < 0.02, `mean ${mean}`);
    const hex = prng.hex(4000);
    assert.equal(hex.length, 4000);
    assert.equal(new Set(hex).size, 16);
    assert.ok(Array.from({ length: 1000 }, () => prng.between(4, 8)).every((v) => v >= 4 && v <= 8));
  });
});
