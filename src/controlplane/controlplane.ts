// Assembles the `slipway up` process: store, API server, background collectors, compaction, the
// controllers — and the admin kubeconfig in the data directory.
import { leaseAdmission } from "./lease-admission.ts";
import { clusterTemplateAdmission } from "./template-admission.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { defaultRegistry } from "../api/kinds.ts";
import type { Registry } from "../api/registry.ts";
import { Collectors } from "../apiserver/collectors.ts";
import { EventExpiry } from "../apiserver/event-expiry.ts";
import { ApiMetrics } from "../apiserver/metrics.ts";
import { ObjectService } from "../apiserver/objects.ts";
import { createApiContext, type ApiContext } from "../apiserver/routes.ts";
import { createApiServer } from "../apiserver/server.ts";
import { credentialsOf } from "../apiserver/authentication.ts";
import { ADMIN_IDENTITY, controlPlaneAccess, controlPlaneRbac, ensureDefaultRbac } from "./access.ts";
import { withTimeout, type HealthCheck } from "../apiserver/health.ts";
import { serverTlsOptions } from "../bootstrap/pki.ts";
import { renderKubeconfig } from "../bootstrap/kubeconfig.ts";
import type { Store } from "../store/store.ts";
import { openStore, type StoreKind } from "./stores.ts";
import { ensureCredentials, issueServingCertificate } from "./credentials.ts";
import { Compactor } from "./compaction.ts";
import { ensureDefaultNamespaces } from "./namespaces.ts";
import { defaultReplicaName, startControllers, type ControllersOptions, type RunningControllers } from "./controllers.ts";
import { startControllersInWorker } from "./controller-worker.ts";
import { clusterOperations } from "../controllers/cluster/operations.ts";
import { installedProviders } from "../providers/index.ts";
import { openSimCloud, type SimCloudOptions } from "./simcloud.ts";
import { consoleSite } from "./console.ts";
import { servicesSite } from "./services.ts";
import { WorkloadClients } from "../controllers/workload.ts";
import type { FastifyRequest } from "fastify";
import { clusterPlanAction } from "../controllers/plan/action.ts";
import { ApiHostDirectory } from "../controllers/host/directory.ts";
import { ProviderResolver } from "../controllers/providers.ts";
import { Client } from "../runtime/client.ts";
import { logicalCloudQuotaAdmission } from "../controllers/logicalcloud/admission.ts";
import { AuditLog } from "../apiserver/audit.ts";
import { LoginCodes, loginLink, SessionTokens } from "./login.ts";
import { slipwayVersion } from "./version.ts";
import { realmUserAdmission } from "../realms/admission.ts";
import { RealmIssuers } from "../realms/issuer.ts";
import { RealmTokenAuthenticator } from "../realms/authenticator.ts";

export interface ControlPlaneOptions {
  dataDir: string;
  /** 0 picks a free port. */
  port: number;
  host?: string;
  store: StoreKind;
  etcdEndpoints?: string[];
  logger: Logger;
  registry?: Registry;
  compactionIntervalMs?: number;
  /** How long an Event lives after its last update (default 1 hour, as kube-apiserver's --event-ttl). */
  eventTtlMs?: number;
  /** Names this replica among those sharing a store (default: host name and port). */
  replicaName?: string;
  /** TTL of the shard lease each replica holds on etcd. Default 5 s. */
  shardLeaseTtlSeconds?: number;
  /** How long a stopping replica lets reconciles in flight finish. Default 10 s. */
  shutdownGraceMs?: number;
  /** The sim cloud: embedded (default) or another process's. */
  sim?: SimCloudOptions;
  /** Controller timings (tests on the instant profile poll faster). */
  pollMs?: number;
  /** How long before a Lease ends it warns (LeaseEndingSoon); default 5 minutes. */
  leaseWarningMs?: number;
  /** How often resources delivered to clusters are checked for drift (default 30 s). */
  resyncMs?: number;
  /** How often every controller looks again at each object it holds (default 10 minutes). */
  syncPeriodMs?: number;
  /** The orphan sweeper (see ControllersOptions). */
  sweeper?: ControllersOptions["sweeper"];
  /** Where every request is recorded (default DIR/audit.log). */
  auditLog?: string;
  /** Connections the API server serves at once (default 1024). */
  maxConnections?: number;
  /** How long a client may take to finish its TLS handshake, and then to send a request's headers (default 10 s). */
  requestHeaderTimeoutMs?: number;
  /** Run the controllers on a worker thread, apart from the API server's event loop (default: on it). */
  controllersInWorker?: boolean;
  /** With controllersInWorker: called if their thread fails once they run (default: /readyz reports it). */
  onControllersFailed?: (error: Error) => void;
}

