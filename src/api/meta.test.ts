import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import { MapOf, StringEnum, Struct } from "./meta.ts";

describe("StringEnum", () => {
  const schema = Struct({ effect: StringEnum(["NoSchedule", "NoExecute"], { description: "Effect." }) });

  it("publishes a plain string enum", () => {
    assert.deepEqual(JSON.parse(JSON.stringify(schema.properties.effect)), {
      type: "string",
      enum: ["NoSchedule", "NoExecute"],
      description: "Effect.",
    });
  });

  it("accepts its values only, through Value and the compiler alike", () => {
    const check = TypeCompiler.Compile(schema);
    for (const effect of ["NoSchedule", "NoExecute"]) {
      assert.equal(Value.Check(schema, { effect }), true);
      assert.equal(check.Check({ effect }), true);
    }
    for (const effect of ["noschedule", "", 1, null]) {
      assert.equal(Value.Check(schema, { effect }), false);
      assert.equal(check.Check({ effect }), false);
    }
  });

  it("names the allowed values in its error", () => {
    const [error] = [...Value.Errors(schema, { effect: "Never" })];
    assert.equal(error?.path, "/effect");
    assert.equal(error?.message, 'Expected one of "NoSchedule", "NoExecute"');
  });

  it("fills its default", () => {
    const withDefault = Struct({ cni: Type.Optional(StringEnum(["calico", "cilium"], { default: "calico" })) });
    assert.deepEqual(Value.Default(withDefault, {}), { cni: "calico" });
  });
});

describe("MapOf", () => {
  it("checks every value and names the offending key", () => {
    const schema = Struct({ sizes: MapOf(Type.Integer(), "Sizes.") });
    assert.equal(Value.Check(schema, { sizes: { a: 1, b: 2 } }), true);
    assert.deepEqual(
      [...TypeCompiler.Compile(schema).Errors({ sizes: { a: 1, b: "two" } })].map((e) => e.path),
      ["/sizes/b"],
    );
  });
});
