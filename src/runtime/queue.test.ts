import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { WorkQueue } from "./queue.ts";
import { ManualClock } from "./testing.ts";

/** The key a worker would get now, or undefined if it would have to wait. */
async function takeNow(queue: WorkQueue): Promise<string | undefined> {
  return queue.length > 0 ? queue.get() : undefined;
}

/** Deterministic pseudo-random numbers (mulberry32). */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("WorkQueue", () => {
  it("keeps a key once however often it is added while it waits", async () => {
    const queue = new WorkQueue();
    queue.add("default/a");
    queue.add("default/b");
    queue.add("default/a");
    queue.add("default/a");
    assert.equal(queue.length, 2);
    assert.equal(await queue.get(), "default/a");
    assert.equal(await queue.get(), "default/b");
    assert.equal(await takeNow(queue), undefined);
  });

  it("holds back a key added while it is processed until the worker is done, then hands it out once", async () => {
    const queue = new WorkQueue();
    queue.add("k");
    const key = await queue.get();
    assert.equal(key, "k");
    queue.add("k");
    queue.add("k");
    assert.equal(await takeNow(queue), undefined, "a second worker must not get the key while the first holds it");
    queue.done("k");
    assert.equal(await takeNow(queue), "k");
    queue.done("k");
    assert.equal(await takeNow(queue), undefined);
  });

  it("never lets two workers process one key at once, and processes every key after its last change", async () => {
    const queue = new WorkQueue();
    const random = seeded(7);
    const keys = Array.from({ length: 5 }, (_, i) => `ns/key-${i}`);
    const active = new Set<string>();
    const version = new Map<string, number>();
    const seenVersion = new Map<string, number>();
    let overlaps = 0;
    let processed = 0;
    const worker = async () => {
      for (;;) {
        const key = await queue.get();
        if (key === undefined) return;
        if (active.has(key)) overlaps++;
        active.add(key);
        seenVersion.set(key, version.get(key) ?? 0);
        await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 3)));
        active.delete(key);
        processed++;
        queue.done(key);
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    for (let i = 0; i < 400; i++) {
      const key = keys[Math.floor(random() * keys.length)]!;
      version.set(key, (version.get(key) ?? 0) + 1);
      queue.add(key);
      if (i % 10 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    while (queue.length > 0 || active.size > 0) await new Promise((resolve) => setTimeout(resolve, 1));
    queue.shutDown();
    await Promise.all(workers);
    assert.equal(overlaps, 0);
    for (const key of keys) assert.equal(seenVersion.get(key), version.get(key), `${key} was not processed after its last change`);
    assert.ok(processed < 400, "additions made while a key waited were merged");
  });

  it("backs a failing key off exponentially up to the cap, and forget() starts over", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock, backoff: { baseMs: 100, capMs: 1000 } });
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      const delay = queue.addWithBackoff("k");
      delays.push(delay);
      clock.advance(delay - 1);
      assert.equal(await takeNow(queue), undefined, `retry ${i + 1} came before its backoff`);
      clock.advance(1);
      assert.equal(await takeNow(queue), "k");
      queue.done("k");
    }
    assert.deepEqual(delays, [100, 200, 400, 800, 1000, 1000]);
    assert.equal(queue.failuresOf("k"), 6);
    queue.forget("k");
    assert.equal(queue.addWithBackoff("k"), 100);
  });

  it("hands a key out after addAfter's delay, keeping the earliest of several", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock });
    queue.addAfter("k", 5000);
    queue.addAfter("k", 2000);
    queue.addAfter("k", 9000);
    clock.advance(1999);
    assert.equal(await takeNow(queue), undefined);
    clock.advance(1);
    assert.equal(await takeNow(queue), "k");
    queue.done("k");
    clock.advance(10_000);
    assert.equal(await takeNow(queue), undefined, "the later delays were merged into the earliest");
  });

  it("hands out keys that changed, then re-checks, then idle checks", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock });
    queue.addAfter("healthy", 100, "idle");
    queue.addAfter("waiting-1", 100);
    queue.addAfter("waiting-2", 100);
    queue.addAfter("moved", 100);
    clock.advance(100);
    queue.add("changed");
    queue.add("moved"); // a change while it waited for its re-check: it moves up, once
    queue.addAfter("waiting-2", 0, "idle"); // already waiting as a re-check: it keeps its place
    assert.equal(queue.length, 5);
    const order = [];
    for (let i = 0; i < 5; i++) order.push(await queue.get());
    assert.deepEqual(order, ["changed", "moved", "waiting-1", "waiting-2", "healthy"]);
    assert.equal(await takeNow(queue), undefined);
  });

  it("with a priority, hands out the lowest first, first come first served among equals, changed keys before re-checks", async () => {
    const clock = new ManualClock();
    const born: Record<string, number> = { "young-cp": 30, "young-worker": 30.5, "old-worker": 10.5, "old-cp": 10, "middle": 20, "unknown": 0 };
    const queue = new WorkQueue({ clock, priority: (key) => born[key.split("#")[0]!] ?? 0 });
    queue.addAfter("old-cp#recheck", 100);
    clock.advance(100);
    for (const key of ["young-worker", "young-cp", "middle#1", "old-worker", "middle#2", "old-cp", "unknown"]) queue.add(key);
    const order = [];
    for (let i = 0; i < 8; i++) order.push(await queue.get());
    assert.deepEqual(order, ["unknown", "old-cp", "old-worker", "middle#1", "middle#2", "young-cp", "young-worker", "old-cp#recheck"]);
    assert.equal(await takeNow(queue), undefined);
  });

  it("with a priority, serves thousands of keys added and taken in any interleaving in (priority, arrival) order", async () => {
    const random = seeded(11);
    const priorities = new Map<string, number>();
    const queue = new WorkQueue({ priority: (key) => priorities.get(key)! });
    // What the queue must do: take the waiting key of lowest (priority, arrival).
    const waiting: { key: string; priority: number; arrival: number }[] = [];
    let arrivals = 0;
    for (let i = 0; i < 5000; i++) {
      if (random() < 0.6 || waiting.length === 0) {
        const key = `k${i}`;
        const priority = Math.floor(random() * 50) / 2;
        priorities.set(key, priority);
        queue.add(key);
        waiting.push({ key, priority, arrival: arrivals++ });
      } else {
        waiting.sort((a, b) => a.priority - b.priority || a.arrival - b.arrival);
        const expected = waiting.shift()!.key;
        const key = await queue.get();
        assert.equal(key, expected);
        queue.done(key!);
      }
    }
    waiting.sort((a, b) => a.priority - b.priority || a.arrival - b.arrival);
    for (const { key } of waiting) assert.equal(await queue.get(), key);
    assert.equal(queue.length, 0);
  });

  it("hands out nothing once shut down, and wakes waiting workers", async () => {
    const queue = new WorkQueue();
    const waiting = queue.get();
    queue.shutDown();
    assert.equal(await waiting, undefined);
    queue.add("k");
    assert.equal(await queue.get(), undefined);
  });

  it("reports its depth, additions and retries", () => {
    const reported = { depth: -1, added: 0, retried: 0 };
    const queue = new WorkQueue({
      clock: new ManualClock(),
      observer: { depth: (n) => (reported.depth = n), added: () => reported.added++, retried: () => reported.retried++ },
    });
    queue.add("a");
    queue.add("b");
    queue.add("a");
    queue.addWithBackoff("c");
    assert.deepEqual(reported, { depth: 2, added: 2, retried: 1 });
  });

  it("keeps a re-check a re-check when an idle check is already pending for the key", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock });
    // An idle safety poll is pending when the key asks to be re-checked a little later: it comes back
    // once, at the earlier time, ahead of the idle keys.
    queue.addAfter("waiting", 30, "idle");
    queue.addAfter("waiting", 40);
    // And the other way round: a later idle poll does not turn a pending re-check into an idle check.
    queue.addAfter("other", 10);
    queue.addAfter("other", 5, "idle");
    for (const key of ["healthy-1", "healthy-2"]) queue.addAfter(key, 0, "idle");
    clock.advance(30);
    assert.deepEqual([await queue.get(), await queue.get(), await queue.get(), await queue.get()], ["other", "waiting", "healthy-1", "healthy-2"]);
    clock.advance(100);
    assert.equal(queue.length, 0, "each key came back once");
  });

  it("counts a key once in its depth, however often it moved between lines or came back", async () => {
    const reported = { depth: -1 };
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock, observer: { depth: (n) => (reported.depth = n) } });
    for (const key of ["a", "b", "c"]) queue.addAfter(key, 0, "idle");
    queue.addAfter("a", 0);
    queue.add("a");
    queue.add("b");
    assert.equal(reported.depth, 3);
    assert.equal(queue.length, 3);
    assert.equal(await queue.get(), "a");
    queue.add("a");
    assert.equal(reported.depth, 2, "a key added while processed waits for done()");
    queue.done("a");
    assert.equal(reported.depth, 3);
    const handedOut = [await queue.get(), await queue.get(), await queue.get()];
    assert.deepEqual(handedOut, ["b", "a", "c"]);
    assert.equal(reported.depth, 0);
    assert.equal(queue.length, 0);
    const waiting = queue.get();
    queue.add("d");
    assert.equal(await waiting, "d");
    assert.equal(reported.depth, 0);
  });
});
