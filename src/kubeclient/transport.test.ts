// The client over a transport of the test's own: what the client asks a transport for, and how it reads
// whatever answer a transport brings back (any transport — node:https, fetch — gives it the same).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KubeClient } from "./client.ts";
import { KubeConflictError, KubeForbiddenError, KubeGoneError, KubeApiError, KubeUnreachableError } from "./errors.ts";
import type { Transport, TransportRequest, TransportResponse, TransportStream } from "./transport.ts";
import type { WatchEvent } from "./watch.ts";

class ScriptedTransport implements Transport {
  readonly server = "https://scripted.invalid/prefix";
  readonly seen: TransportRequest[] = [];
  aborted = 0;
  closed = false;

  constructor(
    private readonly answer: (request: TransportRequest) => TransportResponse | Error,
    private readonly chunks: (request: TransportRequest) => { status?: number; body: (Uint8Array | string)[] } = () => ({ body: [] }),
  ) {}

  async request(request: TransportRequest): Promise<TransportResponse> {
    this.seen.push(request);
    const answer = this.answer(request);
    if (answer instanceof Error) throw answer;
    return answer;
  }

  async stream(request: TransportRequest): Promise<TransportStream> {
    this.seen.push(request);
    const { status = 200, body } = this.chunks(request);
    const chunks = (async function* () {
      for (const chunk of body) {
        await new Promise((resolve) => setImmediate(resolve));
        yield chunk;
      }
    })();
    return { status, statusText: status === 200 ? "OK" : "Forbidden", headers: {}, body: chunks, abort: () => this.aborted++ };
  }

  close(): void {
    this.closed = true;
  }
}

const ok = (body: unknown, headers: Record<string, string> = {}): TransportResponse => ({ status: 200, statusText: "OK", headers, body: typeof body === "string" ? body : JSON.stringify(body) });

describe("kube client over a transport", () => {
  it("asks for JSON, sends JSON with the patch's content type, and puts write options in the query", async () => {
    const transport = new ScriptedTransport(() => ok({ kind: "ConfigMap", apiVersion: "v1", metadata: { name: "c" } }));
    const client = new KubeClient({ transport, timeoutMs: 1234 });
    await client.get("/api/v1/namespaces/default/configmaps/c");
    await client.patch("/api/v1/namespaces/default/configmaps/c", { data: { a: "1" } }, "merge", { dryRun: true, fieldManager: "tester", fieldValidation: "Strict" });
    await client.raw("POST", "/api/v1/namespaces/default/configmaps", { metadata: { name: "d" } }, { "X-Extra": "yes" });
    const [get, patch, post] = transport.seen;
    assert.deepEqual({ ...get, headers: get!.headers }, { method: "GET", path: "/api/v1/namespaces/default/configmaps/c", headers: { accept: "application/json" }, timeoutMs: 1234 });
    assert.equal(patch!.method, "PATCH");
    assert.equal(patch!.path, "/api/v1/namespaces/default/configmaps/c?dryRun=All&fieldValidation=Strict&fieldManager=tester");
    assert.equal(patch!.headers["content-type"], "application/merge-patch+json");
    assert.deepEqual(JSON.parse(patch!.body!), { data: { a: "1" } });
    assert.equal(post!.headers["content-type"], "application/json");
    assert.equal(post!.headers["x-extra"], "yes", "header names in lower case");
    assert.equal(client.server, "https://scripted.invalid/prefix");
    client.close();
    assert.ok(transport.closed);
  });

  it("reads JSON, text and empty answers, and turns error statuses into named errors", async () => {
    const answers: Record<string, TransportResponse> = {
      "/json": ok({ kind: "Namespace", metadata: { name: "n" } }, { "content-type": "application/json" }),
      "/text": ok("plain words"),
      "/empty": ok(""),
      "/conflict": { status: 409, statusText: "Conflict", headers: {}, body: JSON.stringify({ kind: "Status", reason: "Conflict", code: 409, message: "the object has been modified" }) },
      "/busy": { status: 429, statusText: "Too Many Requests", headers: { "retry-after": "7" }, body: "slow down" },
    };
    const client = new KubeClient({ transport: new ScriptedTransport((r) => answers[r.path]!) });
    const json = await client.raw<{ metadata: { name: string } }>("GET", "/json");
    assert.equal(json.body.metadata.name, "n");
    assert.equal(json.headers["content-type"], "application/json");
    assert.equal((await client.raw("GET", "/text")).body, "plain words");
    assert.equal((await client.raw("GET", "/empty")).body, undefined);
    await assert.rejects(client.get("/conflict"), (error: unknown) => error instanceof KubeConflictError && error.message === "the object has been modified" && error.request === "GET /conflict");
    await assert.rejects(client.get("/busy"), (error: unknown) => error instanceof KubeApiError && error.code === 429 && error.retryAfterSeconds === 7 && error.message === "slow down");
  });

  it("passes on a transport's failure to get an answer", async () => {
    const transport = new ScriptedTransport(() => new KubeUnreachableError("https://scripted.invalid/prefix", "GET /x: cannot reach it: ECONNREFUSED"));
    await assert.rejects(new KubeClient({ transport }).get("/x"), KubeUnreachableError);
  });

  it("reads a watch from chunks split anywhere, even inside a character, until the server's error", async () => {
    const text = [
      { type: "ADDED", object: { metadata: { name: "café", resourceVersion: "8" } } },
      { type: "BOOKMARK", object: { metadata: { resourceVersion: "9" } } },
      { type: "ERROR", object: { kind: "Status", reason: "Expired", code: 410, message: "too old resource version: 7 (12)" } },
    ]
      .map((line) => `${JSON.stringify(line)}\n`)
      .join("");
    const bytes = new TextEncoder().encode(text);
    const split = text.indexOf("é") + 1; // inside the two bytes of é
    const transport = new ScriptedTransport(
      () => new Error("no plain requests"),
      () => ({ body: [bytes.slice(0, 10), bytes.slice(10, split), bytes.slice(split, 90), bytes.slice(90)] }),
    );
    const events: string[] = [];
    const watch = new KubeClient({ transport }).watch<{ metadata: { name?: string; resourceVersion: string } }>("/api/v1/configmaps", { resourceVersion: "7" }, (event: WatchEvent<{ metadata: { name?: string; resourceVersion: string } }>) => {
      events.push(`${event.type} ${event.object.metadata.name ?? ""}@${event.object.metadata.resourceVersion}`);
    });
    await watch.opened;
    await assert.rejects(watch.done, KubeGoneError);
    assert.deepEqual(events, ["ADDED café@8", "BOOKMARK @9"]);
    assert.match(transport.seen[0]!.path, /^\/api\/v1\/configmaps\?watch=true&resourceVersion=7$/);
    assert.ok(transport.aborted >= 1, "the stream was ended");
  });

  it("turns a watch refused with an error status into the named error, from the body the transport streamed", async () => {
    const status = JSON.stringify({ kind: "Status", reason: "Forbidden", code: 403, message: "watch is forbidden" });
    const transport = new ScriptedTransport(
      () => new Error("no plain requests"),
      () => ({ status: 403, body: [status.slice(0, 20), status.slice(20)] }),
    );
    const watch = new KubeClient({ transport }).watch("/api/v1/secrets", {}, () => {});
    await assert.rejects(watch.opened, (error: unknown) => error instanceof KubeForbiddenError && error.message === "watch is forbidden");
    await assert.rejects(watch.done, KubeForbiddenError);
  });
});
