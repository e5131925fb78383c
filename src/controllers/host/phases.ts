// The Host controller's steps: read the SSH key from the Secret, log in — pinning the host key at first
// contact and refusing any other afterwards — and read the host's facts; and, while the host is being
// deleted, wait until no cluster uses it.
import type { HostObject } from "../../api/kinds.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { gatherFacts, type HostFacts } from "../../providers/ssh/facts.ts";
import { SshError, withSession, type SshTarget } from "../../providers/ssh/session.ts";
import type { Client } from "../../runtime/client.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { Phase, Scope } from "../../runtime/reconciler.ts";
import { hostKey } from "./directory.ts";
import { reachable, summarizeClaim, unreachable } from "./status.ts";

/** Set to a host key fingerprint (SHA256:…) to trust it in place of the one pinned, e.g. after a reinstall. */
export const ANNOTATION_TRUST_HOST_KEY = "slipway.dev/trust-host-key";

/** Logs in to a host and reads its facts; the fingerprint is the key the host presented. */
export type HostProbe = (target: SshTarget) => Promise<{ fingerprint: string; facts: HostFacts }>;

export const probeHost: HostProbe = (target) => withSession(target, async (session) => ({ fingerprint: session.hostKeyFingerprint, facts: await gatherFacts(session) }), { timeoutMs: 10_000 });

export interface HostTiming {
  /** How often a reachable host is checked again. */
  recheckMs: number;
  /** How often a host that is not reachable is tried again. */
  retryMs: number;
}

function now(ctx: ReconcileContext): string {
  return nowTimestamp(new Date(ctx.clock.now()));
}

/** The host key to expect: the one pinned, or the one the trust annotation names in its place. */
function expectedKey(host: HostObject): string | undefined {
  return host.metadata.annotations?.[ANNOTATION_TRUST_HOST_KEY] || host.status?.hostKeyFingerprint;
}

export function contactHost(client: Client, probe: HostProbe, timing: HostTiming): Phase<Scope<HostObject>> {
  return async function contactHost(ctx, scope) {
    const host = scope.object;
    const status = (host.status ??= {});
    const at = now(ctx);
    const key = await hostKey(client, host);
    if ("problem" in key) {
      unreachable(status, at, key.reason, `cannot log in to ${host.spec.address}: ${key.problem}`);
      return { requeueAfterMs: timing.retryMs };
    }
    const target: SshTarget = { address: host.spec.address, port: host.spec.port ?? 22, user: host.spec.user ?? "root", privateKey: key.privateKey };
    const pinned = expectedKey(host);
    if (pinned) target.hostKeyFingerprint = pinned;
    try {
      const { fingerprint, facts } = await probe(target);
      status.hostKeyFingerprint = fingerprint;
      status.facts = facts;
      status.lastCheckTime = at;
      reachable(status, at, `logged in as ${target.user} with host key ${fingerprint}`);
      return { requeueAfterMs: timing.recheckMs };
    } catch (error) {
      if (!(error instanceof SshError)) throw error;
      status.lastCheckTime = at;
      unreachable(status, at, error.reason, error.message);
      return { requeueAfterMs: timing.retryMs };
    }
  };
}

export const summarizeHostClaim: Phase<Scope<HostObject>> = function summarizeHostClaim(ctx, scope) {
  summarizeClaim((scope.object.status ??= {}), now(ctx));
};

/** A host a cluster still uses stays until the cluster is done with it (deleting the cluster cleans and releases it). */
export const waitForRelease: Phase<Scope<HostObject>> = function waitForRelease(ctx, scope) {
  const status = (scope.object.status ??= {});
  summarizeClaim(status, now(ctx));
  if (status.claim) return { halt: true, requeueAfterMs: 2000 };
};
