import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { connectionKind, connectionKindFor, type ConnectionObject } from "./connection.ts";
import { admit, admitted, cell, manifest } from "../testing.ts";

function connection(spec: Record<string, unknown>): ConnectionObject {
  return manifest(connectionKind, "sim-east", spec);
}

describe("Connection", () => {
  it("accepts a sim connection with credentials and an endpoint", () => {
    admitted(
      connectionKind,
      connection({ provider: "sim", region: "east-1", credentialsRef: { name: "sim-creds" }, endpoint: "http://127.0.0.1:7070" }),
    );
  });

  it("requires a region and a provider", () => {
    assert.deepEqual(admit(connectionKind, connection({ provider: "sim" })).schemaErrors.map(([p]) => p), ["/spec/region"]);
    assert.deepEqual(admit(connectionKind, connection({ region: "east-1" })).schemaErrors.map(([p]) => p), ["/spec/provider"]);
  });

  it("admits only the providers installed, and lists them when it refuses one", () => {
    const installed = connectionKindFor({ names: () => ["fake-hosts", "sim"] });
    assert.deepEqual(admit(installed, connection({ provider: "fake-hosts", region: "rack-1" })).errors, []);
    const { errors } = admit(installed, connection({ provider: "aws", region: "us-east-1" }));
    assert.deepEqual(errors, [
      { field: "spec.provider", reason: "FieldValueNotSupported", message: 'Unsupported value: "aws": supported values: "fake-hosts", "sim"' },
    ]);
  });

  it("lets a Connection whose provider is no longer installed be updated", () => {
    const old = admit(connectionKind, connection({ provider: "retired", region: "east-1" })).object;
    const installed = connectionKindFor({ names: () => ["sim"] });
    const rotated = connection({ provider: "retired", region: "east-1", credentialsRef: { name: "new-creds" } });
    assert.deepEqual(admit(installed, rotated, old).errors, []);
  });

  it("refuses an unknown field in the credentials reference", () => {
    const input = connection({ provider: "sim", region: "r", credentialsRef: { name: "s", namespace: "other" } });
    assert.deepEqual(admit(connectionKind, input).schemaErrors.map(([p]) => p), ["/spec/credentialsRef/namespace"]);
  });

  it("refuses an endpoint that is not an http(s) URL", () => {
    for (const endpoint of ["cloud.example.com", "ftp://cloud.example.com"]) {
      const { errors } = admit(connectionKind, connection({ provider: "sim", region: "r", endpoint }));
      assert.deepEqual(errors.map((e) => e.field), ["spec.endpoint"], endpoint);
    }
  });

  it("keeps provider and region fixed but lets credentials change", () => {
    const old = admit(connectionKind, connection({ provider: "sim", region: "east-1" })).object;
    const moved = admit(connectionKind, connection({ provider: "sim", region: "west-1" }), old).errors;
    assert.deepEqual(moved.map((e) => [e.field, e.message.includes("field is immutable")]), [["spec.region", true]]);
    const rotated = connection({ provider: "sim", region: "east-1", credentialsRef: { name: "new-creds" } });
    assert.deepEqual(admit(connectionKind, rotated, old).errors, []);
  });

  it("shows NAME, PROVIDER, REGION, PHASE, AGE", () => {
    const c = connection({ provider: "sim", region: "east-1" });
    c.status = { phase: "Ready", regionZones: ["east-1a"] };
    assert.deepEqual(connectionKind.printerColumns.map((col) => col.name), ["NAME", "PROVIDER", "REGION", "PHASE", "AGE"]);
    assert.deepEqual(
      ["NAME", "PROVIDER", "REGION", "PHASE"].map((name) => cell(connectionKind, name, c)),
      ["sim-east", "sim", "east-1", "Ready"],
    );
    assert.deepEqual(connectionKind.shortNames, ["conn"]);
  });
});
