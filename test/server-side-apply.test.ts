// `kubectl apply --server-side` against a real `slipway up`: objects created and updated by apply, who
// manages which field shown in managedFields, another manager's conflicting apply refused the way
// kube-apiserver refuses it until forced, and fields a manager stops applying removed.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { eventually, kubectl, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

interface Options {
  replicas: number;
  pools: string[];
  secretKeys: string[];
}

const CONNECTION = `
apiVersion: slipway.dev/v1alpha1
kind: Connection
metadata:
  name: east
spec:
  provider: sim
  region: sim-east-1
`;

const clusterDoc = (o: Pick<Options, "replicas" | "pools">) => `
apiVersion: slipway.dev/v1alpha1
kind: Cluster
metadata:
  name: demo
  labels:
    team: platform
spec:
  # Paused: the controllers leave its spec and machines alone.
  paused: true
  controlPlane:
    connection: east
    machineType: s1.medium
    replicas: ${o.replicas}
${o.pools.length > 0 ? "  workers:\n" : ""}${o.pools.map((name) => `    - name: ${name}\n      connection: east\n      machineType: s1.large\n      replicas: 2\n`).join("")}`;

const secretDoc = (keys: string[]) => `
apiVersion: v1
kind: Secret
metadata:
  name: creds
data:
${keys.map((k) => `  ${k}: ${Buffer.from(`${k}-value`).toString("base64")}\n`).join("")}`;

const manifest = (o: Options) => [CONNECTION, clusterDoc(o), secretDoc(o.secretKeys)].join("---");

interface ManagedFieldsEntry {
  manager: string;
  operation: string;
  subresource?: string;
  fieldsV1: Record<string, unknown>;
}

interface Live {
  metadata: { generation?: number; managedFields?: ManagedFieldsEntry[] };
  spec?: { controlPlane: { replicas: number }; workers: { name: string }[] };
  data?: Record<string, string>;
}

