// IPv4 addresses and CIDR blocks, parsed strictly: what a user writes in a Cluster's network must mean
// exactly one range, so "10.0.0.1/16", "010.0.0.0/8" or "10.0.0.0/33" are refused rather than guessed at.

export interface Cidr {
  /** The network address as an unsigned 32-bit number. */
  base: number;
  prefix: number;
  /** First and last address of the block (inclusive). */
  first: number;
  last: number;
}

export class InvalidIPv4AddressError extends Error {
  override readonly name = "InvalidIPv4AddressError";
  constructor(
    readonly input: string,
    readonly detail: string,
  ) {
    super(`invalid IPv4 address ${JSON.stringify(input)}: ${detail}`);
  }
}

export class InvalidCidrError extends Error {
  override readonly name = "InvalidCidrError";
  constructor(
    readonly input: string,
    /** What is wrong, without the input: "prefix length must be a number from 0 to 32". */
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(`invalid CIDR ${JSON.stringify(input)}: ${detail}`, options);
  }
}

const DECIMAL = /^(0|[1-9][0-9]{0,2})$/;

/** "10.1.2.3" → 167838211; refuses leading zeros, missing octets and values over 255. */
export function parseIPv4(address: string): number {
  const octets = address.split(".");
  if (octets.length !== 4) throw new InvalidIPv4AddressError(address, "expected four dot-separated octets");
  let n = 0;
  for (const octet of octets) {
    if (!DECIMAL.test(octet)) throw new InvalidIPv4AddressError(address, `octet ${JSON.stringify(octet)} is not a decimal number without leading zeros`);
    const v = Number(octet);
    if (v > 255) throw new InvalidIPv4AddressError(address, `octet ${v} is greater than 255`);
    n = n * 256 + v;
  }
  return n;
}

export function formatIPv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

/** "10.0.0.0/16" → {base, prefix, first, last}; throws InvalidCidrError. Host bits must be zero. */
export function parseCidr(text: string): Cidr {
  const slash = text.indexOf("/");
  if (slash < 0) throw new InvalidCidrError(text, "expected ADDRESS/PREFIX, e.g. 10.0.0.0/16");
  const addressText = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  let address: number;
  try {
    address = parseIPv4(addressText);
  } catch (error) {
    const detail = error instanceof InvalidIPv4AddressError ? error.detail : "bad address";
    throw new InvalidCidrError(text, detail, { cause: error });
  }
  if (!/^(0|[1-9][0-9]?)$/.test(prefixText) || Number(prefixText) > 32) {
    throw new InvalidCidrError(text, "prefix length must be a number from 0 to 32");
  }
  const prefix = Number(prefixText);
  const size = 2 ** (32 - prefix);
  const base = address - (address % size);
  if (base !== address) {
    throw new InvalidCidrError(text, `host bits are set; the network is ${formatIPv4(base)}/${prefix}`);
  }
  return { base, prefix, first: base, last: base + size - 1 };
}

export function formatCidr(cidr: Cidr): string {
  return `${formatIPv4(cidr.base)}/${cidr.prefix}`;
}

function asCidr(value: Cidr | string): Cidr {
  return typeof value === "string" ? parseCidr(value) : value;
}

/** True if the two blocks share at least one address. */
export function cidrsOverlap(a: Cidr | string, b: Cidr | string): boolean {
  const x = asCidr(a);
  const y = asCidr(b);
  return x.first <= y.last && y.first <= x.last;
}

/**
 * True if every address of `inner` lies in `outer`. `inner` may be a CIDR or a single address
 * ("10.0.3.7").
 */
export function cidrContains(outer: Cidr | string, inner: Cidr | string): boolean {
  const o = asCidr(outer);
  if (typeof inner === "string" && !inner.includes("/")) {
    const address = parseIPv4(inner);
    return o.first <= address && address <= o.last;
  }
  const i = asCidr(inner);
  return o.first <= i.first && i.last <= o.last;
}
