// ResourceQuota with Kubernetes' semantics, for the control plane's API server and every emulated
// workload cluster's alike: quantities, validation of a quota's limits, the admission check of a write
// and the status a quota controller writes.
export { Quantity, InvalidQuantityError, type QuantityFormat } from "./quantity.ts";
export { validateHardLimits, validateResourceQuotaSpec } from "./validation.ts";
export {
  QuotaConstraintError,
  QuotaExceededError,
  QuotaStatusUnknownError,
  admitToQuotas,
  type ExceededQuota,
  type QuotaAdmissionRequest,
  type QuotaCharge,
} from "./admission.ts";
export { computeQuotaStatus, trackedKinds, type NamespaceObjects, type ResourceQuotaStatus } from "./status.ts";
export type { QuotaCountedObject, QuotaOperation } from "./evaluators.ts";
export type { ResourceQuotaLike } from "./quota-object.ts";
export type { GroupResource } from "./resource-names.ts";
