// Dynamic validation of a cluster, before anything is built and again for every new generation: every
// connection usable (its provider installed, with the capabilities a cluster needs), and what preflight.ts
// checks against each connection's catalogue — machine types, images, kubeadm's minimums, quota.
import { isProviderError, type CapabilityName, type QuotaResources } from "../../providers/provider.ts";
import { setCondition } from "../../runtime/conditions.ts";
import type { Phase } from "../../runtime/reconciler.ts";
import { SshProvider } from "../../providers/ssh/index.ts";
import type { HostRecord } from "../../providers/ssh/hosts.ts";
import { ConnectionUnusableError } from "../providers.ts";
import { hostPreflight } from "./host-preflight.ts";
import { cloudOf } from "../infrastructure/crosscloud.ts";
import { apiVisibilityProblems, clusterConnections, preflight, preflightMessage, preflightReason, type ConnectionFacts } from "./preflight.ts";
import { clusterStatus, now, type ClusterScope } from "./scope.ts";

/** What a cluster needs of the provider of each connection it uses: it builds infrastructure and machines in each. */
const CLUSTER_NEEDS: CapabilityName[] = ["catalogue", "clusterInfrastructure", "machines"];
/** What it needs of a provider of hosts that serves the control-plane endpoint itself. */
const HOSTS_NEED: CapabilityName[] = ["machines"];

/** What the cluster already holds in a connection, so a re-validation does not count it twice. */
function ownUsage(scope: ClusterScope, connection: string): QuotaResources {
  const machines = scope.machines.filter((m) => m.spec.connection === connection && m.status?.instanceId && m.status.phase !== "Failed");
  const infra = scope.infrastructures.find((i) => i.spec.connection === connection);
  const vcpus = machines.reduce((sum, m) => sum + (infra?.status?.machineTypes?.[m.spec.machineType]?.vcpu ?? 0), 0);
  return {
    vcpus,
    instances: machines.length,
    networks: infra?.status?.networkId ? 1 : 0,
    loadBalancers: infra?.status?.loadBalancer ? 1 : 0,
    publicIps: 0,
  };
}

/**
 * Dynamic validation: before anything is built, and again for every new generation. A failure is final
 * for this generation until something outside changes (quota raised, connection fixed), so it is
 * checked again after `revalidateMs`.
 */
export const validate: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const st = clusterStatus(scope);
  const validated = st.conditions?.find((c) => c.type === "Validated");
  if (validated?.status === "True" && validated.observedGeneration === cluster.metadata.generation) return;
  if (!st.phase || st.phase === "Pending") st.phase = "Validating";
  const facts = new Map<string, ConnectionFacts>();
  const hosts = new Map<string, HostRecord[]>();
  await Promise.all(
    clusterConnections(cluster.spec).map(async (name) => {
      const connection = scope.connections.get(name);
      if (!connection) {
        facts.set(name, { unusable: `connection "${name}" does not exist in namespace ${cluster.metadata.namespace}` });
        return;
      }
      try {
        // A Connection of hosts is checked host by host, naming each host that cannot serve.
        const opened = await scope.deps.providers.open(connection);
        if (opened instanceof SshProvider) hosts.set(name, await opened.hostRecords());
        // Hosts serve their own control-plane endpoint: neither a catalogue nor cluster infrastructure is needed.
        if (opened.endpoints && !("clusterInfrastructure" in opened.capabilities)) {
          await scope.deps.providers.open(connection, HOSTS_NEED);
          return;
        }
        const provider = await scope.deps.providers.open(connection, CLUSTER_NEEDS);
        const catalogue = provider.capabilities.catalogue!;
        await catalogue.zones();
        const [machineTypes, images, quota] = await Promise.all([catalogue.machineTypes(), catalogue.images(), catalogue.quota()]);
        facts.set(name, { machineTypes, images, quota, ownUsage: ownUsage(scope, name), cloud: cloudOf(connection), dns: provider.capabilities.dns !== undefined });
      } catch (e) {
        if (e instanceof ConnectionUnusableError || (isProviderError(e) && !e.retryable)) {
          facts.set(name, { unusable: `connection "${name}": ${(e as Error).message}` });
          return;
        }
        throw e;
      }
    }),
  );
  const hostConnections = new Set(hosts.keys());
  const problems = [
    ...[...hosts].flatMap(([name, records]) => hostPreflight(cluster.spec, cluster.metadata.name!, name, records)),
    ...preflight(cluster.spec, facts, hostConnections),
    ...apiVisibilityProblems(cluster.spec, facts, hostConnections),
  ];
  if (problems.length > 0) {
    const reason = preflightReason(problems);
    scope.problem = { reason, message: preflightMessage(problems) };
    setCondition(st, { type: "Validated", status: "False", reason, message: scope.problem.message, observedGeneration: cluster.metadata.generation }, now(ctx));
    return { halt: true, requeueAfterMs: scope.timing.revalidateMs };
  }
  setCondition(
    st,
    { type: "Validated", status: "True", reason: "Validated", message: "connections, machine types, images and quota checked", observedGeneration: cluster.metadata.generation },
    now(ctx),
  );
};
