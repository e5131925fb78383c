// The workload clusters' endpoints survive a restart of the sim cloud on the same state: the port they
// were served on is kept with the emulation's state and taken again, unless another process holds it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SimCloud } from "../cloud.ts";
import { startWorkloadEmulation } from "./index.ts";

describe("the workload clusters' port", () => {
  it("is the same after a restart on the same state, and a free one when another process took it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-port-"));
    const store = join(dir, "workloads.db");
    try {
      const cloud = new SimCloud({ profile: "instant", seed: 5 });
      const first = await startWorkloadEmulation(cloud, { store });
      const port = first.port;
      await first.close();
      const second = await startWorkloadEmulation(cloud, { store });
      assert.equal(second.port, port, "the endpoints stay where they were");
      await second.close();

      const squatter = createServer();
      await new Promise<void>((resolve) => squatter.listen(port, "127.0.0.1", resolve));
      try {
        const third = await startWorkloadEmulation(cloud, { store });
        assert.notEqual(third.port, port);
        await third.close();
      } finally {
        await new Promise((resolve) => squatter.close(resolve));
      }
      const fourth = await startWorkloadEmulation(cloud, { store });
      assert.notEqual(fourth.port, port, "the port it moved to is the one remembered now");
      await fourth.close();
      await cloud.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
