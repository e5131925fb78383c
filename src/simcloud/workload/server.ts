// One HTTPS server on one loopback port for every emulated workload cluster. A request names its cluster
// by path (/clusters/<id>/…) or, without that prefix, by the TLS server name it asked for; the server
// presents that cluster's serving certificate (chosen by SNI) and accepts client certificates issued by
// that cluster's CA (the API server's client-certificate authenticator, one CA per cluster). It answers
// only while the cluster's endpoint reaches its API server — through the load balancer, a healthy target
// that serves it; otherwise the connection is reset right after the TLS handshake, which clients see as a
// reset connection, as a load balancer with nothing to forward to refuses it. Each cluster's /version is
// the Kubernetes version its control plane runs. API contexts, collectors and TLS contexts are made when a
// cluster is first used.
import { selfReviews } from "../../apiserver/authorization/reviews.ts";
import { createSecureContext, type SecureContext, type TLSSocket } from "node:tls";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { KindDefinition, Registry } from "../../api/registry.ts";
import { Collectors } from "../../apiserver/collectors.ts";
import { ApiMetrics } from "../../apiserver/metrics.ts";
import { renderOpenApi } from "../../apiserver/openapi.ts";
import { BOOKMARK_INTERVAL_MS, type ApiContext, type VersionInfo } from "../../apiserver/routes.ts";
import { SERVER_VERSION } from "../../apiserver/discovery.ts";
import { createApiServer, type Mounted } from "../../apiserver/server.ts";
import { AuthenticatorChain, ClientCertificates, credentialsOf, type Authenticator } from "../../apiserver/authentication.ts";
import { UnauthorizedError } from "../../apiserver/errors.ts";
import { OidcTokenAuthenticator } from "../../apiserver/oidc-authentication.ts";
import { createCertificateAuthority, issueCertificate } from "../../bootstrap/pki.ts";
import type { WorkloadEmulator } from "./emulator.ts";
import { approvalSubresource } from "./certificates.ts";
import { evictionSubresource } from "./eviction.ts";
import { execSubresource } from "./etcdctl.ts";
import type { ClusterRecord } from "./records.ts";
import { answerServiceProxy } from "./service-proxy.ts";

const CLUSTER_PATH = /^\/clusters\/([^/]+)(\/.*)?$/;

interface ClusterApi {
  ctx: ApiContext;
  collectors: Collectors;
  authenticator: Authenticator;
}

/** What a cluster's API server answers at /version: the version of the control plane it runs. */
export function versionOf(kubernetesVersion: string): VersionInfo {
  const [major = "1", minor = "0"] = kubernetesVersion.replace(/^v/, "").split(".");
  return {
    ...SERVER_VERSION,
    major,
    minor,
    gitVersion: kubernetesVersion,
    gitCommit: "",
    buildDate: "",
    goVersion: "go1.22",
    compiler: "gc",
    platform: "linux/amd64",
  };
}

export interface WorkloadServerOptions {
  emulator: WorkloadEmulator;
  registry: Registry;
  logger: Logger;
  host: string;
  port: number;
}

/**
 * Connections the workload clusters' port accepts at once: a real API server's 1,024 for each of up to
 * 1,024 clusters, bounded in practice by the descriptors the process may open.
 */
export const WORKLOAD_MAX_CONNECTIONS = 1_048_576;

export class WorkloadApiServer {
  private readonly apis = new Map<string, ClusterApi>();
  /**
   * The serving context of each cluster, made on its first connection and dropped when it is gone: one
   * per cluster that exists (the server name must name one), so as many as the fleet has. A cache of a
   * fixed size would make a context again for most new connections once the fleet is larger than it.
   */
  private readonly tlsContexts = new Map<string, SecureContext>();
  private readonly clientCertificates = new ClientCertificates();
  private readonly metrics = new ApiMetrics();
  private readonly openapi: ApiContext["openapi"];
  private readonly csrKind: KindDefinition;
  private readonly proxyKinds: { service: KindDefinition; pod: KindDefinition; configMap: KindDefinition };
  private app: FastifyInstance | undefined;
  port = 0;

