// The audit log: one JSON line per request, in Kubernetes' audit event shape (audit.k8s.io/v1 Event) at
// level Metadata — who (user, groups), what (verb, objectRef, request URI), from where (source IPs, user
// agent), and the answer (responseStatus) with when it was received and answered. No request or
// response body is ever written, so no Secret value or token can reach the log; the query string is
// dropped from the URI for the same reason. The file rotates by size: FILE → FILE.1 → … → FILE.<keep>.
import { randomUUID } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";

export interface AuditRecord {
  user: string;
  groups: string[];
  verb: string;
  /** The request's path, without its query. */
  path: string;
  objectRef?: { resource: string; subresource?: string; namespace?: string; name?: string; apiGroup?: string; apiVersion?: string };
  code: number;
  sourceIPs: string[];
  userAgent?: string;
  received: Date;
  answered: Date;
}

export interface AuditEvent {
  kind: "Event";
  apiVersion: "audit.k8s.io/v1";
  level: "Metadata";
  auditID: string;
  stage: "ResponseComplete";
  requestURI: string;
  verb: string;
  user: { username: string; groups: string[] };
  sourceIPs: string[];
  userAgent?: string;
  objectRef?: AuditRecord["objectRef"];
  responseStatus: { metadata: Record<string, never>; code: number };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

export interface AuditLogOptions {
  /** Rotate once the file would pass this size (default 100 MiB). */
  maxBytes?: number;
  /** Rotated files kept (default 5). */
  keep?: number;
}

/** Microseconds, as kube-apiserver writes its audit timestamps. */
function micro(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export function auditEvent(record: AuditRecord): AuditEvent {
  return {
    kind: "Event",
    apiVersion: "audit.k8s.io/v1",
    level: "Metadata",
    auditID: randomUUID(),
    stage: "ResponseComplete",
    requestURI: record.path,
    verb: record.verb,
    user: { username: record.user, groups: [...record.groups] },
    sourceIPs: record.sourceIPs,
    ...(record.userAgent ? { userAgent: record.userAgent } : {}),
    ...(record.objectRef ? { objectRef: record.objectRef } : {}),
    responseStatus: { metadata: {}, code: record.code },
    requestReceivedTimestamp: micro(record.received),
    stageTimestamp: micro(record.answered),
  };
}

export class AuditLog {
  private fd: number;
  private size: number;
  private readonly maxBytes: number;
  private readonly keep: number;

  constructor(
    readonly path: string,
    options: AuditLogOptions = {},
  ) {
    this.maxBytes = options.maxBytes ?? 100 * 1024 * 1024;
    this.keep = Math.max(1, options.keep ?? 5);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    this.fd = openSync(path, "a", 0o600);
    this.size = statSync(path).size;
  }

  /** Appends the request's event (synchronously: a request is answered only once it is recorded). */
  write(record: AuditRecord): void {
    const line = `${JSON.stringify(auditEvent(record))}\n`;
    const bytes = Buffer.byteLength(line);
    if (this.size > 0 && this.size + bytes > this.maxBytes) this.rotate();
    writeSync(this.fd, line);
    this.size += bytes;
  }

  private rotate(): void {
    closeSync(this.fd);
    rmSync(`${this.path}.${this.keep}`, { force: true });
    for (let i = this.keep - 1; i >= 1; i--) if (existsSync(`${this.path}.${i}`)) renameSync(`${this.path}.${i}`, `${this.path}.${i + 1}`);
    renameSync(this.path, `${this.path}.1`);
    this.fd = openSync(this.path, "a", 0o600);
    this.size = 0;
  }

  close(): void {
    closeSync(this.fd);
  }
}
