// A small seeded pseudo-random generator (xoshiro128**, seeded through splitmix32), so that resource ids,
// latency jitter and injected faults are reproducible from one seed. The state is four 32-bit words and
// can be saved and restored, so a restarted cloud continues the same sequence instead of repeating ids.

export type PrngState = [number, number, number, number];

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

export class Prng {
  private s: PrngState;

  /** Seeds a generator; `stream` separates independent sequences drawn from the same seed. */
  constructor(seed: number, stream = 0) {
    const next = splitmix32((seed >>> 0) ^ Math.imul(stream + 1, 0x27d4eb2f));
    this.s = [next(), next(), next(), next()];
    if (this.s.every((w) => w === 0)) this.s[0] = 1;
  }

  /** The next 32-bit unsigned integer. */
  nextUint32(): number {
    const [a, b, c, d] = this.s;
    const result = Math.imul(rotl(Math.imul(b, 5) >>> 0, 7), 9) >>> 0;
    const t = (b << 9) >>> 0;
    let s2 = (c ^ a) >>> 0;
    let s3 = (d ^ b) >>> 0;
    const s1 = (b ^ s2) >>> 0;
    const s0 = (a ^ s3) >>> 0;
    s2 = (s2 ^ t) >>> 0;
    s3 = rotl(s3, 11);
    this.s = [s0, s1, s2, s3];
    return result;
  }

  /** A float in [0, 1). */
  next(): number {
    return this.nextUint32() / 0x1_0000_0000;
  }

  /** A float in [min, max]. */
  between(min: number, max: number): number {
    return min + (max - min) * this.next();
  }

  /** True with probability `p`. Always draws one number, so the sequence does not depend on `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** `length` lowercase hexadecimal digits. */
  hex(length: number): string {
    let out = "";
    while (out.length < length) out += this.nextUint32().toString(16).padStart(8, "0");
    return out.slice(0, length);
  }

  get state(): PrngState {
    return [...this.s];
  }

  set state(value: PrngState) {
    this.s = [value[0] >>> 0, value[1] >>> 0, value[2] >>> 0, value[3] >>> 0];
  }
}
