// The names of the cloud's operations and whether each changes state: throttling keeps one token bucket
// per operation (mutating and describe operations refill at different rates) and faults are set per name.
import type { CloudApi } from "./types.ts";

export type OperationName = keyof CloudApi;

export const OPERATION_KINDS: Record<OperationName, "mutating" | "describe"> = {
  describeRegions: "describe",
  describeZones: "describe",
  describeMachineTypes: "describe",
  describeImages: "describe",
  getQuota: "describe",
  listResources: "describe",
  createNetwork: "mutating",
  getNetwork: "describe",
  listNetworks: "describe",
  deleteNetwork: "mutating",
  createSubnet: "mutating",
  getSubnet: "describe",
  listSubnets: "describe",
  deleteSubnet: "mutating",
  createSecurityGroup: "mutating",
  getSecurityGroup: "describe",
  listSecurityGroups: "describe",
  deleteSecurityGroup: "mutating",
  createKeyPair: "mutating",
  getKeyPair: "describe",
  listKeyPairs: "describe",
  deleteKeyPair: "mutating",
  createPublicIp: "mutating",
  getPublicIp: "describe",
  listPublicIps: "describe",
  deletePublicIp: "mutating",
  createInstance: "mutating",
  getInstance: "describe",
  listInstances: "describe",
  stopInstance: "mutating",
  startInstance: "mutating",
  terminateInstance: "mutating",
  createLoadBalancer: "mutating",
  getLoadBalancer: "describe",
  listLoadBalancers: "describe",
  deleteLoadBalancer: "mutating",
  registerTargets: "mutating",
  deregisterTargets: "mutating",
};

export function isOperationName(value: string): value is OperationName {
  return Object.hasOwn(OPERATION_KINDS, value);
}
