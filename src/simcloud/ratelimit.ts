// API throttling with token buckets, one per account, region and operation (as EC2 does): a call takes a
// token; an empty bucket answers Throttling with the time until the next token as Retry-After.
import type { Clock } from "./clock.ts";
import { ThrottlingError } from "./errors.ts";
import type { OperationCatalog } from "./operations.ts";
import type { LatencyProfile } from "./profiles.ts";
import { BUILTIN_REGISTRY } from "./services.ts";

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly clock: Clock,
    private readonly limits: LatencyProfile["rateLimits"],
    /** Real milliseconds per simulated millisecond. */
    private readonly timeScale: number,
    /** Which operations change state (they refill at the mutating rate). */
    private readonly operations: OperationCatalog = BUILTIN_REGISTRY,
  ) {}

  /** Takes one token for the call, or throws ThrottlingError with `retryAfterMs`. */
  take(account: string, region: string, operation: string): void {
    const { capacity, refillPerSecond } = this.limits[this.operations.operationKind(operation) ?? "mutating"];
    const perRealMs = refillPerSecond / 1000 / this.timeScale;
    const key = `${account}\u0000${region}\u0000${operation}`;
    const now = this.clock.now();
    const bucket = this.buckets.get(key) ?? { tokens: capacity, updatedAt: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + (now - bucket.updatedAt) * perRealMs);
    bucket.updatedAt = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return;
    }
    const retryAfterMs = Math.max(1, Math.ceil((1 - bucket.tokens) / perRealMs));
    throw new ThrottlingError(`rate exceeded for ${operation} in ${region}`, {
      retryAfterMs,
      details: { operation, region },
    });
  }
}
