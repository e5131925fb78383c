import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  InvalidCidrError,
  InvalidIPv4AddressError,
  cidrContains,
  cidrsOverlap,
  formatCidr,
  formatIPv4,
  parseCidr,
  parseIPv4,
} from "./cidr.ts";

describe("parseCidr", () => {
  it("gives the base, prefix and address range of a block", () => {
    assert.deepEqual(parseCidr("10.0.0.0/16"), {
      base: 0x0a000000,
      prefix: 16,
      first: 0x0a000000,
      last: 0x0a00ffff,
    });
    assert.deepEqual(parseCidr("0.0.0.0/0"), { base: 0, prefix: 0, first: 0, last: 0xffffffff });
    assert.deepEqual(parseCidr("255.255.255.255/32"), {
      base: 0xffffffff,
      prefix: 32,
      first: 0xffffffff,
      last: 0xffffffff,
    });
    assert.equal(formatCidr(parseCidr("10.96.0.0/12")), "10.96.0.0/12");
  });

  for (const bad of [
    "10.0.0.0",
    "10.0.0/16",
    "10.0.0.0.0/16",
    "10.0.0.256/24",
    "010.0.0.0/8",
    "10.0.0.0/33",
    "10.0.0.0/016",
    "10.0.0.0/",
    "10.0.0.0/-1",
    " 10.0.0.0/8",
    "10.0.0.0/8 ",
    "a.b.c.d/8",
    "",
    "fd00::/8",
  ]) {
    it(`refuses ${JSON.stringify(bad)} with InvalidCidrError`, () => {
      assert.throws(() => parseCidr(bad), InvalidCidrError);
    });
  }

  it("refuses a block with host bits set and names the network meant", () => {
    assert.throws(
      () => parseCidr("10.0.0.1/16"),
      (error: unknown) =>
        error instanceof InvalidCidrError && error.input === "10.0.0.1/16" && error.message.includes("10.0.0.0/16"),
    );
  });

  it("keeps the address error as the cause", () => {
    assert.throws(
      () => parseCidr("10.0.300.0/24"),
      (error: unknown) => error instanceof InvalidCidrError && error.cause instanceof InvalidIPv4AddressError,
    );
  });
});

describe("parseIPv4", () => {
  it("round-trips through formatIPv4", () => {
    for (const address of ["0.0.0.0", "10.1.2.3", "192.168.255.1", "255.255.255.255"]) {
      assert.equal(formatIPv4(parseIPv4(address)), address);
    }
  });
  it("refuses malformed addresses", () => {
    for (const bad of ["1.2.3", "1.2.3.4.5", "1.2.3.04", "1.2.3.x", "1..2.3"]) {
      assert.throws(() => parseIPv4(bad), InvalidIPv4AddressError, bad);
    }
  });
});

describe("cidrsOverlap", () => {
  it("sees the Kubernetes default pod and service ranges as disjoint", () => {
    assert.equal(cidrsOverlap("10.244.0.0/16", "10.96.0.0/12"), false);
    assert.equal(cidrsOverlap("10.0.0.0/16", "10.96.0.0/12"), false);
  });
  it("sees nested and identical blocks as overlapping, in either order", () => {
    assert.equal(cidrsOverlap("10.0.0.0/8", "10.244.0.0/16"), true);
    assert.equal(cidrsOverlap("10.244.0.0/16", "10.0.0.0/8"), true);
    assert.equal(cidrsOverlap("192.168.1.0/24", parseCidr("192.168.1.0/24")), true);
  });
  it("treats adjacent blocks as disjoint", () => {
    assert.equal(cidrsOverlap("10.0.0.0/24", "10.0.1.0/24"), false);
    assert.equal(cidrsOverlap("10.0.0.0/25", "10.0.0.128/25"), false);
  });
  it("throws on a bad block", () => {
    assert.throws(() => cidrsOverlap("10.0.0.0/8", "nope"), InvalidCidrError);
  });
});

describe("cidrContains", () => {
  it("contains its sub-blocks but not its super-blocks", () => {
    assert.equal(cidrContains("10.0.0.0/16", "10.0.4.0/24"), true);
    assert.equal(cidrContains("10.0.0.0/16", "10.0.0.0/16"), true);
    assert.equal(cidrContains("10.0.4.0/24", "10.0.0.0/16"), false);
    assert.equal(cidrContains("10.0.0.0/16", "10.1.0.0/24"), false);
  });
  it("accepts a single address", () => {
    assert.equal(cidrContains("10.96.0.0/12", "10.96.0.10"), true);
    assert.equal(cidrContains("10.96.0.0/12", "10.112.0.1"), false);
    assert.equal(cidrContains("0.0.0.0/0", "255.255.255.255"), true);
  });
});
