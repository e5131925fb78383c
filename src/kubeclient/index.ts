// The Kubernetes-style API client: what the CLI and controllers import.
export {
  KubeClient,
  type KubeClientOptions,
  type KubeObject,
  type KubeList,
  type ListOptions,
  type WatchOptions,
  type WriteOptions,
  type DeleteOptions,
  type PatchType,
  type ObjectAddress,
  type ApplyAction,
  type ApplyResult,
} from "./client.ts";
export type { ApiResource } from "./discovery.ts";
export type { KubeResponse } from "./transport.ts";
export type { KubeWatch, WatchEvent, WatchEventType } from "./watch.ts";
export * from "./errors.ts";
