// What a workload cluster's connection costs in memory, on both sides: a fleet of N clusters holds a
// watch open to each (the node watch), each over TLS with the cluster's own CA and client certificate, so
// `slipway up` holds N client connections and N TLS contexts, and whatever serves the clusters' APIs N
// server connections. A server process (this file with `--serve`) answers each request with one line and
// keeps the response open, as a watch does; this process opens the watches, each on an agent of its own
// with a TLS context of its own (a CA and a client certificate, ECDSA P-256 as Slipway issues them), and
// reads both processes' memory after a garbage collection, before and after.
//
//   npm run bench:connections [-- --connections 1000]
import { spawn } from "node:child_process";
import { createServer, request, Agent } from "node:https";
import { createSecureContext } from "node:tls";
import { createInterface } from "node:readline";
import { createCertificateAuthority, issueCertificate } from "../src/bootstrap/pki.ts";
import { formatTable } from "./support/report.ts";
import { onTeardown, runBenchmark, stopChild } from "./support/processes.ts";

const argv = process.argv.slice(2);
const count = (name: string, fallback: number) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
const CONNECTIONS = count("connections", 1_000);

interface Memory {
  rss: number;
  heap: number;
}

function memory(): Memory {
  (globalThis as { gc?: () => void }).gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heap: heapUsed };
}

/** The server side: one line to stdin asks for its memory; it answers with one line of JSON. */
async function serve(): Promise<void> {
  const ca = await createCertificateAuthority({ commonName: "connections-bench" });
  const serving = await issueCertificate(ca, { commonName: "127.0.0.1", ipAddresses: ["127.0.0.1"], usages: ["server"] });
  const server = createServer({ key: serving.keyPem, cert: serving.certPem, requestCert: true, rejectUnauthorized: false, keepAliveTimeout: 600_000 }, (_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.write('{"type":"BOOKMARK"}\n');
  });
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as { port: number };
    process.stdout.write(`${JSON.stringify({ port, caCertPem: ca.certPem })}\n`);
  });
  for await (const _line of createInterface({ input: process.stdin })) process.stdout.write(`${JSON.stringify(memory())}\n`);
}

async function main(): Promise<void> {
  const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", new URL(import.meta.url).pathname, "--serve"], { stdio: ["pipe", "pipe", "inherit"] });
  onTeardown(() => stopChild(child));
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async <T>(): Promise<T> => JSON.parse(((await lines.next()).value as string | undefined) ?? "null") as T;
  const { port, caCertPem } = await next<{ port: number; caCertPem: string }>();
  const serverMemory = async () => {
    child.stdin!.write("memory\n");
    return next<Memory>();
  };

  // Each cluster's client: its own CA to trust and its own client certificate (one CA signs them all here).
  const clientCa = await createCertificateAuthority({ commonName: "connections-bench-clients" });
  const identities = await Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => issueCertificate(clientCa, { commonName: `client-${i}`, usages: ["client"] })));

  const before = { client: memory(), server: await serverMemory() };
  const contexts = identities.map((id) => createSecureContext({ ca: caCertPem, cert: id.certPem, key: id.keyPem }));
  const withContexts = memory();
  const agents: Agent[] = [];
  for (const secureContext of contexts) {
    const agent = new Agent({ keepAlive: true, secureContext });
    agents.push(agent);
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, path: "/api/v1/nodes?watch=1", agent }, (res) => res.once("data", () => resolve()));
      req.on("error", reject);
      req.end();
    });
  }
  const after = { client: memory(), server: await serverMemory() };
  onTeardown(() => agents.forEach((agent) => agent.destroy()));

  const each = (from: number, to: number) => `${((to - from) / CONNECTIONS / 1024).toFixed(1)} kB`;
  process.stdout.write(`\nmemory of ${CONNECTIONS} idle TLS watch connections, each with a TLS context of its own (after a garbage collection)\n`);
  process.stdout.write(
    formatTable([
      ["each", "RSS", "of which V8 heap", "RSS outside the heap"],
      ["client: a TLS context (CA, certificate, key)", each(before.client.rss, withContexts.rss), each(before.client.heap, withContexts.heap), each(before.client.rss - before.client.heap, withContexts.rss - withContexts.heap)],
      ["client: a connection and its watch", each(withContexts.rss, after.client.rss), each(withContexts.heap, after.client.heap), each(withContexts.rss - withContexts.heap, after.client.rss - after.client.heap)],
      ["server: a connection and its watch", each(before.server.rss, after.server.rss), each(before.server.heap, after.server.heap), each(before.server.rss - before.server.heap, after.server.rss - after.server.heap)],
    ]) + "\n",
  );
  process.stdout.write(`\n(at 10,000 clusters: ${(((after.client.rss - before.client.rss) / CONNECTIONS) * 10_000 / 2 ** 30).toFixed(2)} GiB in the client, ${(((after.server.rss - before.server.rss) / CONNECTIONS) * 10_000 / 2 ** 30).toFixed(2)} GiB in the server, by proportion)\n`);
}

if (argv.includes("--serve")) await serve();
else runBenchmark(main, 10 * 60_000);
