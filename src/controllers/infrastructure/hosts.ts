// An Infrastructure in a connection of hosts: a provider without cluster infrastructure whose own machines
// serve the control-plane endpoint (the ssh provider: haproxy on a host). There is no network, subnet,
// security group or key pair to make — the hosts are on their own network and Slipway logs in with each
// Host's key — and in the control plane's connection a host is reserved for the endpoint before any user
// data is rendered, since every machine's user data names the endpoint. Deleting gives back a
// reservation no machine took (the machine that took it cleans its host when it goes).
import type { ControlPlaneEndpoints, InfrastructureResourceKind } from "../../providers/provider.ts";
import { isProviderError } from "../../providers/provider.ts";
import { setCondition } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { PhaseResult } from "../../runtime/reconciler.ts";
import { cloudTags, idempotencyToken } from "../contract.ts";
import { ConnectionUnusableError } from "../providers.ts";
import type { InfrastructureScope } from "./phases.ts";
import { RESOURCE_NAMES } from "./resources.ts";
import { CATALOG_RESOLVED, nowOf, RESOURCE_CONDITIONS, statusOf, stepFailed, stepReady } from "./status.ts";

/** The role tag of the endpoint's reservation. */
export const ENDPOINT_ROLE = "endpoint";
const NOT_NEEDED: InfrastructureResourceKind[] = ["network", "subnet", "securityGroup", "keyPair"];

/** The connection's control-plane endpoints when its provider serves them on its hosts (and has no cluster infrastructure). */
export async function hostEndpointsOf(scope: InfrastructureScope): Promise<ControlPlaneEndpoints | undefined> {
  const connection = scope.connection;
  if (!connection || connection.spec.region !== scope.object.spec.region) return undefined;
  try {
    const provider = await scope.providers.open(connection);
    return provider.capabilities.clusterInfrastructure ? undefined : provider.endpoints;
  } catch (error) {
    if (error instanceof ConnectionUnusableError) return undefined;
    throw error;
  }
}

/** The token of the endpoint's reservation: one per Infrastructure. */
function reservationToken(scope: InfrastructureScope): string {
  return idempotencyToken(scope.object.metadata.uid!, ENDPOINT_ROLE);
}

/** Records that nothing is to be made but the endpoint, and reserves the host that serves it. */
export async function ensureHostsInfrastructure(ctx: ReconcileContext, scope: InfrastructureScope, endpoints: ControlPlaneEndpoints): Promise<PhaseResult> {
  const infra = scope.object;
  const status = statusOf(infra);
  const now = nowOf(ctx);
  status.zones = [infra.spec.region];
  setCondition(
    status,
    { type: CATALOG_RESOLVED, status: "True", reason: "Hosts", message: `the hosts of connection ${infra.spec.connection} (zone ${infra.spec.region}): nothing to resolve`, observedGeneration: infra.metadata.generation },
    now,
  );
  for (const kind of NOT_NEEDED) {
    setCondition(status, { type: RESOURCE_CONDITIONS[kind].condition, status: "True", reason: "NotNeeded", message: `no ${RESOURCE_NAMES[kind].noun}: the hosts are on their own network` }, now);
  }
  if (!infra.spec.controlPlane) return { halt: true };
  // Reserved once: the endpoint's host is then the control-plane machine's, and once that machine has
  // cleaned and released it (the cluster being deleted), reserving again would claim another free host —
  // one a pool of the same cluster had just released — and move the endpoint.
  if (status.loadBalancer) return { halt: true };
  let endpoint: { id: string; host: string; port: number };
  try {
    endpoint = await endpoints.reserve({ token: reservationToken(scope), tags: cloudTags(scope.cluster!, infra, ENDPOINT_ROLE) });
  } catch (error) {
    // No free host (capacity) is said as plainly as a refusal; a host freed meanwhile is found next time.
    if (isProviderError(error) && (!error.retryable || error.kind === "capacity")) {
      stepFailed(status, "loadBalancer", `reserving a host for the control-plane endpoint: ${error.message}`, now);
      return { halt: true, requeueAfterMs: scope.settings.failureRetryMs };
    }
    throw error;
  }
  status.loadBalancer = { id: endpoint.id, host: endpoint.host, port: endpoint.port, url: `https://${endpoint.host}:${endpoint.port}` };
  stepReady(status, "loadBalancer", `host ${endpoint.id} serves the control-plane endpoint ${endpoint.host}:${endpoint.port} (haproxy)`, now);
  return { halt: true };
}

/** Gives back the endpoint's reservation unless a machine took it; there is nothing else to delete. */
export async function releaseHostsInfrastructure(scope: InfrastructureScope, endpoints: ControlPlaneEndpoints): Promise<void> {
  const status = statusOf(scope.object);
  if (status.loadBalancer) await endpoints.release(status.loadBalancer.id, reservationToken(scope));
  delete status.loadBalancer;
  delete status.reason;
  status.message = "nothing is left to delete";
}
