// The baseline for the API benchmark: a bare node:https server with the same kind of TLS as
// `slipway up` (an ECDSA P-256 serving certificate issued by a fresh CA) that answers every GET with
// one fixed JSON body. Run as its own process:
//
//   node --import tsx bench/support/bare-server.ts --body FILE
//
// It prints one JSON line `{"port": N, "caCertPem": "..."}` when it serves, and exits on SIGTERM,
// SIGINT, or when its stdin closes (so it never outlives the benchmark that started it).
import { readFileSync } from "node:fs";
import { createServer } from "node:https";
import { parseArgs } from "node:util";
import { createCertificateAuthority, issueCertificate, serverTlsOptions } from "../../src/bootstrap/pki.ts";

/** Fastify's default, which `slipway up` serves with. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

const { values } = parseArgs({ options: { body: { type: "string" } } });
if (values.body === undefined) {
  process.stderr.write("usage: bare-server.ts --body FILE\n");
  process.exit(2);
}
const body = readFileSync(values.body);

const ca = await createCertificateAuthority({ commonName: "bench-bare-ca" });
const serving = await issueCertificate(ca, { commonName: "bench-bare", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"], usages: ["server"] });

const server = createServer(serverTlsOptions(serving), (req, res) => {
  // Drain any request body before answering, as a real server would.
  req.resume();
  if (req.method !== "GET") {
    res.writeHead(405, { "Content-Type": "text/plain" }).end("only GET is served\n");
    return;
  }
  res.writeHead(200, { "Content-Type": "application/json; charset=utf-8", "Content-Length": body.length });
  res.end(body);
});
server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  process.stdout.write(JSON.stringify({ port, caCertPem: ca.certPem }) + "\n");
});

const stop = () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.resume();
