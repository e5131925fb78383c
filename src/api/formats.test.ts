import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import "./formats.ts";

describe("string formats", () => {
  const schema = Type.Object({ at: Type.String({ format: "date-time" }), day: Type.Optional(Type.String({ format: "date" })), data: Type.Optional(Type.String({ format: "byte" })) });

  it("accepts RFC 3339 times, dates and base64 a schema asks for", () => {
    for (const at of ["2026-11-26T17:30:00Z", "2026-11-26T17:30:00.123456Z", "2026-11-26T17:30:00+01:00"]) assert.ok(Value.Check(schema, { at, day: "2024-02-29", data: "aGVsbG8=" }), at);
  });

  it("refuses other strings, saying which format they miss", () => {
    for (const at of ["yesterday", "2026-11-26 17:30:00", "2026-02-30T00:00:00Z", "2026-11-26T25:00:00Z"]) {
      const errors = [...Value.Errors(schema, { at })];
      assert.equal(errors.length, 1, at);
      assert.equal(errors[0]!.path, "/at", at);
      assert.match(errors[0]!.message, /date-time/, at);
    }
    assert.equal([...Value.Errors(schema, { at: "2026-11-26T17:30:00Z", day: "2023-02-29" })][0]?.path, "/day");
    assert.equal([...Value.Errors(schema, { at: "2026-11-26T17:30:00Z", data: "not base64!" })][0]?.path, "/data");
  });
});
