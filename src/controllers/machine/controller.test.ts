import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, EventObject, MachineObject, SecretObject } from "../../api/kinds.ts";
import { eventKind, secretKind } from "../../api/core.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { machineKind, ANNOTATION_BOOTSTRAP, FINALIZER_MACHINE } from "../../api/slipway/machine.ts";
import { joinBootstrap, joinUserData, renderUserData } from "../../bootstrap/cloudinit.ts";
import { controllerRef, TAG_OWNER_UID } from "../contract.ts";
import { KubeClient } from "../../kubeclient/index.ts";
import { names } from "../../api/slipway/names.ts";
import { readBootstrapToken } from "../pki.ts";
import { controllerTestEnv, type ControllerTestEnv } from "../testing.ts";
import { registerMachineController, type MachineControllerOptions } from "./controller.ts";
import { waitFor } from "../../simcloud/test-support.ts";
import type { Controller } from "../../runtime/controller.ts";
import { applyNetworkPlugin, clusterFixture, registerControlPlaneInitialized, CLUSTER, CONNECTION, NAMESPACE, REGION, workloadNodes, type ClusterFixture } from "./test-support.ts";

function machine(fixture: ClusterFixture, name: string, role: "control-plane" | "worker", init = false): MachineObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Machine",
    metadata: {
      name,
      namespace: NAMESPACE,
      ownerReferences: [controllerRef(fixture.cluster)],
      ...(init ? { annotations: { [ANNOTATION_BOOTSTRAP]: "init" } } : {}),
    },
    spec: { clusterName: CLUSTER, role, connection: CONNECTION, machineType: "s1.medium" },
  };
}

async function eventsOf(env: ControllerTestEnv, name: string): Promise<EventObject[]> {
  const events = await env.client.of<EventObject>(eventKind).list(NAMESPACE);
  return events.items.filter((e) => e.involvedObject.kind === "Machine" && e.involvedObject.name === name);
}

/** A test environment emulating workload clusters, running the machine controller with `options`, and a cluster to put machines in. */
async function startMachineController(options: MachineControllerOptions): Promise<{ env: ControllerTestEnv; fixture: ClusterFixture; controller: Controller<MachineObject> }> {
  const env = await controllerTestEnv({ emulateWorkloads: true });
  const controller = registerMachineController(env.manager, { providers: env.providers, workloads: env.workloads }, options);
  registerControlPlaneInitialized(env.manager);
  await env.start();
  return { env, fixture: await clusterFixture(env), controller };
}

