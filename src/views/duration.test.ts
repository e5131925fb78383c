import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { formatDuration } from "./duration.ts";

describe("formatDuration", () => {
  it("writes durations with tenths under a minute, then minutes and seconds, then hours and minutes", () => {
    assert.equal(formatDuration(1234), "1.2s");
    assert.equal(formatDuration(-5), "0.0s");
    assert.equal(formatDuration(185_000), "3m05s");
    assert.equal(formatDuration(3_720_000), "1h02m");
  });
});
