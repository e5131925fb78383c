// The worker side of PkiWorkers (pki-workers.ts): makes certificates and keys off the caller's thread.
// Building and parsing X.509 in JavaScript is the costliest pure computation of a cluster's creation.
import { parentPort } from "node:worker_threads";
import { createCertificateAuthority, createServiceAccountKeyPair, issueCertificate } from "./pki.ts";
import type { PkiRequest, PkiResponse } from "./pki-workers.ts";

const operations = { createCertificateAuthority, issueCertificate, createServiceAccountKeyPair } as const;

parentPort!.on("message", async (request: PkiRequest) => {
  let response: PkiResponse;
  try {
    const operation = operations[request.operation] as (...args: unknown[]) => Promise<unknown>;
    response = { id: request.id, result: await operation(...request.args) };
  } catch (error) {
    response = { id: request.id, error: { name: (error as Error).name, message: (error as Error).message } };
  }
  parentPort!.postMessage(response);
});
