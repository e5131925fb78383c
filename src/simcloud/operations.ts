// The names of the cloud's operations and whether each changes state: throttling keeps one token bucket
// per operation (mutating and describe operations refill at different rates) and faults are set per name.
// The catalogue's operations are listed here; those of the resource kinds come from their descriptors.
import type { CloudApi } from "./types.ts";

export type OperationName = keyof CloudApi;

export type OperationKind = "mutating" | "describe";

/** Operations that are not about one kind of resource. */
export const CATALOG_OPERATIONS: Readonly<Record<string, OperationKind>> = {
  describeRegions: "describe",
  describeZones: "describe",
  describeMachineTypes: "describe",
  describeImages: "describe",
  getQuota: "describe",
  listResources: "describe",
};

/** What throttling and fault injection ask of the operations a cloud serves. */
export interface OperationCatalog {
  /** Whether the operation changes state, or undefined when the cloud has no such operation. */
  operationKind(name: string): OperationKind | undefined;
}
