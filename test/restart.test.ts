// A restart of `slipway up` on the same data directory loses nothing: same objects, same uids, and a
// watch resumed from a resourceVersion taken before the restart sees every change made since.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:https";
import { readFileSync } from "node:fs";
import { parseKubeconfig } from "../src/bootstrap/kubeconfig.ts";
import { eventually, kubectl, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

interface Connection {
  url: string;
  ca: string;
  token: string;
}

function connect(kubeconfigPath: string): Connection {
  const kc = parseKubeconfig(readFileSync(kubeconfigPath, "utf8"));
  return { url: kc.server, ca: kc.caCertPem, token: kc.token ?? "" };
}

/** Reads a watch stream until `count` events arrived (or the stream ends). */
function watchEvents(c: Connection, path: string, count: number, only?: string): Promise<{ status: number; events: { type: string; object: { metadata?: { name?: string }; code?: number } }[] }> {
  return new Promise((resolve, reject) => {
    const req = request(`${c.url}${path}`, { ca: c.ca, headers: { Authorization: `Bearer ${c.token}` } }, (res) => {
      let buffer = "";
      const events: { type: string; object: { metadata?: { name?: string }; code?: number } }[] = [];
      const done = () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, events });
      };
      res.on("data", (chunk: Buffer) => {
        buffer += chunk.toString();
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          const event = line.trim() ? (JSON.parse(line) as { type: string; object: { metadata?: { name?: string }; code?: number } }) : undefined;
          if (event && (!only || event.type === only || event.type === "ERROR")) events.push(event);
          if (events.length >= count) return done();
        }
      });
      res.on("end", done);
    });
    req.on("error", reject);
    req.setTimeout(20_000, () => req.destroy(new Error("watch timed out")));
    req.end();
  });
}

describe("restarting slipway up", () => {
  let server: RunningSlipway;

  before(async () => {
    server = await startSlipway();
  });

  after(async () => {
    await server.stop("SIGKILL");
    removeDir(server.dataDir);
  });

  it("keeps objects with their uids and resumes a watch across the restart", async () => {
    const kc = server.kubeconfig;
    const create = (name: string) =>
      assert.equal(kubectl(kc, ["create", "-f", "-"], JSON.stringify({ apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name }, spec: { provider: "sim", region: "sim-east-1" } })).status, 0);
    create("before");
    const uid = kubectl(kc, ["get", "connection", "before", "-o", "jsonpath={.metadata.uid}"]).stdout;
    const rv = (JSON.parse(kubectl(kc, ["get", "--raw", "/apis/slipway.dev/v1alpha1/namespaces/default/connections"]).stdout) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    assert.match(rv, /^\d+$/);
    create("during");

    assert.equal(await server.stop("SIGTERM"), 0);
    server = await startSlipway({ dataDir: server.dataDir, port: server.port });
    create("after");

    assert.equal(kubectl(kc, ["get", "connection", "before", "-o", "jsonpath={.metadata.uid}"]).stdout, uid);
    // The connection controller writes statuses meanwhile (MODIFIED events); the creations must all be there.
    const { status, events } = await watchEvents(connect(kc), `/apis/slipway.dev/v1alpha1/namespaces/default/connections?watch=true&resourceVersion=${rv}`, 2, "ADDED");
    assert.equal(status, 200);
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.object.metadata?.name}`),
      ["ADDED during", "ADDED after"],
    );
  });

  it("answers a watch from a forgotten revision with 410 Gone, and a relist works", async () => {
    await server.stop("SIGTERM");
    server = await startSlipway({ dataDir: server.dataDir, port: server.port, args: ["--compaction-interval", "100ms"] });
    const c = connect(server.kubeconfig);
    assert.match(await fetchText(c, "/metrics"), /apiserver_request_total/);
    // Revision 1 predates everything; once the history is compacted it is too old to watch from.
    const gone = await eventually(async () => {
      const { events } = await watchEvents(c, `/apis/slipway.dev/v1alpha1/namespaces/default/connections?watch=true&resourceVersion=1`, 1);
      return events[0]?.type === "ERROR" ? events[0] : undefined;
    }, { what: "410 Gone after compaction" });
    assert.equal(gone.object.code, 410);
    assert.match(kubectl(server.kubeconfig, ["get", "connections"]).stdout, /before/);
  });
});

function fetchText(c: Connection, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${c.url}${path}`, { ca: c.ca, headers: { Authorization: `Bearer ${c.token}` } }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve(body));
    });
    req.on("error", reject);
    req.end();
  });
}

