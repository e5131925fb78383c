import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ManualClock } from "./clock.ts";
import { ThrottlingError } from "./errors.ts";
import { RateLimiter } from "./ratelimit.ts";

const LIMITS = {
  mutating: { capacity: 2, refillPerSecond: 1 },
  describe: { capacity: 10, refillPerSecond: 10 },
};

describe("API throttling", () => {
  it("empties a bucket per account, region and operation, and says when to come back", () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter(clock, LIMITS, 1);
    limiter.take("a", "sim-east-1", "createInstance");
    limiter.take("a", "sim-east-1", "createInstance");
    assert.throws(
      () => limiter.take("a", "sim-east-1", "createInstance"),
      (e: unknown) => e instanceof ThrottlingError && e.retryAfterMs === 1000 && e.status === 429,
    );
    limiter.take("a", "sim-east-1", "createNetwork");
    limiter.take("a", "sim-west-1", "createInstance");
    limiter.take("b", "sim-east-1", "createInstance");
    clock.advance(999);
    assert.throws(() => limiter.take("a", "sim-east-1", "createInstance"), (e: unknown) => e instanceof ThrottlingError && (e.retryAfterMs ?? 0) <= 2);
    clock.advance(1);
    limiter.take("a", "sim-east-1", "createInstance");
  });

  it("refills in simulated time, so a smaller time scale refills sooner", () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter(clock, LIMITS, 0.1);
    limiter.take("a", "r", "stopInstance");
    limiter.take("a", "r", "stopInstance");
    assert.throws(() => limiter.take("a", "r", "stopInstance"), (e: unknown) => e instanceof ThrottlingError && e.retryAfterMs === 100);
    clock.advance(100);
    limiter.take("a", "r", "stopInstance");
  });
});
