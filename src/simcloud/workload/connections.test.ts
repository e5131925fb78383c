// The workload clusters' port serves every emulated cluster's API: it must take the connections of a
// fleet (a watch or more per cluster), not those of one API server.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import { SimCloud } from "../cloud.ts";
import { startWorkloadEmulation } from "./index.ts";

/** One API server's limit of connections (the control plane's own server keeps it). */
const ONE_SERVER = 1024;

describe("the workload clusters' port", () => {
  it("takes more connections at once than one API server does, and still completes a TLS handshake", async () => {
    const cloud = new SimCloud({ profile: "instant", seed: 7 });
    const workloads = await startWorkloadEmulation(cloud, { store: ":memory:" });
    const open: Socket[] = [];
    try {
      // As many idle connections as a fleet of a little over 1,000 clusters keeps (one watch each). They
      // come from 127.0.0.2: their 1,100 local ports are then not ports of 127.0.0.1, which the servers of
      // the tests running beside this one are about to listen on.
      for (let i = 0; i < ONE_SERVER + 76; i++) {
        open.push(await new Promise<Socket>((resolve, reject) => {
          const socket = connectTcp({ port: workloads.port, host: "127.0.0.1", localAddress: "127.0.0.2" }, () => resolve(socket));
          socket.once("error", reject);
        }));
      }
      const closedEarly = open.filter((s) => s.destroyed || s.readableEnded);
      const handshake = await new Promise<string>((resolve) => {
        const socket = connectTls({ port: workloads.port, host: "127.0.0.1", rejectUnauthorized: false }, () => {
          socket.destroy();
          resolve("established");
        });
        socket.once("error", (error) => resolve(error.message));
      });
      assert.equal(handshake, "established", "a new client is served, not disconnected before its handshake");
      assert.equal(closedEarly.length, 0);
    } finally {
      for (const socket of open) socket.destroy();
      await workloads.close();
      await cloud.close();
    }
  });
});
