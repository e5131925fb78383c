import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { packageVersion, slipwayVersion } from "./version.ts";

const ROOT = resolve(import.meta.dirname, "../..");

describe("the control plane's version", () => {
  it("is Slipway's release from package.json and the commit of the checkout it runs from", async () => {
    const version = await slipwayVersion({ env: {} });
    assert.equal(version.gitVersion, `v1.31.0-slipway.${packageVersion()}`);
    assert.deepEqual([version.major, version.minor], ["1", "31"]);
    const head = execFileSync("git", ["-C", ROOT, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
    assert.equal(version.gitCommit, head);
    assert.match(version.gitTreeState, /^(clean|dirty)$/);
    assert.match(version.buildDate, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it("takes the commit from the build when given, and says nothing it does not know", async () => {
    const built = await slipwayVersion({ env: { SLIPWAY_GIT_COMMIT: "0123456789abcdef0123456789abcdef01234567", SLIPWAY_BUILD_DATE: "2026-11-20T10:00:00Z" } });
    assert.deepEqual([built.gitCommit, built.buildDate, built.gitTreeState], ["0123456789abcdef0123456789abcdef01234567", "2026-11-20T10:00:00Z", "clean"]);
    const dir = mkdtempSync(join(tmpdir(), "slipway-version-"));
    try {
      writeFileSync(join(dir, "package.json"), JSON.stringify({ version: "9.8.7" }));
      const unpacked = await slipwayVersion({ root: dir, env: {} });
      assert.deepEqual([unpacked.gitVersion, unpacked.gitCommit, unpacked.gitTreeState, unpacked.buildDate], ["v1.31.0-slipway.9.8.7", "", "", ""]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
