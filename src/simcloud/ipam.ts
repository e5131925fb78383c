// IPv4 ranges: parsing CIDRs, containment and overlap, and handing out addresses (lowest free first).
import { InvalidParameterError } from "./errors.ts";

export interface Cidr {
  /** Network address as an unsigned 32-bit number. */
  base: number;
  prefix: number;
  text: string;
}

function parseAddress(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

export function formatAddress(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join(".");
}

/** Parses "a.b.c.d/n"; the address must be the network address of the range. */
export function parseCidr(text: string, field = "cidr"): Cidr {
  const [address, prefixText, extra] = text.split("/");
  const base = address === undefined ? undefined : parseAddress(address);
  const prefix = prefixText !== undefined && /^\d{1,2}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (base === undefined || extra !== undefined || !(prefix >= 0 && prefix <= 32)) {
    throw new InvalidParameterError(`${field}: "${text}" is not an IPv4 CIDR such as 10.0.0.0/16`, { details: { field } });
  }
  if (base % rangeSize(prefix) !== 0) {
    throw new InvalidParameterError(`${field}: "${text}" has host bits set (did you mean ${formatAddress(base - (base % rangeSize(prefix)))}/${prefix}?)`, {
      details: { field },
    });
  }
  return { base, prefix, text };
}

export function rangeSize(prefix: number): number {
  return 2 ** (32 - prefix);
}

export function contains(outer: Cidr, inner: Cidr): boolean {
  return inner.prefix >= outer.prefix && inner.base >= outer.base && inner.base + rangeSize(inner.prefix) <= outer.base + rangeSize(outer.prefix);
}

export function overlaps(a: Cidr, b: Cidr): boolean {
  return a.base < b.base + rangeSize(b.prefix) && b.base < a.base + rangeSize(a.prefix);
}

/** Addresses a subnet reserves, as public clouds do: network, router, DNS, future use, and broadcast. */
export const RESERVED_PER_SUBNET = 5;

/** Usable instance addresses of a subnet. */
export function usableAddresses(subnet: Cidr): number {
  return Math.max(0, rangeSize(subnet.prefix) - RESERVED_PER_SUBNET);
}

/** The lowest address of `subnet` not in `used` (skipping the first four and the last), or undefined. */
export function lowestFreeAddress(subnet: Cidr, used: ReadonlySet<string>): string | undefined {
  const end = subnet.base + rangeSize(subnet.prefix) - 1;
  for (let value = subnet.base + 4; value < end; value++) {
    const address = formatAddress(value);
    if (!used.has(address)) return address;
  }
  return undefined;
}

/** Public addresses come from the documentation ranges (RFC 5737): nothing ever answers on them. */
const PUBLIC_POOLS = ["203.0.113.0/24", "198.51.100.0/24", "192.0.2.0/24"].map((text) => parseCidr(text));

/** The first free public address of the pools (or of `range`), or undefined when all are taken. */
export function lowestFreePublicAddress(used: ReadonlySet<string>, range?: string): string | undefined {
  for (const pool of range ? [parseCidr(range)] : PUBLIC_POOLS) {
    for (let value = pool.base + 1; value < pool.base + rangeSize(pool.prefix) - 1; value++) {
      const address = formatAddress(value);
      if (!used.has(address)) return address;
    }
  }
  return undefined;
}
