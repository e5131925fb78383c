// A cluster on a lease, end to end: a sim cloud in its own process, `slipway up` against it, the real
// kubectl. The Lease reserves machines from a moment in the future; the Cluster naming it (and a
// deprecated ClusterTemplate for what it leaves out) waits, saying why, builds on the reserved machine
// types once the lease is Active, keeps the reserved capacity from another account, and is deleted with
// everything it made in the cloud when the lease ends.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SimCloudClient } from "../src/simcloud/client.ts";
import { InsufficientCapacityError } from "../src/simcloud/errors.ts";
import { readyNetwork } from "../src/simcloud/test-support.ts";
import type { CloudResource, Instance } from "../src/simcloud/types.ts";
import { SLIPWAY_BIN, StopWaiting, eventually, kubectl, kubectlOk, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";
import { SIM_TOKEN, startSimCloud, type RunningSimCloud } from "./support/simcloud.ts";

const REGION = "sim-east-1";
const ZONE = "sim-east-1a";
const RIVAL_TOKEN = "rival-token";

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
interface ClusterView {
  spec?: { network?: { cni?: string }; workers?: { machineType?: string }[] };
  status?: { phase?: string; reason?: string; message?: string; conditions?: Condition[]; template?: { name: string; kubernetesVersion: string } };
}
interface LeaseView {
  metadata: { ownerReferences?: { kind: string; name: string }[] };
  status?: { phase?: string; reason?: string; sizes?: Record<string, string>; reservations?: { reservationId: string; machineType: string }[] };
}

const live = (resources: CloudResource[]) => resources.filter((r) => !["terminated", "deleted"].includes(r.state));

function manifest(start: Date, end: Date): string {
  return `apiVersion: slipway.dev/v1alpha1
kind: Connection
metadata:
  name: east
spec:
  provider: sim
  region: ${REGION}
---
apiVersion: slipway.dev/v1alpha1
kind: Lease
metadata:
  name: workshop
spec:
  connection: east
  sizes:
    - name: control
      machineType: s1.medium
      count: 1
    - name: worker
      machineType: s1.small
      count: 2
  startTime: ${start.toISOString()}
  endTime: ${end.toISOString()}
---
apiVersion: slipway.dev/v1alpha1
kind: ClusterTemplate
metadata:
  name: lab
spec:
  kubernetesVersion: v1.31.2
  network:
    cni: flannel
  machineTypes:
    workers: s1.small
  upgradeTargets: [lab-next]
  deprecated: true
---
apiVersion: slipway.dev/v1alpha1
kind: Cluster
metadata:
  name: leased
spec:
  templateName: lab
  leaseName: workshop
  controlPlane:
    connection: east
    machineType: control
  workers:
    - name: work
      connection: east
      replicas: 2
`;
}

describe("a cluster on a lease", () => {
  let sim: RunningSimCloud;
  let plane: RunningSlipway;
  let kc: string;
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const cluster = () => JSON.parse(ok("get", "cluster", "leased", "-o", "json")) as ClusterView;
  const lease = () => JSON.parse(ok("get", "lease", "workshop", "-o", "json")) as LeaseView;

  before(async () => {
    sim = await startSimCloud({ profile: "instant", seed: 5 });
    plane = await startSlipway({ args: ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "200ms", "--lease-warning", "10s"] });
    kc = plane.kubeconfig;
  });

  after(async () => {
    await plane.stop("SIGTERM");
    await sim.stop();
    removeDir(plane.dataDir);
  });

  it("waits for the lease, builds on its machine types, keeps its capacity from others, and goes when it ends", async () => {
    // The zone holds exactly what the lease reserves of s1.small: while the lease is Active nobody else gets one.
    await sim.admin.setCapacity(REGION, ZONE, "s1.small", 2);
    await sim.admin.setAccount("rival", RIVAL_TOKEN);
    // Far enough ahead for the checks below to run before it, on a busy machine too.
    const start = new Date(Date.now() + 35_000);
    const end = new Date(start.getTime() + 40_000);
    const file = join(plane.dataDir, "leased.yaml");
    writeFileSync(file, manifest(start, end));
    const applied = kubectl(kc, ["apply", "-f", file]);
    assert.equal(applied.status, 0, applied.stderr);
    assert.match(applied.stderr, /Warning: ClusterTemplate lab is deprecated; consider lab-next/);

    // Before the start: the cluster is Pending and says why; nothing of it exists in the cloud.
    const waiting = await eventually(() => {
      const c = cluster();
      return c.status?.conditions?.find((x) => x.type === "LeaseReady" && x.reason === "LeasePending") ? c : undefined;
    }, { timeoutMs: 15_000, what: "the cluster to wait for its lease" });
    assert.equal(waiting.status?.phase, "Pending");
    assert.match(waiting.status?.conditions?.find((x) => x.type === "LeaseReady")?.message ?? "", /waiting for lease workshop to be Active \(it is Pending; its reservations start at /);
    const listed = ok("get", "leases");
    assert.match(listed, /^NAME\s+CONNECTION\s+PHASE\s+SIZES\s+START\s+END\s+AGE/);
    assert.match(listed, /workshop\s+east\s+Pending\s+control=1×s1\.medium,worker=2×s1\.small\s/);
    const cli = spawnSync(process.execPath, [SLIPWAY_BIN, "get", "leases", "--kubeconfig", kc], { encoding: "utf8" });
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /workshop\s+east\s+Pending/);
    const templates = spawnSync(process.execPath, [SLIPWAY_BIN, "get", "clustertemplates", "--kubeconfig", kc], { encoding: "utf8" });
    assert.equal(templates.status, 0, templates.stderr);
    assert.match(templates.stdout, /lab\s+v1\.31\.2\s+flannel\s+true\s+lab-next\s/);
    assert.deepEqual(live(await sim.resourcesOf("default/leased")).map((r) => r.kind), [], "nothing is built before the lease starts");
    // A plan reads the lease's sizes as the machine types they reserve.
    const plan = spawnSync(process.execPath, [SLIPWAY_BIN, "plan", "-f", file, "-o", "json", "--kubeconfig", kc], { encoding: "utf8" });
    assert.equal(plan.status, 0, plan.stdout + plan.stderr);
    const planned = JSON.parse(plan.stdout) as { status: { machines: { machineType: string }[]; problems: unknown[] } };
    assert.deepEqual(planned.status.problems, []);
    // (Once the lease has started the machines may exist already, and a plan lists only what it would change.)
    if (Date.now() < start.getTime()) assert.deepEqual(planned.status.machines.map((m) => m.machineType).sort(), ["s1.medium", "s1.small", "s1.small"]);
    const reservations = (await sim.api.listReservations(REGION)).map((r) => [r.machineType, r.instanceCount, r.state]).sort();
    if (Date.now() < start.getTime()) assert.deepEqual(reservations, [["s1.medium", 1, "scheduled"], ["s1.small", 2, "scheduled"]]);

    // Once Active: the cluster adopts the lease and builds on its machine types, in its reservations.
    await eventually(() => (lease().status?.phase === "Active" ? true : undefined), { timeoutMs: 40_000, what: "the lease to be Active" });
    const running = await eventually(() => {
      const c = cluster();
      if (c.status?.phase === "Failed") throw new StopWaiting(`cluster failed: ${c.status.reason}: ${c.status.message}`);
      return c.status?.phase === "Running" ? c : undefined;
    }, { timeoutMs: 40_000, intervalMs: 250, what: "the cluster to be Running" });
    assert.equal(running.status?.conditions?.find((x) => x.type === "LeaseReady")?.status, "True");
    // What the cluster left out came from its template: the network plugin and the workers' machine type.
    assert.deepEqual(running.status?.template, { name: "lab", kubernetesVersion: "v1.31.2" });
    assert.equal(running.spec?.network?.cni, "flannel");
    assert.equal(running.spec?.workers?.[0]?.machineType, "s1.small");
    const active = lease();
    assert.deepEqual(active.metadata.ownerReferences?.map((r) => `${r.kind}/${r.name}`), ["Cluster/leased"], "the cluster adopted the lease");
    const reservationOf = new Map(active.status?.reservations?.map((r) => [r.machineType, r.reservationId]));
    const instances = live(await sim.resourcesOf("default/leased")).filter((r): r is Instance => r.kind === "instance");
    assert.deepEqual(instances.map((i) => i.machineType).sort(), ["s1.medium", "s1.small", "s1.small"]);
    for (const instance of instances) assert.equal(instance.reservationId, reservationOf.get(instance.machineType), `instance ${instance.id} runs in the lease's reservation`);

    // Another account cannot take the capacity the lease holds.
    const rival = new SimCloudClient({ endpoint: sim.url, token: RIVAL_TOKEN });
    const net = await readyNetwork(rival, { region: REGION, cidr: "10.50.0.0/16" });
    await assert.rejects(rival.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId }), (e: unknown) => {
      assert.ok(e instanceof InsufficientCapacityError, String(e));
      assert.match(e.message, /held by capacity reservations/);
      return true;
    });

    // Ahead of the end a warning; at the end the cluster and everything it made are gone, the lease Expired.
    await eventually(() => {
      const events = JSON.parse(ok("get", "events", "-o", "json")) as { items: { reason: string; type: string; involvedObject: { kind: string } }[] };
      return events.items.some((e) => e.reason === "LeaseEndingSoon" && e.type === "Warning" && e.involvedObject.kind === "Cluster") ? true : undefined;
    }, { timeoutMs: end.getTime() - Date.now() + 5_000, what: "a LeaseEndingSoon warning on the cluster" });
    await eventually(() => (kubectl(kc, ["get", "cluster", "leased"]).status !== 0 ? true : undefined), {
      timeoutMs: end.getTime() - Date.now() + 60_000,
      intervalMs: 500,
      what: "the cluster to be deleted when the lease ends",
    });
    assert.ok(Date.now() >= end.getTime(), "the cluster went at the end of the lease, not before");
    assert.deepEqual(live(await sim.resourcesOf("default/leased")).map((r) => `${r.kind} ${r.id} ${r.state}`), [], "nothing of the cluster is left in the cloud");
    const expired = lease();
    assert.equal(expired.status?.phase, "Expired");
    assert.deepEqual(expired.metadata.ownerReferences ?? [], [], "the expired lease stays as a record");
    assert.match(ok("get", "leases"), /workshop\s+east\s+Expired\s/);
    assert.deepEqual((await sim.api.listReservations(REGION)).map((r) => r.state), ["expired", "expired"]);
  });
});
