// The `slipway` client commands against a real `slipway up` (its controllers and an instant sim cloud
// make the clusters), run as a user runs them: output, exit codes, progress in a pipe, and errors.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import type { ClusterObject, EventObject } from "../src/api/kinds.ts";
import { renderKubeconfig } from "../src/bootstrap/kubeconfig.ts";
import { sortEvents } from "../src/views/events.ts";
import { KubeClient, type KubeObject } from "../src/kubeclient/index.ts";
import { KUBECTL, REPO, SLIPWAY_BIN, eventually, freePort, kubectl, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

const API = "slipway.dev/v1alpha1";
const PEM = "-----BEGIN CERTIFICATE-----\nMIIBdGVzdA==\n-----END CERTIFICATE-----\n";
/** A progress line in a pipe: `[  12.3s] cluster/NAME  what changed`. */
const PROGRESS_LINE = /^\[\s*\d+\.\ds\] cluster\/[a-z0-9-]+ {2}\S/;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** The kubeconfig passed with --kubeconfig (default the server's); null passes none. */
  kubeconfig?: string | null;
}

function manifest(dir: string, name: string, options: { workers?: number; machineType?: string; labels?: string } = {}): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `apiVersion: ${API}\nkind: Connection\nmetadata:\n  name: east\nspec:\n  provider: sim\n  region: sim-east-1\n---\n` +
      `apiVersion: ${API}\nkind: Cluster\nmetadata:\n  name: ${name}\n  labels:\n    team: platform${options.labels ?? ""}\nspec:\n` +
      `  controlPlane:\n    connection: east\n    machineType: s1.medium\n    replicas: 1\n` +
      `  workers:\n    - name: work\n      connection: east\n      machineType: ${options.machineType ?? "s1.small"}\n      replicas: ${options.workers ?? 1}\n`,
  );
  return file;
}

/** The progress lines of one cluster, checked to be plain (no carriage returns, no escape codes). */
function progressLines(stdout: string, cluster: string): string[] {
  assert.ok(!stdout.includes("\r") && !stdout.includes("\x1b"), "no carriage returns or escape codes in a pipe");
  const lines = stdout.split("\n").filter((l) => l.includes(`cluster/${cluster} `));
  for (const line of lines) assert.match(line, PROGRESS_LINE);
  return lines.map((l) => l.replace(/^\[[^\]]*\] cluster\/[a-z0-9-]+ {2}/, ""));
}