describe("machine controller", () => {
  let env: ControllerTestEnv;
  let fixture: ClusterFixture;
  const machines = () => env.client.of<MachineObject>(machineKind);
  const phaseOf = (name: string, phase: string) => env.waitFor(machineKind, NAMESPACE, name, (m) => m?.status?.phase === phase, 20_000);

  before(async () => {
    ({ env, fixture } = await startMachineController({ pollMs: 20, healthCheckMs: 50, drainTimeoutMs: 1500 }));
  });

  after(async () => {
    fixture?.kube.close();
    await env.close();
  });

  it("brings up the first control-plane machine and a worker until both nodes are Ready", async () => {
    // The worker boots at the same time: its join waits for the control plane, as kubeadm retries discovery.
    await machines().create(machine(fixture, "demo-cp-0", "control-plane", true));
    await machines().create(machine(fixture, "demo-w-0", "worker"));

    const provisioned = (await phaseOf("demo-cp-0", "Provisioned"))!;
    assert.equal(provisioned.status?.bootstrapped, true);
    assert.equal(provisioned.status?.nodeReady, false, "no node is Ready before the network plugin");
    const notReady = await env.waitFor(machineKind, NAMESPACE, "demo-cp-0", (m) => m?.status?.conditions?.some((c) => c.type === "NodeReady" && c.status === "False") === true, 20_000);
    assert.match(notReady!.status!.conditions!.find((c) => c.type === "NodeReady")!.message ?? "", /the cluster's network plugin is not applied yet/, "the machine waits for its cluster's network plugin");
    await applyNetworkPlugin(env, fixture);

    const cp = (await phaseOf("demo-cp-0", "Running"))!;
    const worker = (await phaseOf("demo-w-0", "Running"))!;
    for (const m of [cp, worker]) {
      assert.equal(m.status?.nodeReady, true);
      assert.equal(m.status?.nodeName, m.metadata.name);
      assert.match(m.status?.providerID ?? "", /^sim:\/\/sim-east-1\/i-/);
      assert.equal(m.spec.providerID, m.status?.providerID, "the provider ID is recorded in the spec");
      assert.ok(m.status?.addresses?.some((a) => a.type === "InternalIP" && a.address.startsWith("10.0.1.")));
      assert.equal(m.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    }
    const nodes = await workloadNodes(fixture);
    assert.deepEqual(nodes.map((n) => [n.name, n.ready, n.labels["slipway.dev/cluster"]]), [["demo-cp-0", true, "demo"], ["demo-w-0", true, "demo"]]);

    // The control-plane machine serves the API behind the load balancer; the worker does not. Its
    // condition says healthy only once the cloud does.
    const lb = await fixture.provider.get("loadBalancer", fixture.loadBalancer.id);
    assert.deepEqual(lb?.targets.map((t) => [t.instanceId, t.health]), [[cp.status?.instanceId, "healthy"]]);
    const target = cp.status?.conditions?.find((c) => c.type === "LoadBalancerTarget");
    assert.deepEqual([target?.status, target?.reason], ["True", "Healthy"]);
    const cpEvents = (await eventsOf(env, "demo-cp-0")).map((e) => e.reason);
    assert.ok(cpEvents.indexOf("LoadBalancerTargetRegistered") >= 0 && cpEvents.indexOf("LoadBalancerTargetRegistered") < cpEvents.indexOf("LoadBalancerTargetHealthy"), cpEvents.join(", "));
    assert.equal(worker.status?.conditions?.find((c) => c.type === "LoadBalancerTarget"), undefined);

    // Bootstrap data lives in a Secret owned by its machine; the worker's carries no private key.
    const secret = await env.client.of<SecretObject>(secretKind).get(NAMESPACE, names.bootstrapSecret("demo-w-0"));
    assert.equal(secret.metadata.ownerReferences?.[0]?.uid, worker.metadata.uid);
    assert.doesNotMatch(Buffer.from(secret.data!.value!, "base64").toString(), /PRIVATE KEY/);

    // The user data the cloud keeps for each instance names a cloud secret and holds no token and no key;
    // the secret was read once at boot and is gone now that the node joined.
    const token = readBootstrapToken(await env.client.of<SecretObject>(secretKind).get(NAMESPACE, names.tokenSecret(CLUSTER)));
    for (const m of [cp, worker]) {
      const { userData } = await env.cloud.getInstanceUserData(REGION, m.status!.instanceId!);
      assert.match(userData, /^ {2}- slipway-bootstrap-fetch --secret-id secret-[0-9a-f]{17} --region sim-east-1$/m, `${m.metadata.name} reads its secret at boot`);
      assert.ok(!userData.includes(token) && !userData.includes(token.split(".")[1]!), `${m.metadata.name}'s user data holds no bootstrap token`);
      assert.doesNotMatch(userData, /PRIVATE KEY|BEGIN CERTIFICATE|kubeadm\.k8s\.io/, `${m.metadata.name}'s user data holds no key, certificate or kubeadm configuration`);
      assert.deepEqual(await env.cloud.listSecrets(REGION, { tags: { [TAG_OWNER_UID]: m.metadata.uid! } }), [], `${m.metadata.name}'s bootstrap secret is deleted`);
      const bootstrap = m.status?.conditions?.find((c) => c.type === "BootstrapReady");
      assert.equal(bootstrap?.reason, "BootstrapSecretDeleted");
      // One Event says the node is Ready and its secret went.
      const ready = (await eventsOf(env, m.metadata.name!)).filter((e) => e.reason === "NodeReady" || e.reason === "BootstrapSecretDeleted");
      assert.deepEqual(ready.map((e) => e.reason), ["NodeReady"]);
      assert.match(ready[0]?.message ?? "", new RegExp(`^node ${m.metadata.name} is Ready; deleted its bootstrap secret slipway/default/${m.metadata.name}-\\S+ \\(secret-[0-9a-f]{17}, read 1 time\\(s\\)\\)$`));
    }

    const reasons = (await eventsOf(env, "demo-w-0")).map((e) => e.reason);
    for (const reason of ["InstanceCreated", "InstanceRunning", "NodeJoined", "NodeReady"]) assert.ok(reasons.includes(reason), `event ${reason} in ${reasons.join(", ")}`);
  });

  it("fails a worker whose join is refused with JoinWorkerFailed and kubeadm's error", async () => {
    // Bootstrap data already in its Secret is used as it is: here, a join pinned to the wrong CA.
    const userData = joinUserData({
      kubernetesVersion: "v1.31.2",
      controlPlaneEndpoint: `${fixture.loadBalancer.dnsName}:6443`,
      bootstrapToken: "abcdef.0123456789abcdef",
      caCertHashes: [`sha256:${"0".repeat(64)}`],
      node: { name: "demo-w-bad" },
    });
    await env.client.of<SecretObject>(secretKind).create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: names.bootstrapSecret("demo-w-bad"), namespace: NAMESPACE },
      type: "Opaque",
      data: { value: Buffer.from(userData).toString("base64") },
    } as SecretObject);
    await machines().create(machine(fixture, "demo-w-bad", "worker"));
    const failed = (await phaseOf("demo-w-bad", "Failed"))!;
    assert.equal(failed.status?.failureReason, "JoinWorkerFailed");
    assert.match(failed.status?.failureMessage ?? "", /^error execution phase preflight: couldn't validate the identity of the API Server/);
    const ready = failed.status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.reason, "JoinWorkerFailed");
    assert.ok((await eventsOf(env, "demo-w-bad")).some((e) => e.type === "Warning" && e.reason === "JoinWorkerFailed"));
  });

  it("fails a machine whose bootstrap secret expired before it booted with BootstrapSecretUnavailable, and it never runs kubeadm", async () => {
    // Bootstrap data already in its Secret is used as it is: here, naming a cloud secret whose lifetime ended.
    const expired = await env.cloud.createSecret(REGION, { name: "slipway/default/demo-w-late", value: "[]", ttlSeconds: 1 });
    await waitFor(async () => (await env.cloud.listSecrets(REGION)).every((s) => s.id !== expired.id) || undefined, "the secret to expire", 5_000);
    const bootstrap = joinBootstrap({ kubernetesVersion: "v1.31.2", controlPlaneEndpoint: `${fixture.loadBalancer.dnsName}:6443`, bootstrapToken: "abcdef.0123456789abcdef", caCertHashes: [], node: { name: "demo-w-late" } });
    await env.client.of<SecretObject>(secretKind).create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: names.bootstrapSecret("demo-w-late"), namespace: NAMESPACE },
      type: "Opaque",
      data: { value: Buffer.from(renderUserData(bootstrap, { id: expired.id, region: REGION })).toString("base64") },
    } as SecretObject);
    await machines().create(machine(fixture, "demo-w-late", "worker"));
    const failed = (await phaseOf("demo-w-late", "Failed"))!;
    assert.equal(failed.status?.failureReason, "BootstrapSecretUnavailable");
    assert.equal(failed.status?.failureMessage, `the machine could not read its bootstrap secret at boot: secret ${expired.id} could not be read: secret ${expired.id} not found in sim-east-1: it expired or was deleted`);
    assert.equal(failed.status?.conditions?.find((c) => c.type === "Ready")?.reason, "BootstrapSecretUnavailable");
    assert.ok((await eventsOf(env, "demo-w-late")).some((e) => e.type === "Warning" && e.reason === "BootstrapSecretUnavailable"));
    const bootLog = (await env.cloud.getInstance(REGION, failed.status!.instanceId!)).bootLog.join("\n");
    assert.doesNotMatch(bootLog, /kubeadm|\[preflight\]/, "the machine stopped before kubeadm");
  });

  it("fails a Running machine whose instance dies", async () => {
    await machines().create(machine(fixture, "demo-w-1", "worker"));
    const running = (await phaseOf("demo-w-1", "Running"))!;
    env.cloud.killInstance(running.status!.instanceId!);
    const failed = (await phaseOf("demo-w-1", "Failed"))!;
    assert.equal(failed.status?.failureReason, "InstanceFailure");
    assert.match(failed.status?.failureMessage ?? "", /host failed/);
  });

  it("joins machines after the join token expired or was removed, making it valid again first", async () => {
    const token = readBootstrapToken(await env.client.of<SecretObject>(secretKind).get(NAMESPACE, names.tokenSecret(CLUSTER)));
    const path = `/api/v1/namespaces/kube-system/secrets/bootstrap-token-${token.split(".")[0]}`;
    const expiresIn = async () => {
      const secret = await fixture.kube.get<{ data: Record<string, string> }>(path);
      return Date.parse(Buffer.from(secret.data.expiration!, "base64").toString("utf8")) - Date.now();
    };
    const DAY = 24 * 3_600_000;
    assert.ok((await expiresIn()) > DAY - 3_600_000, "kubeadm init makes the token for a day");

    // A day later it has expired: a new machine joins once the token is made valid again.
    const anHourAgo = new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d{3}Z$/, "Z");
    await fixture.kube.patch(path, { data: { expiration: Buffer.from(anHourAgo).toString("base64") } }, "merge");
    await machines().create(machine(fixture, "demo-late-0", "worker"));
    await phaseOf("demo-late-0", "Running");
    assert.ok((await expiresIn()) > DAY - 3_600_000);

    // The cluster's token cleaner removed it: it is made again.
    await fixture.kube.delete(path);
    await machines().create(machine(fixture, "demo-late-1", "worker"));
    await phaseOf("demo-late-1", "Running");
    assert.ok((await expiresIn()) > DAY - 3_600_000);
    for (const name of ["demo-late-0", "demo-late-1"]) await machines().delete(NAMESPACE, name);
    for (const name of ["demo-late-0", "demo-late-1"]) await env.waitFor(machineKind, NAMESPACE, name, (m) => m === undefined, 20_000);
  });

  it("cordons and drains the node of a deleted machine, terminates its instance and removes the node", async () => {
    await machines().create(machine(fixture, "demo-w-2", "worker"));
    const running = (await phaseOf("demo-w-2", "Running"))!;
    await fixture.kube.create("/api/v1/namespaces/default/pods", {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "web", namespace: "default" },
      spec: { nodeName: "demo-w-2", containers: [{ name: "web", image: "nginx" }] },
    });

    await machines().delete(NAMESPACE, "demo-w-2");
    await env.waitFor(machineKind, NAMESPACE, "demo-w-2", (m) => m === undefined, 20_000);

    const events = await eventsOf(env, "demo-w-2");
    assert.match(events.find((e) => e.reason === "DrainingNode")?.message ?? "", /cordoned node demo-w-2/);
    // Only the workload pod is evicted: DaemonSet pods (the network plugin, kube-proxy) stay until the node goes.
    assert.equal(events.find((e) => e.reason === "PodsEvicted")?.message, "evicted 1 pod(s) from node demo-w-2: default/web");
    assert.equal(events.find((e) => e.reason === "NodeDrained")?.message, "node demo-w-2 drained");
    const pods = await fixture.kube.listAll("/api/v1/namespaces/default/pods");
    assert.ok(!pods.some((p) => p.metadata.name === "web"), "the workload pod was evicted");
    const instance = await fixture.provider.get("instance", running.status!.instanceId!);
    assert.ok(!instance || instance.state === "gone", `instance is ${instance?.state}`);
    assert.ok(!(await workloadNodes(fixture)).some((n) => n.name === "demo-w-2"), "the node was deleted");
  });

  it("retries evictions a PodDisruptionBudget refuses until the drain timeout, evicting what it allows", async () => {
    await machines().create(machine(fixture, "demo-w-3", "worker"));
    await phaseOf("demo-w-3", "Running");
    const deployment = (name: string, replicas: number, nodeSelector?: Record<string, string>) => ({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name, namespace: "default" },
      spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name, image: "nginx" }], ...(nodeSelector ? { nodeSelector } : {}) } } },
    });
    const budget = (name: string, spec: Record<string, unknown>) => ({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name, namespace: "default" }, spec: { selector: { matchLabels: { app: name } }, ...spec } });
    // "web" runs on demo-w-0 and demo-w-3 and may lose one pod at a time; "db" runs only on demo-w-3, and
    // its budget allows no disruption. (The node of the machine killed earlier may still look Ready.)
    for (const node of ["demo-w-0", "demo-w-3"]) await fixture.kube.patch(`/api/v1/nodes/${node}`, { metadata: { labels: { tier: "web" } } }, "merge");
    await fixture.kube.apply(deployment("web", 2, { tier: "web" }));
    await fixture.kube.apply(budget("web", { maxUnavailable: 1 }));
    await fixture.kube.apply(deployment("db", 1, { "kubernetes.io/hostname": "demo-w-3" }));
    await fixture.kube.apply(budget("db", { minAvailable: 1 }));
    interface Pod { metadata: { name: string; labels?: Record<string, string> }; spec?: { nodeName?: string }; status?: { phase?: string } }
    const pods = () => fixture.kube.listAll<Pod>("/api/v1/namespaces/default/pods");
    const onW3 = await waitFor(async () => {
      const all = await pods();
      const running = all.filter((p) => p.status?.phase === "Running");
      return running.length === 3 && running.some((p) => p.metadata.labels?.app === "web" && p.spec?.nodeName === "demo-w-3") ? all : undefined;
    }, "web on both workers and db on demo-w-3", 10_000);
    const webOnW3 = onW3.find((p) => p.metadata.labels?.app === "web" && p.spec?.nodeName === "demo-w-3")!.metadata.name;
    const db = onW3.find((p) => p.metadata.labels?.app === "db")!.metadata.name;

    await machines().delete(NAMESPACE, "demo-w-3");
    const blocked = await env.waitFor(machineKind, NAMESPACE, "demo-w-3", (m) => m?.status?.conditions?.some((c) => c.type === "NodeDrained" && c.reason === "EvictionBlocked") === true, 10_000);
    const drainedCondition = blocked!.status!.conditions!.find((c) => c.type === "NodeDrained")!;
    assert.equal(drainedCondition.status, "False");
    assert.match(drainedCondition.message ?? "", new RegExp(`default/${db}: Cannot evict pod as it would violate the pod's disruption budget\\. The disruption budget db needs 1 healthy pods and has 1 currently`));
    await env.waitFor(machineKind, NAMESPACE, "demo-w-3", (m) => m === undefined, 20_000);

    const events = await eventsOf(env, "demo-w-3");
    const reasons = events.map((e) => e.reason);
    assert.equal(events.find((e) => e.reason === "PodsEvicted")?.message, `evicted 1 pod(s) from node demo-w-3: default/${webOnW3}`, "the web pod the budget allows went first");
    assert.ok(reasons.includes("EvictionBlocked"), reasons.join(", "));
    assert.match(events.find((e) => e.reason === "DrainTimedOut")?.message ?? "", new RegExp(`the drain did not finish within 1\\.5s; 1 pod\\(s\\) could not be evicted: default/${db}: .*the machine is deleted anyway`));
    assert.ok(!reasons.includes("NodeDrained"), "the node was not drained, and no event says it was");
    // The evicted web pod was replaced on the other worker; the db pod went with its node, and its
    // replacement has nowhere to run.
    const left = await waitFor(async () => {
      const all = await pods();
      return all.length === 3 && all.filter((p) => p.status?.phase === "Running").length === 2 ? all : undefined;
    }, "web replaced, db gone with its node", 10_000);
    assert.deepEqual(left.map((p) => [p.metadata.labels?.app, p.spec?.nodeName, p.status?.phase]), [["db", undefined, "Pending"], ["web", "demo-w-0", "Running"], ["web", "demo-w-0", "Running"]]);
  });

  it("deletes a control-plane machine of a cluster going away without draining, leaving the load balancer", async () => {
    const cp = await machines().get(NAMESPACE, "demo-cp-0");
    await env.client.of(clusterKind).delete(NAMESPACE, CLUSTER);
    await machines().delete(NAMESPACE, "demo-cp-0");
    await env.waitFor(machineKind, NAMESPACE, "demo-cp-0", (m) => m === undefined, 20_000);
    const reasons = (await eventsOf(env, "demo-cp-0")).map((e) => e.reason);
    assert.ok(!reasons.includes("DrainingNode"), "no drain through the API of a cluster going away");
    assert.ok(reasons.includes("InstanceTerminated"));
    const lb = await fixture.provider.get("loadBalancer", fixture.loadBalancer.id);
    assert.deepEqual(lb?.targets, []);
    const instance = await fixture.provider.get("instance", cp.status!.instanceId!);
    assert.ok(!instance || instance.state === "gone");
  });
});

