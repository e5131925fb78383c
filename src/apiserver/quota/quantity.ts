// Kubernetes resource quantities (k8s.io/apimachinery resource.Quantity): "500m", "1.5", "2Gi", "1e3",
// "100M". Parsed with the same scanner and suffixes, held exactly (in nano units, as Kubernetes rounds any
// finer value up to 1n), compared and added exactly, and printed in Kubernetes' canonical form ("1.5" →
// "1500m", "1024Mi" → "1Gi", "1000" → "1k"), a value parsed already canonical keeping its text.

export type QuantityFormat = "DecimalSI" | "BinarySI" | "DecimalExponent";

const SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/** A string that is not a quantity; the message is Kubernetes' own. */
export class InvalidQuantityError extends Error {
  constructor(
    readonly input: string,
    message: string,
  ) {
    super(message);
  }
}

const formatWrong = (input: string): InvalidQuantityError => new InvalidQuantityError(input, `quantities must match the regular expression '${SPLIT_RE}'`);

const DECIMAL_SUFFIXES: Record<string, number> = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIXES: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL_BY_EXPONENT = new Map(Object.entries(DECIMAL_SUFFIXES).map(([s, e]) => [e, s]));
const BINARY_BY_POWER = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

const NANO = 1_000_000_000n;
const MAX_INT64 = 9_223_372_036_854_775_807n;
/** Kubernetes caps binary quantities at the largest int64. */
const MAX_BINARY_NANOS = MAX_INT64 * NANO;
/**
 * Kubernetes takes any int32 exponent ("1e999999999"); held exactly, such a value would take megabytes, so
 * exponents beyond this are refused as a suffix Slipway cannot parse. No resource comes near 10^1000.
 */
const MAX_EXPONENT = 1000;
/** Digits a quantity's number may have and still be held in an int64 (Kubernetes' fast path). */
const MAX_INT64_FACTORS = 18;

interface Scanned {
  positive: boolean;
  num: string;
  denom: string;
  suffix: string;
}

/** Kubernetes' parseQuantityString: sign, number (leading zeros dropped), fraction, suffix. */
function scan(str: string): Scanned {
  let positive = true;
  let pos = 0;
  const end = str.length;
  if (str[0] === "-" || str[0] === "+") {
    positive = str[0] === "+";
    pos++;
  }
  while (pos < end && str[pos] === "0") pos++;
  if (pos >= end) return { positive, num: "0", denom: "", suffix: "" };
  const isDigit = (i: number): boolean => i < end && str.charCodeAt(i) >= 48 && str.charCodeAt(i) <= 57;
  const numStart = pos;
  while (isDigit(pos)) pos++;
  const num = str.slice(numStart, pos) || "0";
  let denom = "";
  if (pos < end && str[pos] === ".") {
    pos++;
    const denomStart = pos;
    while (isDigit(pos)) pos++;
    denom = str.slice(denomStart, pos);
  }
  const suffixStart = pos;
  while (pos < end && "eEinumkKMGTP".includes(str.charAt(pos))) pos++;
  if (pos < end && (str[pos] === "-" || str[pos] === "+")) pos++;
  while (isDigit(pos)) pos++;
  if (pos < end) throw formatWrong(str);
  return { positive, num, denom, suffix: str.slice(suffixStart) };
}

function interpretSuffix(input: string, suffix: string): { base: 10 | 2; exponent: number; format: QuantityFormat } {
  const decimal = DECIMAL_SUFFIXES[suffix];
  if (decimal !== undefined) return { base: 10, exponent: decimal, format: "DecimalSI" };
  const binary = BINARY_SUFFIXES[suffix];
  if (binary !== undefined) return { base: 2, exponent: binary, format: "BinarySI" };
  if (suffix.length > 1 && (suffix[0] === "e" || suffix[0] === "E") && /^[+-]?\d+$/.test(suffix.slice(1))) {
    const exponent = Number(suffix.slice(1));
    if (Math.abs(exponent) <= MAX_EXPONENT) return { base: 10, exponent, format: "DecimalExponent" };
  }
  throw new InvalidQuantityError(input, "unable to parse quantity's suffix");
}

/** a / b rounded away from zero (Kubernetes rounds values finer than 1n up). */
function divideRoundingUp(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b === 0n ? q : q + (a < 0n ? -1n : 1n);
}

const pow10 = (n: number): bigint => 10n ** BigInt(n);

function abs(n: bigint): bigint {
  return n < 0n ? -n : n;
}

export class Quantity {
  private constructor(
    /** The value times 10^9. */
    readonly nanos: bigint,
    readonly format: QuantityFormat,
    /** The text it was parsed from, when that text is already canonical. */
    private readonly text?: string,
  ) {}

