// Certificates and keys made on worker threads, so that a control plane creating thousands of clusters
// does not spend its event loop on X.509 encoding (about a tenth of its work at a thousand clusters).
// The operations and their results are those of pki.ts; a failure comes back as a PkiError with the
// worker's message. Workers start on first use and never hold the process open.
import { Worker } from "node:worker_threads";
import {
  createCertificateAuthority,
  createServiceAccountKeyPair,
  issueCertificate,
  PkiError,
  type CertificateAuthorityOptions,
  type CertificateOptions,
  type KeyPairPem,
} from "./pki.ts";

/** What makes a cluster's certificates and keys: on this thread (inThreadPki) or on workers (PkiWorkers). */
export interface CertificateMaker {
  createCertificateAuthority(options: CertificateAuthorityOptions): Promise<KeyPairPem>;
  issueCertificate(ca: KeyPairPem, options: CertificateOptions): Promise<KeyPairPem>;
  createServiceAccountKeyPair(): Promise<{ publicKeyPem: string; privateKeyPem: string }>;
}

/** pki.ts itself, on the caller's thread. */
export const inThreadPki: CertificateMaker = { createCertificateAuthority, issueCertificate, createServiceAccountKeyPair };

export interface PkiRequest {
  id: number;
  operation: "createCertificateAuthority" | "issueCertificate" | "createServiceAccountKeyPair";
  args: unknown[];
}

export type PkiResponse = { id: number; result: unknown } | { id: number; error: { name: string; message: string } };

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

export class PkiWorkers implements CertificateMaker {
  private readonly workers: { worker: Worker; pending: Map<number, Pending> }[] = [];
  private next = 0;
  private ids = 0;
  private closed = false;

  /** `size` worker threads, started on first use. */
  constructor(private readonly size = 1) {}

  createCertificateAuthority(options: CertificateAuthorityOptions): Promise<KeyPairPem> {
    return this.run("createCertificateAuthority", [options]) as Promise<KeyPairPem>;
  }

  issueCertificate(ca: KeyPairPem, options: CertificateOptions): Promise<KeyPairPem> {
    return this.run("issueCertificate", [ca, options]) as Promise<KeyPairPem>;
  }

  createServiceAccountKeyPair(): Promise<{ publicKeyPem: string; privateKeyPem: string }> {
    return this.run("createServiceAccountKeyPair", []) as Promise<{ publicKeyPem: string; privateKeyPem: string }>;
  }

  /** Stops the workers; requests still running fail. */
  async close(): Promise<void> {
    this.closed = true;
    const workers = this.workers.splice(0);
    await Promise.all(workers.map(({ worker }) => worker.terminate()));
  }

  private run(operation: PkiRequest["operation"], args: unknown[]): Promise<unknown> {
    if (this.closed) return Promise.reject(new PkiError("the PKI workers were stopped"));
    const slot = this.slot();
    const id = ++this.ids;
    return new Promise((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      slot.worker.ref(); // an answer is awaited: the process waits for it
      slot.worker.postMessage({ id, operation, args } satisfies PkiRequest);
    });
  }

  private slot(): { worker: Worker; pending: Map<number, Pending> } {
    if (this.workers.length < this.size) {
      // Without the parent's --import flags: the entry registers the TypeScript loader itself.
      const worker = new Worker(new URL("./pki-worker-entry.mjs", import.meta.url), { execArgv: [] });
      const slot = { worker, pending: new Map<number, Pending>() };
      worker.unref();
      worker.on("message", (response: PkiResponse) => {
        const pending = slot.pending.get(response.id);
        if (!pending) return;
        slot.pending.delete(response.id);
        if (slot.pending.size === 0) worker.unref();
        if ("error" in response) pending.reject(new PkiError(response.error.message));
        else pending.resolve(response.result);
      });
      const fail = (error: Error) => {
        for (const pending of slot.pending.values()) pending.reject(new PkiError(`a PKI worker stopped: ${error.message}`, { cause: error }));
        slot.pending.clear();
        const index = this.workers.indexOf(slot);
        if (index >= 0) this.workers.splice(index, 1); // the next request starts a new one
      };
      worker.on("error", fail);
      worker.on("exit", (code) => fail(new Error(`exit code ${code}`)));
      this.workers.push(slot);
      return slot;
    }
    const slot = this.workers[this.next % this.workers.length]!;
    this.next++;
    return slot;
  }
}
