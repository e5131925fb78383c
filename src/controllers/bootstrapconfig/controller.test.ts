import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, SecretObject } from "../../api/kinds.ts";
import { secretKind } from "../../api/core.ts";
import type { BootstrapConfigObject } from "../../api/slipway/bootstrapconfig.ts";
import { CONDITION_CONTROL_PLANE_INITIALIZED } from "../../api/slipway/cluster.ts";
import { KubeNotFoundError, KubeUnreachableError, type KubeClient } from "../../kubeclient/index.ts";
import { Client } from "../../runtime/client.ts";
import { ManualClock, memoryObjects, reconcileContext } from "../../runtime/testing.ts";
import type { WorkloadClients } from "../workload.ts";
import { ensureBootstrapToken, ensureClusterPki } from "../pki.ts";
import { BOOTSTRAP_CONFIG_PHASES, CONDITION_JOIN_TOKEN_VALID, bootstrapDataSecretName, summarizeBootstrapConfig, type BootstrapConfigScope } from "./controller.ts";

const HOUR = 3_600_000;

/** The workload cluster's API as far as the join token goes: its Secrets, reachable or not. */
function workloadApi() {
  const objects = new Map<string, { data?: Record<string, string> }>();
  const api = {
    up: true,
    objects,
    client: {
      get: async (path: string) => {
        if (!api.up) throw new KubeUnreachableError("https://api:6443", "connect ECONNREFUSED");
        const found = objects.get(path);
        if (!found) throw new KubeNotFoundError(404, "NotFound", `${path} not found`);
        return structuredClone(found);
      },
      create: async (path: string, body: { metadata: { name: string }; data?: Record<string, string> }) => {
        if (!api.up) throw new KubeUnreachableError("https://api:6443", "connect ECONNREFUSED");
        objects.set(`${path}/${body.metadata.name}`, structuredClone(body));
        return body;
      },
      patch: async (path: string, change: { data: Record<string, string> }) => {
        if (!api.up) throw new KubeUnreachableError("https://api:6443", "connect ECONNREFUSED");
        const found = objects.get(path)!;
        found.data = { ...found.data, ...change.data };
        return found;
      },
    } as unknown as KubeClient,
  };
  return api;
}

async function setUp() {
  const client = new Client(await memoryObjects());
  const clock = new ManualClock();
  const cluster = {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: "demo", namespace: "default", uid: "cluster-uid" },
    spec: { kubernetesVersion: "v1.31.0", controlPlane: { connection: "sim" }, workers: [] },
    status: { conditions: [{ type: CONDITION_CONTROL_PLANE_INITIALIZED, status: "False", reason: "WaitingForInit", lastTransitionTime: "2025-01-01T00:00:00Z" }] },
  } as unknown as ClusterObject;
  await ensureClusterPki(client, cluster);
  const token = await ensureBootstrapToken(client, cluster);
  const api = workloadApi();
  let kubeconfig = false;
  const workloads = { forCluster: async () => (kubeconfig ? api.client : undefined) } as unknown as WorkloadClients;
  const pool = { apiVersion: "slipway.dev/v1alpha1", kind: "MachinePool", metadata: { name: "w", namespace: "default", uid: "pool-uid" }, spec: { clusterName: "demo", connection: "sim", machineType: "s1.small", replicas: 2 } };
  const config = {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "BootstrapConfig",
    metadata: { name: "w-join", namespace: "default", uid: "config-uid", ownerReferences: [{ apiVersion: "slipway.dev/v1alpha1", kind: "MachinePool", name: "w", uid: "pool-uid", controller: true }] },
    spec: {},
  } as BootstrapConfigObject;
  const infrastructure = { metadata: { name: "demo-sim", uid: "infra-uid" }, status: { loadBalancer: { id: "lb-1", host: "demo-api.sim", port: 6443, url: "https://demo-api.sim:6443" } } };
  /** One reconcile, as the controller runs it: the phases until one halts, then the status summed up. */
  const reconcile = async () => {
    const scope = { original: config, object: config, pollMs: 1000, workloads, pool, cluster, controlPlaneInfrastructure: infrastructure, poolInfrastructure: infrastructure } as unknown as BootstrapConfigScope;
    const ctx = reconcileContext({ client, clock });
    let requeueAfterMs: number | undefined;
    for (const phase of BOOTSTRAP_CONFIG_PHASES) {
      const outcome = (await phase(ctx, scope)) ?? {};
      if (outcome.requeueAfterMs !== undefined) requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, outcome.requeueAfterMs);
      if (outcome.halt) break;
    }
    summarizeBootstrapConfig(ctx, scope, undefined);
    return { requeueAfterMs };
  };
  const condition = (type: string) => config.status?.conditions?.find((c) => c.type === type);
  const initialise = () => {
    cluster.status!.conditions = [{ type: CONDITION_CONTROL_PLANE_INITIALIZED, status: "True", reason: "Initialized", lastTransitionTime: "2025-01-01T00:02:00Z" }];
    kubeconfig = true;
  };
  const tokenPath = `/api/v1/namespaces/kube-system/secrets/bootstrap-token-${token.split(".")[0]}`;
  const expiration = () => Buffer.from(api.objects.get(tokenPath)!.data!.expiration!, "base64").toString("utf8");
  return { client, clock, config, token, api, reconcile, condition, initialise, tokenPath, expiration, withoutKubeconfig: () => (kubeconfig = false) };
}

