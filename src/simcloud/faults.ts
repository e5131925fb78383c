// Fault injection, seeded: error rates per operation and code, instances that die some time after they
// boot, and slow boots. Every call draws from one stream of the seeded generator in a fixed way, so the
// same seed and the same sequence of calls produce the same faults.
import { readFileSync } from "node:fs";
import { Type, type Static } from "@sinclair/typebox";
import { InvalidParameterError, simCloudError, type SimCloudError } from "./errors.ts";
import type { OperationCatalog } from "./operations.ts";
import type { Prng } from "./random.ts";
import { checkInput } from "./schemas.ts";
import { BUILTIN_REGISTRY } from "./services.ts";

/** Error codes that can be injected, in the order their rates are stacked. */
export const INJECTABLE_CODES = ["InternalError", "Throttling", "InsufficientCapacity", "QuotaExceeded"] as const;
export type InjectableCode = (typeof INJECTABLE_CODES)[number];

const Rate = Type.Number({ minimum: 0, maximum: 1 });
const ErrorRatesSchema = Type.Object(
  {
    InternalError: Type.Optional(Rate),
    Throttling: Type.Optional(Rate),
    InsufficientCapacity: Type.Optional(Rate),
    QuotaExceeded: Type.Optional(Rate),
  },
  { additionalProperties: false },
);
const DelaySchema = Type.Tuple([Type.Number({ minimum: 0 }), Type.Number({ minimum: 0 })]);

export const FaultConfigSchema = Type.Object(
  {
    /** Per operation name (or "*" for every operation): the probability of each error code per call. */
    errors: Type.Optional(Type.Record(Type.String(), ErrorRatesSchema)),
    /** Instances that die some time after reaching running. */
    instanceDeath: Type.Optional(
      Type.Object(
        { probability: Rate, afterMs: Type.Optional(DelaySchema) },
        { additionalProperties: false },
      ),
    ),
    /** Boots that take `factor` times longer than the profile says. */
    slowBoot: Type.Optional(
      Type.Object({ probability: Rate, factor: Type.Number({ minimum: 1 }) }, { additionalProperties: false }),
    ),
    /** Retry-After of injected throttling, in simulated milliseconds (default 1000). */
    retryAfterMs: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Share of injected InternalErrors on mutating calls raised after the change was made (default 0.5). */
    failAfterCommit: Type.Optional(Rate),
  },
  { additionalProperties: false },
);

export type FaultConfig = Static<typeof FaultConfigSchema>;

const DEFAULT_DEATH_AFTER_MS: [number, number] = [5_000, 60_000];

/** Checks a fault configuration (shape, operation names of `operations`, rates summing to at most 1). */
export function checkFaultConfig(value: unknown, operations: OperationCatalog = BUILTIN_REGISTRY): FaultConfig {
  const config = checkInput(FaultConfigSchema, value, "faults");
  for (const [operation, rates] of Object.entries(config.errors ?? {})) {
    if (operation !== "*" && operations.operationKind(operation) === undefined) {
      throw new InvalidParameterError(`faults.errors: unknown operation "${operation}"`, { details: { field: "faults.errors" } });
    }
    const total = INJECTABLE_CODES.reduce((sum, code) => sum + (rates[code] ?? 0), 0);
    if (total > 1 + 1e-9) {
      throw new InvalidParameterError(`faults.errors.${operation}: rates add up to ${Number(total.toFixed(6))}, more than 1`);
    }
  }
  const after = config.instanceDeath?.afterMs;
  if (after && after[0] > after[1]) throw new InvalidParameterError("faults.instanceDeath.afterMs: min is above max");
  return config;
}

/** Reads and checks a JSON fault configuration file. */
export function loadFaultConfig(path: string): FaultConfig {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new InvalidParameterError(`cannot read fault configuration ${path}: ${(error as Error).message}`, { cause: error });
  }
  return checkFaultConfig(parsed);
}

