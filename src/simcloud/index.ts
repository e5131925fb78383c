// The sim cloud's public surface: the in-process cloud, its HTTP server and client, and the shared types.
export { SimCloud, AccountCloud, DEFAULT_ACCOUNT, DEFAULT_TOKEN, type SimCloudOptions } from "./cloud.ts";
export { BUILTIN_RESOURCES } from "./services.ts";
export {
  defineResource,
  action,
  type ResourceDescriptor,
  type AnyDescriptor,
  type ActionSpec,
  type ResourceApi,
  type ResourceView,
  type StoredResource,
} from "./resource-kinds.ts";
export { SimCloudClient, SimCloudAdminClient, type SimCloudClientOptions } from "./client.ts";
export { startSimCloudServer, DEFAULT_PORT, DEFAULT_ADMIN_TOKEN, type SimCloudServer, type SimCloudServerOptions } from "./server.ts";
export { createSimCloudHttp, type SimCloudHttpOptions } from "./http.ts";
export { registerSimCloudCommands, DEFAULT_ENDPOINT } from "./cli.ts";
export type { SimCloudHooks, BootContext, BootOutcome, PublishedEndpoint } from "./core.ts";
export { ManualClock, SystemClock, type Clock, type TimerHandle } from "./clock.ts";
export { PROFILES, profileNamed, type LatencyProfile, type ProfileName, type DelayName } from "./profiles.ts";
export { checkFaultConfig, loadFaultConfig, INJECTABLE_CODES, type FaultConfig } from "./faults.ts";
export { DEFAULT_QUOTA } from "./quotas.ts";
export * from "./errors.ts";
export type * from "./types.ts";
export {
  startWorkloadEmulation,
  workloadRegistry,
  NODE_GONE_AFTER_MS,
  DISCOVERY_TIMEOUT_MS,
  type WorkloadEmulation,
  type WorkloadEmulationOptions,
} from "./workload/index.ts";
