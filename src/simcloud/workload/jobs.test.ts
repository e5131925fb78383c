import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import { cell } from "../../api/testing.ts";
import type { KubeObject } from "../../api/meta.ts";
import { Collectors } from "../../apiserver/collectors.ts";
import { InvalidError } from "../../apiserver/errors.ts";
import { renderCniManifest } from "../../bootstrap/cni.ts";
import { SqliteStore } from "../../store/sqlite.ts";
import { waitFor } from "../test-support.ts";
import { WorkloadCluster } from "./cluster.ts";
import { jobKind, type JobObject } from "./kinds-batch.ts";
import { workloadRegistry, type PodObject } from "./kinds.ts";
import type { NodeFacts } from "./manifests.ts";

const at = "2025-03-01T10:00:00Z";
const NAMESPACES = ["default", "kube-system"];

function facts(name: string, index: number, labels: Record<string, string> = {}): NodeFacts {
  return {
    name,
    controlPlane: false,
    providerID: `sim://${name}`,
    internalIp: `10.0.0.${10 + index}`,
    podCidr: `10.244.${index}.0/24`,
    kubeletVersion: "v1.31.2",
    containerRuntime: "containerd://1.7.22",
    vcpus: 2,
    memoryMiB: 4096,
    machineType: "s1.medium",
    region: "sim-east-1",
    zone: "sim-east-1a",
    labels,
  };
}

function job(name: string, spec: Record<string, unknown>, podSpec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, namespace: "default" },
    spec: { ...spec, template: { spec: { restartPolicy: "Never", containers: [{ name: "work", image: "busybox:1.36", command: ["true"] }], ...podSpec } } },
  };
}

