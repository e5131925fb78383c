import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { WatchEvent } from "./store.ts";
import { WatchChannel } from "./watch-channel.ts";

function put(revision: number): WatchEvent {
  return { type: "put", kv: { key: `/k/${revision}`, value: "v", createRevision: revision, modRevision: revision } };
}

function recorder() {
  const events: number[] = [];
  const errors: Error[] = [];
  let ended = 0;
  let settle: () => void = () => {};
  const settled = new Promise<void>((resolve) => {
    settle = resolve;
  });
  return {
    events,
    errors,
    get ended() {
      return ended;
    },
    settled,
    options: {
      afterRevision: 0,
      onEvent: (event: WatchEvent) => {
        if (event.type === "put") events.push(event.kv.modRevision);
        if (events.length === 3) settle();
      },
      onError: (error: Error) => {
        errors.push(error);
        settle();
      },
    },
    onEnd: () => {
      ended++;
    },
  };
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("WatchChannel", () => {
  it("delivers events on a later turn, in order", async () => {
    const r = recorder();
    const channel = new WatchChannel(r.options, r.onEnd);
    channel.push(put(1));
    channel.push(put(2));
    assert.deepEqual(r.events, [], "nothing is delivered while the writer runs");
    channel.push(put(3));
    await r.settled;
    assert.deepEqual(r.events, [1, 2, 3]);
  });

  it("reports an error once, after the events queued before it, and ends", async () => {
    const r = recorder();
    const channel = new WatchChannel(r.options, r.onEnd);
    channel.push(put(1));
    channel.fail(new Error("first"));
    channel.fail(new Error("second"));
    channel.push(put(2));
    await r.settled;
    await nextTurn();
    assert.deepEqual(r.events, [1]);
    assert.deepEqual(
      r.errors.map((e) => e.message),
      ["first"],
    );
    assert.equal(r.ended, 1);
    assert.equal(channel.isEnded, true);
  });

  it("drops what is queued when closed, without calling onError", async () => {
    const r = recorder();
    const channel = new WatchChannel(r.options, r.onEnd);
    channel.push(put(1));
    channel.close();
    channel.close();
    channel.push(put(2));
    await nextTurn();
    await nextTurn();
    assert.deepEqual(r.events, []);
    assert.deepEqual(r.errors, []);
    assert.equal(r.ended, 1);
  });

  it("ends the watch when the consumer throws and passes the exception on", async () => {
    const r = recorder();
    const failure = new Error("consumer broke");
    let calls = 0;
    const channel = new WatchChannel(
      {
        ...r.options,
        onEvent: () => {
          calls++;
          throw failure;
        },
      },
      r.onEnd,
    );
    channel.push(put(1));
    channel.push(put(2));
    await r.settled;
    channel.push(put(3));
    await nextTurn();
    assert.equal(calls, 1);
    assert.deepEqual(r.errors, [failure]);
    assert.equal(r.ended, 1);
  });

  it("answers no progress from inside a delivery, while the rest of its batch is still due", async () => {
    const r = recorder();
    const seen: (number | undefined)[] = [];
    const channel: WatchChannel = new WatchChannel(
      {
        ...r.options,
        onEvent: (event) => {
          r.options.onEvent(event);
          seen.push(channel.progress());
        },
      },
      r.onEnd,
      () => 3,
    );
    channel.push(put(1));
    channel.push(put(2));
    channel.push(put(3));
    assert.equal(channel.progress(), undefined, "queued changes are not handed over");
    await r.settled;
    assert.deepEqual(seen, [undefined, undefined, undefined]);
    assert.equal(channel.progress(), 3, "the source's revision once the batch is delivered");
  });
});
