// How a set of machines rolls to a new template (machine type, image, node labels, taints): new
// machines first, old ones drained and deleted, within these limits. Shared by Cluster worker pools and
// MachinePools.
import { Type, type Static } from "@sinclair/typebox";
import { Struct } from "../meta.ts";
import type { FieldError } from "../registry.ts";
import { invalid } from "../field-errors.ts";

export const DEFAULT_MAX_SURGE = 1;
export const DEFAULT_MAX_UNAVAILABLE = 0;

export const RolloutStrategy = Struct(
  {
    maxSurge: Type.Optional(
      Type.Integer({ minimum: 0, description: `Machines that may exist beyond the wanted number while rolling (default ${DEFAULT_MAX_SURGE}).` }),
    ),
    maxUnavailable: Type.Optional(
      Type.Integer({ minimum: 0, description: `Wanted machines that may be unavailable while rolling (default ${DEFAULT_MAX_UNAVAILABLE}).` }),
    ),
  },
  {
    description:
      "How machines are replaced when the template changes: new ones first, then old ones drained and deleted, within these limits. Changing it rolls nothing.",
  },
);
export type RolloutStrategy = Static<typeof RolloutStrategy>;

/** Both limits at 0 would never let a machine be replaced. */
export function rolloutStrategyErrors(field: string, strategy: RolloutStrategy | undefined): FieldError[] {
  if (!strategy) return [];
  const surge = strategy.maxSurge ?? DEFAULT_MAX_SURGE;
  const unavailable = strategy.maxUnavailable ?? DEFAULT_MAX_UNAVAILABLE;
  return surge === 0 && unavailable === 0 ? [invalid(`${field}.maxSurge`, surge, "maxSurge and maxUnavailable may not both be 0: no machine could be replaced")] : [];
}