  constructor(private readonly options: WorkloadServerOptions) {
    // Every cluster serves the same kinds, so the OpenAPI documents are rendered once.
    this.openapi = renderOpenApi(options.registry);
    this.csrKind = options.registry.byKind("certificates.k8s.io/v1", "CertificateSigningRequest")!;
    this.proxyKinds = { service: options.registry.byKind("v1", "Service")!, pod: options.registry.byKind("v1", "Pod")!, configMap: options.registry.byKind("v1", "ConfigMap")! };
    options.emulator.onClusterGone((cluster) => this.forget(cluster));
  }

  async listen(): Promise<void> {
    const ca = await createCertificateAuthority({ commonName: "sim-cloud-workload-default" });
    const fallback = await issueCertificate(ca, { commonName: "sim-cloud-workload", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"], usages: ["server"] });
    this.app = createApiServer({
      // One port serves the API of every emulated cluster, where each real one has a server of its own: a
      // fleet holds a watch or more open to each, so one API server's limit here would refuse the
      // connections of the last clusters made (1,024 is reached near 1,000 clusters).
      maxConnections: WORKLOAD_MAX_CONNECTIONS,
      // Each emulated cluster's clients keep their own connections here, where a real cluster's would be
      // on its own server: idle ones are closed after 5 s (Node's default), not held for a minute and a
      // half, or a fleet's idle request connections would take ~40 kB each on both sides (bench:connections).
      keepAliveTimeoutMs: 5_000,
      tls: {
        key: fallback.keyPem,
        cert: fallback.certPem,
        requestCert: true,
        rejectUnauthorized: false,
        SNICallback: (serverName, done) => {
          this.tlsContextFor(serverName).then(
            (context) => done(null, context),
            (error: unknown) => {
              this.options.logger.error({ err: error, serverName }, "no serving certificate for a workload cluster");
              done(null, undefined);
            },
          );
        },
      },
      logger: this.options.logger,
      metrics: this.metrics,
      route: (request, path) => this.route(request, path),
    });
    // A cluster whose endpoint reaches no API server of it does not answer: the connection is reset.
    this.app.addHook("onRequest", async (request, reply) => {
      const cluster = this.clusterOf(request, request.url.split("?")[0]!).cluster;
      if (!cluster || this.options.emulator.answers(cluster)) return;
      reply.hijack();
      request.raw.socket.destroy();
      return reply;
    });
    // Services' proxy subresource: answered by the emulated pods behind the Service.
    this.app.addHook("preHandler", async (request, reply) => {
      const { cluster, inner } = this.clusterOf(request, request.url.split("?")[0]!);
      const api = cluster && inner.includes("/proxy") ? this.apiOf(cluster) : undefined;
      if (!api) return;
      const identity = await api.authenticator.authenticate(credentialsOf(request));
      if (!identity) throw new UnauthorizedError();
      const answer = await answerServiceProxy(api.ctx.objects, this.proxyKinds, identity, request.method, inner);
      if (!answer) return;
      return reply.code(answer.code).headers(answer.headers ?? {}).type(answer.contentType).send(request.method === "HEAD" ? "" : answer.body);
    });
    await this.app.listen({ host: this.options.host, port: this.options.port });
    const address = this.app.server.address();
    this.port = typeof address === "object" && address ? address.port : this.options.port;
  }

  private async tlsContextFor(serverName: string): Promise<SecureContext | undefined> {
    const cluster = this.options.emulator.records.clusterServedAs(serverName.toLowerCase());
    if (!cluster) return undefined;
    let context = this.tlsContexts.get(cluster.id);
    if (!context) {
      const serving = await this.options.emulator.servingCertificate(cluster);
      this.tlsContexts.set(cluster.id, (context = createSecureContext({ key: serving.keyPem, cert: serving.certPem })));
    }
    return context;
  }

  /** The cluster a request addresses (by path, else by TLS server name) and the path inside its API. */
  private clusterOf(request: FastifyRequest, path: string): { cluster?: ClusterRecord; inner: string } {
    const records = this.options.emulator.records;
    const match = CLUSTER_PATH.exec(path);
    if (match) return { cluster: records.cluster(decodeURIComponent(match[1]!)), inner: match[2] ?? "/" };
    const serverName = (request.raw.socket as TLSSocket).servername;
    return { cluster: typeof serverName === "string" ? records.clusterServedAs(serverName.toLowerCase()) : undefined, inner: path };
  }

  private route(request: FastifyRequest, path: string): Mounted | undefined {
    const { cluster, inner } = this.clusterOf(request, path);
    if (!cluster) return undefined;
    const api = this.apiOf(cluster);
    if (!api) return undefined;
    return { ctx: api.ctx, path: inner, authenticator: api.authenticator };
  }

  private apiOf(cluster: ClusterRecord): ClusterApi | undefined {
    const existing = this.apis.get(cluster.id);
    if (existing) return existing;
    const workload = this.options.emulator.cluster(cluster.id);
    if (!workload) return undefined;
    const { objects, rbac } = workload;
    const prefix = `/clusters/${cluster.id}`;
    const ctx: ApiContext = {
      registry: this.options.registry,
      objects,
      metrics: this.metrics,
      bookmarkIntervalMs: BOOKMARK_INTERVAL_MS,
      // Clients that resolve these URLs against the server's root keep the cluster's path.
      openapi: { index: this.openapi.index.replaceAll('"serverRelativeURL":"/openapi/', `"serverRelativeURL":"${prefix}/openapi/`), documents: this.openapi.documents },
      actions: new Map([
        [`certificates.k8s.io/certificatesigningrequests/approval`, approvalSubresource(() => this.options.emulator.cluster(cluster.id)?.objects, this.csrKind)],
        [
          "/pods/eviction",
          evictionSubresource(
            () => this.options.emulator.cluster(cluster.id),
            () => this.options.emulator.syncCluster(cluster),
            (work) => this.options.emulator.exclusive(cluster.endpoint, work),
          ),
        ],
        ["/pods/exec", execSubresource(this.options.emulator, cluster)],
      ]),
      version: versionOf(cluster.kubernetesVersion),
      // kubectl auth whoami and can-i, answered from the cluster's own RBAC.
      ...(rbac ? { createOnly: selfReviews({ authorizer: rbac.authorizer, rulesReview: (identity, namespace) => rbac.rulesReview(identity, namespace) }) } : {}),
    };
    const collectors = new Collectors(objects, this.options.logger.child({ cluster: cluster.id, component: "collectors" }));
    collectors.start().catch((error: unknown) => this.options.logger.warn({ err: error, cluster: cluster.id }, "workload collectors did not start"));
    // Client certificates of the cluster's CA, and ID tokens of the issuer it trusts (kubeadm's oidc-* flags).
    const authenticators = [this.clientCertificates.issuedBy(cluster.id, cluster.ca.certPem), ...(cluster.oidc ? [new OidcTokenAuthenticator(cluster.oidc)] : [])];
    const api = { ctx, collectors, authenticator: new AuthenticatorChain(authenticators) };
    this.apis.set(cluster.id, api);
    return api;
  }

  private forget(cluster: ClusterRecord): void {
    const api = this.apis.get(cluster.id);
    if (api) void api.collectors.stop();
    this.apis.delete(cluster.id);
    this.tlsContexts.delete(cluster.id);
    this.clientCertificates.forget(cluster.id);
  }

  /** Clusters whose API has been used since the start (they hold an API context and collectors). */
  get activeApis(): number {
    return this.apis.size;
  }

  async close(): Promise<void> {
    for (const api of this.apis.values()) await api.collectors.stop();
    this.apis.clear();
    await this.app?.close();
  }
}
