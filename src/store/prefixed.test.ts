import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { describeEvent, recordWatch, runStoreConformance } from "./conformance.ts";
import { PrefixedStore, PrefixedStoreFamily } from "./prefixed.ts";
import { SqliteStore } from "./sqlite.ts";
import { KeyExistsError, RevisionMismatchError } from "./store.ts";

const base = SqliteStore.open(":memory:");
const family = new PrefixedStoreFamily(base, "/clusters/");
let views = 0;
after(() => base.close());

runStoreConformance("prefixed view", async () => new PrefixedStore(base, `/plain-${++views}/`));
runStoreConformance("prefixed view in a family (shared watch)", async () => family.view(`member-${++views}`));

describe("PrefixedStore", () => {
  it("keeps each view's keys apart and names keys as the view does", async () => {
    const a = family.view("a");
    const b = family.view("b");
    await a.create("/registry/x", "from a");
    await b.create("/registry/x", "from b");
    assert.equal((await a.get("/registry/x"))?.value, "from a");
    assert.deepEqual((await b.list("/registry/")).items.map((kv) => [kv.key, kv.value]), [["/registry/x", "from b"]]);
    assert.equal((await base.get("/clusters/a//registry/x"))?.value, "from a", "the underlying key carries the prefix");
    await assert.rejects(a.create("/registry/x", "again"), (e: unknown) => e instanceof KeyExistsError && e.key === "/registry/x");
    await assert.rejects(
      a.update("/registry/x", "stale", 1),
      (e: unknown) => e instanceof RevisionMismatchError && e.current.key === "/registry/x" && e.current.value === "from a",
    );
    await a.close();
    assert.equal((await b.get("/registry/x"))?.value, "from b", "closing one view leaves the others and the store open");
  });

  it("shares one watch among the views of a family, and a late starter still gets its history", async () => {
    const a = family.view("wa");
    const b = family.view("wb");
    const start = await base.revision();
    const wa = recordWatch(a, "/", start);
    const wb = recordWatch(b, "/", start);
    assert.equal(family.watchers, 2);
    const a1 = await a.create("/k", "a1");
    await b.create("/k", "b1");
    await a.update("/k", "a2", a1.modRevision);
    await wa.until(() => wa.events.length >= 2, "both changes of view a");
    await wb.until(() => wb.events.length >= 1, "the change of view b");
    assert.deepEqual(wa.events.map(describeEvent), [`put /k@${start + 1}`, `put /k@${start + 3}`]);
    assert.deepEqual(wb.events.map(describeEvent), [`put /k@${start + 2}`]);

    // Starting before what the shared watch has delivered: replayed on a watch of its own.
    const late = recordWatch(a, "/", start);
    await late.until(() => late.events.length >= 2, "the replayed history");
    assert.deepEqual(late.events.map(describeEvent), wa.events.map(describeEvent));
    late.close();
    wa.close();
    wb.close();
    assert.equal(family.watchers, 0, "closed watches leave the family");
  });

  it("tells how far a member's watch is in the whole store: past other views' writes, and not while its own wait", async () => {
    const quiet = family.view("pq");
    const busy = family.view("pb");
    const watch = recordWatch(quiet, "/", await base.revision());
    for (let i = 0; i < 3; i++) await busy.create(`/k${i}`, "v");
    await handedOver(() => watch.progress() === undefined);
    assert.equal(watch.progress(), await base.revision(), "as far as the store once the other views' changes went by");

    await quiet.create("/mine", "v");
    assert.equal(watch.progress(), undefined, "its own change is not handed over yet");
    await watch.until(() => watch.events.length === 1, "its own change");
    await handedOver(() => watch.progress() === undefined);
    assert.equal(watch.progress(), await base.revision());
    watch.close();
  });
});

/** Lets queued watch events go out (each channel hands them over on a later turn) while `waiting` holds, at most 100 turns. */
async function handedOver(waiting: () => boolean): Promise<void> {
  for (let turn = 0; turn < 100 && waiting(); turn++) await new Promise((resolve) => setImmediate(resolve));
}