describe("Jobs of an emulated cluster", () => {
  let store: SqliteStore;
  let cluster: WorkloadCluster;
  let collectors: Collectors;

  const jobNamed = async (name: string) => (await cluster.objects.get(cluster.kinds.job, "default", name)) as JobObject;
  const podsOf = async (j: JobObject) => ((await cluster.objects.list(cluster.kinds.pod, "default")).items as PodObject[]).filter((p) => p.metadata.ownerReferences?.some((r) => r.uid === j.metadata.uid));
  const create = async (object: KubeObject) => {
    await cluster.objects.create(cluster.kinds.job, "default", object);
    await cluster.controllers.sync(at);
    return jobNamed(object.metadata.name!);
  };

  before(async () => {
    store = SqliteStore.open(":memory:");
    cluster = new WorkloadCluster("c1", workloadRegistry(), store);
    collectors = new Collectors(cluster.objects, pino({ level: "silent" }));
    await collectors.start();
    for (const name of NAMESPACES) await cluster.objects.create(cluster.kinds.namespace, undefined, { metadata: { name } });
    await cluster.addNode(facts("w-0", 1), at);
    await cluster.addNode(facts("w-1", 2), at);
    // The network plugin runs on both nodes, so they are Ready and take pods.
    for (const object of renderCniManifest("flannel", { podCIDR: "10.244.0.0/16" })) {
      await cluster.objects.create(cluster.objects.registry.byKind(object.apiVersion, object.kind)!, object.metadata.namespace, object);
    }
    const { pluginPending } = await cluster.controllers.sync(at);
    for (const node of pluginPending) await cluster.controllers.startNetworkPlugin(node, at);
    await cluster.controllers.sync(at);
    assert.deepEqual(await cluster.controllers.nodesWithoutNetwork(), []);
  });

  after(async () => {
    await collectors.stop();
    await store.close();
  });

  it("runs 3 completions 2 at a time to Complete, with pods labelled and owned as Kubernetes makes them", async () => {
    const done = await create(job("batch", { completions: 3, parallelism: 2 }));
    const uid = done.metadata.uid!;
    assert.deepEqual(done.spec?.selector, { matchLabels: { "batch.kubernetes.io/controller-uid": uid } });
    assert.equal(done.spec?.backoffLimit, 6);
    assert.equal(done.status?.succeeded, 3);
    assert.equal(done.status?.active, undefined);
    assert.equal(done.status?.startTime, at);
    assert.equal(done.status?.completionTime, at);
    assert.deepEqual(
      done.status?.conditions?.map((c) => [c.type, c.status, c.reason]),
      [
        ["SuccessCriteriaMet", "True", "CompletionsReached"],
        ["Complete", "True", "CompletionsReached"],
      ],
    );

    const pods = await podsOf(done);
    assert.equal(pods.length, 3);
    for (const pod of pods) {
      assert.equal(pod.status?.phase, "Succeeded");
      assert.equal(cell(cluster.kinds.pod as never, "STATUS", pod as never), "Completed");
      assert.match(pod.metadata.name!, /^batch-[a-z0-9]{5}$/);
      assert.deepEqual(pod.metadata.labels, { "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "batch", "controller-uid": uid, "job-name": "batch" });
      assert.deepEqual(pod.metadata.ownerReferences, [{ apiVersion: "batch/v1", kind: "Job", name: "batch", uid, controller: true, blockOwnerDeletion: true }]);
      assert.ok((pod.spec as { nodeName?: string }).nodeName?.startsWith("w-"));
    }

    // Nothing more happens to a finished Job.
    await cluster.controllers.sync("2025-03-01T10:05:00Z");
    assert.equal((await podsOf(done)).length, 3);
    assert.equal((await jobNamed("batch")).status?.completionTime, at);
  });

  it("prints STATUS, COMPLETIONS, DURATION and AGE as kubectl does", async () => {
    const names = jobKind.printerColumns.filter((c) => !c.priority).map((c) => c.name);
    assert.deepEqual(names, ["STATUS", "COMPLETIONS", "DURATION", "AGE"]);
    const done = await jobNamed("batch");
    assert.equal(cell(jobKind, "STATUS", done), "Complete");
    assert.equal(cell(jobKind, "COMPLETIONS", done), "3/3");
    const took = { ...done, status: { ...done.status, startTime: "2025-03-01T10:00:00Z", completionTime: "2025-03-01T10:02:05Z" } };
    assert.equal(cell(jobKind, "DURATION", took), "2m5s");
    const running: JobObject = { ...done, status: { active: 2 } };
    assert.equal(cell(jobKind, "STATUS", running), "Running");
    assert.equal(cell(jobKind, "COMPLETIONS", running), "0/3");
    assert.equal(cell(jobKind, "DURATION", running), "");
    const queue: JobObject = { ...running, spec: { ...running.spec!, completions: undefined, parallelism: 4 } };
    assert.equal(cell(jobKind, "COMPLETIONS", queue), "0/1 of 4");
  });

  it("keeps a Job whose pods fit no node active, its pods Pending with the scheduler's reason", async () => {
    const stuck = await create(job("stuck", { completions: 3, parallelism: 2 }, { nodeSelector: { disk: "ssd" } }));
    assert.equal(stuck.status?.active, 2);
    assert.equal(stuck.status?.succeeded, undefined);
    assert.equal(stuck.status?.conditions, undefined);
    assert.equal(cell(jobKind, "STATUS", stuck), "Running");
    assert.equal(cell(jobKind, "COMPLETIONS", stuck), "0/3");
    const pods = await podsOf(stuck);
    assert.equal(pods.length, 2, "no more than parallelism at a time");
    for (const pod of pods) {
      assert.equal(pod.status?.phase, "Pending");
      const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
      assert.equal(scheduled?.reason, "Unschedulable");
      assert.match(scheduled?.message ?? "", /^0\/2 nodes are available: 2 node\(s\) didn't match Pod's node affinity\/selector/);
    }

    // A node that fits joins: the pods run there and the Job completes.
    await cluster.addNode(facts("w-ssd", 3, { disk: "ssd" }), at);
    const { pluginPending } = await cluster.controllers.sync(at);
    for (const node of pluginPending) await cluster.controllers.startNetworkPlugin(node, at);
    await cluster.controllers.sync(at);
    const finished = await jobNamed("stuck");
    assert.equal(cell(jobKind, "STATUS", finished), "Complete");
    assert.equal(finished.status?.succeeded, 3);
    assert.ok((await podsOf(finished)).every((p) => (p.spec as { nodeName?: string }).nodeName === "w-ssd"));
  });

  it("garbage-collects a deleted Job's pods", async () => {
    const done = await jobNamed("batch");
    assert.equal((await podsOf(done)).length, 3);
    await cluster.objects.delete(cluster.kinds.job, "default", "batch", { propagationPolicy: "Background" });
    await waitFor(async () => (await podsOf(done)).length === 0, "the Job's pods gone");
  });

  it("refuses a Job whose pods would restart Always or whose selector is not generated, naming the field", async () => {
    const refusal = async (object: KubeObject) => {
      const error = await cluster.objects.create(cluster.kinds.job, "default", object).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof InvalidError, String(error));
      return error.fieldErrors.map((c) => `${c.field}: ${c.message}`);
    };
    const always = await refusal(job("always", {}, { restartPolicy: undefined }));
    assert.deepEqual(always, ['spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"']);
    const own = job("own", { selector: { matchLabels: { app: "x" } } });
    (own.spec as { template: { metadata?: unknown } }).template.metadata = { labels: { app: "x" } };
    assert.match((await refusal(own)).join("\n"), /^spec\.selector: Invalid value: .*`selector` not auto-generated$/);
    const manual = await create({ ...own, metadata: { name: "manual", namespace: "default" }, spec: { ...(own.spec as object), manualSelector: true } });
    assert.deepEqual(manual.spec?.selector, { matchLabels: { app: "x" } });
    assert.equal(manual.status?.succeeded, 1);
    assert.equal(await cluster.objects.tryGet(cluster.kinds.job, "default", "always"), undefined, "nothing was made");
  });
});