export interface ControlPlane {
  url: string;
  port: number;
  kubeconfigPath: string;
  registry: Registry;
  store: Store;
  objects: ObjectService;
  api: ApiContext;
  /** This replica's name (events' reportingInstance, shard lock holder). */
  replicaName: string;
  /** The embedded sim cloud's API and workload URLs, when it is embedded. */
  sim: { url?: string; workloadUrl?: string };
  /** The web console's URL (`url` + `/`). */
  consoleUrl: string;
  /** A one-time sign-in link to the console for the admin (valid a few minutes, used once). */
  adminLoginLink(): string;
  close(): Promise<void>;
}

/** The controllers cannot work now: /readyz says so. */
class ControllersUnreadyError extends Error {
  override readonly name = "ControllersUnreadyError";
}

export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const log = options.logger;
  const host = options.host ?? "127.0.0.1";
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  // Asks git (in a checkout) while the store opens.
  const version = slipwayVersion();
  const closers: (() => Promise<void>)[] = [];
  try {
    // The providers are installed once the sim cloud they talk to is known; Connection admission, the
    // store's encryption of sensitive kinds and the controllers all read this one registry.
    const sim = await openSimCloud(options.sim ?? {}, options.dataDir, log);
    closers.unshift(() => sim.close());
    // The ssh provider reads Hosts through the API, which exists only once the store is open.
    const hostDirectory: { current?: ApiHostDirectory } = {};
    const providers = installedProviders({ sim: sim.provider, ssh: { directory: () => hostDirectory.current } });
    const registry = options.registry ?? defaultRegistry({ providers });
    const store = await openStore({ kind: options.store, dataDir: options.dataDir, etcdEndpoints: options.etcdEndpoints, registry });
    closers.push(() => store.close());
    const credentials = await ensureCredentials(store);
    const serving = await issueServingCertificate(credentials.ca, host === "127.0.0.1" ? [] : [host]);
    // Every request, from a client or a controller, is authorized by RBAC over the control plane's own roles and bindings.
    const rbac = controlPlaneRbac();
    closers.unshift(async () => rbac.close());
    const objects = new ObjectService(registry, store, {
      authorizer: rbac.authorizer,
      admission: [rbac.admission, logicalCloudQuotaAdmission, leaseAdmission, clusterTemplateAdmission, realmUserAdmission],
      postWrite: [rbac.hook, clusterOperations],
    });
    rbac.attach(objects);
    await ensureDefaultNamespaces(objects);
    await ensureDefaultRbac(objects);
    const sessions = new SessionTokens(credentials.adminToken);
    // ID tokens of Slipway's own realms sign in too; RBAC decides what their users and groups may do.
    const realmTokens = new RealmTokenAuthenticator(new Client(objects), () => url);
    const access = controlPlaneAccess(objects, rbac, { registry, credentials, sessions, more: [realmTokens] });
    hostDirectory.current = new ApiHostDirectory(new Client(objects));
    const metrics = new ApiMetrics({ defaultMetrics: true });
    const planClient = new Client(objects);
    const planProviders = new ProviderResolver(planClient, providers);
    const api = createApiContext({
      registry,
      objects,
      metrics,
      actions: [clusterPlanAction({ client: planClient, open: (connection) => planProviders.capability(connection, "catalogue") }), access.tokens.action()],
      createOnly: access.createOnly,
    });
    const codes = new LoginCodes();
    const authenticator = access.authenticator;
    let url = "";
    /** The controllers, once they run (the server answers before). */
    const running: { controllers?: RunningControllers } = {};
    const readiness: HealthCheck[] = [
      // A read that goes to the store itself (etcd: a round trip to the cluster).
      withTimeout({ name: "store", check: async () => void (await store.revision()) }, 2000),
      {
        name: "controllers",
        check: async () => {
          const why = running.controllers ? await running.controllers.unready() : "the controllers have not started";
          if (why) throw new ControllersUnreadyError(why);
        },
      },
    ];
    const authenticate = async (request: FastifyRequest) => authenticator.authenticate(credentialsOf(request));
    // A console sign-in link is made only for callers RBAC allows to ask for one.
    const consolePages = consoleSite({ codes, sessions, authenticate: (request) => access.signInLinkFor(credentialsOf(request)), url: () => `${url}/` });
    const services = servicesSite({ authenticate, objects, workloads: new WorkloadClients(new Client(objects)) });
    const audit = new AuditLog(options.auditLog ?? join(options.dataDir, "audit.log"));
    closers.push(async () => audit.close());
    const app = createApiServer({
      // Clients may present a certificate of Slipway's CA (CN = user, O = groups); none is required.
      tls: serverTlsOptions(serving, { clientCaPem: credentials.ca.certPem }),
      ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}),
      ...(options.requestHeaderTimeoutMs !== undefined ? { tlsHandshakeTimeoutMs: options.requestHeaderTimeoutMs, headersTimeoutMs: options.requestHeaderTimeoutMs } : {}),
      audit: (record) => audit.write(record),
      logger: log,
      metrics,
      readiness,
      version: await version,
      route: (_request, path) => ({ ctx: api, path, authenticator }),
      site: (request, reply, path) => services(request, reply, path) ?? consolePages(request, reply, path),
    });
    closers.unshift(() => app.close());
    // The realms' OpenID Connect issuers answer under /realms/, before the API's body parsing and authentication.
    const issuers = new RealmIssuers({ client: new Client(objects), baseUrl: () => url, log: log.child({ component: "realms" }) });
    app.addHook("onRequest", async (request, reply) => {
      if (!RealmIssuers.serves(request.url)) return;
      reply.hijack();
      await issuers.handle(request.raw, reply.raw).catch((error: unknown) => {
        log.error({ err: (error as Error).message }, "realm request failed");
        if (!reply.raw.headersSent) reply.raw.writeHead(500, { "Content-Type": "application/json" }).end('{"error":"server_error"}');
      });
    });
    const collectors = new Collectors(objects, log.child({ component: "collectors" }));
    await collectors.start();
    closers.unshift(() => collectors.stop());
    const expiry = new EventExpiry(objects, log.child({ component: "event-expiry" }), { ttlMs: options.eventTtlMs });
    expiry.start();
    closers.unshift(() => expiry.stop());
    const compactor = new Compactor(store, log.child({ component: "compactor" }), { intervalMs: options.compactionIntervalMs });
    compactor.start();
    closers.unshift(async () => compactor.stop());
    await app.listen({ host, port: options.port });
    const address = app.server.address();
    const port = typeof address === "object" && address ? address.port : options.port;
    url = `https://${host}:${port}`;
    const replicaName = options.replicaName ?? defaultReplicaName(port);
    const timings = {
      shardLeaseTtlSeconds: options.shardLeaseTtlSeconds,
      shutdownGraceMs: options.shutdownGraceMs,
      pollMs: options.pollMs,
      leaseWarningMs: options.leaseWarningMs,
      resyncMs: options.resyncMs,
      syncPeriodMs: options.syncPeriodMs,
      sweeper: options.sweeper,
    };
    const controllers = options.controllersInWorker
      ? await startControllersInWorker({
          ...timings,
          objects,
          replica: replicaName,
          log,
          metrics,
          // The thread has its own providers: the embedded sim cloud is reached by its URL.
          sim: { endpoint: sim.provider.endpoint, token: sim.provider.token, timeoutMs: sim.provider.timeoutMs },
          etcdEndpoints: options.store === "etcd" ? options.etcdEndpoints : undefined,
          url,
          caPem: credentials.ca.certPem,
          ...(options.onControllersFailed ? { onFailure: options.onControllersFailed } : {}),
        })
      : await startControllers({
          ...timings,
          objects,
          store,
          replica: replicaName,
          log,
          metrics: metrics.registry,
          providers,
          url,
          realms: { baseUrl: () => url, caPem: credentials.ca.certPem },
        });
    // Stopped first: in-flight reconciles finish while the store is still open, and the shards are
    // handed over before this replica goes away.
    running.controllers = controllers;
    closers.unshift(() => controllers.stop());
    const kubeconfigPath = join(options.dataDir, "kubeconfig");
    writeFileSync(
      kubeconfigPath,
      renderKubeconfig({ clusterName: "slipway", server: url, caCertPem: credentials.ca.certPem, user: "admin", token: credentials.adminToken, context: "slipway" }),
      { mode: 0o600 },
    );
    log.info({ url, store: options.store, replica: replicaName }, "control plane serving");
    return {
      url,
      port,
      kubeconfigPath,
      registry,
      store,
      objects,
      api,
      replicaName,
      sim: { url: sim.url, workloadUrl: sim.workloadUrl },
      consoleUrl: `${url}/`,
      adminLoginLink: () => loginLink(`${url}/`, codes.issue(ADMIN_IDENTITY).code),
      close: async () => {
        for (const close of closers.splice(0)) {
          try {
            await close();
          } catch (e) {
            log.warn({ err: (e as Error).message }, "error during shutdown");
          }
        }
      },
    };
  } catch (e) {
    for (const close of closers) await close().catch(() => undefined);
    throw e;
  }
}
