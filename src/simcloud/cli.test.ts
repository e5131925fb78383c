import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { Command } from "commander";
import { registerSimCloudCommands, type CliOutput } from "./cli.ts";
import { SimCloudClient } from "./client.ts";
import { startSimCloudServer, type SimCloudServer } from "./server.ts";
import { readyNetwork, waitFor } from "./test-support.ts";

const TOKEN = "cli-test-token";
let server: SimCloudServer;

before(async () => {
  server = await startSimCloudServer({ port: 0, profile: "instant", defaultToken: TOKEN });
});
after(() => server.close());

async function run(args: string[]): Promise<{ out: string; err: string; exitCode: number }> {
  let out = "";
  let err = "";
  const io: CliOutput = { out: (text) => void (out += text), err: (text) => void (err += text) };
  const program = new Command().exitOverride();
  registerSimCloudCommands(program, io);
  const previous = process.exitCode;
  process.exitCode = undefined;
  try {
    await program.parseAsync(["node", "slipway", ...args]);
    return { out, err, exitCode: Number(process.exitCode ?? 0) };
  } finally {
    process.exitCode = previous;
  }
}

describe("slipway sim-cloud resources", () => {
  it("lists every resource of every region with kind, id, region, state and tags, as a table or JSON", async () => {
    const client = new SimCloudClient({ endpoint: server.url, token: TOKEN });
    const east = await readyNetwork(client);
    const west = await client.createNetwork("sim-west-1", { cidr: "10.2.0.0/16", tags: { cluster: "demo", team: "blue" } });
    await waitFor(async () => (await client.getNetwork("sim-west-1", west.id)).state === "available", "network available");

    const table = await run(["sim-cloud", "resources", "--endpoint", server.url, "--token", TOKEN]);
    assert.equal(table.exitCode, 0, table.err);
    const lines = table.out.trimEnd().split("\n");
    assert.match(lines[0]!, /^KIND\s+ID\s+REGION\s+STATE\s+TAGS$/);
    assert.equal(lines.length, 1 + 4);
    assert.ok(lines.some((l) => new RegExp(`^network\\s+${west.id}\\s+sim-west-1\\s+available\\s+cluster=demo,team=blue$`).test(l)));
    assert.ok(lines.some((l) => new RegExp(`^subnet\\s+${east.subnet.id}\\s+sim-east-1\\s+available`).test(l)));

    const json = await run(["sim-cloud", "resources", "--endpoint", server.url, "--token", TOKEN, "-o", "json"]);
    const rows = JSON.parse(json.out) as { kind: string; id: string; region: string; state: string; tags: Record<string, string> }[];
    assert.deepEqual(rows.find((r) => r.id === west.id), {
      kind: "network",
      id: west.id,
      region: "sim-west-1",
      state: "available",
      tags: { cluster: "demo", team: "blue" },
    });
    assert.deepEqual(rows.map((r) => r.kind).sort(), ["network", "network", "securityGroup", "subnet"]);
  });

  it("fails with a message for a wrong token or an unknown output format", async () => {
    const denied = await run(["sim-cloud", "resources", "--endpoint", server.url, "--token", "nope-nope"]);
    assert.equal(denied.exitCode, 1);
    assert.match(denied.err, /error: a valid bearer token is required/);
    const format = await run(["sim-cloud", "resources", "--endpoint", server.url, "-o", "yaml"]);
    assert.equal(format.exitCode, 1);
    assert.match(format.err, /unknown output format "yaml"/);
  });
});

describe("slipway sim-cloud serve", () => {
  it("prints a ready line with its URL, serves, and stops cleanly on SIGTERM", async () => {
    const cli = fileURLToPath(new URL("./cli.ts", import.meta.url));
    const script = [
      'import { Command } from "commander";',
      `const { registerSimCloudCommands } = await import(${JSON.stringify(cli)});`,
      "const program = new Command();",
      "registerSimCloudCommands(program);",
      'await program.parseAsync(["node", "slipway", "sim-cloud", "serve", "--port", "0", "--profile", "instant", "--token", "serve-test-token"]);',
    ].join("\n");
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        const match = /ready at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
        if (match) resolve(match[1]!);
      });
      child.once("exit", (code) => reject(new Error(`serve exited early (${code}): ${stderr}`)));
    });
    assert.match(stdout, /workload clusters at https:\/\/127\.0\.0\.1:\d+\/clusters\/<id>\)/);
    const regions = await new SimCloudClient({ endpoint: url, token: "serve-test-token" }).describeRegions();
    assert.equal(regions.length, 3);
    child.kill("SIGTERM");
    const [code] = (await once(child, "exit")) as [number | null];
    assert.equal(code, 0, stderr);
    assert.match(stdout, /sim-cloud stopped/);
  });
});
