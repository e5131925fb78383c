import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { InvalidQuantityError, Quantity } from "./quantity.ts";

const q = (text: string | number): Quantity => Quantity.parse(text);

describe("Quantity.parse and toString", () => {
  // [input, canonical text, value in nanos, format] — expectations from Kubernetes' resource.Quantity
  const cases: [string, string, bigint, string][] = [
    ["0", "0", 0n, "DecimalSI"],
    ["500m", "500m", 500_000_000n, "DecimalSI"],
    ["1.5", "1500m", 1_500_000_000n, "DecimalSI"],
    ["0.1", "100m", 100_000_000n, "DecimalSI"],
    ["1000m", "1", 1_000_000_000n, "DecimalSI"],
    ["1000", "1k", 1_000_000_000_000n, "DecimalSI"],
    ["50k", "50k", 50_000_000_000_000n, "DecimalSI"],
    ["100M", "100M", 100_000_000_000_000_000n, "DecimalSI"],
    ["12E", "12E", 12n * 10n ** 27n, "DecimalSI"],
    ["1.01E", "1010P", 101n * 10n ** 25n, "DecimalSI"],
    ["8.1k", "8100", 8_100_000_000_000n, "DecimalSI"],
    ["7.123456M", "7.123456M", 7_123_456n * 10n ** 9n, "DecimalSI"],
    ["2Gi", "2Gi", 2n * 2n ** 30n * 10n ** 9n, "BinarySI"],
    ["1024Mi", "1Gi", 2n ** 30n * 10n ** 9n, "BinarySI"],
    ["0.5Gi", "512Mi", 2n ** 29n * 10n ** 9n, "BinarySI"],
    ["1.5Gi", "1536Mi", 3n * 2n ** 29n * 10n ** 9n, "BinarySI"],
    ["300Mi", "300Mi", 300n * 2n ** 20n * 10n ** 9n, "BinarySI"],
    ["8Ki", "8Ki", 8192n * 10n ** 9n, "BinarySI"],
    ["0.5Ki", "512", 512n * 10n ** 9n, "BinarySI"],
    ["100.035Ki", "102435840m", 102_435_840_000_000n, "BinarySI"],
    ["9Ei", "9223372036854775807", 9_223_372_036_854_775_807n * 10n ** 9n, "BinarySI"],
    ["1e3", "1e3", 1_000_000_000_000n, "DecimalExponent"],
    ["1E6", "1E6", 10n ** 15n, "DecimalExponent"],
    ["12e2", "1200", 1_200_000_000_000n, "DecimalExponent"],
    ["1.2e3", "1200", 1_200_000_000_000n, "DecimalExponent"],
    ["1.3E+6", "1300e3", 1_300_000n * 10n ** 9n, "DecimalExponent"],
    ["1E-3", "1E-3", 1_000_000n, "DecimalExponent"],
    ["0.5e-2", "5e-3", 5_000_000n, "DecimalExponent"],
    ["-1.5", "-1500m", -1_500_000_000n, "DecimalSI"],
    ["-1Gi", "-1Gi", -(2n ** 30n) * 10n ** 9n, "BinarySI"],
    // values finer than a nano are rounded up to one
    ["3.001n", "4n", 4n, "DecimalSI"],
    ["0.00000012345", "124n", 124n, "DecimalSI"],
    ["0.0000000001", "1n", 1n, "DecimalSI"],
    ["0.000000000001Ki", "2n", 2n, "DecimalSI"],
    // written oddly, and still quantities (Kubernetes keeps such a text when its value is canonical)
    [".001", "1m", 1_000_000n, "DecimalSI"],
    ["1.", "1.", 1_000_000_000n, "DecimalSI"],
    ["1.G", "1.G", 10n ** 18n, "DecimalSI"],
    ["+1", "+1", 1_000_000_000n, "DecimalSI"],
    ["000", "0", 0n, "DecimalSI"],
  ];
  for (const [input, text, nanos, format] of cases) {
    it(`${JSON.stringify(input)} is ${text}`, () => {
      const parsed = q(input);
      assert.equal(parsed.toString(), text);
      assert.equal(parsed.nanos, nanos);
      assert.equal(parsed.format, format);
      assert.equal(JSON.stringify({ v: parsed }), `{"v":${JSON.stringify(text)}}`);
    });
  }

  it("reads a JSON number as its decimal text", () => {
    assert.equal(q(5).toString(), "5");
    assert.equal(q(0.5).toString(), "500m");
  });

  const formatWrong = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  const suffixWrong = "unable to parse quantity's suffix";
  const bad: [string, string][] = [
    ["", formatWrong],
    ["abc", formatWrong],
    ["1 Gi", formatWrong],
    ["1Gb", formatWrong],
    ["1.2.3", formatWrong],
    ["1e3e", formatWrong],
    ["1ki", suffixWrong],
    ["1e", suffixWrong],
    ["1Kii", suffixWrong],
    ["--1", suffixWrong],
    ["1e99999", suffixWrong],
  ];
  for (const [input, message] of bad) {
    it(`refuses ${JSON.stringify(input)}: ${message}`, () => {
      assert.throws(() => q(input), (e: unknown) => e instanceof InvalidQuantityError && e.message === message && e.input === input);
      assert.equal(Quantity.tryParse(input), undefined);
    });
  }
});

describe("Quantity arithmetic", () => {
  it("adds exactly, in the format of the first non-zero term", () => {
    assert.equal(q("1Gi").add(q("512Mi")).toString(), "1536Mi");
    assert.equal(q("500m").add(q("500m")).toString(), "1");
    assert.equal(q("1").add(q("500m")).toString(), "1500m");
    assert.equal(Quantity.zero().add(q("1Gi")).toString(), "1Gi");
    assert.equal(q("1Gi").add(q("1G")).toString(), "2073741824");
    assert.equal(q("1G").add(q("1Mi")).toString(), "1001048576");
    assert.equal(q("1G").add(q("1M")).toString(), "1001M");
    assert.equal(q("0.1").add(q("0.2")).cmp(q("300m")), 0);
  });

  it("subtracts exactly, down past zero", () => {
    assert.equal(q("2").sub(q("500m")).toString(), "1500m");
    assert.equal(q("1").sub(q("2")).toString(), "-1");
    assert.equal(q("1").sub(q("2")).sign(), -1);
    assert.equal(Quantity.zero().sub(q("1Gi")).toString(), "-1Gi");
  });

  it("compares across formats", () => {
    assert.equal(q("1Gi").cmp(q("1073741824")), 0);
    assert.equal(q("1G").cmp(q("1Gi")), -1);
    assert.equal(q("1e3").cmp(q("1k")), 0);
    assert.equal(q("1001m").cmp(q("1")), 1);
    assert.equal(q("2").max(q("1500m")).toString(), "2");
    assert.equal(q("1").max(q("1500m")).toString(), "1500m");
  });

  it("gives whole and milli values rounded away from zero, as Value and MilliValue", () => {
    assert.equal(q("1.5").value(), 2n);
    assert.equal(q("-1.5").value(), -2n);
    assert.equal(q("1.0001").milliValue(), 1001n);
    assert.equal(q("1.9999999").milliValue(), 2000n);
    assert.equal(q("2Ki").value(), 2048n);
    assert.equal(q("0.5").roundedUp().toString(), "1");
    assert.equal(q("1.5Ki").roundedUp().toString(), "1536");
  });

  it("counts whole numbers", () => {
    assert.equal(Quantity.ofInteger(5).toString(), "5");
    assert.equal(Quantity.ofInteger(0).isZero(), true);
  });
});
