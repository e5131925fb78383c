// The Host's conditions: Reachable (Slipway logs in with the pinned host key and reads the facts; False
// with the reason it cannot — SecretNotFound, SecretKeyMissing, Unreachable, AuthenticationFailed,
// HostKeyChanged, InvalidKey) and Claimed (the cluster using it, or free).
import type { HostObject } from "../../api/kinds.ts";
import { setCondition } from "../../runtime/conditions.ts";

type HostStatus = NonNullable<HostObject["status"]>;

export function reachable(status: HostStatus, now: string, message: string): void {
  setCondition(status as { conditions?: [] }, { type: "Reachable", status: "True", reason: "LoggedIn", message }, now);
}

export function unreachable(status: HostStatus, now: string, reason: string, message: string): void {
  setCondition(status as { conditions?: [] }, { type: "Reachable", status: "False", reason, message }, now);
}

/** Claimed: who uses the host (the ssh provider writes the claim; this says it in a condition). */
export function summarizeClaim(status: HostStatus, now: string): void {
  const cluster = status.clusterRef?.name;
  if (!cluster) {
    setCondition(status as { conditions?: [] }, { type: "Claimed", status: "False", reason: "Free", message: "no cluster uses the host" }, now);
  } else if (status.claim?.releasing) {
    setCondition(status as { conditions?: [] }, { type: "Claimed", status: "True", reason: "Releasing", message: `cluster ${cluster} is being removed from the host` }, now);
  } else {
    setCondition(status as { conditions?: [] }, { type: "Claimed", status: "True", reason: "InUse", message: `used by cluster ${cluster}` }, now);
  }
}

export function conditionOf(host: HostObject, type: string) {
  return host.status?.conditions?.find((c) => c.type === type);
}
