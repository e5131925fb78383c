import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { MessageChannel } from "node:worker_threads";
import { defaultRegistry } from "../api/kinds.ts";
import { apiVersionOf } from "../api/registry.ts";
import { connectionKind } from "../api/slipway/connection.ts";
import type { ConnectionObject } from "../api/kinds.ts";
import { ConflictError, ForbiddenError, GoneError, InvalidError, NotFoundError, AlreadyExistsError } from "../apiserver/errors.ts";
import { ObjectService, type ObjectEvent } from "../apiserver/objects.ts";
import type { RequestAttributes } from "../apiserver/authorization/types.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { Client, controllerContext } from "./client.ts";
import { RemoteObjectService, serveObjects } from "./remote-objects.ts";
import { until } from "./testing.ts";

function connection(name: string): ConnectionObject {
  return { apiVersion: apiVersionOf(connectionKind), kind: "Connection", metadata: { name, namespace: "default" }, spec: { provider: "sim", region: "sim-east-1" } };
}

/** An object service behind a MessageChannel: the far end as controllers on a worker thread see it. */
async function remote() {
  const seen: RequestAttributes[] = [];
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(defaultRegistry(), store, {
    authorizer: {
      authorize: (request) => {
        seen.push(request);
        if (request.identity.user.endsWith(":forbidden-controller")) return { allowed: false, reason: "not this one" };
        return { allowed: true };
      },
    },
  });
  await objects.create(objects.registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
  const channel = new MessageChannel();
  const served = serveObjects(objects, channel.port1);
  // The far side has its own registry, as a worker thread builds.
  const proxy = new RemoteObjectService(defaultRegistry(), channel.port2);
  const client = new Client(proxy, undefined, controllerContext("connection")).of(connectionKind);
  return {
    objects,
    store,
    proxy,
    client,
    seen,
    close: () => {
      served.close();
      proxy.close();
      channel.port1.close();
      channel.port2.close();
      store.close();
    },
  };
}

describe("the object service over a MessagePort", () => {
  const opened: { close(): void }[] = [];
  after(() => opened.forEach((o) => o.close()));

  it("reads and writes as the controller's identity and field manager, through authorization", async () => {
    const r = await remote();
    opened.push(r);
    const created = await r.client.create(connection("east"));
    assert.equal(created.metadata.name, "east");
    assert.ok(created.metadata.uid);
    const stored = (await r.client.get("default", "east")) as ConnectionObject;
    assert.equal(stored.metadata.managedFields?.[0]?.manager, "connection-controller");
    const write = r.seen.find((a) => a.verb === "create" && "resource" in a && a.resource.resource === "connections");
    assert.equal(write?.identity.user, "system:serviceaccount:slipway-system:connection-controller");
    const read = await r.client.get("default", "east");
    assert.equal(read.metadata.resourceVersion, created.metadata.resourceVersion);
    const list = await r.client.list("default");
    assert.deepEqual(list.items.map((c) => c.metadata.name), ["east"]);
    // The API server's own identity on the far side is the API server's here (its field manager).
    const system = await new Client(r.proxy).of(connectionKind).create(connection("west"));
    assert.equal(system.metadata.managedFields?.[0]?.manager, "slipway-apiserver");
  });

  it("fails with the same error classes, codes, reasons and details as in process", async () => {
    const r = await remote();
    opened.push(r);
    const missing = await r.client.get("default", "nowhere").catch((e: unknown) => e);
    assert.ok(missing instanceof NotFoundError, String(missing));
    assert.equal(missing.code, 404);
    assert.equal(missing.reason, "NotFound");
    assert.equal(missing.details?.name, "nowhere");
    assert.match(missing.message, /"nowhere" not found/);
    assert.equal(await r.client.tryGet("default", "nowhere"), undefined);

    const created = await r.client.create(connection("east"));
    assert.ok((await r.client.create(connection("east")).catch((e: unknown) => e)) instanceof AlreadyExistsError);
    await r.client.update({ ...created, metadata: { ...created.metadata, labels: { team: "a" } } });
    const stale = await r.client.update(created).catch((e: unknown) => e);
    assert.ok(stale instanceof ConflictError, String(stale));
    assert.equal(stale.code, 409);

    const invalid = await r.client.create({ ...connection("bad"), spec: { provider: "sim" } as ConnectionObject["spec"] }).catch((e: unknown) => e);
    assert.ok(invalid instanceof InvalidError, String(invalid));
    assert.equal(invalid.code, 422);
    assert.ok(invalid.fieldErrors.some((f) => f.field.includes("region")), JSON.stringify(invalid.fieldErrors));

    const forbidden = await new Client(r.proxy, undefined, controllerContext("forbidden")).of(connectionKind).get("default", "east").catch((e: unknown) => e);
    assert.ok(forbidden instanceof ForbiddenError, String(forbidden));
    assert.equal(forbidden.code, 403);
    assert.equal((await r.client.tryGet("default", "bad")), undefined, "nothing was written by the invalid create");
  });

  it("streams watches from the start and from a resourceVersion, until cancelled", async () => {
    const r = await remote();
    opened.push(r);
    const first = await r.client.create(connection("a"));
    const events: string[] = [];
    const errors: Error[] = [];
    const watch = await r.client.watch("default", {}, (e: ObjectEvent) => events.push(`${e.type} ${e.object.metadata.name}`), (e) => errors.push(e));
    assert.deepEqual(events, ["ADDED a"], "the current objects come first, before the watch is open");
    await r.client.create(connection("b"));
    await r.client.delete("default", "a");
    await until(() => events.length === 3, "the watch's events");
    assert.deepEqual(events, ["ADDED a", "ADDED b", "DELETED a"]);
    assert.ok(watch.progress() > Number(first.metadata.resourceVersion));
    watch.close();
    await r.client.create(connection("c"));
    // Resumed from the first object's version: what happened since, and nothing before.
    const resumed: string[] = [];
    const again = await r.client.watch("default", { resourceVersion: first.metadata.resourceVersion }, (e) => resumed.push(`${e.type} ${e.object.metadata.name}`), (e) => errors.push(e));
    await until(() => resumed.length === 3, "the resumed watch's events");
    assert.deepEqual(resumed, ["ADDED b", "DELETED a", "ADDED c"]);
    assert.deepEqual(events, ["ADDED a", "ADDED b", "DELETED a"], "the cancelled watch got nothing more");
    again.close();
    assert.deepEqual(errors, []);
  });

  it("ends a watch behind the compacted history with GoneError, as in process", async () => {
    const r = await remote();
    opened.push(r);
    const first = await r.client.create(connection("a"));
    await r.client.create(connection("b"));
    const last = await r.client.create(connection("c"));
    await r.store.compact(Number(last.metadata.resourceVersion));
    const failure = await new Promise<Error>((resolve, reject) => {
      r.client.watch("default", { resourceVersion: first.metadata.resourceVersion }, () => undefined, resolve).catch((e: Error) => resolve(e));
      setTimeout(() => reject(new Error("no error within 3 s")), 3000).unref();
    });
    assert.ok(failure instanceof GoneError, String(failure));
    assert.equal(failure.code, 410);
  });

  it("fails calls in flight and open watches once the serving side is gone", async () => {
    const r = await remote();
    opened.push(r);
    const errors: Error[] = [];
    await r.client.watch("default", {}, () => undefined, (e) => errors.push(e));
    r.proxy.close("the controllers' thread stopped");
    assert.equal(errors.length, 1);
    await assert.rejects(r.client.get("default", "x"), /thread is gone/);
  });
});
