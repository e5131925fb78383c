// `slipway plan` against a real control plane: what the quickstart would build, at the catalogue's prices,
// with nothing built; a change shows only its difference; an invalid cluster is refused with its field.
// And `slipway start` (npm start) prints the console's address and a one-time sign-in link.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterPlanObject } from "../src/api/slipway/clusterplan.ts";
import { machineTypesOf, regions } from "../src/simcloud/catalog.ts";
import { REPO, SLIPWAY_BIN, freePort, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

const QUICKSTART = join(REPO, "examples/quickstart.yaml");

function price(region: string, type: string): number {
  return machineTypesOf(region).find((t) => t.name === type)!.hourlyPrice;
}

describe("slipway plan", { timeout: 120_000 }, () => {
  let server: RunningSlipway;
  let dir: string;
  const run = (args: string[]) => spawnSync(process.execPath, [SLIPWAY_BIN, "--kubeconfig", server.kubeconfig, ...args], { encoding: "utf8" });

  before(async () => {
    server = await startSlipway({ args: ["--sim-profile", "instant", "--poll-interval", "200ms"] });
    dir = mkdtempSync(join(tmpdir(), "slipway-plan-"));
  });

  after(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
    if (dir) removeDir(dir);
  });

  it("prints the quickstart's resources, quota, cost per hour and month at catalogue prices, and the expected time; builds nothing", () => {
    const r = run(["plan", "-f", QUICKSTART]);
    assert.equal(r.status, 0, r.stderr);
    const out = r.stdout;
    const hourly =
      3 * price("sim-east-1", "s1.medium") + 2 * price("sim-east-1", "s1.large") + 2 * price("sim-west-1", "s1.large") + regions().find((x) => x.name === "sim-east-1")!.prices.loadBalancerHourly;
    assert.match(out, /^cluster\/quickstart \(namespace default\): will be created$/m);
    for (const kind of ["network", "subnet", "securityGroup", "keyPair"]) assert.equal(out.match(new RegExp(`^  sim-(east|west) +${kind} +Create`, "gm"))?.length, 2, `${kind} in both connections`);
    assert.match(out, /^ {2}sim-east +loadBalancer +Create/m);
    // The pools are on scale sets: their machines are named after instances the cloud is yet to launch.
    assert.match(out, /^ {2}quickstart-west-\(new-2\) +worker +s1\.large +sim-west +sim-west-1a +\$0\.0899 +Create$/m);
    assert.match(out, /^ {2}sim-east +vCPUs +14 +64 +64 +ok$/m, "3 × 2 + 2 × 4 vCPUs of 64 free");
    assert.ok(out.includes(`total: $${hourly.toFixed(4)} per hour, $${(Math.round(hourly * 730 * 100) / 100).toFixed(2)} per month`), out);
    assert.match(out, /^Expected time to Running: \d+\.\ds$/m);
    assert.match(out, /^Problems: none$/m);
    // Nothing was made: no cloud resource, no object.
    const cloud = run(["get", "connections,clusters", "-A"]);
    assert.doesNotMatch(cloud.stdout, /sim-east|quickstart/, cloud.stdout);
    const sim = /embedded sim cloud on (http:\/\/[\d.:]+)/.exec(server.output())![1]!;
    const resources = spawnSync(process.execPath, [SLIPWAY_BIN, "sim-cloud", "resources", "--endpoint", sim, "--data-dir", server.dataDir, "-o", "json"], { encoding: "utf8" });
    assert.deepEqual(JSON.parse(resources.stdout), []);
  });

  it("is listed in discovery as the clusters/plan subresource, as kubectl api-resources reads it", () => {
    const r = spawnSync("/usr/bin/kubectl", ["--kubeconfig", server.kubeconfig, "get", "--raw", "/apis/slipway.dev/v1alpha1"], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const list = JSON.parse(r.stdout) as { resources: { name: string; kind: string; verbs: string[] }[] };
    const plan = list.resources.find((resource) => resource.name === "clusters/plan");
    assert.deepEqual(plan && { kind: plan.kind, verbs: plan.verbs }, { kind: "ClusterPlan", verbs: ["create"] });
  });

  it("answers the API's ClusterPlan with -o json", () => {
    const r = run(["plan", "-f", QUICKSTART, "-o", "json"]);
    assert.equal(r.status, 0, r.stderr);
    const plan = JSON.parse(r.stdout) as ClusterPlanObject;
    assert.equal(plan.kind, "ClusterPlan");
    assert.equal(plan.status!.machines.length, 7);
    assert.equal(plan.status!.cost.lines.find((l) => l.item === "loadBalancers")!.count, 1);
    assert.ok(plan.status!.estimate.criticalPath.length >= 0);
  });

  it("plans a change as its difference and the cost's change", () => {
    const applied = run(["apply", "-f", QUICKSTART, "--wait", "--timeout", "90s"]);
    assert.equal(applied.status, 0, applied.stdout + applied.stderr);
    // The west pool from 2 to 3 machines.
    const text = readFileSync(QUICKSTART, "utf8");
    const scaled = join(dir, "scaled.yaml");
    writeFileSync(scaled, text.replace(/(name: west[\s\S]*?replicas: )2/, "$13"));
    const r = run(["plan", "-f", scaled]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /will be changed — 1 machine\(s\) added, 0 replaced, 0 removed; 7 unchanged/);
    const machines = r.stdout.split("Machines:\n")[1]!.split("\n\n")[0]!.trim().split("\n").slice(1);
    assert.deepEqual(machines.map((l) => l.trim().split(/ +/)[0]), ["quickstart-west-(new-1)"], "only the new machine (its instance is yet to be launched)");
    assert.doesNotMatch(r.stdout, /Cloud resources:/, "the infrastructure is reused, so not listed");
    assert.ok(r.stdout.includes(`(+$${price("sim-west-1", "s1.large").toFixed(4)} per hour`), r.stdout);
    const unchanged = run(["plan", "-f", QUICKSTART, "-o", "json"]);
    assert.equal((JSON.parse(unchanged.stdout) as ClusterPlanObject).status!.action, "Unchanged");
  });

  it("refuses an invalid cluster with the field it names, and reports problems with exit code 1", () => {
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, readFileSync(QUICKSTART, "utf8").replace("replicas: 3", "replicas: 2"));
    const refused = run(["plan", "-f", bad]);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /spec\.controlPlane\.replicas/);
    const unknown = join(dir, "unknown.yaml");
    writeFileSync(unknown, readFileSync(QUICKSTART, "utf8").replace("machineType: s1.medium", "machineType: s9.huge").replace("name: quickstart", "name: other"));
    const problems = run(["plan", "-f", unknown]);
    assert.equal(problems.status, 1, problems.stdout);
    assert.match(problems.stdout, /✗ spec\.controlPlane\.machineType: machine type "s9\.huge" is not offered/);
  });
});

