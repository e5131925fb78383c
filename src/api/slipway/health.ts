// How many machines of a set (the control plane, a worker pool) may be failed at once while they are
// still replaced, as Cluster API's MachineHealthCheck `maxUnhealthy`: a number, or a percentage of the
// machines wanted. Beyond it nothing is replaced: something beyond one machine is wrong (the cloud, the
// image, the network) and replacing only adds to it.
import { Type } from "@sinclair/typebox";
import type { FieldError } from "../registry.ts";
import { invalid } from "../field-errors.ts";

export const DEFAULT_MAX_UNHEALTHY = "40%";

/** IntOrString as Kubernetes publishes it in a structural schema: no type, `x-kubernetes-int-or-string`. */
export const MaxUnhealthy = Type.Unsafe<number | string>(
  Type.Any({
    description: `Failed machines tolerated at once, a number or a percentage of those wanted (default "${DEFAULT_MAX_UNHEALTHY}", at least one machine); with more failed, none is replaced until fewer are. 0 replaces none.`,
    "x-kubernetes-int-or-string": true,
  }),
);
export type MaxUnhealthy = number | string;

const PERCENT = /^(\d{1,3})%$/;

export function maxUnhealthyErrors(field: string, value: MaxUnhealthy | undefined): FieldError[] {
  if (value === undefined) return [];
  if (typeof value !== "number" && typeof value !== "string") return [invalid(field, value, 'must be a number of machines or a percentage such as "40%"')];
  if (typeof value === "number") return Number.isInteger(value) && value >= 0 ? [] : [invalid(field, value, "must be 0 or more")];
  const percent = PERCENT.exec(value);
  if (!percent) return [invalid(field, value, 'must be a number of machines or a percentage such as "40%"')];
  return Number(percent[1]) <= 100 ? [] : [invalid(field, value, "must be a percentage from 0% to 100%")];
}

/**
 * Failed machines tolerated at once among `desired`: a percentage rounded down but at least one (so a
 * set of one machine has it replaced), unless it is 0; a number as given.
 */
export function maxUnhealthyCount(value: MaxUnhealthy | undefined, desired: number): number {
  const limit = value ?? DEFAULT_MAX_UNHEALTHY;
  if (typeof limit === "number") return limit;
  const percent = Number(PERCENT.exec(limit)?.[1] ?? 0);
  return percent === 0 ? 0 : Math.max(1, Math.floor((desired * percent) / 100));
}
