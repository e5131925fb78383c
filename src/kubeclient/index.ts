// The Kubernetes-style API client: what the CLI and controllers import.
export {
  KubeClient,
  type KubeClientOptions,
  type KubeObject,
  type KubeList,
  type KubeResponse,
  type ListOptions,
  type WatchOptions,
  type WriteOptions,
  type DeleteOptions,
  type PatchType,
  type ObjectAddress,
  type RequestOptions,
} from "./client.ts";
export {
  Applier,
  APPLY_ORDER,
  NamespaceMismatchError,
  UnknownKindError,
  applyOrder,
  type ApplierOptions,
  type ApplyAction,
  type ApplyOutcome,
  type ApplyReport,
  type ApplyResult,
  type ApplySetOptions,
  type ApplyStrategy,
  type ApplyTarget,
  type ObjectRef,
  type PruneOptions,
  type StrategyOptions,
} from "./apply.ts";
export { LAST_APPLIED_ANNOTATION, clientSideApply } from "./client-side-apply.ts";
export type { ApiResource } from "./discovery.ts";
export { LiveCollection, type Selector } from "./live-collection.ts";
export { DEFAULT_TIMEOUT_MS, type Transport, type TransportRequest, type TransportResponse, type TransportStream } from "./transport.ts";
export { HttpsTransport, type HttpsTransportOptions } from "./https-transport.ts";
export { FetchTransport, type FetchTransportOptions } from "./fetch-transport.ts";
export type { KubeWatch, WatchEvent, WatchEventType } from "./watch.ts";
export * from "./errors.ts";