  /** Parses a quantity as Kubernetes does; a number is read as its decimal text. Throws InvalidQuantityError. */
  static parse(input: string | number): Quantity {
    const str = typeof input === "number" ? String(input) : input;
    if (str === "") throw formatWrong(str);
    if (str === "0") return new Quantity(0n, "DecimalSI", "0");
    const { positive, num, denom, suffix } = scan(str);
    const { base, exponent, format } = interpretSuffix(str, suffix);
    const digits = BigInt(num + denom);

    let magnitude: bigint;
    if (base === 10) {
      const shift = exponent - denom.length + 9;
      magnitude = shift >= 0 ? digits * pow10(shift) : divideRoundingUp(digits, pow10(-shift));
    } else {
      const scaled = digits * 2n ** BigInt(exponent);
      const shift = 9 - denom.length;
      magnitude = shift >= 0 ? scaled * pow10(shift) : divideRoundingUp(scaled, pow10(-shift));
    }
    let finalFormat = format;
    if (format === "BinarySI" && magnitude > MAX_BINARY_NANOS) magnitude = MAX_BINARY_NANOS;
    if (format === "BinarySI" && magnitude > 0n && magnitude < NANO) finalFormat = "DecimalSI";
    const nanos = positive ? magnitude : -magnitude;
    return new Quantity(nanos, finalFormat, keptText(str, num, denom, base, exponent) ? str : undefined);
  }

  /** Parses, or undefined when the text is not a quantity. */
  static tryParse(input: string | number): Quantity | undefined {
    try {
      return Quantity.parse(input);
    } catch (error) {
      if (error instanceof InvalidQuantityError) return undefined;
      throw error;
    }
  }

  static zero(format: QuantityFormat = "DecimalSI"): Quantity {
    return new Quantity(0n, format);
  }

  /** A whole number, e.g. a count of objects. */
  static ofInteger(value: number | bigint, format: QuantityFormat = "DecimalSI"): Quantity {
    return new Quantity(BigInt(value) * NANO, format);
  }

  isZero(): boolean {
    return this.nanos === 0n;
  }

  sign(): -1 | 0 | 1 {
    return this.nanos < 0n ? -1 : this.nanos > 0n ? 1 : 0;
  }

  cmp(other: Quantity): -1 | 0 | 1 {
    return this.nanos < other.nanos ? -1 : this.nanos > other.nanos ? 1 : 0;
  }

  /** The sum, in this quantity's format unless it is zero (then in the other's), as Kubernetes adds. */
  add(other: Quantity): Quantity {
    return new Quantity(this.nanos + other.nanos, this.isZero() ? other.format : this.format);
  }

  sub(other: Quantity): Quantity {
    return new Quantity(this.nanos - other.nanos, this.isZero() ? other.format : this.format);
  }

  /** The larger of the two (this one when equal). */
  max(other: Quantity): Quantity {
    return other.cmp(this) > 0 ? other : this;
  }

  /** The value in thousandths, rounded away from zero (Kubernetes' MilliValue). */
  milliValue(): bigint {
    return divideRoundingUp(this.nanos, 1_000_000n);
  }

  /** The value rounded away from zero to a whole number (Kubernetes' Value). */
  value(): bigint {
    return divideRoundingUp(this.nanos, NANO);
  }

  /** This quantity rounded up to a whole number, keeping its format (Kubernetes' RoundUp(0)). */
  roundedUp(): Quantity {
    return this.nanos % NANO === 0n ? this : new Quantity(this.value() * NANO, this.format);
  }

  /** Kubernetes' canonical text. */
  toString(): string {
    return this.text ?? this.canonical();
  }

  toJSON(): string {
    return this.toString();
  }

  private canonical(): string {
    if (this.nanos === 0n) return "0";
    if (this.format === "BinarySI" && abs(this.nanos) >= 1024n * NANO && this.nanos % NANO === 0n) {
      let mantissa = this.nanos / NANO;
      let power = 0;
      while (abs(mantissa) >= 1024n && mantissa % 1024n === 0n) {
        mantissa /= 1024n;
        power++;
      }
      return `${mantissa}${BINARY_BY_POWER[power] ?? ""}`;
    }
    let mantissa = this.nanos;
    let exponent = -9;
    while (abs(mantissa) >= 10n && mantissa % 10n === 0n) {
      mantissa /= 10n;
      exponent++;
    }
    while (exponent % 3 !== 0) {
      mantissa *= 10n;
      exponent--;
    }
    if (this.format === "DecimalExponent") return exponent === 0 ? `${mantissa}` : `${mantissa}e${exponent}`;
    // Past exa there is no SI suffix: the value is written in exa.
    if (exponent > 18) {
      mantissa *= pow10(exponent - 18);
      exponent = 18;
    }
    return `${mantissa}${DECIMAL_BY_EXPONENT.get(exponent) ?? ""}`;
  }
}

/**
 * Whether Kubernetes keeps the text a quantity was parsed from as its printed form: it does when the
 * value took its int64 fast path and the text is already canonical (no trailing "000", a multiple of 3
 * as exponent; for binary suffixes, a value not divisible by 8).
 */
function keptText(str: string, num: string, denom: string, base: 10 | 2, exponent: number): boolean {
  if (base === 10) {
    const scale = exponent - denom.length;
    if (MAX_INT64_FACTORS - (num.length + denom.length) < 0 || scale < -9) return false;
    const shifted = num + denom;
    return scale % 3 === 0 && !shifted.endsWith("000") && shifted[0] !== "0";
  }
  if (denom.length > 0 || exponent < 0) return false;
  const precision = 15 - num.length - Math.trunc(Math.fround(exponent * 3) / 10) - 1;
  if (precision < 0) return false;
  const value = BigInt(num);
  if (value * 2n ** BigInt(exponent) > MAX_INT64) return false;
  return exponent % 10 === 0 && (value & 7n) !== 0n;
}
