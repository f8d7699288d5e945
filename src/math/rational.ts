/**
 * Exact rational arithmetic on bigints: comparing numeric answers (math-answer.ts) and computing
 * the answers of generated problems (envs/math-tools) without floating-point error.
 */
export interface Rational {
  /** Numerator (carries the sign). */
  num: bigint;
  /** Denominator, > 0. */
  den: bigint;
}

export const abs = (x: bigint): bigint => (x < 0n ? -x : x);

function gcd(a: bigint, b: bigint): bigint {
  a = abs(a);
  b = abs(b);
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

/** num/den in lowest terms, denominator positive. Integers (number) are taken exactly. */
export function rational(num: bigint | number, den: bigint | number = 1n): Rational {
  let n = BigInt(num);
  let d = BigInt(den);
  if (d === 0n) throw new RangeError("zero denominator");
  if (d < 0n) {
    n = -n;
    d = -d;
  }
  const g = gcd(n, d);
  return g > 1n ? { num: n / g, den: d / g } : { num: n, den: d };
}

export const add = (a: Rational, b: Rational): Rational => rational(a.num * b.den + b.num * a.den, a.den * b.den);
export const sub = (a: Rational, b: Rational): Rational => rational(a.num * b.den - b.num * a.den, a.den * b.den);
export const mul = (a: Rational, b: Rational): Rational => rational(a.num * b.num, a.den * b.den);
export const div = (a: Rational, b: Rational): Rational => rational(a.num * b.den, a.den * b.num);
export const neg = (a: Rational): Rational => ({ num: -a.num, den: a.den });
export const equal = (a: Rational, b: Rational): boolean => a.num === b.num && a.den === b.den;

/** A double close to the rational (exact for integers up to 2^53; correct to ~1 ulp otherwise). */
export function toNumber(r: Rational): number {
  const n = Number(r.num);
  const d = Number(r.den);
  if (Number.isFinite(n) && Number.isFinite(d)) return n / d;
  // Both huge: scale down first so the division does not become Infinity/Infinity.
  const shift = BigInt(Math.max(r.num.toString().length, r.den.toString().length) - 300);
  const scale = 10n ** (shift > 0n ? shift : 0n);
  return Number(r.num / scale) / Number(r.den / scale);
}
