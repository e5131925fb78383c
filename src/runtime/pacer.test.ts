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

test("cuts off the work started in one turn of the loop after its budget, so that the loop turns between slices", async () => {
  const pacer = new LoopPacer({ maxLagMs: 1_000, turnBudgetMs: 20 });
  pacer.start();
  // Turns of the loop, counted by a timer that fires once in each (the timers phase comes before the poll for I/O).
  let turns = 0;
  let ticking = true;
  const tick = () => {
    turns++;
    if (ticking) setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  try {
    const turnOfEach: number[] = [];
    // Workers as the controllers run them: a turn of the loop, then admission, then 8 ms of work in one go.
    const worker = async () => {
      await new Promise((resolve) => setImmediate(resolve));
      await pacer.admit();
      blockLoop(8);
      turnOfEach.push(turns);
    };
    await Promise.all(Array.from({ length: 40 }, worker));
    assert.equal(turnOfEach.length, 40, "every worker was admitted");
    const perTurn = new Map<number, number>();
    for (const turn of turnOfEach) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
    // 20 ms from the first admission of a turn: the third starts at 16 ms, the fourth (24 ms) waits.
    assert.ok(Math.max(...perTurn.values()) <= 3, `work started in one turn: ${JSON.stringify([...perTurn])}`);
    assert.ok(perTurn.size >= 14, `the 40 spread over ${perTurn.size} turns`);
  } finally {
    ticking = false;
    pacer.stop();
  }
});
