// The client over its HTTPS transport, against a small local HTTPS server that answers as scripted:
// what a workload cluster's API behind a path prefix and a server name looks like, and the failures a
// real server rarely shows on cue.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { renderKubeconfig } from "../bootstrap/kubeconfig.ts";
import { clientCertificateIdentity, createCertificateAuthority, issueCertificate, serverTlsOptions } from "../bootstrap/pki.ts";
import {
  KubeApiError,
  KubeClient,
  KubeGoneError,
  KubeNotFoundError,
  KubeTimeoutError,
  KubeUnreachableError,
  type WatchEvent,
} from "./index.ts";

const ca = await createCertificateAuthority({ commonName: "cluster-abc-ca" });
const serving = await issueCertificate(ca, { commonName: "apiserver", dnsNames: ["api.cluster-abc.internal"], usages: ["server"] });
const admin = await issueCertificate(ca, { commonName: "kubernetes-admin", organizations: ["system:masters"], usages: ["client"] });

interface Seen {
  method: string;
  url: string;
  servername: string | false | null;
  authorization: string | undefined;
  user: string | undefined;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

describe("kube client over HTTPS", () => {
  let server: Server;
  let base: string;
  const seen: Seen[] = [];
  const routes = new Map<string, Handler>();
  const clients: KubeClient[] = [];

  const client = (options: { token?: string; cert?: boolean; tlsServerName?: string | undefined; timeoutMs?: number; prefix?: string } = {}) => {
    const text = renderKubeconfig({
      clusterName: "abc",
      server: base + (options.prefix ?? "/clusters/abc"),
      caCertPem: ca.certPem,
      user: "admin",
      ...(options.cert ? { clientCertPem: admin.certPem, clientKeyPem: admin.keyPem } : { token: options.token ?? "abc-token" }),
      ...("tlsServerName" in options ? (options.tlsServerName ? { tlsServerName: options.tlsServerName } : {}) : { tlsServerName: "api.cluster-abc.internal" }),
      namespace: "team-a",
    });
    const made = KubeClient.fromKubeconfig(text, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
    clients.push(made);
    return made;
  };

  before(async () => {
    server = createServer(serverTlsOptions(serving, { clientCaPem: ca.certPem }), (req, res) => {
      const url = req.url ?? "";
      seen.push({
        method: req.method ?? "",
        url,
        servername: (req.socket as TLSSocket).servername,
        authorization: req.headers.authorization,
        user: clientCertificateIdentity(req.socket as TLSSocket)?.commonName,
      });
      const handler = routes.get(url.split("?")[0]!);
      if (handler) return handler(req, res);
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404, message: `nothing at ${url}` }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => {
    for (const c of clients) c.close();
    server.closeAllConnections();
    server.close();
  });

  it("reaches an API behind a path prefix, verifying the server by its TLS server name", async () => {
    routes.set("/clusters/abc/api/v1/namespaces/team-a/configmaps/one", (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "one", namespace: "team-a" } }));
    });
    const kube = client();
    assert.equal(kube.namespace, "team-a");
    const object = await kube.get("/api/v1/namespaces/team-a/configmaps/one");
    assert.equal(object.metadata.name, "one");
    const request = seen.at(-1)!;
    assert.equal(request.url, "/clusters/abc/api/v1/namespaces/team-a/configmaps/one");
    assert.equal(request.servername, "api.cluster-abc.internal");
    assert.equal(request.authorization, "Bearer abc-token");

    const certified = client({ cert: true });
    await certified.get("/api/v1/namespaces/team-a/configmaps/one");
    assert.equal(seen.at(-1)!.user, "kubernetes-admin");
    assert.equal(seen.at(-1)!.authorization, undefined);
  });

  it("refuses a server whose certificate does not carry the name it is reached by", async () => {
    await assert.rejects(client({ tlsServerName: undefined }).get("/api/v1/namespaces"), (error: unknown) => {
      assert.ok(error instanceof KubeUnreachableError, String(error));
      assert.match(error.message, /127\.0\.0\.1|altnames|certificate/i);
      return true;
    });
  });

  it("turns error answers into named errors, Status or not", async () => {
    const kube = client();
    await assert.rejects(kube.get("/api/v1/namespaces/missing"), (error: unknown) => error instanceof KubeNotFoundError && /nothing at/.test(error.message));
    routes.set("/clusters/abc/api/v1/namespaces/busy", (_req, res) => {
      res.writeHead(429, { "retry-after": "3", "content-type": "text/plain" });
      res.end("slow down");
    });
    await assert.rejects(kube.get("/api/v1/namespaces/busy"), (error: unknown) => {
      assert.ok(error instanceof KubeApiError);
      assert.equal(error.code, 429);
      assert.equal(error.retryAfterSeconds, 3);
      assert.equal(error.message, "slow down");
      return true;
    });
  });

  it("sends a GET again on a new connection when the server closed the kept-alive one as it went out, but not a POST", async () => {
    // The server closes a connection that already served a request as the next one arrives on it: what
    // a server's idle timeout does when it meets a request (the client cannot tell until it writes).
    const served = new WeakSet<object>();
    let arrived = 0;
    routes.set("/clusters/abc/api/v1/namespaces/team-a/configmaps", (req, res) => {
      arrived++;
      if (served.has(req.socket)) {
        req.socket.destroy();
        return;
      }
      served.add(req.socket);
      res.writeHead(req.method === "POST" ? 201 : 200, { "content-type": "application/json" });
      res.end(JSON.stringify(req.method === "POST" ? { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "made" } } : { apiVersion: "v1", kind: "ConfigMapList", metadata: {}, items: [] }));
    });
    const kube = client();
    await kube.list("/api/v1/namespaces/team-a/configmaps");
    const again = await kube.list("/api/v1/namespaces/team-a/configmaps");
    assert.deepEqual(again.items, []);
    assert.equal(arrived, 3, "the second GET arrived twice: on the closed connection, then on a new one");

    arrived = 0;
    const poster = client();
    await poster.create("/api/v1/namespaces/team-a/configmaps", { metadata: { name: "made" } });
    await assert.rejects(poster.create("/api/v1/namespaces/team-a/configmaps", { metadata: { name: "made" } }), (error: unknown) => {
      assert.ok(error instanceof KubeUnreachableError, String(error));
      assert.match(error.message, /socket hang up/);
      return true;
    });
    assert.equal(arrived, 2, "a POST is never sent twice: the server may have acted on it");
  });

