import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, EventObject, MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import { eventKind } from "../../api/core.ts";
import { ConflictError } from "../../apiserver/errors.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { machineKind, ANNOTATION_BOOTSTRAP, FINALIZER_MACHINE } from "../../api/slipway/machine.ts";
import { machinePoolKind } from "../../api/slipway/machinepool.ts";
import { controllerRef, TAG_OWNER_UID } from "../contract.ts";
import { waitFor } from "../../simcloud/test-support.ts";
import { registerMachineController } from "../machine/controller.ts";
import { applyNetworkPlugin, clusterFixture, registerControlPlaneInitialized, CLUSTER, CONNECTION, NAMESPACE, REGION, workloadNodes, type ClusterFixture } from "../machine/test-support.ts";
import { controllerTestEnv, type ControllerTestEnv } from "../testing.ts";
import { queuedKeys, until } from "../../runtime/testing.ts";
import { objectReconciler } from "../../runtime/reconciler.ts";
import { registerMachinePoolController } from "./controller.ts";
import { INFRASTRUCTURE_READY } from "./status.ts";
import { ensureWorkerPools } from "../cluster/children.ts";
import type { ClusterScope } from "../cluster/scope.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { KubeObject } from "../../api/meta.ts";
import { names } from "../../api/slipway/names.ts";
import { bootstrapConfigKind } from "../../api/slipway/bootstrapconfig.ts";
import { simMachinePoolKind } from "../../api/slipway/simmachinepool.ts";

const POOL = "demo-w";

function pool(replicas: number, owner?: ClusterObject): MachinePoolObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "MachinePool",
    metadata: { name: POOL, namespace: NAMESPACE, ...(owner ? { ownerReferences: [controllerRef(owner)] } : {}) },
    spec: { clusterName: CLUSTER, connection: CONNECTION, machineType: "s1.medium", replicas, labels: { tier: "web" } },
  };
}

async function poolEvents(env: ControllerTestEnv): Promise<EventObject[]> {
  const events = await env.client.of<EventObject>(eventKind).list(NAMESPACE);
  return events.items.filter((e) => e.involvedObject.kind === "MachinePool" && e.involvedObject.name === POOL);
}

/**
 * Plays the machine controller's deletion where the tests drive machines by hand: the pool makes its
 * machines with the machine controller's finalizer, which this releases once a machine is deleted.
 */
function releaseMachineFinalizers(env: ControllerTestEnv): void {
  const machines = env.manager.informer(machineKind);
  env.manager.add<MachineObject>({
    name: "machine-finalizer",
    component: "test/machine-finalizer",
    informer: machines,
    reconcile: objectReconciler({ kind: machineKind, cache: machines.cache, finalizer: FINALIZER_MACHINE, phases: [] }),
  });
}

/** A test environment running only the pool controller. */
async function poolControllerEnv(): Promise<ControllerTestEnv> {
  const env = await controllerTestEnv();
  registerMachinePoolController(env.manager, { providers: env.providers, workloads: env.workloads }, { pollMs: 20 });
  releaseMachineFinalizers(env);
  await env.start();
  return env;
}

/** The pools' cluster, with nothing of it built (its status is the test's to set). */
async function createCluster(env: ControllerTestEnv): Promise<void> {
  await env.client.of<ClusterObject>(clusterKind).create({
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: CLUSTER, namespace: NAMESPACE },
    spec: { controlPlane: { connection: CONNECTION, machineType: "s1.medium" } },
  });
}

function helpers(env: () => ControllerTestEnv) {
  const pools = () => env().client.of<MachinePoolObject>(machinePoolKind);
  const machines = () => env().client.of<MachineObject>(machineKind);
  return {
    pools,
    machines,
    /** As `slipway scale` or an edit: read, change, write — again on a conflict with the controller's status writes. */
    async change(mutate: (spec: MachinePoolObject["spec"]) => void): Promise<MachinePoolObject> {
      for (;;) {
        const current = await pools().get(NAMESPACE, POOL);
        mutate(current.spec);
        try {
          return await pools().update(current);
        } catch (error) {
          if (!(error instanceof ConflictError)) throw error;
        }
      }
    },
    async scale(replicas: number) {
      await this.change((spec) => (spec.replicas = replicas));
    },
    async machinesOfPool(): Promise<MachineObject[]> {
      const list = await machines().list(NAMESPACE, { labelSelector: `slipway.dev/pool=${POOL}` });
      return list.items.sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!));
    },
    waitPool(check: (p: MachinePoolObject) => boolean, timeoutMs = 20_000) {
      return env().waitFor(machinePoolKind, NAMESPACE, POOL, (p) => p !== undefined && check(p), timeoutMs) as Promise<MachinePoolObject>;
    },
  };
}

