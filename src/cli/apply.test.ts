import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readManifest } from "./apply.ts";
import { CliError } from "./errors.ts";

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