describe("machine controller, refused creates and deadlines", () => {
  let env: ControllerTestEnv;
  let fixture: ClusterFixture;

  before(async () => {
    env = await controllerTestEnv({ emulateWorkloads: true });
    registerMachineController(env.manager, { providers: env.providers, workloads: env.workloads }, { pollMs: 20, retryFailedAfterMs: 50, joinDeadlineMs: 1500 });
    await env.start();
    fixture = await clusterFixture(env);
  });

  after(async () => {
    fixture?.kube.close();
    await env.close();
  });

  it("retries a create refused for quota once the quota is raised, then fails a node that never joins", async () => {
    env.cloud.setQuota("default", "sim-east-1", { instances: 0 });
    // No control plane ever initialises here: the worker's join waits for discovery until the deadline.
    await env.client.of<MachineObject>(machineKind).create(machine(fixture, "demo-w-0", "worker"));
    const refused = (await env.waitFor(machineKind, NAMESPACE, "demo-w-0", (m) => m?.status?.phase === "Failed"))!;
    const instanceReady = refused.status?.conditions?.find((c) => c.type === "InstanceReady");
    assert.equal(instanceReady?.reason, "QuotaExceeded");
    assert.equal(refused.status?.failureReason, undefined, "a refused create is retried, not given up");
    const secretsOf = () => env.cloud.listSecrets(REGION, { tags: { [TAG_OWNER_UID]: refused.metadata.uid! } });
    assert.deepEqual((await secretsOf()).map((s) => s.reads), [0], "its bootstrap secret waits, unread, for the instance");

    env.cloud.setQuota("default", "sim-east-1", { instances: 32 });
    const waiting = (await env.waitFor(machineKind, NAMESPACE, "demo-w-0", (m) => m?.status?.conditions?.some((c) => c.type === "NodeJoined" && c.reason === "WaitingForControlPlane") === true))!;
    assert.equal(waiting.status?.phase, "Provisioning");
    assert.ok(waiting.status?.instanceId);

    // As if the control plane had been initialised and its API had then gone: the join deadline runs from now.
    const clusters = env.client.of<ClusterObject>(clusterKind);
    const cluster = await clusters.get(NAMESPACE, CLUSTER);
    await clusters.updateStatus({ ...cluster, status: { conditions: [{ type: "ControlPlaneInitialized", status: "True", reason: "Initialized", lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z") }] } });
    const initializedAt = Date.now();
    const failed = (await env.waitFor(machineKind, NAMESPACE, "demo-w-0", (m) => m?.status?.phase === "Failed" && m.status.failureReason !== undefined, 10_000))!;
    assert.equal(failed.status?.failureReason, "DeadlineExceeded");
    assert.match(failed.status?.failureMessage ?? "", /did not join within 1.5s of its instance running and the control plane being initialised/);
    assert.ok(Date.now() - initializedAt >= 500, "not failed before the control plane was initialised");

    // Read once at boot, never joined: it goes with the machine.
    assert.deepEqual((await secretsOf()).map((s) => [s.reads, s.lastReadBy]), [[1, `instance ${failed.status?.instanceId}`]]);
    await env.client.of<MachineObject>(machineKind).delete(NAMESPACE, "demo-w-0");
    await env.waitFor(machineKind, NAMESPACE, "demo-w-0", (m) => m === undefined, 10_000);
    assert.deepEqual(await secretsOf(), [], "the bootstrap secret of a deleted machine is deleted");
  });

  it("finds its instance again when the record of it was lost, never making a second one", async () => {
    // The cluster as before the last test said its control plane was initialised: there is no API here
    // in which a joining machine's token could be made valid again.
    const clusters = env.client.of<ClusterObject>(clusterKind);
    await clusters.updateStatus({ ...(await clusters.get(NAMESPACE, CLUSTER)), status: {} });
    const machines = env.client.of<MachineObject>(machineKind);
    await machines.create(machine(fixture, "demo-w-1", "worker"));
    const first = (await env.waitFor(machineKind, NAMESPACE, "demo-w-1", (m) => m?.status?.instanceId !== undefined))!;
    // As if the status write after the create had been lost (a crash, another replica taking over).
    const wiped = await machines.get(NAMESPACE, "demo-w-1");
    wiped.status = {};
    await machines.updateStatus(wiped);
    const again = (await env.waitFor(machineKind, NAMESPACE, "demo-w-1", (m) => m?.status?.instanceId !== undefined && m.status.conditions?.some((c) => c.type === "InstanceReady") === true))!;
    assert.equal(again.status?.instanceId, first.status?.instanceId);
    const tagged = await fixture.provider.findTagged("instance", { [TAG_OWNER_UID]: first.metadata.uid! });
    assert.deepEqual(tagged.map((i) => i.id), [first.status?.instanceId]);
  });
});

describe("machine controller, on a cloud as strict as a real one", () => {
  let env: ControllerTestEnv;
  let fixture: ClusterFixture;
  const machines = () => env.client.of<MachineObject>(machineKind);
  const failed = (name: string) => env.waitFor(machineKind, NAMESPACE, name, (m) => m?.status?.failureReason !== undefined, 20_000);

  before(async () => {
    // A hundredth of real time: kubeadm's one-minute API-call timeout passes in 0.6 s.
    env = await controllerTestEnv({ emulateWorkloads: true, cloud: { timeScale: 0.01 } });
    registerMachineController(env.manager, { providers: env.providers, workloads: env.workloads }, { pollMs: 20 });
    await env.start();
    // The load balancer forwards 6443 to 6444, where no API server listens.
    fixture = await clusterFixture(env, { targetPort: 6444 });
  });

  after(async () => {
    fixture?.kube.close();
    await env.close();
  });

  it("fails the init machine with kubeadm's timeout naming the endpoint while its target is unhealthy, and says so", async () => {
    await machines().create(machine(fixture, "demo-cp-0", "control-plane", true));
    const m = (await failed("demo-cp-0"))!;
    assert.equal(m.status?.failureReason, "ControlPlaneInitFailed");
    const endpoint = `${fixture.loadBalancer.dnsName}:6443`;
    assert.match(m.status?.failureMessage ?? "", new RegExp(`^error execution phase upload-config/kubeadm: .*Post "https://${endpoint.replaceAll(".", "\\.")}/api/v1/namespaces/kube-system/configmaps\\?timeout=10s": dial tcp ${endpoint.replaceAll(".", "\\.")}: connect: connection refused`));
    const target = m.status?.conditions?.find((c) => c.type === "LoadBalancerTarget");
    assert.deepEqual([target?.status, target?.reason], ["False", "TargetUnhealthy"]);
    assert.match(target?.message ?? "", /unhealthy \(Target\.FailedHealthChecks\)/);
  });

  it("fails a control-plane machine with one CPU with kubeadm's NumCPU preflight error", async () => {
    const small = machine(fixture, "demo-cp-small", "control-plane", true);
    small.spec.machineType = "s1.small";
    await machines().create(small);
    const m = (await failed("demo-cp-small"))!;
    assert.equal(m.status?.failureReason, "ControlPlaneInitFailed");
    assert.equal(m.status?.failureMessage, "error execution phase preflight: [ERROR NumCPU]: the number of available CPUs 1 is less than the required 2");
  });
});

describe("machine controller, in a paused cluster", () => {
  let env: ControllerTestEnv;
  let fixture: ClusterFixture;
  const machines = () => env.client.of<MachineObject>(machineKind);
  const clusters = () => env.client.of<ClusterObject>(clusterKind);

  before(async () => {
    env = await controllerTestEnv({ emulateWorkloads: true });
    registerMachineController(env.manager, { providers: env.providers, workloads: env.workloads }, { pollMs: 20 });
    await env.start();
    fixture = await clusterFixture(env);
  });

  after(async () => {
    fixture?.kube.close();
    await env.close();
  });

  it("leaves a machine as it is while its cluster is paused, deletes one being deleted, and goes on once resumed", async () => {
    const cluster = await clusters().get(NAMESPACE, CLUSTER);
    cluster.spec.paused = true;
    await clusters().update(cluster);
    await machines().create(machine(fixture, "demo-w-0", "worker"));
    // Made after it and deleted at once: a machine being deleted is not held by the pause, so once this
    // one is gone the controller has had the first in hand too.
    const doomed = machine(fixture, "demo-w-1", "worker");
    doomed.metadata.finalizers = [FINALIZER_MACHINE];
    await machines().create(doomed);
    await machines().delete(NAMESPACE, "demo-w-1");
    await env.waitFor(machineKind, NAMESPACE, "demo-w-1", (m) => m === undefined);
    const held = await machines().get(NAMESPACE, "demo-w-0");
    assert.equal(held.status, undefined);
    assert.deepEqual(held.metadata.finalizers ?? [], []);

    const resumed = await clusters().get(NAMESPACE, CLUSTER);
    resumed.spec.paused = false;
    await clusters().update(resumed);
    const launched = await env.waitFor(machineKind, NAMESPACE, "demo-w-0", (m) => m?.status?.instanceId !== undefined);
    assert.equal(launched?.status?.phase, "Provisioning");
  });
});

describe("machine controller, following the cloud's instance changes", () => {
  let env: ControllerTestEnv;
  let fixture: ClusterFixture;
  const machines = () => env.client.of<MachineObject>(machineKind);
  let controller: Controller<MachineObject>;

  before(async () => {
    // Health checks an hour apart where the instance and the node are both followed (a minute where only
    // the instance is): only the cloud's feed of instance changes can bring a dead instance to light.
    ({ env, fixture, controller } = await startMachineController({ pollMs: 20, healthCheckMs: 3_600_000, followedHealthCheckMs: 60_000, watchedHealthCheckMs: 3_600_000 }));
  });

  after(async () => {
    fixture?.kube.close();
    await env.close();
  });

  it("fails a Running machine within seconds of its instance dying, with no health check due", async () => {
    await machines().create(machine(fixture, "demo-cp-0", "control-plane", true));
    await machines().create(machine(fixture, "demo-w-0", "worker"));
    await env.waitFor(machineKind, NAMESPACE, "demo-cp-0", (m) => m?.status?.bootstrapped === true, 20_000);
    await applyNetworkPlugin(env, fixture);
    const running = (await env.waitFor(machineKind, NAMESPACE, "demo-w-0", (m) => m?.status?.phase === "Running", 20_000))!;
    // The controller is done with the machine: nothing is due for it within the next ten minutes (its
    // node watched, the slowest safety net applies).
    await waitFor(() => controller.queue.quietFor(`${NAMESPACE}/demo-w-0`, 600_000), "the machine to be left alone", 10_000);
    const killedAt = Date.now();
    env.cloud.killInstance(running.status!.instanceId!, "the instance's host failed");
    const failed = (await env.waitFor(machineKind, NAMESPACE, "demo-w-0", (m) => m?.status?.phase === "Failed", 5_000))!;
    assert.equal(failed.status?.failureReason, "InstanceFailure");
    assert.match(failed.status?.failureMessage ?? "", /host failed/);
    assert.ok(Date.now() - killedAt < 5_000, "noticed through the feed, not a health check");
    assert.equal((await machines().get(NAMESPACE, "demo-cp-0")).status?.phase, "Running", "the other machine is left as it is");
  });

  it("follows its node through one watch of the cluster's nodes: never asks for it, and fails within seconds of it being deleted", async () => {
    // Every request for one node of the cluster, by any client of this process (the controller's included).
    const asked: string[] = [];
    const get = KubeClient.prototype.get;
    KubeClient.prototype.get = function (this: KubeClient, path: string) {
      if (path.startsWith("/api/v1/nodes/")) asked.push(path);
      return get.call(this, path);
    } as typeof get;
    try {
      await machines().create(machine(fixture, "demo-w-1", "worker"));
      const running = (await env.waitFor(machineKind, NAMESPACE, "demo-w-1", (m) => m?.status?.phase === "Running", 20_000))!;
      assert.equal(running.status?.nodeReady, true);
      await waitFor(() => controller.queue.quietFor(`${NAMESPACE}/demo-w-1`, 600_000), "the machine to be left alone", 10_000);
      const deletedAt = Date.now();
      await fixture.kube.delete("/api/v1/nodes/demo-w-1");
      const failed = (await env.waitFor(machineKind, NAMESPACE, "demo-w-1", (m) => m?.status?.phase === "Failed", 5_000))!;
      assert.equal(failed.status?.failureReason, "NodeGone");
      assert.ok(Date.now() - deletedAt < 5_000, "noticed through the watch, not a health check");
    } finally {
      KubeClient.prototype.get = get;
    }
    // Joined, Ready and gone, all read from the watch its cluster's first machine started.
    assert.deepEqual(asked.filter((path) => path === "/api/v1/nodes/demo-w-1"), []);
  });

  it("stops watching the nodes of a cluster once it is being deleted, its machines still there", async () => {
    assert.ok(env.workloads.holds(NAMESPACE, CLUSTER), "the watch the machines above started");
    const clusters = env.client.of<ClusterObject>(clusterKind);
    const current = await clusters.get(NAMESPACE, CLUSTER);
    // Held by a finalizer of the test's own (no cluster controller runs here): it stays, being deleted.
    await clusters.update({ ...current, metadata: { ...current.metadata, finalizers: [...(current.metadata.finalizers ?? []), "test.slipway.dev/hold"] } });
    await clusters.delete(NAMESPACE, CLUSTER);
    await waitFor(() => !env.workloads.holds(NAMESPACE, CLUSTER), "the cluster's node watch to stop", 5_000);
    assert.equal((await machines().list(NAMESPACE)).items.length, 3, "its machines are not gone yet");
  });
});
