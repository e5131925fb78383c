// Asynchronous operation records: every create, spec change and delete of a Cluster answers with an
// Operation-Location a client can poll until the operation ends, as ARO-RP's front end does. An
// operation says Succeeded only once what it asked for is there: the tests look at the nodes too.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { parseKubeconfig } from "../src/bootstrap/kubeconfig.ts";
import type { CloudResource } from "../src/simcloud/types.ts";
import { StopWaiting, eventually, kubectl, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";
import { SIM_TOKEN, startSimCloud, type RunningSimCloud } from "./support/simcloud.ts";

interface Condition {
  type: string;
  status: string;
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: {
    status?: { phase?: string; percentComplete?: number; message?: string; error?: { code: string; message: string }; readyReplicas?: number; replicas?: number; reason?: string; conditions?: Condition[]; workers?: { ready: number; desired: number }; observedGeneration?: number };
    spec?: { replicas?: number };
    metadata?: { generation?: number };
  } & Record<string, unknown>;
}

const live = (resources: CloudResource[]) => resources.filter((r) => !["terminated", "deleted"].includes(r.state));

describe("operation records", () => {
  let sim: RunningSimCloud;
  let plane: RunningSlipway;
  let call: (method: string, path: string, body?: unknown, contentType?: string) => Promise<Reply>;
  const api = "/apis/slipway.dev/v1alpha1/namespaces/default";
  const clusters = `${api}/clusters`;

  before(async () => {
    sim = await startSimCloud({ profile: "instant", seed: 23 });
    plane = await startSlipway({ args: ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "100ms"] });
    const kc = parseKubeconfig(readFileSync(plane.kubeconfig, "utf8"));
    call = (method, path, body, contentType = "application/json") =>
      new Promise((resolve, reject) => {
        const req = request(`${kc.server}${path}`, { method, ca: kc.caCertPem, headers: { Authorization: `Bearer ${kc.token}`, "Content-Type": contentType } }, (res) => {
          let text = "";
          res.on("data", (d: Buffer) => (text += d.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text || "{}") }));
        });
        req.on("error", reject);
        req.end(body === undefined ? undefined : JSON.stringify(body));
      });
    const connection = { apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name: "east" }, spec: { provider: "sim", region: "sim-east-1" } };
    assert.equal((await call("POST", `${api}/connections`, connection)).status, 201);
  });

  after(async () => {
    await plane.stop("SIGTERM");
    await sim.stop();
    removeDir(plane.dataDir);
  });

  const finished = (location: string, phase: string, timeoutMs = 30_000) =>
    eventually(async () => {
      const op = await call("GET", location);
      const now = op.body.status?.phase;
      if (now && now !== "InProgress" && now !== phase) throw new StopWaiting(`${location} ended ${now}: ${JSON.stringify(op.body.status)}`);
      return now === phase ? op.body : undefined;
    }, { timeoutMs, what: `${location} to be ${phase}` });

  /** The names of the cluster's nodes whose status is Ready, as kubectl lists them from its own API. */
  const readyNodes = async (name: string): Promise<string[]> => {
    const secret = await call("GET", `/api/v1/namespaces/default/secrets/${name}-kubeconfig`);
    const file = join(plane.dataDir, `${name}.kubeconfig`);
    writeFileSync(file, Buffer.from((secret.body as { data: { value: string } }).data.value, "base64"));
    const nodes = kubectl(file, ["get", "nodes", "--no-headers"]);
    assert.equal(nodes.status, 0, nodes.stderr);
    return nodes.stdout.trim().split("\n").filter((line) => /\sReady\s/.test(line)).map((line) => line.split(/\s+/)[0]!);
  };
  const pool = async (name: string) => (await call("GET", `${api}/machinepools/${name}`)).body;
  const workers = (replicas: number) => ({ spec: { workers: [{ name: "w", connection: "east", machineType: "s1.small", replicas }] } });
  /** Creates a cluster of one control-plane machine and a pool of one worker: the answer to the POST. */
  const createCluster = (name: string) =>
    call("POST", clusters, {
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name },
      spec: { controlPlane: { connection: "east", machineType: "s1.medium" }, ...workers(1).spec },
    });

  it("gives creates, spec changes and deletes an operation to poll, ending only once the change is there", async () => {
    const created = await createCluster("ops");
    assert.equal(created.status, 201);
    const createOp = created.headers["operation-location"] as string;
    assert.equal(createOp, "/apis/slipway.dev/v1alpha1/namespaces/default/operations/ops-create-1");
    const done = await finished(createOp, "Succeeded");
    assert.equal(done.status?.percentComplete, 100);
    assert.equal((await readyNodes("ops")).length, 2, "a control-plane and a worker node, both Ready");

    const labelled = await call("PATCH", `${clusters}/ops`, { metadata: { labels: { team: "a" } } }, "application/merge-patch+json");
    assert.equal(labelled.status, 200);
    assert.equal(labelled.headers["operation-location"], undefined, "a label is not an operation");

    const scaled = await call("PATCH", `${clusters}/ops`, workers(2), "application/merge-patch+json");
    const updateOp = scaled.headers["operation-location"] as string;
    assert.match(updateOp, /\/operations\/ops-update-2$/);
    await finished(updateOp, "Succeeded");
    const grown = await pool("ops-w");
    assert.deepEqual([grown.spec?.replicas, grown.status?.replicas, grown.status?.readyReplicas], [2, 2, 2], "the pool grew to 2 Ready machines");
    assert.equal((await readyNodes("ops")).length, 3, "the cluster has 3 Ready nodes");

    const deleted = await call("DELETE", `${clusters}/ops`);
    const deleteOp = deleted.headers["operation-location"] as string;
    assert.match(deleteOp, /\/operations\/ops-delete-2$/);
    await finished(deleteOp, "Succeeded");
    assert.equal((await call("GET", `${clusters}/ops`)).status, 404);
    assert.deepEqual(live(await sim.resourcesOf("default/ops")).map((r) => `${r.kind} ${r.id}`), [], "nothing of the cluster is left in the cloud");
  });

  it("keeps a scale InProgress through cloud errors, and says Succeeded only once the pool has grown", async () => {
    const created = await createCluster("rough");
    await finished(created.headers["operation-location"] as string, "Succeeded");
    assert.equal((await readyNodes("rough")).length, 2);

    // Every call to the cloud fails as a cloud's 5xx would, while the pool is asked to grow from 1 to 3.
    await sim.admin.setFaults({ errors: { "*": { InternalError: 1 } } });
    let updateOp: string;
    try {
      const scaled = await call("PATCH", `${clusters}/rough`, workers(3), "application/merge-patch+json");
      updateOp = scaled.headers["operation-location"] as string;
      assert.match(updateOp, /\/operations\/rough-update-2$/);
      const retrying = await eventually(async () => {
        const cluster = (await call("GET", `${clusters}/rough`)).body;
        return cluster.status?.reason === "Retrying" && cluster;
      }, { timeoutMs: 30_000, what: "the cluster to say it is retrying" });
      assert.equal(retrying.status?.phase, "Updating", "a cluster whose change is being retried is not Running");
      assert.notEqual(retrying.status?.observedGeneration, 2, "generation 2 was not applied");
      // The operation follows the cluster: it says why it is still in progress, and is not done.
      const op = await eventually(async () => {
        const body = (await call("GET", updateOp)).body;
        return (body.status?.phase !== "InProgress" || /Retrying/.test(body.status.message ?? "")) && body;
      }, { timeoutMs: 30_000, what: "the operation to report the retries" });
      assert.equal(op.status?.phase, "InProgress", JSON.stringify(op.status));
      assert.ok((op.status?.percentComplete ?? 0) < 50, `progress is honest: ${op.status?.percentComplete}`);
      const unchanged = await pool("rough-w");
      assert.equal(unchanged.status?.readyReplicas, 1, "the pool still has one machine");
    } finally {
      await sim.admin.setFaults({});
    }
    await finished(updateOp, "Succeeded", 60_000);
    const grown = await pool("rough-w");
    assert.deepEqual([grown.spec?.replicas, grown.status?.replicas, grown.status?.readyReplicas], [3, 3, 3], "the pool grew to 3 Ready machines");
    assert.equal((await readyNodes("rough")).length, 4, "the cluster has 4 Ready nodes");
    const instances = live(await sim.resourcesOf("default/rough")).filter((r) => r.kind === "instance");
    assert.equal(instances.length, 4, "one instance per node");
  });
});
