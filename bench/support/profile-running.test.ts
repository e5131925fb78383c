import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

describe("profile-running", () => {
  it("profiles a process that is already running, then closes its inspector again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-profile-running-"));
    // A process busy in a function of a known name, as a control plane in the middle of a run would be.
    // Without the optimising compiler: an optimised timer callback may be inlined into Node's timer code
    // before the profile starts, and its samples then carry the caller's name.
    const busy = spawn(process.execPath, ["--no-opt", "-e", "function spinTheWheel() { const end = Date.now() + 8; while (Date.now() < end); } setInterval(spinTheWheel, 10); spinTheWheel(); process.stdout.write('spinning\\n');"], { stdio: ["ignore", "pipe", "ignore"] });
    try {
      // Profiled only once it runs its code (on a loaded machine a process can take a while to start).
      await new Promise<void>((resolve, reject) => {
        busy.stdout.once("data", () => resolve());
        busy.once("exit", (code) => reject(new Error(`the busy process exited (${code}) before it started spinning`)));
      });
      const out = join(dir, "busy.cpuprofile");
      const run = spawnSync(process.execPath, ["--experimental-websocket", "--import", "tsx", "bench/support/profile-running.ts", String(busy.pid), "2", out], { encoding: "utf8", timeout: 30_000 });
      assert.equal(run.status, 0, run.stderr);
      const profile = JSON.parse(readFileSync(out, "utf8")) as { nodes: { callFrame: { functionName: string } }[]; samples: number[] };
      assert.ok(profile.samples.length > 100, `${profile.samples.length} samples in two seconds`);
      const names = new Set(profile.nodes.map((n) => n.callFrame.functionName));
      assert.ok(names.has("spinTheWheel"), `the busy function is in the profile (functions: ${[...names].join(", ")})`);
      let closed = false;
      for (let attempt = 0; attempt < 50 && !closed; attempt++) {
        // Bounded: a fetch has no deadline of its own, and an inspector that accepts without answering
        // held this test until the runner's timeout once.
        closed = await fetch("http://127.0.0.1:9229/json/list", { signal: AbortSignal.timeout(2_000) }).then(
          () => false,
          (error: Error) => error.name !== "TimeoutError", // refused: closed; no answer: not closed
        );
        if (!closed) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(closed, "the inspector is closed again");

      const memory = spawnSync(process.execPath, ["--experimental-websocket", "--import", "tsx", "bench/support/profile-running.ts", String(busy.pid), "--memory"], { encoding: "utf8", timeout: 30_000 });
      assert.equal(memory.status, 0, memory.stderr);
      const { usage, spaces } = JSON.parse(memory.stdout) as { usage: { rss: number; heapUsed: number }; spaces: { old_space: number } };
      assert.ok(usage.rss > usage.heapUsed && usage.heapUsed > 0, `rss ${usage.rss}, heap used ${usage.heapUsed}`);
      assert.ok(spaces.old_space > 0, "the old space's size is reported");
      assert.equal(busy.exitCode, null, "the process runs on");
    } finally {
      busy.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