describe("machine pool controller, with machines driven by hand", () => {
  let env: ControllerTestEnv;
  const h = helpers(() => env);

  /** Plays the machine controller: sets a machine's status. */
  async function setMachine(name: string, status: MachineObject["status"]): Promise<void> {
    const m = await h.machines().get(NAMESPACE, name);
    m.status = status;
    await h.machines().updateStatus(m);
  }
  const running = { phase: "Running" as const, instanceId: "i-x", bootstrapped: true, nodeReady: true };

  before(async () => {
    env = await poolControllerEnv();
    await createCluster(env);
  });

  after(() => env.close());

  it("creates every missing machine at once, named by the lowest free indexes", async () => {
    await h.pools().create(pool(3));
    const p = await h.waitPool((p) => p.status?.replicas === 3);
    assert.equal(p.status?.phase, "Pending");
    assert.equal(p.status?.readyReplicas, 0);
    const made = await h.machinesOfPool();
    assert.deepEqual(made.map((m) => m.metadata.name), ["demo-w-0", "demo-w-1", "demo-w-2"]);
    for (const m of made) {
      assert.equal(m.metadata.ownerReferences?.[0]?.uid, p.metadata.uid);
      assert.equal(m.metadata.labels?.["slipway.dev/role"], "worker");
      assert.deepEqual({ ...m.spec }, { clusterName: CLUSTER, role: "worker", connection: CONNECTION, machineType: "s1.medium", image: "ubuntu-22.04", pool: POOL });
    }
    for (const m of made) await setMachine(m.metadata.name!, running);
    const ready = await h.waitPool((p) => p.status?.phase === "Running");
    assert.deepEqual([ready.status?.replicas, ready.status?.readyReplicas, ready.status?.availableReplicas, ready.status?.unavailableReplicas], [3, 3, 3, 0]);
    assert.equal(ready.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
  });

  it("replaces a machine that failed for good and keeps the healthy ones", async () => {
    const before = new Map((await h.machinesOfPool()).map((m) => [m.metadata.name, m.metadata.uid]));
    await setMachine("demo-w-1", { phase: "Failed", instanceId: "i-x", failureReason: "BootFailed", failureMessage: "the image did not boot" });
    // The replacement takes the lowest index free while the failed machine was still there.
    await env.waitFor(machineKind, NAMESPACE, "demo-w-3", (m) => m !== undefined);
    await env.waitFor(machineKind, NAMESPACE, "demo-w-1", (m) => m === undefined);
    const after = new Map((await h.machinesOfPool()).map((m) => [m.metadata.name, m.metadata.uid]));
    assert.deepEqual([...after.keys()], ["demo-w-0", "demo-w-2", "demo-w-3"]);
    assert.equal(after.get("demo-w-0"), before.get("demo-w-0"));
    assert.equal(after.get("demo-w-2"), before.get("demo-w-2"));
    const replacing = (await poolEvents(env)).find((e) => e.reason === "ReplacingMachine");
    assert.match(replacing?.message ?? "", /demo-w-1: BootFailed: the image did not boot/);
    const p = await h.waitPool((p) => p.status?.replicas === 3 && p.status.readyReplicas === 2);
    assert.equal(p.status?.phase, "ScalingUp");
  });

  it("backs off before the next replacement, and pauses while more than maxUnhealthy have failed", async () => {
    const remediation = (p: MachinePoolObject) => p.status?.conditions?.find((c) => c.type === "RemediationAllowed");
    await setMachine("demo-w-3", { phase: "Failed", instanceId: "i-y", failureReason: "JoinWorkerFailed", failureMessage: "kubeadm join failed" });
    const backingOff = await h.waitPool((p) => remediation(p)?.reason === "BackingOff");
    assert.match(remediation(backingOff)?.message ?? "", /^replacing demo-w-3 in \d+s \(backing off after 1 replacement\(s\)\)$/);
    assert.equal(backingOff.status?.remediation?.attempts, 1);
    assert.equal(backingOff.status?.reason, "JoinWorkerFailed");
    assert.match(backingOff.status?.message ?? "", /^Machine demo-w-3: kubeadm join failed/);
    // A second machine fails: 2 of 3 is more than 40 %, so neither is replaced.
    await setMachine("demo-w-0", { phase: "Failed", instanceId: "i-x", failureReason: "JoinWorkerFailed", failureMessage: "kubeadm join failed" });
    const paused = await h.waitPool((p) => remediation(p)?.reason === "TooManyUnhealthy");
    assert.match(remediation(paused)?.message ?? "", /2 machines failed \(demo-w-0, demo-w-3\), more than maxUnhealthy 1 of 3/);
    assert.deepEqual((await h.machinesOfPool()).map((m) => [m.metadata.name, m.metadata.deletionTimestamp]), [["demo-w-0", undefined], ["demo-w-2", undefined], ["demo-w-3", undefined]]);
    assert.ok((await poolEvents(env)).some((e) => e.reason === "TooManyUnhealthy"));
    // Once every machine is Ready again, replacements are allowed and their count starts over.
    await setMachine("demo-w-0", running);
    await setMachine("demo-w-3", running);
    const healed = await h.waitPool((p) => p.status?.phase === "Running" && remediation(p)?.status === "True");
    assert.equal(healed.status?.remediation, undefined);
  });

  it("scales down machines not Running first, then the highest index", async () => {
    await setMachine("demo-w-3", running);
    await h.waitPool((p) => p.status?.phase === "Running");
    await setMachine("demo-w-0", { phase: "Provisioned", instanceId: "i-x", bootstrapped: true, nodeReady: false });
    await h.scale(1);
    const p = await h.waitPool((p) => p.status?.replicas === 1 && p.status.phase === "Running");
    assert.equal(p.status?.observedGeneration, p.metadata.generation);
    assert.deepEqual((await h.machinesOfPool()).map((m) => m.metadata.name), ["demo-w-2"]);
  });

  it("counts a Ready machine available after minReadySeconds, looking again just then", async () => {
    // Long enough for the pool to see the machine Ready but not yet available also on a busy machine; the
    // timestamp has whole seconds, so it is taken at the next second, never earlier than now.
    await h.change((spec) => (spec.minReadySeconds = 5));
    const readySince = new Date(Math.ceil(Date.now() / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
    await setMachine("demo-w-2", { ...running, conditions: [{ type: "NodeReady", status: "True", reason: "NodeReady", lastTransitionTime: readySince }] });
    const waiting = await h.waitPool((p) => p.status?.readyReplicas === 1 && p.status.availableReplicas === 0);
    assert.deepEqual([waiting.status?.unavailableReplicas, waiting.status?.phase], [1, "ScalingUp"]);
    // Nothing else changes: the pool is requeued for the moment the machine becomes available.
    const available = await h.waitPool((p) => p.status?.availableReplicas === 1, 15_000);
    assert.deepEqual([available.status?.unavailableReplicas, available.status?.phase], [0, "Running"]);
    await h.change((spec) => delete spec.minReadySeconds);
  });

  it("rolls to a new machine type: a new machine first, the old one deleted once the new one is Running", async () => {
    await h.change((spec) => (spec.machineType = "s1.large"));
    const fresh = await env.waitFor(machineKind, NAMESPACE, "demo-w-0", (m) => m !== undefined);
    assert.equal(fresh?.spec.machineType, "s1.large");
    const rolling = await h.waitPool((p) => p.status?.observedGeneration === p.metadata.generation && p.status?.replicas === 2);
    assert.equal(rolling.status?.phase, "ScalingUp");
    assert.equal(rolling.status?.conditions?.find((c) => c.type === "MachinesUpToDate")?.reason, "Rolling");
    const old = await h.machines().get(NAMESPACE, "demo-w-2");
    assert.equal(old.metadata.deletionTimestamp, undefined, "the old machine serves until the new one does");

    await setMachine("demo-w-0", running);
    await env.waitFor(machineKind, NAMESPACE, "demo-w-2", (m) => m === undefined);
    const done = await h.waitPool((p) => p.status?.phase === "Running");
    assert.deepEqual([done.status?.replicas, done.status?.readyReplicas, done.status?.updatedReplicas], [1, 1, 1]);
    assert.deepEqual((await h.machinesOfPool()).map((m) => [m.metadata.name, m.spec.machineType]), [["demo-w-0", "s1.large"]]);
    const rolled = (await poolEvents(env)).filter((e) => e.reason === "RollingMachines").map((e) => e.message);
    assert.ok(rolled.some((m) => /creating demo-w-0$/.test(m ?? "")), rolled.join("\n"));
    assert.ok(rolled.some((m) => /deleting demo-w-2$/.test(m ?? "")), rolled.join("\n"));
  });

  it("replaces no failed machine while its maxUnhealthy is 0, and names the limit", async () => {
    await h.change((spec) => (spec.maxUnhealthy = 0));
    await h.waitPool((p) => p.status?.observedGeneration === p.metadata.generation);
    await setMachine("demo-w-0", { phase: "Failed", instanceId: "i-z", failureReason: "BootFailed", failureMessage: "the image did not boot" });
    const paused = await h.waitPool((p) => p.status?.conditions?.find((c) => c.type === "RemediationAllowed")?.reason === "TooManyUnhealthy");
    assert.match(paused.status?.conditions?.find((c) => c.type === "RemediationAllowed")?.message ?? "", /1 machines failed \(demo-w-0\), more than maxUnhealthy 0 of 1/);
    assert.deepEqual((await h.machinesOfPool()).map((m) => [m.metadata.name, m.metadata.deletionTimestamp]), [["demo-w-0", undefined]]);
  });

  it("deletes its machines when deleted, then goes", async () => {
    await h.pools().delete(NAMESPACE, POOL);
    await env.waitFor(machinePoolKind, NAMESPACE, POOL, (p) => p === undefined);
    assert.deepEqual(await h.machinesOfPool(), []);
  });
});

describe("machine pool controller, being deleted", () => {
  let env: ControllerTestEnv;
  let queued: string[];
  const h = helpers(() => env);
  const HOLD = "test.slipway.dev/hold";
  const POOL_KEY = `${NAMESPACE}/${POOL}`;

  before(async () => {
    env = await controllerTestEnv();
    const controller = registerMachinePoolController(env.manager, { providers: env.providers, workloads: env.workloads }, { pollMs: 20 });
    releaseMachineFinalizers(env);
    await env.start();
    await createCluster(env);
    queued = queuedKeys(controller);
  });
  after(() => env.close());

  it("looks again only when a machine goes, not at each status change of a machine on its way out", async () => {
    await h.pools().create(pool(2));
    await until(async () => (await h.machinesOfPool()).length === 2, "the pool's two machines", 10_000);
    // One machine held on its way out, as the machine controller holds one while it drains and terminates.
    const [held] = await h.machinesOfPool();
    held!.metadata.finalizers = [...(held!.metadata.finalizers ?? []), HOLD];
    await h.machines().update(held!);
    await h.pools().delete(NAMESPACE, POOL);
    const cache = env.manager.informer(machineKind).cache;
    await until(() => cache.list().length === 1 && cache.list()[0]!.metadata.deletionTimestamp !== undefined, "one machine left, being deleted", 10_000);

    queued.length = 0;
    // Its steps out: drained, deregistered, terminated — each a status write.
    for (const step of ["NodeDrained", "TargetDeregistered", "InstanceTerminated"]) {
      const m = await h.machines().get(NAMESPACE, held!.metadata.name!);
      m.status = { ...m.status, phase: "Deleting", conditions: [...(m.status?.conditions ?? []), { type: step, status: "True", reason: "Done", lastTransitionTime: "2025-01-01T00:00:00Z" }] };
      const last = (await h.machines().updateStatus(m)).metadata.resourceVersion!;
      await until(() => cache.get(`${NAMESPACE}/${held!.metadata.name}`)?.metadata.resourceVersion === last, "the status change seen", 5_000);
    }
    assert.deepEqual(queued.filter((k) => k === POOL_KEY), [], "a status change of a machine on its way out queued the pool being deleted");

    const gone = await h.machines().get(NAMESPACE, held!.metadata.name!);
    gone.metadata.finalizers = gone.metadata.finalizers!.filter((f) => f !== HOLD);
    await h.machines().update(gone);
    await env.waitFor(machinePoolKind, NAMESPACE, POOL, (p) => p === undefined);
    assert.ok(queued.includes(POOL_KEY), "the machine's going queues the pool");
  });
});

describe("machine pool controller, when the control plane comes after its machines", () => {
  let env: ControllerTestEnv;
  const h = helpers(() => env);
  const remediation = (p: MachinePoolObject) => p.status?.conditions?.find((c) => c.type === "RemediationAllowed");
  const joinFailed = {
    phase: "Failed" as const,
    instanceId: "i-x",
    failureReason: "JoinWorkerFailed",
    failureMessage: "error execution phase preflight: couldn't validate the identity of the API Server: connect: connection refused",
  };
  /** Fails every machine of the pool as a kubeadm join that found no API server does; answers their uids. */
  async function failAll(): Promise<string[]> {
    const machines = await h.machinesOfPool();
    for (const m of machines) await h.machines().updateStatus({ ...m, status: joinFailed });
    return machines.map((m) => m.metadata.uid!);
  }

  before(async () => {
    env = await poolControllerEnv();
    await createCluster(env);
  });

  after(() => env.close());

  it("replaces workers that failed to join before the control plane was initialised, however many, once it is", async () => {
    await h.pools().create(pool(3));
    await h.waitPool((p) => p.status?.replicas === 3);
    const first = await failAll();
    // Every worker failed and the control plane is not there: nothing to tell the cause by, so nothing is replaced.
    await h.waitPool((p) => remediation(p)?.reason === "TooManyUnhealthy");
    assert.deepEqual((await h.machinesOfPool()).map((m) => m.metadata.uid), first);

    // The (replaced) control plane is initialised after the workers were made: they failed for want of it.
    // (Timestamps have whole seconds: the initialisation is stamped in a second after the machines' own.)
    const newest = Math.max(...(await h.machinesOfPool()).map((m) => Date.parse(m.metadata.creationTimestamp!)));
    await waitFor(() => Date.now() >= newest + 1_000, "a second after the machines were made", 5_000);
    const initializedAt = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
    const clusters = env.client.of<ClusterObject>(clusterKind);
    const cluster = await clusters.get(NAMESPACE, CLUSTER);
    await clusters.updateStatus({ ...cluster, status: { conditions: [{ type: "ControlPlaneInitialized", status: "True", reason: "Initialized", lastTransitionTime: initializedAt }] } });
    await waitFor(
      async () => {
        const machines = await h.machinesOfPool();
        return machines.length === 3 && machines.every((m) => !first.includes(m.metadata.uid!) && m.status?.failureReason === undefined);
      },
      "three new machines in place of the failed ones",
      20_000,
    );
    const replaced = await h.waitPool((p) => p.status?.replicas === 3 && remediation(p)?.status === "True");
    assert.equal(replaced.status?.remediation?.attempts, 1);
    const replacing = (await poolEvents(env)).filter((e) => e.reason === "ReplacingMachine").map((e) => e.message);
    assert.equal(replacing.length, 3, replacing.join("\n"));

    // Their replacements joined a control plane that was there: failing all, they count again.
    await failAll();
    const paused = await h.waitPool((p) => remediation(p)?.reason === "TooManyUnhealthy");
    assert.match(remediation(paused)?.message ?? "", /^3 machines failed \(demo-w-\d, demo-w-\d, demo-w-\d\), more than maxUnhealthy 1 of 3/);
  });
});

describe("machine pool controller, with real machines and nodes", () => {
  let env: ControllerTestEnv;
  let fixture: ClusterFixture;
  const h = helpers(() => env);

  before(async () => {
    env = await controllerTestEnv({ emulateWorkloads: true });
    const deps = { providers: env.providers, workloads: env.workloads };
    registerMachineController(env.manager, deps, { pollMs: 20, healthCheckMs: 50 });
    registerControlPlaneInitialized(env.manager);
    registerMachinePoolController(env.manager, deps, { pollMs: 20 });
    await env.start();
    fixture = await clusterFixture(env);
    await h.machines().create({
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Machine",
      metadata: { name: "demo-cp-0", namespace: NAMESPACE, annotations: { [ANNOTATION_BOOTSTRAP]: "init" }, ownerReferences: [controllerRef(fixture.cluster)] },
      spec: { clusterName: CLUSTER, role: "control-plane", connection: CONNECTION, machineType: "s1.medium" },
    });
    await env.waitFor(machineKind, NAMESPACE, "demo-cp-0", (m) => m?.status?.bootstrapped === true, 20_000);
    await applyNetworkPlugin(env, fixture);
    await env.waitFor(machineKind, NAMESPACE, "demo-cp-0", (m) => m?.status?.phase === "Running", 20_000);
  });

  after(async () => {
    fixture?.kube.close();
    await env.close();
  });

  it("scales up from 0 to 3 machines whose nodes join Ready with the pool's labels", async () => {
    await h.pools().create(pool(0, fixture.cluster));
    await h.waitPool((p) => p.status?.phase === "Running" && p.status.replicas === 0);
    await h.scale(3);
    const p = await h.waitPool((p) => p.status?.phase === "Running" && p.status.readyReplicas === 3);
    assert.equal(p.status?.replicas, 3);
    const nodes = await workloadNodes(fixture);
    assert.deepEqual(nodes.map((n) => [n.name, n.ready]), [["demo-cp-0", true], ["demo-w-0", true], ["demo-w-1", true], ["demo-w-2", true]]);
    const worker = nodes.find((n) => n.name === "demo-w-0")!;
    assert.equal(worker.labels["slipway.dev/pool"], POOL);
    assert.equal(worker.labels.tier, "web");
    // The pool lists its instances' provider IDs and its nodes as the workload cluster has them.
    const workload = await fixture.kube.listAll<{ metadata: { name?: string; uid?: string }; spec?: { providerID?: string } }>("/api/v1/nodes");
    const workers = workload.filter((n) => n.metadata.name !== "demo-cp-0");
    const listed = await h.waitPool((p) => p.spec.providerIDList?.length === 3 && p.status?.nodeRefs?.every((r) => r.uid !== undefined) === true);
    assert.deepEqual(listed.spec.providerIDList, workers.map((n) => n.spec?.providerID).sort());
    assert.deepEqual(listed.status?.nodeRefs?.map((r) => [r.name, r.uid]), workers.map((n) => [n.metadata.name, n.metadata.uid]));
    assert.deepEqual([listed.status?.bootstrapReady, listed.status?.availableReplicas, listed.status?.updatedReplicas], [true, 3, 3]);
  });

  it("scales down from 3 to 1: nodes drained and removed, instances terminated", async () => {
    const instances = new Map((await h.machinesOfPool()).map((m) => [m.metadata.name!, m.status!.instanceId!]));
    await h.scale(1);
    await h.waitPool((p) => p.status?.phase === "Running" && p.status.replicas === 1);
    await env.waitFor(machineKind, NAMESPACE, "demo-w-2", (m) => m === undefined);
    await env.waitFor(machineKind, NAMESPACE, "demo-w-1", (m) => m === undefined);
    assert.deepEqual((await h.machinesOfPool()).map((m) => m.metadata.name), ["demo-w-0"]);
    assert.deepEqual((await workloadNodes(fixture)).map((n) => n.name), ["demo-cp-0", "demo-w-0"]);
    for (const name of ["demo-w-1", "demo-w-2"]) {
      const instance = await fixture.provider.get("instance", instances.get(name)!);
      assert.ok(!instance || instance.state === "gone", `instance of ${name} is ${instance?.state}`);
    }
    const events = await env.client.of<EventObject>(eventKind).list(NAMESPACE);
    const drained = events.items.filter((e) => e.reason === "NodeDrained").map((e) => e.involvedObject.name).sort();
    assert.deepEqual(drained, ["demo-w-1", "demo-w-2"]);
  });

  it("replaces a machine whose instance is killed, keeping the others", async () => {
    await h.scale(2);
    await h.waitPool((p) => p.status?.phase === "Running" && p.status.readyReplicas === 2);
    const [victim, survivor] = await h.machinesOfPool();
    const cp = await h.machines().get(NAMESPACE, "demo-cp-0");
    env.cloud.killInstance(victim!.status!.instanceId!);
    // The failed machine is deleted and a new one takes its place; it ends Running with a Ready node.
    await env.waitFor(machineKind, NAMESPACE, victim!.metadata.name!, (m) => m === undefined, 20_000);
    // Once the failed machine is gone, the pool no longer reports its failure.
    await h.waitPool((p) => p.status?.phase === "Running" && p.status.readyReplicas === 2 && p.status.reason === undefined);
    const now = await h.machinesOfPool();
    assert.equal(now.length, 2);
    assert.ok(now.some((m) => m.metadata.uid === survivor!.metadata.uid), "the healthy machine is kept");
    assert.ok(!now.some((m) => m.metadata.uid === victim!.metadata.uid));
    assert.equal((await h.machines().get(NAMESPACE, "demo-cp-0")).metadata.uid, cp.metadata.uid);
    const replacing = (await poolEvents(env)).find((e) => e.reason === "ReplacingMachine");
    assert.match(replacing?.message ?? "", new RegExp(`${victim!.metadata.name}: InstanceFailure`));
    assert.equal((await workloadNodes(fixture)).filter((n) => n.ready).length, 3);
  });

  it("replaces a machine that could not read its bootstrap secret at boot, as any failed boot", async () => {
    await h.waitPool((p) => p.status?.phase === "Running" && p.status.readyReplicas === 2);
    const limits = (await env.cloud.getQuota(REGION)).limits;
    // The new machine's secret is made before its instance, which the quota holds back for now.
    env.cloud.setQuota("default", REGION, { instances: 0 });
    await h.scale(3);
    const refused = await waitFor(async () => (await h.machinesOfPool()).find((m) => m.status?.conditions?.some((c) => c.type === "InstanceReady" && c.reason === "QuotaExceeded")), "a machine held back by the quota", 20_000);
    const [secret] = await env.cloud.listSecrets(REGION, { tags: { [TAG_OWNER_UID]: refused.metadata.uid! } });
    assert.ok(secret, "its bootstrap secret exists before its instance");
    // As if it had expired while the machine waited: the instance boots, cannot read it, and never runs kubeadm.
    await env.cloud.deleteSecret(REGION, secret.id);
    env.cloud.setQuota("default", REGION, { instances: limits.instances });
    await env.waitFor(machineKind, NAMESPACE, refused.metadata.name!, (m) => m === undefined, 20_000);
    await h.waitPool((p) => p.status?.phase === "Running" && p.status.readyReplicas === 3 && p.status.reason === undefined);
    const replacing = (await poolEvents(env)).filter((e) => e.reason === "ReplacingMachine").map((e) => e.message ?? "");
    assert.ok(
      replacing.some((m) => m.startsWith(`replacing machine ${refused.metadata.name}: BootstrapSecretUnavailable: the machine could not read its bootstrap secret at boot: secret ${secret.id} could not be read`)),
      replacing.join("\n"),
    );
    await h.scale(2);
    await h.waitPool((p) => p.status?.phase === "Running" && p.status.replicas === 2);
  });

  it("rolls a change of node labels and taints: new nodes register with them, the old ones are drained and removed", async () => {
    await h.waitPool((p) => p.status?.phase === "Running" && p.status.readyReplicas === 2);
    const before = await h.machinesOfPool();
    const changed = await h.change((spec) => {
      spec.labels = { tier: "api" };
      spec.taints = [{ key: "dedicated", value: "api", effect: "NoSchedule" }];
    });
    const done = await h.waitPool(
      // The pool's own writes of spec.providerIDList count as generations too.
      (p) => (p.status?.observedGeneration ?? 0) >= changed.metadata.generation! && p.status?.phase === "Running" && p.status.updatedReplicas === 2 && p.status.replicas === 2,
      40_000,
    );
    assert.equal(done.status?.readyReplicas, 2);
    const after = await h.machinesOfPool();
    const kept = after.filter((m) => before.some((b) => b.metadata.uid === m.metadata.uid));
    assert.deepEqual(kept, [], "every machine was replaced");
    const nodes = (await workloadNodes(fixture)).filter((n) => n.name !== "demo-cp-0");
    assert.deepEqual(nodes.map((n) => n.name), after.map((m) => m.metadata.name), "a node per machine, the old ones removed from the cluster");
    for (const node of nodes) {
      assert.equal(node.ready, true);
      assert.equal(node.labels.tier, "api", `node ${node.name} registered with the new label`);
    }
    const events = await env.client.of<EventObject>(eventKind).list(NAMESPACE);
    const drained = events.items.filter((e) => e.reason === "NodeDrained" && before.some((b) => b.metadata.uid === e.involvedObject.uid));
    assert.equal(drained.length, 2, "each old node was drained before its machine went");
  });
});

describe("machine pool controller, in a paused cluster", () => {
  let env: ControllerTestEnv;
  const clusters = () => env.client.of<ClusterObject>(clusterKind);
  const pools = () => env.client.of<MachinePoolObject>(machinePoolKind);
  const machinesOf = async (clusterName: string) =>
    (await env.client.of<MachineObject>(machineKind).list(NAMESPACE, { labelSelector: `slipway.dev/cluster=${clusterName}` })).items.map((m) => m.metadata.name).sort();

  async function clusterWithPool(name: string, paused: boolean): Promise<void> {
    const cluster = await clusters().create({
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name, namespace: NAMESPACE },
      spec: { paused, controlPlane: { connection: CONNECTION, machineType: "s1.medium" } },
    });
    const p = pool(2, cluster);
    p.metadata.name = `${name}-w`;
    p.spec.clusterName = name;
    await pools().create(p);
  }

  before(async () => {
    env = await poolControllerEnv();
  });

  after(() => env.close());

  it("makes no machines while the cluster is paused, and makes them once it is resumed", async () => {
    await clusterWithPool("held", true);
    // A pool of a cluster that is not paused, made after: once its machines exist, the controller has
    // had the paused cluster's pool in hand too.
    await clusterWithPool("free", false);
    await env.waitFor(machinePoolKind, NAMESPACE, "free-w", (p) => p?.status?.replicas === 2);
    assert.deepEqual(await machinesOf("free"), ["free-w-0", "free-w-1"]);
    assert.deepEqual(await machinesOf("held"), []);
    assert.equal((await pools().get(NAMESPACE, "held-w")).status, undefined, "a paused pool's status is left as it is");

    const held = await clusters().get(NAMESPACE, "held");
    held.spec.paused = false;
    await clusters().update(held);
    await env.waitFor(machinePoolKind, NAMESPACE, "held-w", (p) => p?.status?.replicas === 2);
    assert.deepEqual(await machinesOf("held"), ["held-w-0", "held-w-1"]);
  });
});

describe("machine pool controller, adopting pools created on their own", () => {
  let env: ControllerTestEnv;
  const h = helpers(() => env);

  before(async () => {
    env = await poolControllerEnv();
  });

  after(() => env.close());

  it("reports a pool naming a missing cluster, makes nothing, and is adopted once the cluster exists", async () => {
    await h.pools().create(pool(2));
    const waiting = await h.waitPool((p) => p.status?.reason === "WaitingForCluster");
    assert.equal(waiting.status?.phase, "Pending");
    assert.match(waiting.status?.message ?? "", /spec\.clusterName: Cluster "demo" does not exist/);
    assert.equal(waiting.status?.conditions?.find((c) => c.type === "Ready")?.status, "False");
    assert.deepEqual(await h.machinesOfPool(), []);
    assert.equal(waiting.metadata.ownerReferences, undefined);

    const cluster = await env.client.of<ClusterObject>(clusterKind).create({
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name: CLUSTER, namespace: NAMESPACE },
      spec: { controlPlane: { connection: CONNECTION, machineType: "s1.medium" } },
    });
    const adopted = await h.waitPool((p) => p.status?.replicas === 2);
    assert.deepEqual(adopted.metadata.ownerReferences, [controllerRef(cluster)]);
    assert.equal(adopted.metadata.labels?.["slipway.dev/cluster"], CLUSTER);
    assert.equal(adopted.status?.selector, `slipway.dev/cluster=${CLUSTER},slipway.dev/pool=${POOL}`);
    assert.equal(adopted.status?.conditions?.find((c) => c.type === "ClusterOwned")?.status, "True");
    assert.ok((await poolEvents(env)).some((e) => e.reason === "AdoptedByCluster"));
  });
});

describe("machine pool controller, on a pool a cluster declares on a scale set", () => {
  let env: ControllerTestEnv;
  let cluster: ClusterObject;
  const declared = (worker: string) => names.machinePool(CLUSTER, worker);
  const infrastructureReason = (p: MachinePoolObject) => p.status?.conditions?.find((c) => c.type === INFRASTRUCTURE_READY)?.reason;
  const waitReason = (name: string, reason: string) =>
    env.waitFor(machinePoolKind, NAMESPACE, name, (p) => p !== undefined && infrastructureReason(p) === reason) as Promise<MachinePoolObject>;
  const templateObjects = (name: string) => Promise.all([env.client.of(bootstrapConfigKind).get(NAMESPACE, name), env.client.of(simMachinePoolKind).get(NAMESPACE, name)]);

  /** One pass of the cluster controller's worker-pool phase, with the pools as given. */
  async function declarePools(pools: MachinePoolObject[]): Promise<string[]> {
    const events: string[] = [];
    const ctx = { client: env.client, clock: { now: () => Date.now() }, event: async (_o: unknown, _t: unknown, reason: string) => void events.push(reason) } as unknown as ReconcileContext;
    const scope = { object: cluster, pools, controlPlane: [], machines: [], changedChildren: new Set<string>() } as unknown as ClusterScope;
    await ensureWorkerPools(ctx, scope);
    return events;
  }

  before(async () => {
    env = await poolControllerEnv();
    cluster = await env.client.of<ClusterObject>(clusterKind).create({
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name: CLUSTER, namespace: NAMESPACE },
      spec: {
        controlPlane: { connection: CONNECTION, machineType: "s1.medium" },
        workers: ["set", "late"].map((name) => ({ name, connection: CONNECTION, machineType: "s1.small", replicas: 2, scaleSet: { maxSize: 4 } })),
      },
    });
  });

  after(() => env.close());

  it("makes its BootstrapConfig and SimMachinePool controlled by the pool already: the pool writes neither and records no adoption", async () => {
    assert.deepEqual(await declarePools([]), ["CreatingWorkerPool", "CreatingWorkerPool"]);
    const pool = await env.client.of<MachinePoolObject>(machinePoolKind).get(NAMESPACE, declared("set"));
    const made = await templateObjects(declared("set"));
    for (const object of made) assert.deepEqual(object.metadata.ownerReferences, [controllerRef(pool)], object.kind);
    // The pool got as far as its bootstrap data: past the adoption step.
    await waitReason(declared("set"), "WaitingForBootstrapData");
    assert.deepEqual(
      (await templateObjects(declared("set"))).map((o) => o.metadata.resourceVersion),
      made.map((o) => o.metadata.resourceVersion),
      "the pool wrote nothing to its template's objects",
    );
    const events = (await env.client.of<EventObject>(eventKind).list(NAMESPACE)).items.filter((e) => e.involvedObject.name === declared("set"));
    assert.deepEqual(events.filter((e) => e.reason?.startsWith("Adopted")), []);
  });

  it("makes them again, controlled by the pool, when the pool reports one missing", async () => {
    // As after a restart between making the pool and its objects, or a user deleting them.
    for (const kind of [bootstrapConfigKind, simMachinePoolKind]) {
      const client = env.client.of<KubeObject>(kind);
      await client.patch(NAMESPACE, declared("late"), "merge", { metadata: { finalizers: null } });
      await client.delete(NAMESPACE, declared("late"));
    }
    const missing = await waitReason(declared("late"), "TemplateObjectMissing");
    await declarePools([missing]);
    for (const object of await templateObjects(declared("late"))) assert.deepEqual(object.metadata.ownerReferences, [controllerRef(missing)], object.kind);
    await waitReason(declared("late"), "WaitingForBootstrapData");
  });
});