describe("the BootstrapConfig's join data", () => {
  it("is ready before the control plane is initialised, and the join token is kept valid once it is", async () => {
    const { client, clock, config, token, api, reconcile, condition, initialise, tokenPath, expiration } = await setUp();
    // Before init: the data holds the cluster's pre-generated token and is ready; the cluster's API is not touched.
    await reconcile();
    assert.equal(config.status?.ready, true, JSON.stringify(config.status));
    assert.equal(config.status?.dataSecretName, bootstrapDataSecretName("w-join"));
    assert.equal(condition("Ready")?.status, "True");
    assert.deepEqual([condition(CONDITION_JOIN_TOKEN_VALID)?.status, condition(CONDITION_JOIN_TOKEN_VALID)?.reason], ["Unknown", "WaitingForControlPlane"]);
    const data = await client.of<SecretObject>(secretKind).get("default", bootstrapDataSecretName("w-join"));
    const userData = Buffer.from(data.data!.value!, "base64").toString("utf8");
    assert.match(userData, new RegExp(`token: ${token.replace(".", "\\.")}`));
    assert.match(userData, /demo-api\.sim:6443/);
    assert.equal(api.objects.size, 0, "nothing written into a cluster that is not initialised");
    assert.doesNotMatch(JSON.stringify(config.status), new RegExp(token.split(".")[1]!), "the token is not in the status");

    // Initialised: the token (gone from the cluster, say) is made again there, valid for a day; looked at again every hour.
    initialise();
    const result = await reconcile();
    assert.ok(api.objects.has(tokenPath), "the token is made again in the cluster");
    assert.equal(Date.parse(expiration()), Math.floor((clock.now() + 24 * HOUR) / 1000) * 1000);
    assert.deepEqual([condition(CONDITION_JOIN_TOKEN_VALID)?.status, condition(CONDITION_JOIN_TOKEN_VALID)?.reason], ["True", "Refreshed"]);
    assert.equal(result.requeueAfterMs, HOUR);

    // A day on, with the cluster's API down: the data stays ready, the refresh is tried again soon and said so.
    clock.advance(24 * HOUR);
    api.up = false;
    const down = await reconcile();
    assert.equal(config.status?.ready, true);
    assert.equal(condition("Ready")?.status, "True");
    assert.deepEqual([condition(CONDITION_JOIN_TOKEN_VALID)?.status, condition(CONDITION_JOIN_TOKEN_VALID)?.reason], ["False", "WaitingForJoinToken"]);
    assert.match(condition(CONDITION_JOIN_TOKEN_VALID)!.message!, /ECONNREFUSED/);
    assert.equal(down.requeueAfterMs, 1000);
    api.up = true;
    await reconcile();
    assert.equal(Date.parse(expiration()), Math.floor((clock.now() + 24 * HOUR) / 1000) * 1000, "the expiration is moved on");
    assert.equal(condition(CONDITION_JOIN_TOKEN_VALID)?.status, "True");
  });

  it("after init, first rendered data waits for the token to be valid in the cluster's API", async () => {
    const { config, reconcile, condition, initialise, withoutKubeconfig, api, tokenPath } = await setUp();
    initialise();
    withoutKubeconfig();
    const result = await reconcile();
    assert.equal(config.status?.ready, undefined);
    assert.deepEqual([condition("Ready")?.status, config.status?.reason], ["False", "WaitingForKubeconfig"]);
    assert.equal(result.requeueAfterMs, 1000);
    initialise();
    await reconcile();
    assert.equal(config.status?.ready, true);
    assert.ok(api.objects.has(tokenPath));
  });
});