describe("slipway start (npm start)", { timeout: 120_000 }, () => {
  it("prints the console's address and a one-time sign-in link", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "slipway-start-"));
    const port = await freePort();
    const child = spawn(process.execPath, [SLIPWAY_BIN, "start", "--data-dir", dataDir, "--port", String(port), "--sim-profile", "instant", "--sim-port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", () => /serving until Ctrl-C/.test(out) && resolve());
        child.once("exit", (code) => reject(new Error(`slipway start exited with ${code}: ${out}`)));
      });
      assert.match(out, new RegExp(`^slipway: console: https://127\\.0\\.0\\.1:${port}/$`, "m"));
      const link = new RegExp(`one-time link[^\\n]*: (https://127\\.0\\.0\\.1:${port}/#login=[\\w-]+)$`, "m").exec(out)?.[1];
      assert.ok(link, out);
      const code = new URL(link).hash.slice("#login=".length);
      const ca = Buffer.from(/certificate-authority-data: (\S+)/.exec(readFileSync(join(dataDir, "kubeconfig"), "utf8"))![1]!, "base64");
      const exchange = () =>
        new Promise<number>((resolve, reject) => {
          const request = httpsRequest(`https://127.0.0.1:${port}/login/session`, { method: "POST", ca, headers: { "Content-Type": "application/json" } }, (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          });
          request.once("error", reject);
          request.end(JSON.stringify({ code }));
        });
      assert.equal(await exchange(), 200, "the code signs in once");
      assert.equal(await exchange(), 401, "and is spent");
    } finally {
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
      removeDir(dataDir);
    }
  });
});
