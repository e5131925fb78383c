import { test } from "node:test";
import assert from "node:assert/strict";
import { LoopPacer } from "./pacer.ts";

function blockLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // the event loop cannot turn meanwhile
  }
}

test("admits at once on an idle loop, holds work back while the loop lags, and lets it through once it recovers", async () => {
  const pacer = new LoopPacer({ maxLagMs: 10, sampleMs: 5 });
  pacer.start();
  try {
    assert.equal(await pacer.admit(), 0, "an idle loop holds nobody");
    blockLoop(150);
    await new Promise((resolve) => setTimeout(resolve, 1));
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(pacer.lag > 10, `lag after a blocked loop: ${pacer.lag} ms`);
    const held = await pacer.admit();
    assert.ok(pacer.lag <= 10, `admitted with a lag of ${pacer.lag} ms`);
    assert.ok(held >= 5, `held for ${held} ms, at least one sample`);
  } finally {
    pacer.stop();
  }
});

test("never holds work back once stopped", async () => {
  const pacer = new LoopPacer({ maxLagMs: 0, sampleMs: 5 });
  pacer.start();
  blockLoop(50);
  pacer.stop();
  await pacer.admit();
  assert.equal(pacer.lag, 0);
});
