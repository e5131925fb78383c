// The control plane's /readyz and /version, as a load balancer and kubectl see them: readiness follows
// the store and the controllers (an etcd that stops answering makes the replica unready, naming the
// check), and the version is Slipway's own, with the commit it runs.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { parseKubeconfig } from "../src/bootstrap/kubeconfig.ts";
import { eventually, kubectl, REPO, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";
import { startEtcd, type EtcdCluster } from "./support/etcd.ts";

/** An unauthenticated GET, as a load balancer's health check makes it. */
function probe(server: string, ca: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${server}${path}`, { ca, timeout: 10_000 }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("readiness and version of the control plane", () => {
  let etcd: EtcdCluster;
  let plane: RunningSlipway;
  let server: string;
  let ca: string;

  before(async () => {
    etcd = await startEtcd();
    plane = await startSlipway({ args: ["--store", "etcd", "--etcd-endpoints", etcd.endpoints.join(","), "--shard-lease-ttl", "2s"] });
    const kc = parseKubeconfig(readFileSync(plane.kubeconfig, "utf8"));
    server = kc.server;
    ca = kc.caCertPem;
  });

  after(async () => {
    await plane.stop("SIGKILL");
    removeDir(plane.dataDir);
    // The etcd processes do not hold the event loop open: keep it running until they have exited.
    const keepRunning = setInterval(() => {}, 1000);
    try {
      await etcd.stop();
    } finally {
      clearInterval(keepRunning);
    }
  });

  it("reports Slipway's release and commit on /version, as kubectl shows it", () => {
    const pkg = JSON.parse(readFileSync(`${REPO}/package.json`, "utf8")) as { version: string };
    const head = execFileSync("git", ["-C", REPO, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
    const r = kubectl(plane.kubeconfig, ["version", "-o", "json"]);
    assert.equal(r.status, 0, r.stderr);
    const server = (JSON.parse(r.stdout) as { serverVersion: { gitVersion: string; gitCommit: string; major: string; minor: string } }).serverVersion;
    assert.equal(server.gitVersion, `v1.31.0-slipway.${pkg.version}`);
    assert.equal(server.gitCommit, head);
    assert.deepEqual([server.major, server.minor], ["1", "31"]);
  });

  it("is ready with the store and the controllers, and says which check fails once etcd stops answering", async () => {
    const ready = await probe(server, ca, "/readyz?verbose");
    assert.equal(ready.status, 200, ready.body);
    assert.equal(ready.body, "[+]ping ok\n[+]store ok\n[+]controllers ok\nreadyz check passed\n");

    // etcd freezes, as a member cut off by the network would: requests to it get no answer.
    const member = etcd.members[0]!;
    process.kill(member.pid, "SIGSTOP");
    try {
      const unready = await eventually(async () => {
        const r = await probe(server, ca, "/readyz");
        return r.status === 503 && /\[-\]controllers/.test(r.body) && r;
      }, { timeoutMs: 20_000, intervalMs: 250, what: "/readyz to fail" });
      assert.match(unready.body, /^\[\+\]ping ok\n\[-\]store failed: reason withheld\n\[-\]controllers failed: reason withheld\nreadyz check failed\n$/);
      assert.equal((await probe(server, ca, "/livez")).body, "ok", "alive all the same: a restart would not help");
    } finally {
      process.kill(member.pid, "SIGCONT");
    }
    await eventually(async () => (await probe(server, ca, "/readyz")).body === "ok", { timeoutMs: 20_000, intervalMs: 250, what: "/readyz to pass again" });
  });
});
