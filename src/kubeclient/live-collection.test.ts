// A live collection over a transport that answers lists and watches as scripted: what a command waiting
// on objects sees as the server ends watches, forgets versions, and drops the connection.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KubeClient, type KubeObject } from "./client.ts";
import { KubeUnreachableError } from "./errors.ts";
import { LiveCollection } from "./live-collection.ts";
import type { Transport, TransportRequest, TransportResponse, TransportStream } from "./transport.ts";

const object = (name: string, resourceVersion: string, phase = "Pending"): KubeObject => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, resourceVersion }, data: { phase } });
const line = (type: string, o: unknown) => `${JSON.stringify({ type, object: o })}\n`;
/** A random source that answers the given numbers in turn, over and over. */
const seeded = (numbers: number[]) => {
  let i = 0;
  return () => numbers[i++ % numbers.length]!;
};

/** Lists answer the next scripted list; watches stream the next scripted events (or fail). */
class Script implements Transport {
  readonly server = "https://script.invalid";
  readonly requests: string[] = [];
  constructor(
    private readonly lists: (KubeObject[] | Error)[],
    private readonly watches: (string[] | Error)[],
  ) {}

  async request(request: TransportRequest): Promise<TransportResponse> {
    this.requests.push(request.path);
    const next = this.lists.shift() ?? new KubeUnreachableError(this.server, "no more lists");
    if (next instanceof Error) throw next;
    return { status: 200, statusText: "OK", headers: {}, body: JSON.stringify({ kind: "List", metadata: { resourceVersion: String(10 * this.requests.length) }, items: next }) };
  }

  async stream(request: TransportRequest): Promise<TransportStream> {
    this.requests.push(request.path);
    const next = this.watches.shift();
    if (next instanceof Error) throw next;
    let abort = () => {};
    const aborted = new Promise<void>((resolve) => (abort = resolve));
    const body = async function* () {
      if (next) yield* next;
      // Nothing more scripted: a watch that stays open until it is ended.
      else await aborted;
    };
    return { status: 200, statusText: "OK", headers: {}, body: body(), abort };
  }

  close(): void {}
}

describe("LiveCollection", () => {
  it("lists, then follows changes across watches the server ends, a version it forgot, and a lost connection", async () => {
    const gone = { kind: "Status", reason: "Expired", code: 410, message: "too old resource version" };
    const transport = new Script(
      [[object("a", "1")], [object("a", "5", "Running"), object("c", "6")], new KubeUnreachableError("https://script.invalid", "ECONNREFUSED"), [object("c", "8")]],
      [
        [line("ADDED", object("b", "2")), line("BOOKMARK", { metadata: { resourceVersion: "3" } })],
        [line("ERROR", gone)],
        new KubeUnreachableError("https://script.invalid", "connection reset"),
      ],
    );
    const client = new KubeClient({ transport });
    const snapshots: string[] = [];
    const retries: string[] = [];
    let collection: LiveCollection<KubeObject>;
    const settled = new Promise<void>((resolve) => {
      collection = new LiveCollection<KubeObject>(
        client,
        "/api/v1/namespaces/default/configmaps",
        { labelSelector: "app=demo" },
        () => {
          snapshots.push([...collection.items.values()].map((o) => `${o.metadata.name}:${(o.data as { phase: string }).phase}`).join(","));
          if (collection.items.size === 1 && collection.items.has("c") && retries.length > 0) resolve();
        },
        (error) => retries.push(error.message),
        { random: seeded([0, 0.5, 0.999]) },
      );
    });
    const { watching } = await collection!.start();
    assert.deepEqual([...collection!.items.keys()], ["a"], "listed before watching");
    await settled;
    collection!.stop();
    await watching;
    assert.deepEqual(snapshots, ["a:Pending,b:Pending", "a:Running,c:Pending", "c:Pending"]);
    assert.deepEqual(retries, ["connection reset"]);
    assert.deepEqual(transport.requests.slice(0, 3), [
      "/api/v1/namespaces/default/configmaps?labelSelector=app%3Ddemo",
      "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=10&labelSelector=app%3Ddemo&allowWatchBookmarks=true&timeoutSeconds=300",
      "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=3&labelSelector=app%3Ddemo&allowWatchBookmarks=true&timeoutSeconds=450",
    ], "each watch goes on from the last version seen, and asks for 5 to 10 minutes");
  });

  it("does not open watch after watch in a tight loop when the server refuses each at once, and stops at once when told", async () => {
    const refused = new KubeUnreachableError("https://script.invalid", "watch refused");
    // Each refusal comes a turn of the event loop later, as from a socket, so timers still run in between.
    class Refusing extends Script {
      override async stream(request: TransportRequest): Promise<TransportStream> {
        await new Promise((resolve) => setImmediate(resolve));
        return super.stream(request);
      }
    }
    const transport = new Refusing(Array.from({ length: 100_000 }, () => [object("a", "1")]), Array.from({ length: 100_000 }, () => refused));
    const retries: string[] = [];
    const collection = new LiveCollection<KubeObject>(new KubeClient({ transport }), "/api/v1/namespaces/default/configmaps", {}, () => {}, (error) => retries.push(error.message));
    const { watching } = await collection.start();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const watches = transport.requests.filter((r) => r.includes("watch=true")).length;
    assert.ok(watches <= 3, `${watches} watches opened in 300 ms`);
    const stoppedAt = Date.now();
    collection.stop();
    await watching;
    assert.ok(Date.now() - stoppedAt < 200, "stop ends the pause between watches");
    assert.ok(retries.length >= 2 && retries.every((m) => m.includes("watch refused")));
  });

  it("keeps of each object, listed or watched, what it is told to keep", async () => {
    const transport = new Script([[object("a", "1")]], [[line("ADDED", object("b", "2", "Running"))]]);
    let collection: LiveCollection<KubeObject>;
    const both = new Promise<void>((resolve) => {
      collection = new LiveCollection<KubeObject>(
        new KubeClient({ transport }),
        "/api/v1/namespaces/default/configmaps",
        {},
        () => collection.items.size === 2 && resolve(),
        () => {},
        { keep: (o) => ({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.metadata.name } }) },
      );
    });
    const { watching } = await collection!.start();
    await both;
    collection!.stop();
    await watching;
    assert.deepEqual([...collection!.items.values()].map((o) => JSON.stringify(o)), ['{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}', '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}']);
  });
});
