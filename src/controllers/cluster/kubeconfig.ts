// The cluster's API endpoint and admin kubeconfig: the endpoint published as soon as the control plane's
// load balancer exists, the kubeconfig Secret (`<cluster>-kubeconfig`, key `value`) issued once the load
// balancer is active, and issued again when the endpoint it names changes.
import type { SecretObject } from "../../api/kinds.ts";
import { secretKind } from "../../api/core.ts";
import { createIfAbsent } from "../../api/presence.ts";
import { names } from "../../api/slipway/names.ts";
import { parseKubeconfig, renderKubeconfig } from "../../bootstrap/kubeconfig.ts";
import { inThreadPki } from "../../bootstrap/pki-workers.ts";
import { isTrue } from "../../runtime/conditions.ts";
import type { Phase } from "../../runtime/reconciler.ts";
import { readClusterPki } from "../pki.ts";
import { childMeta, clusterStatus, controlPlaneInfrastructure, type ClusterScope } from "./scope.ts";

/** Where a kubeconfig sends its client. */
export interface KubeconfigTarget {
  server: string;
  tlsServerName?: string;
}

/** Versions of kubeconfig Secrets beyond this many are forgotten, the oldest first. */
const KUBECONFIGS_KEPT = 16_384;

/**
 * The server each version of a kubeconfig Secret points at, parsed once per version (the endpoint check
 * runs on every reconcile of a cluster). Held by the cluster controller.
 */
export class KubeconfigTargets {
  private readonly parsed = new Map<string, KubeconfigTarget>();

  constructor(private readonly kept = KUBECONFIGS_KEPT) {}

  of(secret: SecretObject): KubeconfigTarget {
    const version = `${secret.metadata.uid}/${secret.metadata.resourceVersion}`;
    let target = this.parsed.get(version);
    if (!target) {
      const parsed = parseKubeconfig(Buffer.from(secret.data!.value!, "base64").toString("utf8"));
      target = { server: parsed.server, tlsServerName: parsed.tlsServerName };
      if (this.parsed.size >= this.kept) this.parsed.delete(this.parsed.keys().next().value!);
      this.parsed.set(version, target);
    }
    return target;
  }

  get size(): number {
    return this.parsed.size;
  }
}

/**
 * Publishes the API endpoint as soon as the load balancer exists, and the admin kubeconfig once it is
 * active (a cloud may publish the endpoint's final URL only then: written earlier, it was written twice).
 */
export const publishEndpoint: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const infra = controlPlaneInfrastructure(scope);
  const lb = infra?.status?.loadBalancer;
  if (!lb) return;
  clusterStatus(scope).controlPlaneEndpoint = { host: lb.host, port: lb.port };
  if (!isTrue(infra.status?.conditions, "LoadBalancerReady")) return;
  const url = lb.url ?? `https://${lb.host}:${lb.port}`;
  const secrets = ctx.client.of<SecretObject>(secretKind);
  const name = names.kubeconfigSecret(cluster.metadata.name!);
  const what = `${cluster.metadata.uid}/kubeconfig ${url} ${lb.host}`;
  if (scope.memory.checks.recent(what, ctx.clock.now())) {
    clusterStatus(scope).kubeconfigSecretName = name;
    return;
  }
  const existing = await secrets.tryGet(cluster.metadata.namespace, name);
  if (existing?.data?.value) {
    const current = scope.memory.kubeconfigs.of(existing);
    if (current.server === url && current.tlsServerName === lb.host) {
      clusterStatus(scope).kubeconfigSecretName = name;
      scope.memory.checks.mark(what, ctx.clock.now());
      return;
    }
  }
  const pkiSecret = await secrets.get(cluster.metadata.namespace, names.pkiSecret(cluster.metadata.name!));
  const pki = readClusterPki(pkiSecret);
  const admin = await (scope.deps.pki ?? inThreadPki).issueCertificate(pki.ca, { commonName: "kubernetes-admin", organizations: ["system:masters"], usages: ["client"] });
  const kubeconfig = renderKubeconfig({
    clusterName: cluster.metadata.name!,
    server: url,
    caCertPem: pki.ca.certPem,
    user: "kubernetes-admin",
    clientCertPem: admin.certPem,
    clientKeyPem: admin.keyPem,
    tlsServerName: lb.host,
    context: `kubernetes-admin@${cluster.metadata.name}`,
  });
  const data = { value: Buffer.from(kubeconfig).toString("base64") };
  if (existing) await secrets.update({ ...existing, data } as SecretObject);
  else await createIfAbsent(() => secrets.create({ apiVersion: "v1", kind: "Secret", metadata: childMeta(cluster, name), type: "Opaque", data } as SecretObject));
  clusterStatus(scope).kubeconfigSecretName = name;
  scope.memory.checks.mark(what, ctx.clock.now());
  await ctx.event(cluster, "Normal", "KubeconfigWritten", `admin kubeconfig for ${url} in Secret ${name}`);
};
