// The client over the fetch transport (what a browser uses), against a small local HTTP server that
// answers as scripted: the same requests and answers as over node:https.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeClient } from "./client.ts";
import { KubeGoneError, KubeNotFoundError, KubeTimeoutError, KubeUnreachableError } from "./errors.ts";
import { FetchTransport } from "./fetch-transport.ts";
import { freePort } from "../../test/support/slipway.ts";

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

describe("kube client over fetch", () => {
  let server: Server;
  let base: string;
  const routes = new Map<string, Handler>();
  const seen: { method: string; url: string; authorization: string | undefined; contentType: string | undefined }[] = [];
  const clients: KubeClient[] = [];
  const client = (options: { token?: string; timeoutMs?: number; server?: string } = {}) => {
    const made = new KubeClient({
      transport: new FetchTransport({ server: options.server ?? `${base}/clusters/abc`, ...(options.token ? { token: options.token } : {}) }),
      namespace: "team-a",
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    });
    clients.push(made);
    return made;
  };

  before(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        seen.push({ method: req.method ?? "", url: req.url ?? "", authorization: req.headers.authorization, contentType: req.headers["content-type"] });
        const handler = routes.get((req.url ?? "").split("?")[0]!);
        if (handler) return handler(req, res, body);
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ kind: "Status", status: "Failure", reason: "NotFound", code: 404, message: `nothing at ${req.url}` }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => {
    for (const c of clients) c.close();
    server.closeAllConnections();
    server.close();
  });

  it("sends requests under the server's path with the token, and reads answers and errors", async () => {
    routes.set("/clusters/abc/api/v1/namespaces/team-a/configmaps/one", (req, res, body) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "one" }, data: req.method === "PATCH" ? JSON.parse(body).data : {} }));
    });
    const kube = client({ token: "abc-token" });
    assert.equal((await kube.get("/api/v1/namespaces/team-a/configmaps/one")).metadata.name, "one");
    assert.deepEqual(seen.at(-1), { method: "GET", url: "/clusters/abc/api/v1/namespaces/team-a/configmaps/one", authorization: "Bearer abc-token", contentType: undefined });
    const patched = await kube.patch<{ data: Record<string, string> }>("/api/v1/namespaces/team-a/configmaps/one", { data: { a: "1" } });
    assert.deepEqual(patched.data, { a: "1" });
    assert.equal(seen.at(-1)!.contentType, "application/merge-patch+json");
    await assert.rejects(kube.get("/api/v1/namespaces/missing"), (error: unknown) => error instanceof KubeNotFoundError && /nothing at/.test(error.message));
  });

  it("reports a server that does not answer as unreachable, and one too slow as timed out", async () => {
    await assert.rejects(client({ server: `http://127.0.0.1:${await freePort()}` }).get("/api"), (error: unknown) => {
      assert.ok(error instanceof KubeUnreachableError && !(error instanceof KubeTimeoutError), String(error));
      assert.match(error.message, /ECONNREFUSED/);
      return true;
    });
    routes.set("/clusters/abc/slow", (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write("{");
    });
    await assert.rejects(client({ timeoutMs: 200 }).get("/slow"), (error: unknown) => error instanceof KubeTimeoutError && /200 ms/.test(error.message));
  });

  it("delivers a watch's events as they stream, then the server's error", async () => {
    routes.set("/clusters/abc/api/v1/namespaces/team-a/configmaps", (req, res) => {
      assert.match(req.url ?? "", /watch=true/);
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "a" } } })}\n`);
      setTimeout(() => res.end(`${JSON.stringify({ type: "ERROR", object: { kind: "Status", reason: "Expired", code: 410, message: "too old" } })}\n`), 20);
    });
    const names: string[] = [];
    const watch = client().watch<{ metadata: { name: string } }>("/api/v1/namespaces/team-a/configmaps", {}, (event) => {
      names.push(event.object.metadata.name);
    });
    await watch.opened;
    await assert.rejects(watch.done, KubeGoneError);
    assert.deepEqual(names, ["a"]);
  });

  it("ends a watch when it is closed", async () => {
    routes.set("/clusters/abc/api/v1/namespaces", (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "a" } } })}\n`);
    });
    let close = () => {};
    const watch = client().watch<{ metadata: { name: string } }>("/api/v1/namespaces", {}, () => close());
    close = () => watch.close();
    await watch.done;
  });
});
