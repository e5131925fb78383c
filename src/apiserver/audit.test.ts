import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuditLog, type AuditRecord } from "./audit.ts";

const record = (name: string): AuditRecord => ({
  user: "alice",
  groups: ["team-a", "system:authenticated"],
  verb: "get",
  path: `/api/v1/namespaces/team/secrets/${name}`,
  objectRef: { resource: "secrets", namespace: "team", name, apiGroup: "", apiVersion: "v1" },
  code: 200,
  sourceIPs: ["127.0.0.1"],
  userAgent: "kubectl/v1.31.0",
  received: new Date("2026-11-26T10:00:00.123Z"),
  answered: new Date("2026-11-26T10:00:00.125Z"),
});

describe("the audit log", () => {
  it("writes one audit.k8s.io/v1 Event per request, private to its owner", () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-audit-"));
    try {
      const log = new AuditLog(join(dir, "audit", "audit.log"));
      log.write(record("db"));
      log.close();
      const [line, ...rest] = readFileSync(join(dir, "audit", "audit.log"), "utf8").trim().split("\n");
      assert.equal(rest.length, 0);
      const event = JSON.parse(line!) as Record<string, unknown>;
      assert.deepEqual(
        { ...event, auditID: typeof event.auditID },
        {
          kind: "Event",
          apiVersion: "audit.k8s.io/v1",
          level: "Metadata",
          auditID: "string",
          stage: "ResponseComplete",
          requestURI: "/api/v1/namespaces/team/secrets/db",
          verb: "get",
          user: { username: "alice", groups: ["team-a", "system:authenticated"] },
          sourceIPs: ["127.0.0.1"],
          userAgent: "kubectl/v1.31.0",
          objectRef: { resource: "secrets", namespace: "team", name: "db", apiGroup: "", apiVersion: "v1" },
          responseStatus: { metadata: {}, code: 200 },
          requestReceivedTimestamp: "2026-11-26T10:00:00.123000Z",
          stageTimestamp: "2026-11-26T10:00:00.125000Z",
        },
      );
      assert.equal(statSync(join(dir, "audit", "audit.log")).mode & 0o777, 0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("rotates by size and keeps as many files as asked", () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-audit-"));
    try {
      const path = join(dir, "audit.log");
      const log = new AuditLog(path, { maxBytes: 1000, keep: 2 });
      for (let i = 0; i < 12; i++) log.write(record(`s${i}`));
      log.close();
      assert.ok(existsSync(`${path}.1`) && existsSync(`${path}.2`) && !existsSync(`${path}.3`));
      for (const file of [path, `${path}.1`, `${path}.2`]) assert.ok(statSync(file).size <= 1000, file);
      assert.match(readFileSync(path, "utf8"), /secrets\/s11"/, "the newest request is in the current file");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