describe("slipway client commands", () => {
  let server: RunningSlipway;
  let kc: string;
  let home: string;
  let client: KubeClient;
  const children = new Set<ChildProcess>();

  /** Runs the CLI in a pipe, with an empty HOME and no $KUBECONFIG unless given. */
  const start = (args: string[], options: RunOptions = {}) => {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, ...options.env };
    if (!options.env?.KUBECONFIG) delete env.KUBECONFIG;
    delete env.CI;
    const kubeconfigArgs = options.kubeconfig === null ? [] : ["--kubeconfig", options.kubeconfig ?? kc];
    const child = spawn(process.execPath, [SLIPWAY_BIN, ...kubeconfigArgs, ...args], { cwd: REPO, env, stdio: ["ignore", "pipe", "pipe"] });
    children.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const done = new Promise<Run>((resolve) =>
      child.once("close", (code) => {
        children.delete(child);
        resolve({ code, stdout, stderr });
      }),
    );
    return { output: () => stdout, done, child };
  };
  const run = (args: string[], options: RunOptions = {}) => start(args, options).done;
  const ok = async (...args: string[]) => {
    const r = await run(args);
    assert.equal(r.code, 0, `slipway ${args.join(" ")} failed: ${r.stderr}`);
    return r.stdout;
  };
  const path = (apiVersion: string, kind: string, name?: string) => client.resourcePath({ apiVersion, kind, namespace: "default", ...(name ? { name } : {}) });
  const getCluster = async (name: string) => client.get<ClusterObject>(await path(API, "Cluster", name));
  /** The nodes of a cluster as its own API lists them (kubectl with the cluster's kubeconfig). */
  const workloadNodes = (name: string): { name: string; ready: boolean }[] => {
    const config = join(home, `${name}.kubeconfig`);
    const secret = spawnSync(KUBECTL, ["--kubeconfig", kc, "get", "secret", `${name}-kubeconfig`, "-o", "jsonpath={.data.value}"], { encoding: "utf8" });
    assert.equal(secret.status, 0, secret.stderr);
    writeFileSync(config, Buffer.from(secret.stdout, "base64"));
    const listed = spawnSync(KUBECTL, ["--kubeconfig", config, "get", "nodes", "--no-headers"], { encoding: "utf8" });
    assert.equal(listed.status, 0, listed.stderr);
    return listed.stdout.trim().split("\n").map((line) => ({ name: line.split(/\s+/)[0]!, ready: line.split(/\s+/)[1] === "Ready" }));
  };

  before(async () => {
    server = await startSlipway({ args: ["--sim-profile", "instant", "--sim-port", "0", "--poll-interval", "200ms"] });
    kc = server.kubeconfig;
    home = mkdtempSync(join(tmpdir(), "slipway-cli-home-"));
    client = KubeClient.fromKubeconfig(readFileSync(kc, "utf8"));
  });

  after(async () => {
    // A command that a failed test left waiting must not outlive the tests.
    for (const child of children) child.kill("SIGKILL");
    client.close();
    assert.equal(await server.stop("SIGTERM"), 0);
    removeDir(server.dataDir);
    removeDir(home);
  });

  it("applies a manifest: created, then unchanged while the controllers work on it, then configured", async () => {
    const file = manifest(home, "alpha");
    assert.equal(await ok("apply", "-f", file), "connection.slipway.dev/east created\ncluster.slipway.dev/alpha created\n");
    assert.equal(await ok("apply", "-f", file), "connection.slipway.dev/east unchanged\ncluster.slipway.dev/alpha unchanged\n");
    manifest(home, "alpha", { labels: "\n    tier: gold" });
    assert.equal(await ok("apply", "-f", file), "connection.slipway.dev/east unchanged\ncluster.slipway.dev/alpha configured\n");
    assert.equal((await getCluster("alpha")).metadata.labels?.tier, "gold");
    manifest(home, "alpha");
    assert.equal(await ok("apply", "-f", file), "connection.slipway.dev/east unchanged\ncluster.slipway.dev/alpha configured\n");
    assert.deepEqual((await getCluster("alpha")).metadata.labels, { team: "platform" }, "the label dropped from the manifest is gone");
  });

  it("applies as kubectl does: each reads the other's record of what was applied, and fields dropped are removed", async () => {
    const file = join(home, "interop.yaml");
    const write = (labels: Record<string, string>, endpoint?: string) =>
      writeFileSync(
        file,
        `apiVersion: ${API}\nkind: Connection\nmetadata:\n  name: interop\n${Object.keys(labels).length > 0 ? `  labels: ${JSON.stringify(labels)}\n` : ""}` +
          `spec:\n  provider: sim\n  region: sim-east-1\n${endpoint ? `  endpoint: ${endpoint}\n` : ""}`,
      );
    const kubectlApply = () => {
      const r = kubectl(kc, ["apply", "-f", file]);
      assert.equal(r.status, 0, r.stderr);
      return r.stdout;
    };
    write({ a: "1", b: "2" }, "https://cloud.example:8443");
    assert.equal(await ok("apply", "-f", file), "connection.slipway.dev/interop created\n");
    assert.equal(kubectlApply(), "connection.slipway.dev/interop unchanged\n", "kubectl reads Slipway's record as its own");
    write({ a: "1" }, "https://cloud.example:8443");
    assert.equal(kubectlApply(), "connection.slipway.dev/interop configured\n");
    assert.equal(await ok("apply", "-f", file), "connection.slipway.dev/interop unchanged\n", "Slipway reads kubectl's record as its own");
    write({});
    assert.equal(await ok("apply", "-f", file), "connection.slipway.dev/interop configured\n");
    const applied = await client.get<KubeObject & { spec: { endpoint?: string } }>(await path(API, "Connection", "interop"));
    assert.equal(applied.metadata.labels?.a, undefined, "the label kubectl applied and the manifest dropped is gone");
    assert.equal(applied.spec.endpoint, undefined, "the field dropped from the manifest is gone");
    assert.equal(kubectlApply(), "connection.slipway.dev/interop unchanged\n");
  });

  it("apply --wait prints one plain line per change in a pipe until the cluster is Ready, then exits 0", async () => {
    const r = await run(["apply", "-f", manifest(home, "beta", { workers: 2 }), "--wait"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^connection\.slipway\.dev\/east unchanged\ncluster\.slipway\.dev\/beta created\n/);
    const lines = progressLines(r.stdout, "beta");
    const phases = lines.filter((l) => l.startsWith("phase ")).map((l) => l.split(" ")[1]);
    assert.equal(phases.at(-1), "Running");
    const order = ["Pending", "Validating", "Provisioning", "Running"];
    assert.deepEqual(phases, [...phases].sort((a, b) => order.indexOf(a!) - order.indexOf(b!)), "phases only move forward");
    assert.ok(lines.some((l) => /^(✓ \S.* \(\d+\.\ds\)|\d+ steps? done)$/.test(l)), `finished steps are reported:\n${lines.join("\n")}`);
    assert.ok(lines.some((l) => /^machines \d\/3 created, \d booted, \d joined, \d ready$/.test(l)), "machine counts are reported");
    assert.match(lines.at(-1)!, /^✓ Ready after \d+\.\ds$/);
    assert.equal((await getCluster("beta")).status?.phase, "Running");
    assert.deepEqual(workloadNodes("beta").map((n) => n.ready), [true, true, true], "Ready as claimed: three nodes, each Ready");
  });

  it("apply --wait ends with the reason and message, and exit code 1, when the cluster fails", async () => {
    const r = await run(["apply", "-f", manifest(home, "broken", { machineType: "s9.galactic" }), "--wait"]);
    assert.equal(r.code, 1);
    const reason = 'ValidationFailed: spec.workers[0].machineType: machine type "s9.galactic" is not offered in connection "east"';
    assert.ok(progressLines(r.stdout, "broken").at(-1)!.startsWith(`✗ Failed: ${reason}`), r.stdout);
    assert.ok(r.stderr.startsWith(`error: cluster "broken" failed: ${reason}`), r.stderr);
    assert.equal(r.stderr.trimEnd().split("\n").length, 1, "one line");
  });

  it("gets the server's columns, wide ones with -o wide, NAMESPACE with -A, several kinds, and objects as json or yaml", async () => {
    const [table, wide, all, several, json, yaml, none] = await Promise.all([
      ok("get", "clusters"),
      ok("get", "cl", "-o", "wide"),
      ok("get", "cluster.slipway.dev", "-A"),
      ok("get", "cl,mp", "-l", "slipway.dev/cluster=beta"),
      ok("get", "cluster", "beta", "-o", "json"),
      ok("get", "machines", "-o", "yaml"),
      run(["get", "mp", "-n", "kube-public"]),
    ]);
    assert.match(table.split("\n")[0]!, /^NAME\s+PHASE\s+CONTROL-PLANE\s+WORKERS\s+VERSION\s+AGE$/);
    assert.match(table, /^beta\s+Running\s+1\/1\s+2\/2\s+v1\.31\.2\s+\d+s$/m);
    assert.match(table, /^broken\s+Failed\s/m);
    assert.match(wide.split("\n")[0]!, /AGE\s+ENDPOINT\s+REASON\s+TEMPLATE$/);
    assert.match(wide, /^broken\s.*\sValidationFailed$/m);
    assert.match(all.split("\n")[0]!, /^NAMESPACE\s+NAME\s+PHASE/);
    assert.match(all, /^default\s+beta\s+Running/m);
    assert.match(several.split("\n")[0]!, /^NAME\s+CLUSTER\s+DESIRED\s+REPLICAS\s+READY\s+AVAILABLE\s+UPDATED\s+PHASE\s+AGE/, "only kinds with objects are listed");
    assert.match(several, /^machinepool\.slipway\.dev\/beta-work\s+beta\s+2\s+2\s+2\s+2\s+2\s+Running/m);
    const object = JSON.parse(json) as ClusterObject;
    assert.equal(object.kind, "Cluster");
    assert.equal(object.spec.network?.podCIDR, "10.244.0.0/16");
    const list = parse(yaml) as { kind: string; items: KubeObject[] };
    assert.equal(list.kind, "List");
    assert.ok(list.items.some((i) => i.kind === "Machine" && i.metadata.name === "beta-cp-0"));
    assert.equal(none.code, 0);
    assert.equal(none.stdout, "");
    assert.equal(none.stderr, "No resources found in kube-public namespace.\n");
  });

  it("says which object is missing, and which kinds are unknown, in one line with exit code 1", async () => {
    const [missing, unknownKind, deleteMissing, noKubeconfig] = await Promise.all([
      run(["get", "cl", "nope"]),
      run(["get", "widgets"]),
      run(["delete", "cluster", "nope"]),
      run(["kubeconfig", "broken"]),
    ]);
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'error: cluster "nope" not found in namespace default\n');
    assert.equal(unknownKind.code, 1);
    assert.equal(unknownKind.stderr, 'error: the server doesn\'t have a resource type "widgets"\n');
    assert.equal(deleteMissing.code, 1);
    assert.equal(deleteMissing.stderr, 'error: cluster "nope" not found in namespace default\n');
    assert.equal(noKubeconfig.code, 1);
    assert.match(noKubeconfig.stderr, /^error: cluster "broken" has no kubeconfig yet \(phase Failed\)/);
  });

  it("refuses an invalid manifest with one line naming the object, the field and the problem", async () => {
    const file = join(home, "bad.yaml");
    writeFileSync(file, `apiVersion: ${API}\nkind: Cluster\nmetadata:\n  name: bad\nspec:\n  controlPlane:\n    connection: east\n    machineType: s1.medium\n    replicas: 2\n`);
    const r = await run(["apply", "-f", file]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "");
    assert.equal(r.stderr, 'error: Cluster "bad" is invalid: spec.controlPlane.replicas: Unsupported value: 2: supported values: 1, 3, 5\n');
    writeFileSync(file, readFileSync(file, "utf8").replace("replicas: 2", "replicas: 1\n    colour: blue"));
    const unknownField = await run(["apply", "-f", file]);
    assert.equal(unknownField.code, 1);
    assert.equal(unknownField.stderr, 'error: Cluster "bad" is invalid: spec.controlPlane.colour: unknown field "colour"\n');
    writeFileSync(file, "kind: Cluster\nmetadata:\n  name: bad\n");
    const noVersion = await run(["apply", "-f", file]);
    assert.equal(noVersion.code, 1);
    assert.equal(noVersion.stderr, `error: ${file} (document 1): apiVersion not set\n`);
    assert.equal((await run(["get", "cluster", "bad"])).code, 1, "nothing was created");
  });

  it("exits 2 with a helpful message on an unknown command or flag", async () => {
    const [command, flag, kind, count, period] = await Promise.all([
      run(["gett", "clusters"]),
      run(["get", "clusters", "--colour"]),
      run(["describe", "connection", "east"]),
      run(["scale", "mp", "beta-work", "--replicas", "many"]),
      run(["up", "--data-dir", join(home, "never"), "--sync-period", "hourly"]),
    ]);
    assert.equal(command.code, 2);
    assert.match(command.stderr, /^error: unknown command 'gett'\n\(Did you mean get\?\)/);
    assert.equal(flag.code, 2);
    assert.match(flag.stderr, /^error: unknown option '--colour'\n/);
    assert.match(flag.stderr, /Usage: slipway get \[options\] <kind> \[name\]/);
    assert.equal(kind.code, 2);
    assert.match(kind.stderr, /^error: describe shows clusters and logical clouds/);
    assert.equal(count.code, 2);
    assert.match(count.stderr, /^error: --replicas must be a whole number from 0 to 1000 \(got "many"\)/);
    assert.equal(period.code, 2);
    assert.match(period.stderr, /^error: --sync-period must be a duration such as 500ms, 30s or 5m \(got "hourly"\)/);
    assert.equal(existsSync(join(home, "never")), false, "a bad flag writes nothing");
  });

  it("names the server it cannot reach, and where it looked for a kubeconfig", async () => {
    const port = await freePort();
    const unreachable = join(home, "unreachable.kubeconfig");
    writeFileSync(unreachable, readFileSync(kc, "utf8").replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${port}`));
    const [refused, nothing, fromEnv] = await Promise.all([
      run(["get", "clusters"], { kubeconfig: unreachable }),
      run(["get", "clusters"], { kubeconfig: null }),
      run(["get", "clusters"], { kubeconfig: null, env: { KUBECONFIG: kc } }),
    ]);
    assert.equal(refused.code, 1);
    assert.equal(refused.stderr, `error: cannot reach the Slipway API at https://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port} (is slipway up running?)\n`);
    assert.equal(nothing.code, 1);
    assert.ok(nothing.stderr.startsWith(`error: no kubeconfig at ${join(home, ".slipway", "kubeconfig")}: start the control plane with "slipway up"`), nothing.stderr);
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
    assert.match(fromEnv.stdout, /^beta\s/m);
  });

  describe("a Running cluster", () => {
    it("describes it as a tree with READY, REASON, SINCE and MESSAGE, then its conditions", async () => {
      const text = await ok("describe", "cluster", "beta");
      const lines = text.split("\n");
      assert.match(lines[0]!, /^NAME\s+READY\s+REASON\s+SINCE\s+MESSAGE$/);
      const row = (name: string) => {
        const line = lines.find((l) => l.startsWith(`${name} `));
        assert.ok(line, `a row ${name} in:\n${text}`);
        return line.slice(name.length).trim().split(/\s{2,}/);
      };
      assert.deepEqual(row("Cluster/beta").slice(0, 2), ["True", "Ready"]);
      assert.match(row("Cluster/beta")[2]!, /^(\d+m)?\d+s$/, "SINCE is an age");
      assert.equal(row("├─Infrastructure/beta-east")[0], "True");
      assert.equal(row("├─ControlPlane")[0], "True");
      assert.equal(row("│ └─Machine/beta-cp-0")[0], "True");
      assert.equal(row("└─Workers")[0], "True");
      assert.equal(row("  └─MachinePool/beta-work")[0], "True");
      assert.equal(row("    ├─Machine/beta-work-0")[0], "True");
      assert.equal(row("    └─Machine/beta-work-1")[0], "True");
      assert.match(text, /^Phase:\s+Running$/m);
      // What the rows claim: the cluster's own API has its three nodes, each Ready.
      const nodes = workloadNodes("beta");
      assert.deepEqual(nodes.map((n) => n.name), ["beta-cp-0", "beta-work-0", "beta-work-1"]);
      assert.ok(nodes.every((n) => n.ready), JSON.stringify(nodes));
      assert.match(text, /^Conditions:\n\s+TYPE\s+STATUS\s+REASON\s+SINCE\s+MESSAGE\n/m);
      assert.match(text, /^\s+Ready\s+True\s+Ready\s+\d+s\s+\S/m);
    });

    it("lists the events of the cluster and its children, oldest first, and no others", async () => {
      const created = (await getCluster("beta")).metadata.creationTimestamp!;
      const earlier = new Date(Date.parse(created) - 60_000).toISOString().replace(/\.\d{3}Z$/, "Z");
      await client.create(await path("v1", "Event"), {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name: "beta-earliest" },
        involvedObject: { apiVersion: API, kind: "Cluster", name: "beta", namespace: "default" },
        reason: "Planned",
        message: "recorded a minute before the cluster existed",
        type: "Normal",
        firstTimestamp: earlier,
        lastTimestamp: earlier,
      });
      const text = await ok("events", "beta");
      const lines = text.trimEnd().split("\n");
      assert.match(lines[0]!, /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
      const rows = lines.slice(1).map((l) => l.split(/\s{2,}/));
      assert.deepEqual(rows[0]!.slice(1), ["Normal", "Planned", "cluster/beta", "recorded a minute before the cluster existed"], "the oldest comes first");
      const objects = new Set(rows.map((r) => r[3]));
      for (const object of ["cluster/beta", "infrastructure/beta-east", "machinepool/beta-work", "machine/beta-cp-0", "machine/beta-work-1"]) assert.ok(objects.has(object), `events of ${object}`);
      assert.ok(![...objects].some((o) => /alpha|broken/.test(o!)), "no events of other clusters");
      // Events recorded since the command ran sort after those it printed.
      const all = await client.listAll<EventObject>(await path("v1", "Event"));
      const expected = sortEvents(all.filter((e) => objects.has(`${e.involvedObject.kind!.toLowerCase()}/${e.involvedObject.name}`))).slice(0, rows.length);
      assert.deepEqual(
        rows.map((r) => r[2]),
        expected.map((e) => e.reason),
        "in the order of their times",
      );
    });

    it("draws the timeline on an 80-column axis with the critical path", async () => {
      const cluster = await getCluster("beta");
      const text = await ok("timeline", "beta");
      const lines = text.trimEnd().split("\n");
      assert.match(lines[0]!, /^cluster\/beta {2}Running {2}\d+\.\ds from creation to Ready$/);
      for (const line of lines) assert.ok([...line].length <= 80, `fits 80 columns: ${line}`);
      const bars = lines.filter((l) => l.includes("|"));
      assert.deepEqual(
        bars.map((l) => l.split("|")[0]!.trim()),
        [...cluster.status!.steps!].sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt)).map((s) => s.name),
        "one bar per step of the journal",
      );
      for (const line of bars) assert.match(line, /^\S.*? +\|[ █▉▊▋▌▍▎▏]+\| {2}\d+\.\ds → \d+\.\ds$/);
      assert.match(bars[0]!, /^Validate +\|[█▉▊▋▌▍▎▏]/, "the first step starts at the left edge");
      // The chain ends with the last step; how far back it reaches depends on the sim cloud's timing.
      assert.match(text, /\n\ncritical path \(\d+\.\ds of \d+\.\ds\): (\S[^\n]*)?(\n {2}→ [^\n]*)*\bReady\n$/);
    });

    it("prints the cluster's kubeconfig, and merges it into ~/.kube/config for kubectl", async () => {
      const printed = await ok("kubeconfig", "beta");
      const secret = await client.get<{ data: { value: string } }>(await path("v1", "Secret", "beta-kubeconfig"));
      assert.equal(printed, Buffer.from(secret.data.value, "base64").toString("utf8"));
      const context = (parse(printed) as { "current-context": string })["current-context"];
      const config = join(home, ".kube", "config");
      assert.ok(!existsSync(config));
      assert.equal(await ok("kubeconfig", "beta", "--merge"), `cluster beta merged into ${config} as context "${context}"\nuse it with: kubectl --context ${context} get nodes\n`);
      const nodes = await new Promise<string>((resolve, reject) => {
        const child = spawn(KUBECTL, ["--kubeconfig", config, "--context", context, "get", "nodes", "--no-headers"], { stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        child.stdout.on("data", (d: Buffer) => (out += d.toString()));
        child.once("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`kubectl exited ${code}`))));
      });
      assert.equal(nodes.trim().split("\n").length, 3, "kubectl reaches the cluster's 3 nodes");
      writeFileSync(config, renderKubeconfig({ clusterName: "other", server: "https://10.9.9.9:6443", caCertPem: PEM, user: "me", token: "t", context: "other" }));
      await ok("kubeconfig", "beta", "--merge");
      await ok("kubeconfig", "beta", "--merge");
      const merged = parse(readFileSync(config, "utf8")) as { contexts: { name: string }[]; "current-context": string };
      assert.deepEqual(merged.contexts.map((c) => c.name), ["other", context], "merging again replaces the entry");
      assert.equal(merged["current-context"], "other", "the user's current context stays");
    });

    it("scales a machine pool through its cluster's spec, and get -w shows the pool change as it happens", async () => {
      const watch = start(["get", "mp", "beta-work", "-w"]);
      await eventually(() => /^beta-work\s+beta\s+2\s+2\s+2\s+2\s+2\s+Running/m.test(watch.output()), { what: "the listing of the pool" });
      assert.equal(await ok("scale", "machinepool", "beta-work", "--replicas", "3"), "machinepool.slipway.dev/beta-work scaled to 3 (cluster beta)\n");
      const cluster = await getCluster("beta");
      assert.deepEqual(cluster.spec.workers?.map((w) => [w.name, w.replicas]), [["work", 3]]);
      await eventually(async () => /^beta-work\s+beta\s+3\s+3\s+3\s+3\s+3\s+Running/m.test(await ok("get", "mp")), { what: "the pool to grow to 3", timeoutMs: 30_000 });
      await eventually(() => /^beta-work\s+beta\s+3\s+3\s+3\s+3\s+3\s+Running/m.test(watch.output()), { what: "the watch to show the grown pool" });
      const [header, ...rows] = watch.output().trimEnd().split("\n");
      assert.match(header!, /^NAME\s+CLUSTER\s+DESIRED\s+REPLICAS/);
      assert.ok(rows.length >= 3, `a row per change after the listing:\n${watch.output()}`);
      const at = header!.indexOf("CLUSTER");
      for (const row of rows) assert.equal(row.slice(at, at + 5), "beta ", `rows line up under the header:\n${watch.output()}`);
      assert.ok(rows.some((r) => /^beta-work\s+beta\s+3\s+\d+\s+2\s/.test(r)), `the way from 2 to 3 is shown (3 wanted, 2 Ready):\n${watch.output()}`);
      watch.child.kill("SIGTERM");
      await watch.done;
      const missing = await run(["scale", "mp", "nope", "--replicas", "1"]);
      assert.equal(missing.code, 1);
      assert.equal(missing.stderr, 'error: machinepool "nope" not found in namespace default\n');
    });

    it("delete --wait follows the cluster until it is gone", async () => {
      // A finalizer of the test's own holds the cluster once the controllers are done with it, so that
      // the command sees it Deleting however fast the instant sim cloud takes everything down.
      const hold = "test.slipway.dev/hold";
      const clusterPath = await path(API, "Cluster", "beta");
      const held = await getCluster("beta");
      await client.patch(clusterPath, { metadata: { finalizers: [...(held.metadata.finalizers ?? []), hold], resourceVersion: held.metadata.resourceVersion } }, "merge");
      const deleting = start(["delete", "cluster", "beta", "--wait"]);
      await eventually(async () => {
        const cluster = await getCluster("beta");
        return cluster.metadata.finalizers?.join() === hold && /phase Deleting/.test(deleting.output());
      }, { timeoutMs: 60_000, what: "the controllers to have deleted what the cluster was made of" });
      assert.equal((await client.listAll<KubeObject>(await path(API, "Machine"))).filter((m) => m.metadata.labels?.["slipway.dev/cluster"] === "beta").length, 0, "its machines are gone");
      await client.patch(clusterPath, { metadata: { finalizers: null } }, "merge");
      const r = await deleting.done;
      assert.equal(r.code, 0, r.stderr);
      const lines = progressLines(r.stdout, "beta");
      assert.ok(lines.length >= 2, `the Deleting phase, then the end:\n${r.stdout}`);
      assert.ok(lines.some((l) => l.startsWith("phase Deleting")), r.stdout);
      assert.ok(!lines.some((l) => l.startsWith("✓ Worker") || l.startsWith("▸ Worker")), "the steps of its making are not repeated");
      assert.match(lines.at(-1)!, /^✓ deleted after \d+\.\ds$/);
      assert.match(r.stdout, /\ncluster\.slipway\.dev "beta" deleted\n$/);
      assert.equal((await run(["get", "cluster", "beta"])).code, 1);
    });
  });

  describe("deleting other objects", () => {
    const secret = async (name: string, finalizers: string[] = []) =>
      client.create(await path("v1", "Secret"), { apiVersion: "v1", kind: "Secret", metadata: { name, finalizers }, data: { k: "dg==" } });

    it("deletes at once, or waits with --wait, and gives up after --timeout with exit code 1", async () => {
      await secret("spare");
      await secret("spare2");
      await secret("held", ["test.slipway.dev/hold"]);
      const [now, waited, held] = await Promise.all([
        ok("delete", "secret", "spare"),
        ok("delete", "secrets", "spare2", "--wait"),
        run(["delete", "secret", "held", "--wait", "--timeout", "1s"]),
      ]);
      assert.equal(now, 'secret "spare" deleted\n');
      assert.equal(waited, 'secret "spare2" deleted\n');
      assert.equal(held.code, 1);
      assert.equal(held.stderr, 'error: secret "held" was still there after 1s\n');
      await client.patch(await path("v1", "Secret", "held"), { metadata: { finalizers: null } }, "merge");
    });
  });
});