/** A fault drawn for one call: raise `error` before the call, or after it has taken effect. */
export interface PlannedFault {
  error: SimCloudError;
  afterCommit: boolean;
}

/** What happens to one boot: how much slower it is, and when (if ever) the instance dies once running. */
export interface BootPlan {
  slowFactor: number;
  dieAfterMs: number | undefined;
}

/** Faults injected since the cloud started: errors by code, those raised after the change took effect, slow boots and instance deaths. */
export type FaultCounts = Record<InjectableCode | "afterCommit" | "slowBoot" | "instanceDeath", number>;

export class FaultInjector {
  private current: FaultConfig = {};
  private readonly injected: FaultCounts = { InternalError: 0, Throttling: 0, InsufficientCapacity: 0, QuotaExceeded: 0, afterCommit: 0, slowBoot: 0, instanceDeath: 0 };

  constructor(
    private readonly rng: Prng,
    config: FaultConfig = {},
    /** Converts simulated to real milliseconds (the time scale). */
    private readonly scale: (simulatedMs: number) => number = (ms) => ms,
    /** The operations of the cloud, by name: faults may be set for those only. */
    private readonly operations: OperationCatalog = BUILTIN_REGISTRY,
  ) {
    this.config = config;
  }

  get config(): FaultConfig {
    return structuredClone(this.current);
  }

  set config(value: FaultConfig) {
    this.current = structuredClone(checkFaultConfig(value, this.operations));
  }

  private rateOf(operation: string, code: InjectableCode): number {
    const errors = this.current.errors ?? {};
    return errors[operation]?.[code] ?? errors["*"]?.[code] ?? 0;
  }

  /** Draws the fault (if any) for one call of `operation`. Draws exactly one number unless a fault hits. */
  draw(operation: string): PlannedFault | undefined {
    const roll = this.rng.next();
    let cumulative = 0;
    for (const code of INJECTABLE_CODES) {
      cumulative += this.rateOf(operation, code);
      if (roll >= cumulative) continue;
      const mutating = this.operations.operationKind(operation) === "mutating";
      const afterCommit = code === "InternalError" && mutating && this.rng.chance(this.current.failAfterCommit ?? 0.5);
      this.injected[code]++;
      if (afterCommit) this.injected.afterCommit++;
      return { error: this.errorFor(code, operation), afterCommit };
    }
    return undefined;
  }

  /** Counts an instance that died as its boot plan said (a planned death may not come: the instance may be gone first). */
  countDeath(): void {
    this.injected.instanceDeath++;
  }

  /** What was injected since the cloud started (not kept across restarts). */
  get counts(): FaultCounts {
    return { ...this.injected };
  }

  private errorFor(code: InjectableCode, operation: string): SimCloudError {
    const details = { injected: true, operation };
    switch (code) {
      case "Throttling":
        return simCloudError(code, "rate exceeded", {
          retryAfterMs: Math.ceil(this.scale(this.current.retryAfterMs ?? 1000)),
          details,
        });
      case "InternalError":
        return simCloudError(code, "an internal error occurred; retry the request", { details });
      case "InsufficientCapacity":
        return simCloudError(code, "insufficient capacity for the request at this time", { details });
      case "QuotaExceeded":
        return simCloudError(code, "quota exceeded", { details });
    }
  }

  /** Draws the fate of one boot (always three numbers, so later draws do not depend on the settings). */
  planBoot(): BootPlan {
    const slow = this.rng.chance(this.current.slowBoot?.probability ?? 0);
    const dies = this.rng.chance(this.current.instanceDeath?.probability ?? 0);
    const [min, max] = this.current.instanceDeath?.afterMs ?? DEFAULT_DEATH_AFTER_MS;
    const after = this.rng.between(min, max);
    if (slow) this.injected.slowBoot++;
    return {
      slowFactor: slow ? (this.current.slowBoot?.factor ?? 1) : 1,
      dieAfterMs: dies ? after : undefined,
    };
  }
}