  it("gives up on a request that gets no complete answer in time", async () => {
    routes.set("/clusters/abc/api/v1/namespaces/slow", (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write("{");
    });
    const started = Date.now();
    await assert.rejects(client({ timeoutMs: 200 }).get("/api/v1/namespaces/slow"), (error: unknown) => {
      assert.ok(error instanceof KubeTimeoutError, String(error));
      assert.ok(error instanceof KubeUnreachableError);
      assert.match(error.message, /200 ms/);
      return true;
    });
    assert.ok(Date.now() - started < 5000);
  });

  it("delivers watch events in order across broken-up lines, then the server's error", async () => {
    routes.set("/clusters/abc/api/v1/namespaces/team-a/configmaps", (req, res) => {
      assert.match(req.url ?? "", /watch=true/);
      assert.match(req.url ?? "", /resourceVersion=7/);
      res.writeHead(200, { "content-type": "application/json" });
      const lines = [
        { type: "ADDED", object: { kind: "ConfigMap", metadata: { name: "a", resourceVersion: "8" } } },
        { type: "MODIFIED", object: { kind: "ConfigMap", metadata: { name: "a", resourceVersion: "9" } } },
        { type: "BOOKMARK", object: { kind: "ConfigMap", metadata: { resourceVersion: "10" } } },
        { type: "ERROR", object: { kind: "Status", status: "Failure", reason: "Expired", code: 410, message: "too old resource version: 7 (12)" } },
      ]
        .map((line) => JSON.stringify(line) + "\n")
        .join("");
      // Split inside lines, as a network would.
      res.write(lines.slice(0, 25));
      setTimeout(() => res.write(lines.slice(25, 140)), 5);
      setTimeout(() => res.end(lines.slice(140)), 10);
    });
    const events: string[] = [];
    const watch = client().watch("/api/v1/namespaces/team-a/configmaps", { resourceVersion: "7" }, async (event: WatchEvent<{ metadata: { resourceVersion: string } }>) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      events.push(`${event.type} ${event.object.metadata.resourceVersion}`);
    });
    await watch.opened;
    await assert.rejects(watch.done, (error: unknown) => error instanceof KubeGoneError && error.code === 410 && /too old/.test(error.message));
    assert.deepEqual(events, ["ADDED 8", "MODIFIED 9", "BOOKMARK 10"]);
  });

  it("keeps the connection of a watch the server ended for the requests after it", async () => {
    routes.set("/clusters/abc/api/v1/nodes", (req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      if (!/watch=true/.test(req.url ?? "")) return res.end(JSON.stringify({ kind: "NodeList", metadata: { resourceVersion: "5" }, items: [] }));
      // The server's time limit: a bookmark, then the end of the stream.
      res.end(JSON.stringify({ type: "BOOKMARK", object: { kind: "Node", metadata: { resourceVersion: "6" } } }) + "\n");
    });
    let connections = 0;
    const count = () => connections++;
    server.on("secureConnection", count);
    try {
      const kube = client();
      await kube.list("/api/v1/nodes");
      for (let i = 0; i < 3; i++) await kube.watch("/api/v1/nodes", { resourceVersion: "5" }, () => {}).done;
      await kube.list("/api/v1/nodes");
      assert.equal(connections, 1, "each watch the server ended cost a new TLS connection");
    } finally {
      server.off("secureConnection", count);
    }
  });

  it("ends a watch cleanly when it is closed", async () => {
    routes.set("/clusters/abc/api/v1/namespaces", (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(JSON.stringify({ type: "ADDED", object: { kind: "Namespace", metadata: { name: "a" } } }) + "\n");
    });
    const names: string[] = [];
    const watch = client().watch<{ metadata: { name: string } }>("/api/v1/namespaces", {}, (event) => {
      names.push(event.object.metadata.name);
      watch.close();
    });
    await watch.done;
    assert.deepEqual(names, ["a"]);

    const early = client().watch("/api/v1/namespaces", {}, () => {});
    early.close();
    await early.done;
  });
});
