import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { declaredIn, readManifest } from "./apply.ts";
import { CliError } from "./errors.ts";

describe("declaredIn", () => {
  const stored = {
    metadata: { name: "demo", uid: "u", labels: { team: "a" }, finalizers: ["slipway.dev/cluster"] },
    spec: { controlPlane: { connection: "east", replicas: 1, image: "ubuntu-22.04" }, workers: [{ name: "w", replicas: 2, image: "ubuntu-22.04" }] },
    status: { phase: "Running" },
  };

  it("holds when every declared field has its value, whatever the server added", () => {
    assert.ok(declaredIn({ metadata: { name: "demo", labels: { team: "a" } }, spec: { controlPlane: { connection: "east" }, workers: [{ name: "w", replicas: 2 }] } }, stored));
  });

  it("fails on a changed value, a changed list, or a field to remove", () => {
    assert.ok(!declaredIn({ spec: { workers: [{ name: "w", replicas: 3 }] } }, stored));
    assert.ok(!declaredIn({ spec: { workers: [{ name: "w" }, { name: "x" }] } }, stored));
    assert.ok(!declaredIn({ metadata: { labels: { team: null } } }, stored));
    assert.ok(declaredIn({ metadata: { labels: { other: null } } }, stored));
  });
});

describe("readManifest", () => {
  it("reads every document of a file and the items of a List, skipping empty documents", () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-manifest-"));
    try {
      const file = join(dir, "m.yaml");
      writeFileSync(file, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n---\napiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Namespace\n    metadata:\n      name: b\n");
      assert.deepEqual(
        readManifest(file).map((m) => [m.object.metadata.name, m.source]),
        [
          ["a", `${file} (document 1)`],
          ["b", `${file} (document 3)`],
        ],
      );
      writeFileSync(file, "apiVersion: v1\nkind: Namespace\nmetadata: {}\n");
      assert.throws(() => readManifest(file), (e: unknown) => e instanceof CliError && e.message === `${file} (document 1): Namespace has no metadata.name`);
      writeFileSync(file, "kind: [unclosed\n");
      assert.throws(() => readManifest(file), (e: unknown) => e instanceof CliError && e.message.startsWith(`${file}: document 1 is not valid YAML`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
