// Asynchronous operation records: every create, spec change and delete of a Cluster answers with an
// Operation-Location a client can poll until the operation ends, as ARO-RP's front end does.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { parseKubeconfig } from "../src/bootstrap/kubeconfig.ts";
import { eventually, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: { status?: { phase?: string; percentComplete?: number } } & Record<string, unknown>;
}

describe("operation records", () => {
  let plane: RunningSlipway;
  let call: (method: string, path: string, body?: unknown, contentType?: string) => Promise<Reply>;
  const clusters = "/apis/slipway.dev/v1alpha1/namespaces/default/clusters";

  before(async () => {
    plane = await startSlipway({ args: ["--sim-port", "0", "--sim-profile", "instant", "--poll-interval", "100ms"] });
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
    assert.equal((await call("POST", "/apis/slipway.dev/v1alpha1/namespaces/default/connections", connection)).status, 201);
  });

  after(async () => {
    await plane.stop("SIGTERM");
    removeDir(plane.dataDir);
  });

  const finished = (location: string, phase: string) =>
    eventually(async () => {
      const op = await call("GET", location);
      return op.body.status?.phase === phase ? op.body : undefined;
    }, { timeoutMs: 30_000, what: `${location} to be ${phase}` });

  it("gives creates, spec changes and deletes an operation to poll, and leaves other writes alone", async () => {
    const created = await call("POST", clusters, {
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name: "ops" },
      spec: { controlPlane: { connection: "east", machineType: "s1.medium" }, workers: [{ name: "w", connection: "east", machineType: "s1.small", replicas: 1 }] },
    });
    assert.equal(created.status, 201);
    const createOp = created.headers["operation-location"] as string;
    assert.equal(createOp, "/apis/slipway.dev/v1alpha1/namespaces/default/operations/ops-create-1");
    const done = await finished(createOp, "Succeeded");
    assert.equal(done.status?.percentComplete, 100);

    const labelled = await call("PATCH", `${clusters}/ops`, { metadata: { labels: { team: "a" } } }, "application/merge-patch+json");
    assert.equal(labelled.status, 200);
    assert.equal(labelled.headers["operation-location"], undefined, "a label is not an operation");

    const scaled = await call("PATCH", `${clusters}/ops`, { spec: { workers: [{ name: "w", connection: "east", machineType: "s1.small", replicas: 2 }] } }, "application/merge-patch+json");
    const updateOp = scaled.headers["operation-location"] as string;
    assert.match(updateOp, /\/operations\/ops-update-2$/);
    await finished(updateOp, "Succeeded");

    const deleted = await call("DELETE", `${clusters}/ops`);
    const deleteOp = deleted.headers["operation-location"] as string;
    assert.match(deleteOp, /\/operations\/ops-delete-2$/);
    await finished(deleteOp, "Succeeded");
    assert.equal((await call("GET", `${clusters}/ops`)).status, 404);
  });
});