describe("kubectl apply --server-side against slipway up", () => {
  let server: RunningSlipway;
  let dir: string;
  const ok = (...args: string[]) => {
    const r = kubectl(server.kubeconfig, args);
    assert.equal(r.status, 0, `kubectl ${args.join(" ")} failed: ${r.stderr}`);
    return r.stdout;
  };
  const get = (what: string): Live => parseYaml(ok("get", what, "-o", "yaml", "--show-managed-fields")) as Live;
  const managerOf = (live: Live, name: string, operation = "Apply") => live.metadata.managedFields?.find((m) => m.manager === name && m.operation === operation && !m.subresource);
  const file = (name: string, o: Options) => {
    const path = join(dir, name);
    writeFileSync(path, manifest(o));
    return path;
  };

  before(async () => {
    server = await startSlipway();
    dir = server.dataDir;
  });

  after(async () => {
    assert.equal(await server.stop("SIGTERM"), 0, "slipway up exits cleanly on SIGTERM");
    removeDir(dir);
  });

  it("creates a Cluster and a Secret, recording kubectl as the manager of what it applied", () => {
    const out = ok("apply", "--server-side", "-f", file("v1.yaml", { replicas: 1, pools: ["pool-a", "pool-b"], secretKeys: ["user", "password"] }));
    assert.match(out, /cluster\.slipway\.dev\/demo serverside-applied/);
    assert.match(out, /secret\/creds serverside-applied/);
    const cluster = get("cluster/demo");
    const applied = managerOf(cluster, "kubectl");
    assert.ok(applied, `kubectl's apply is recorded: ${JSON.stringify(cluster.metadata.managedFields)}`);
    const workers = (applied.fieldsV1["f:spec"] as Record<string, Record<string, unknown>>)["f:workers"]!;
    assert.deepEqual(Object.keys(workers), ['k:{"name":"pool-a"}', 'k:{"name":"pool-b"}'], "worker pools are owned one by one, keyed by name");
    const secret = get("secret/creds");
    assert.deepEqual(Object.keys(secret.data ?? {}).sort(), ["password", "user"]);
    assert.deepEqual(Object.keys((managerOf(secret, "kubectl")!.fieldsV1["f:data"] as Record<string, unknown>) ?? {}), ["f:password", "f:user"]);
    // Without --show-managed-fields kubectl leaves them out, as it does against kube-apiserver.
    assert.doesNotMatch(ok("get", "cluster/demo", "-o", "yaml"), /managedFields/);
  });

  it("updates by apply, and an unchanged apply changes nothing", () => {
    const before = get("cluster/demo");
    ok("apply", "--server-side", "-f", file("v2.yaml", { replicas: 3, pools: ["pool-a", "pool-b"], secretKeys: ["user", "password"] }));
    const after = get("cluster/demo");
    assert.equal(after.spec!.controlPlane.replicas, 3);
    assert.equal(after.metadata.generation, (before.metadata.generation ?? 0) + 1);
    const dryRun = ok("apply", "--server-side", "--dry-run=server", "-f", file("v2-dry.yaml", { replicas: 5, pools: ["pool-a", "pool-b"], secretKeys: ["user", "password"] }));
    assert.match(dryRun, /cluster\.slipway\.dev\/demo serverside-applied \(server dry run\)/);
    assert.equal(get("cluster/demo").spec!.controlPlane.replicas, 3, "a dry run changes nothing");
    const rv = ok("get", "cluster/demo", "-o", "jsonpath={.metadata.resourceVersion}");
    ok("apply", "--server-side", "-f", join(dir, "v2.yaml"));
    assert.equal(ok("get", "cluster/demo", "-o", "jsonpath={.metadata.resourceVersion}"), rv, "applying the same manifest again writes nothing");
  });

  it("refuses another manager's conflicting apply as kube-apiserver does, until it forces it", () => {
    const other = join(dir, "other.yaml");
    writeFileSync(other, clusterDoc({ replicas: 5, pools: ["pool-a", "pool-b"] }));
    const refused = kubectl(server.kubeconfig, ["apply", "--server-side", "--field-manager=ci", "-f", other]);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /Apply failed with 1 conflict: conflict with "kubectl": \.spec\.controlPlane\.replicas/);
    assert.match(refused.stderr, /Please review the fields above--they currently have other managers/);
    assert.equal(get("cluster/demo").spec!.controlPlane.replicas, 3, "a refused apply changes nothing");

    ok("apply", "--server-side", "--field-manager=ci", "--force-conflicts", "-f", other);
    const live = get("cluster/demo");
    assert.equal(live.spec!.controlPlane.replicas, 5);
    const controlPlaneOf = (m: ManagedFieldsEntry | undefined) => (m?.fieldsV1["f:spec"] as Record<string, Record<string, unknown>> | undefined)?.["f:controlPlane"] ?? {};
    assert.ok("f:replicas" in controlPlaneOf(managerOf(live, "ci")), "ci owns the field it forced");
    assert.equal(controlPlaneOf(managerOf(live, "kubectl"))["f:replicas"], undefined, "kubectl no longer owns it");
  });

  it("removes the fields a manager stops applying when no one else manages them", () => {
    // ci applied both pools too: it lets go of them first, so kubectl is their only manager.
    const minimal = join(dir, "ci-minimal.yaml");
    writeFileSync(minimal, clusterDoc({ replicas: 5, pools: [] }));
    ok("apply", "--server-side", "--field-manager=ci", "-f", minimal);
    assert.deepEqual(get("cluster/demo").spec!.workers.map((w) => w.name), ["pool-a", "pool-b"], "pools kubectl still applies stay");

    ok("apply", "--server-side", "--force-conflicts", "-f", file("v3.yaml", { replicas: 5, pools: ["pool-a"], secretKeys: ["user"] }));
    assert.deepEqual(get("cluster/demo").spec!.workers.map((w) => w.name), ["pool-a"]);
    assert.deepEqual(Object.keys(get("secret/creds").data ?? {}), ["user"]);
  });

  it("takes over an object kubectl applied client-side, as kubectl migrates it", () => {
    const csa = join(dir, "csa.yaml");
    writeFileSync(csa, secretDoc(["token"]).replace("name: creds", "name: migrated"));
    ok("apply", "-f", csa);
    writeFileSync(csa, secretDoc(["token", "extra"]).replace("name: creds", "name: migrated").replace(Buffer.from("token-value").toString("base64"), Buffer.from("rotated").toString("base64")));
    const out = ok("apply", "--server-side", "-f", csa);
    assert.match(out, /secret\/migrated serverside-applied/);
    const live = get("secret/migrated");
    assert.equal(Buffer.from(live.data!.token!, "base64").toString(), "rotated");
    assert.ok(managerOf(live, "kubectl"), `kubectl applies it now: ${JSON.stringify(live.metadata.managedFields)}`);
  });

  it("records a controller's status writes under its own manager", async () => {
    // The connection controller reports the connection's state on /status.
    const status = await eventually(() => managerOfStatus(get("connection/east")), { what: "a status write recorded on the connection" });
    assert.match(status.manager, /-controller$/);
    assert.ok("f:status" in status.fieldsV1);
  });
});

function managerOfStatus(live: Live): ManagedFieldsEntry | undefined {
  return live.metadata.managedFields?.find((m) => m.subresource === "status");
}
