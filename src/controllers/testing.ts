// An in-process environment for controller tests: a store, the API's object service, an embedded sim
// cloud (instant by default), the sim provider over it, and a controller manager — everything
// `slipway up` runs, without HTTP.
import { after } from "node:test";
import pino from "pino";
import { defaultRegistry, type MachinePoolObject, type SecretObject } from "../api/kinds.ts";
import { secretKind } from "../api/core.ts";
import { ANNOTATION_RENDERED_FOR } from "../api/slipway/bootstrapconfig.ts";
import { machinePoolKind } from "../api/slipway/machinepool.ts";
import { manifest } from "../api/testing.ts";
import type { KindDefinition } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import { ObjectService } from "../apiserver/objects.ts";
import { ensureDefaultNamespaces } from "../controlplane/namespaces.ts";
import { installedProviders } from "../providers/index.ts";
import type { ProviderFactory } from "../providers/provider.ts";
import type { ProviderRegistry } from "../providers/registry.ts";
import { Client } from "../runtime/client.ts";
import { ControllerManager } from "../runtime/manager.ts";
import { SimCloud, type SimCloudOptions } from "../simcloud/cloud.ts";
import { startWorkloadEmulation, type WorkloadEmulation } from "../simcloud/workload/index.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { ApiHostDirectory } from "./host/directory.ts";
import { launchTemplateKey } from "./machinepool/template.ts";
import { ProviderResolver } from "./providers.ts";
import { WorkloadClients } from "./workload.ts";

export interface ControllerTestEnv {
  objects: ObjectService;
  client: Client;
  cloud: SimCloud;
  manager: ControllerManager;
  /** The providers installed, as `slipway up` installs them (the sim provider over `cloud`), and any extra. */
  installed: ProviderRegistry;
  providers: ProviderResolver;
  workloads: WorkloadClients;
  /** The emulated workload clusters on the cloud's machines, when asked for (`emulateWorkloads`). */
  emulation?: WorkloadEmulation;
  /** Starts the manager (add controllers first). */
  start(): Promise<void>;
  /** Polls the API until `check` holds for the object (or throws with the last state seen). */
  waitFor<T extends KubeObject>(kind: KindDefinition<T>, namespace: string | undefined, name: string, check: (o: T | undefined) => boolean, timeoutMs?: number): Promise<T | undefined>;
  close(): Promise<void>;
}

export interface ControllerTestEnvOptions {
  cloud?: SimCloudOptions;
  /** Also emulate workload clusters: machines booted with kubeadm user data become clusters and nodes. */
  emulateWorkloads?: boolean;
  /** Providers installed besides the sim provider. */
  extraProviders?: ProviderFactory[];
}

export async function controllerTestEnv(options: ControllerTestEnvOptions = {}): Promise<ControllerTestEnv> {
  const log = pino({ level: process.env.SLIPWAY_TEST_LOG ?? "silent" });
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(defaultRegistry(), store);
  await ensureDefaultNamespaces(objects);
  const cloud = new SimCloud({ profile: "instant", seed: 7, ...options.cloud });
  const emulation = options.emulateWorkloads ? await startWorkloadEmulation(cloud, { port: 0, logger: log }) : undefined;
  const client = new Client(objects);
  const hosts = new ApiHostDirectory(client);
  const installed = installedProviders({ sim: { cloud }, ssh: { directory: () => hosts, pollMs: 50 } });
  for (const factory of options.extraProviders ?? []) installed.register(factory);
  const providers = new ProviderResolver(client, installed);
  const workloads = new WorkloadClients(client);
  const manager = new ControllerManager({ objects, replica: "test", log, resyncMs: 60_000, shutdownGraceMs: 1000 });
  return {
    objects,
    client,
    cloud,
    manager,
    installed,
    providers,
    workloads,
    ...(emulation ? { emulation } : {}),
    start: () => manager.start(),
    async waitFor(kind, namespace, name, check, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      let last: KubeObject | undefined;
      while (Date.now() < deadline) {
        last = await client.of(kind).tryGet(namespace, name);
        if (check(last as never)) return last as never;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`timed out waiting for ${kind.kind} ${namespace ?? ""}/${name}; last seen: ${JSON.stringify(last?.status ?? last ?? null)}`);
    },
    async close() {
      await manager.stop();
      workloads.close();
      await emulation?.close();
      await cloud.close();
      await store.close();
    },
  };
}

/** Makes environments as controllerTestEnv does, and closes every one it made once the test file's tests are done. */
export function controllerTestEnvs(): (options?: ControllerTestEnvOptions) => Promise<ControllerTestEnv> {
  const envs: ControllerTestEnv[] = [];
  after(async () => {
    for (const env of envs) await env.close();
  });
  return async (options) => {
    const env = await controllerTestEnv(options);
    envs.push(env);
    return env;
  };
}

/**
 * MachinePool w of cluster demo (not stored) whose template names the pool infrastructure object
 * `infrastructure` and BootstrapConfig w-join, and the Secret w-join-bootstrap-data the pool copied, stored
 * through `client` with `data` and rendered for the pool's template.
 */
export async function poolWithBootstrapData(
  client: Client,
  options: { infrastructure: { kind: string; name: string }; connection: string; machineType: string; replicas: number; data: Record<string, string> },
): Promise<MachinePoolObject> {
  const ref = (kind: string, name: string) => ({ apiVersion: "slipway.dev/v1alpha1", kind, name });
  const pool = manifest(machinePoolKind, "w", {
    clusterName: "demo",
    connection: options.connection,
    machineType: options.machineType,
    replicas: options.replicas,
    template: { infrastructureRef: ref(options.infrastructure.kind, options.infrastructure.name), bootstrap: { configRef: ref("BootstrapConfig", "w-join"), dataSecretName: "w-join-bootstrap-data" } },
  });
  pool.metadata.uid = "pool-uid";
  await client.of<SecretObject>(secretKind).create({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "w-join-bootstrap-data", namespace: "default", annotations: { [ANNOTATION_RENDERED_FOR]: launchTemplateKey(pool.spec) } },
    data: options.data,
  } as SecretObject);
  return pool;
}
