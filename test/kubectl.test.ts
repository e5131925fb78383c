// kubectl against a real `slipway up`: what a platform engineer does first, checked as they would see it.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eventually, kubectl, kubectlAsync, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

const MANIFEST = (replicas: number, extraLabel = "") => `
apiVersion: slipway.dev/v1alpha1
kind: Connection
metadata:
  name: east
spec:
  provider: sim
  region: sim-east-1
---
apiVersion: slipway.dev/v1alpha1
kind: Cluster
metadata:
  name: demo
  labels:
    team: platform${extraLabel}
spec:
  # Paused: the controllers leave it alone, so the test drives its status by hand.
  paused: true
  kubernetesVersion: v1.31.2
  controlPlane:
    connection: east
    machineType: s1.medium
    replicas: ${replicas}
  workers:
    - name: pool-a
      connection: east
      machineType: s1.large
      replicas: 2
`;

describe("kubectl against slipway up", () => {
  let server: RunningSlipway;
  let dir: string;
  let kc: string;
  const k = (...args: string[]) => kubectl(kc, args);
  const ok = (...args: string[]) => {
    const r = kubectl(kc, args);
    assert.equal(r.status, 0, `kubectl ${args.join(" ")} failed: ${r.stderr}`);
    return r.stdout;
  };

  before(async () => {
    server = await startSlipway();
    kc = server.kubeconfig;
    dir = server.dataDir;
  });

  after(async () => {
    const code = await server.stop("SIGTERM");
    assert.equal(code, 0, "slipway up exits cleanly on SIGTERM");
    removeDir(dir);
  });

  it("applies a multi-document manifest, then reports changes as configured", () => {
    const file = join(dir, "demo.yaml");
    writeFileSync(file, MANIFEST(1));
    const first = ok("apply", "-f", file);
    assert.match(first, /connection\.slipway\.dev\/east created/);
    assert.match(first, /cluster\.slipway\.dev\/demo created/);
    writeFileSync(file, MANIFEST(3));
    const second = ok("apply", "-f", file);
    assert.match(second, /connection\.slipway\.dev\/east unchanged/);
    assert.match(second, /cluster\.slipway\.dev\/demo configured/);
    assert.equal(ok("get", "cluster", "demo", "-o", "jsonpath={.spec.controlPlane.replicas} {.metadata.generation}"), "3 2");
  });

  it("prints the kind's columns, by short name too, and the wide ones with -o wide", () => {
    const table = ok("get", "cl");
    const header = table.split("\n")[0]!;
    assert.match(header, /^NAME\s+PHASE\s+CONTROL-PLANE\s+WORKERS\s+VERSION\s+AGE/);
    assert.match(table, /demo\s+.*0\/3\s+0\/2\s+v1\.31\.2/);
    assert.match(ok("get", "cl", "-o", "wide").split("\n")[0]!, /ENDPOINT/);
    assert.match(ok("get", "conn"), /east\s+sim\s+sim-east-1/);
  });

  it("prints yaml, json and jsonpath", () => {
    const json = JSON.parse(ok("get", "cluster", "demo", "-o", "json")) as { metadata: { uid: string }; spec: { network: { podCIDR: string } } };
    assert.match(json.metadata.uid, /^[0-9a-f-]{36}$/);
    assert.equal(json.spec.network.podCIDR, "10.244.0.0/16", "defaults are filled in");
    assert.match(ok("get", "cluster", "demo", "-o", "yaml"), /kind: Cluster\n/);
    assert.equal(ok("get", "clusters", "-o", "jsonpath={.items[*].metadata.name}"), "demo");
  });

  it("refuses an unknown field and a wrong type, naming the field, and creates nothing", () => {
    const file = join(dir, "bad.yaml");
    writeFileSync(file, MANIFEST(1).replace("name: demo", "name: bad").replace("replicas: 1\n", "replicas: 1\n    colour: blue\n").replace("name: east\nspec", "name: east2\nspec"));
    const unknown = k("apply", "-f", file);
    assert.notEqual(unknown.status, 0);
    assert.match(unknown.stderr, /colour/);
    writeFileSync(file, MANIFEST(1).replace("name: demo", "name: bad").replace("replicas: 2", "replicas: two").replace("name: east\nspec", "name: east2\nspec"));
    const wrongType = k("apply", "-f", file);
    assert.notEqual(wrongType.status, 0);
    assert.match(wrongType.stderr, /spec\.workers\[0\]\.replicas/);
    assert.notEqual(k("get", "cluster", "bad").status, 0, "the bad cluster was not created");
  });

  it("refuses a cluster that breaks a static rule with the field and the allowed values", () => {
    const r = kubectl(kc, ["apply", "-f", "-"], MANIFEST(2).replace("name: demo", "name: two"));
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /spec\.controlPlane\.replicas/);
    assert.match(r.stderr, /1, 3(,| or) 5/);
  });

  it("refuses a connection whose provider is not installed, listing the installed ones", () => {
    const manifest = MANIFEST(1).split("---")[0]!.replace("name: east", "name: west").replace("provider: sim", "provider: aws");
    const r = kubectl(kc, ["apply", "-f", "-"], manifest);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /spec\.provider: Unsupported value: "aws": supported values: "sim", "ssh"/);
    assert.notEqual(k("get", "connection", "west").status, 0, "the connection was not created");
  });

  it("patches with merge and json patches, labels and annotates", () => {
    ok("patch", "cluster", "demo", "--type", "merge", "-p", '{"spec":{"workers":[{"name":"pool-a","connection":"east","machineType":"s1.large","replicas":4}]}}');
    assert.equal(ok("get", "cluster", "demo", "-o", "jsonpath={.spec.workers[0].replicas}"), "4");
    ok("patch", "cluster", "demo", "--type", "json", "-p", '[{"op":"replace","path":"/spec/workers/0/replicas","value":5}]');
    assert.equal(ok("get", "cluster", "demo", "-o", "jsonpath={.spec.workers[0].replicas}"), "5");
    ok("label", "cluster", "demo", "tier=gold");
    ok("annotate", "cluster", "demo", "owner=alice");
    assert.equal(ok("get", "cluster", "-l", "tier=gold,team in (platform)", "-o", "name"), "cluster.slipway.dev/demo\n");
    assert.equal(ok("get", "cluster", "-l", "tier!=gold", "-o", "name"), "");
    assert.equal(ok("get", "cluster", "demo", "-o", "jsonpath={.metadata.annotations.owner}"), "alice");
    const bad = k("patch", "cluster", "demo", "--type", "json", "-p", '[{"op":"test","path":"/spec/workers/0/replicas","value":99}]');
    assert.notEqual(bad.status, 0, "a failing json-patch test is refused");
  });

  it("refuses a replace with a stale object as a conflict", () => {
    const stale = ok("get", "cluster", "demo", "-o", "json");
    ok("label", "cluster", "demo", "bump=1");
    const r = kubectl(kc, ["replace", "-f", "-"], stale);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /Conflict|the object has been modified/);
  });

  it("writes status only through the status subresource, and wait sees it", async () => {
    const waitPhase = kubectlAsync(kc, ["wait", "cluster/demo", "--for=jsonpath={.status.phase}=Running", "--timeout=30s"]);
    const waitReady = kubectlAsync(kc, ["wait", "cluster/demo", "--for=condition=Ready", "--timeout=30s"]);
    const generation = ok("get", "cluster", "demo", "-o", "jsonpath={.metadata.generation}");
    // Status in a main-resource patch is ignored …
    ok("patch", "cluster", "demo", "--type", "merge", "-p", '{"status":{"phase":"Failed"}}');
    assert.equal(ok("get", "cluster", "demo", "-o", "jsonpath={.status.phase}"), "Pending", "the phase a create gives, unchanged");
    // … and written through /status, without touching the generation.
    ok(
      "patch", "cluster", "demo", "--subresource=status", "--type", "merge", "-p",
      JSON.stringify({ status: { phase: "Running", conditions: [{ type: "Ready", status: "True", reason: "AllNodesReady", lastTransitionTime: new Date().toISOString().replace(/\.\d+Z/, "Z") }] } }),
    );
    assert.equal(await waitPhase.done, 0, waitPhase.output());
    assert.equal(await waitReady.done, 0, waitReady.output());
    assert.equal(ok("get", "cluster", "demo", "-o", "jsonpath={.metadata.generation}"), generation);
    assert.match(ok("get", "cl", "demo"), /demo\s+Running/);
  });

  it("shows later changes with get -w", async () => {
    const watch = kubectlAsync(kc, ["get", "clusters", "-w"]);
    await eventually(() => /demo/.test(watch.output()), { what: "the initial list" });
    ok("patch", "cluster", "demo", "--subresource=status", "--type", "merge", "-p", '{"status":{"phase":"Updating"}}');
    await eventually(() => /demo\s+Updating/.test(watch.output()), { what: "the change in the watch output" });
    watch.child.kill("SIGTERM");
    await watch.done;
  });

  it("describes an object with its events", () => {
    const uid = ok("get", "cluster", "demo", "-o", "jsonpath={.metadata.uid}");
    const event = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: "demo.1", namespace: "default" },
      involvedObject: { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", name: "demo", namespace: "default", uid },
      reason: "ValidationPassed",
      message: "every connection, machine type and image exists",
      type: "Normal",
      count: 1,
      source: { component: "slipway-cluster-controller" },
      firstTimestamp: new Date().toISOString().replace(/\.\d+Z/, "Z"),
      lastTimestamp: new Date().toISOString().replace(/\.\d+Z/, "Z"),
    };
    const created = kubectl(kc, ["create", "-f", "-"], JSON.stringify(event));
    assert.equal(created.status, 0, created.stderr);
    const described = ok("describe", "cluster", "demo");
    assert.match(described, /Events:/);
    assert.match(described, /ValidationPassed/);
    assert.match(ok("get", "events", "--field-selector", "involvedObject.name=demo"), /ValidationPassed/);
    assert.equal(ok("get", "events", "--field-selector", "involvedObject.name=other", "-o", "name"), "");
  });

  it("explains fields from the published schema", () => {
    const out = ok("explain", "cluster.spec.controlPlane");
    assert.match(out, /replicas/);
    assert.match(out, /machineType/);
  });

  it("lists namespaces and round-trips a generic secret without storing it in clear", async () => {
    assert.match(ok("get", "ns"), /default\s+Active/);
    ok("create", "secret", "generic", "db-password", "--from-literal=password=correct-horse-battery-staple");
    const encoded = ok("get", "secret", "db-password", "-o", "jsonpath={.data.password}");
    assert.equal(Buffer.from(encoded, "base64").toString(), "correct-horse-battery-staple");
    for (const name of readdirSync(dir)) {
      if (name.startsWith("state.db") || name.endsWith(".log")) {
        const content = readFileSync(join(dir, name));
        assert.equal(content.includes("correct-horse-battery-staple"), false, `${name} holds the secret in clear`);
        assert.equal(content.includes(encoded), false, `${name} holds the secret's base64 in clear`);
      }
    }
    // Nothing slipway up wrote can be read by another user (the manifests are the test's).
    for (const name of readdirSync(dir).filter((n) => !n.endsWith(".yaml"))) assert.equal(statSync(join(dir, name)).mode & 0o077, 0, `${name} is private`);
    // Every request is in the audit log with who made it and what it was, and no credential is. A request
    // is recorded once its response has gone, so the last one may reach the log just after kubectl exits.
    const auditEvents = () => readFileSync(join(dir, "audit.log"), "utf8").trim().split("\n").map((line) => JSON.parse(line) as { verb: string; user: { username: string; groups: string[] }; objectRef?: { resource: string; namespace?: string; name?: string; apiGroup?: string }; responseStatus: { code: number }; apiVersion: string; level: string });
    const events = await eventually(() => {
      const all = auditEvents();
      return all.some((e) => e.verb === "get" && e.objectRef?.resource === "secrets" && e.objectRef.name === "db-password") ? all : undefined;
    }, { timeoutMs: 10_000, what: "the audit log to record the secret's read" });
    const created = events.find((e) => e.verb === "create" && e.objectRef?.resource === "secrets");
    assert.deepEqual([created?.apiVersion, created?.level, created?.user.username, created?.objectRef?.namespace, created?.responseStatus.code], ["audit.k8s.io/v1", "Metadata", "admin", "default", 201]);
    assert.ok(created?.user.groups.includes("system:masters"));
    const read = events.find((e) => e.verb === "get" && e.objectRef?.resource === "secrets" && e.objectRef.name === "db-password");
    assert.equal(read?.responseStatus.code, 200);
    assert.ok(events.some((e) => e.verb === "list" && e.objectRef?.resource === "namespaces"));
    const token = /token: (\S+)/.exec(readFileSync(kc, "utf8"))?.[1];
    assert.ok(token);
    assert.equal(readFileSync(join(dir, "audit.log"), "utf8").includes(token), false, "no token in the audit log");
  });

  it("waits for finalizers on delete", async () => {
    const file = join(dir, "fin.yaml");
    writeFileSync(file, MANIFEST(1).split("---")[1]!.replace("name: demo", "name: held").replace("  labels:", "  finalizers: [slipway.dev/test]\n  labels:"));
    ok("apply", "-f", file);
    const deletion = kubectlAsync(kc, ["delete", "cluster", "held", "--timeout=30s"]);
    await eventually(() => ok("get", "cluster", "held", "-o", "jsonpath={.metadata.deletionTimestamp}") !== "", { what: "deletionTimestamp" });
    assert.equal(deletion.child.exitCode, null, "kubectl delete is still waiting");
    ok("patch", "cluster", "held", "--type", "json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]');
    assert.equal(await deletion.done, 0, deletion.output());
    assert.notEqual(k("get", "cluster", "held").status, 0);
  });

  it("garbage-collects dependents and empties a deleted namespace", async () => {
    ok("create", "namespace", "scratch");
    const file = join(dir, "scratch.yaml");
    writeFileSync(file, MANIFEST(1).replace(/metadata:\n {2}name: (\w+)/g, "metadata:\n  name: $1\n  namespace: scratch"));
    ok("apply", "-f", file);
    const uid = ok("get", "cluster", "demo", "-n", "scratch", "-o", "jsonpath={.metadata.uid}");
    const owned = { apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name: "owned", namespace: "scratch", ownerReferences: [{ apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", name: "demo", uid }] }, spec: { provider: "sim", region: "sim-west-1" } };
    assert.equal(kubectl(kc, ["create", "-f", "-"], JSON.stringify(owned)).status, 0);
    ok("delete", "cluster", "demo", "-n", "scratch");
    await eventually(() => k("get", "connection", "owned", "-n", "scratch").status !== 0, { what: "the dependent to be collected" });
    assert.equal(k("get", "connection", "east", "-n", "scratch").status, 0, "objects without the owner stay");
    ok("delete", "namespace", "scratch", "--timeout=30s");
    assert.notEqual(k("get", "namespace", "scratch").status, 0);
    assert.equal(ok("get", "connections", "-A", "-o", "jsonpath={.items[*].metadata.namespace}").includes("scratch"), false);
  });
});
