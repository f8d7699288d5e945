/**
 * An exact port of CPython's `random.Random` (3.11) for integer seeds: the MT19937 core of
 * Modules/_randommodule.c and the pure-Python methods of Lib/random.py built on it.
 *
 * Why: environments ported from Python often draw their episodes with `random.Random(seed)`
 * (shuffles, samples, `randint`). Reproducing the very same draws for the same seed lets a
 * TypeScript environment regenerate the Python dataset/episodes bit for bit, and lets results
 * be compared across implementations. `test/env/random.test.ts` checks every method against vectors
 * produced by CPython (`scripts/gen_vectors.py`).
 *
 * Exactness notes:
 * - Seeding (`random_seed` in C): the absolute value of the integer seed is split into 32-bit
 *   words, least significant first, and fed to `init_by_array` with key length
 *   `max(1, number of words)` (so seed 0 uses the key `[0]`).
 * - `random()` combines two outputs as `(a >> 5, b >> 6)` into a 53-bit float.
 * - All integer methods go through `_randbelow`, which is the getrandbits rejection method with
 *   `k = n.bit_length()` (not a float multiply), so `randint`/`choice`/`shuffle`/`sample`
 *   consume the generator exactly as CPython does.
 *
 * The state is plain data (`getState()` = 624 words + index, the same 625 numbers as Python's
 * `random.getstate()[1]`), so an episode's generator can be stored in JSON and resumed.
 *
 * Integers are JS numbers, so ranges are limited to 2**53 (checked; we throw rather than return
 * something different from Python). `getrandbitsBigInt` has no such limit.
 */

const N = 624;
const M = 397;
const MATRIX_A = 0x9908b0df;
const UPPER_MASK = 0x80000000;
const LOWER_MASK = 0x7fffffff;
const TWO_32 = 4294967296;
const TWO_53 = 9007199254740992;

/** A generator state: 624 unsigned 32-bit words followed by the index (0..624). */
export type PyRandomState = number[];

/** Number of bits of a non-negative integer `n <= 2**53` (Python's `int.bit_length`). */
function bitLength(n: number): number {
  if (n < TWO_32) return 32 - Math.clz32(n);
  return 32 + (32 - Math.clz32(Math.floor(n / TWO_32)));
}

function assertInt(name: string, x: number): void {
  if (!Number.isSafeInteger(x)) throw new TypeError(`${name} must be a safe integer, got ${x}`);
}

function assertRangeArg(name: string, x: number): void {
  if (!Number.isInteger(x) || Math.abs(x) > TWO_53) {
    throw new TypeError(`${name} must be an integer in [-2**53, 2**53], got ${x}`);
  }
}

export class PyRandom {
  private mt = new Uint32Array(N);
  private index = N + 1;

  /** Same as Python's `random.Random(seed)` for an integer seed (negative seeds use abs()). */
  constructor(seed: number | bigint = 0) {
    this.seed(seed);
  }

  /** Python's `seed(n)` for an integer `n` (number must be a safe integer; bigint: any size). */
  seed(seed: number | bigint): void {
    let n: bigint;
    if (typeof seed === "bigint") n = seed;
    else {
      assertInt("seed", seed);
      n = BigInt(seed);
    }
    if (n < 0n) n = -n; // CPython: `n = abs(arg)`
    const key: number[] = [];
    while (n > 0n) {
      key.push(Number(n & 0xffffffffn));
      n >>= 32n;
    }
    if (key.length === 0) key.push(0); // keyused = max(1, words)
    this.initByArray(key);
  }

  private initGenrand(s: number): void {
    const mt = this.mt;
    mt[0] = s >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = mt[i - 1]!;
      mt[i] = (Math.imul(1812433253, prev ^ (prev >>> 30)) + i) >>> 0;
    }
    this.index = N;
  }

  private initByArray(key: number[]): void {
    const mt = this.mt;
    const keyLength = key.length;
    this.initGenrand(19650218);
    let i = 1;
    let j = 0;
    for (let k = N > keyLength ? N : keyLength; k; k--) {
      const prev = mt[i - 1]!;
      mt[i] = ((mt[i]! ^ Math.imul(prev ^ (prev >>> 30), 1664525)) + key[j]! + j) >>> 0;
      i++;
      j++;
      if (i >= N) {
        mt[0] = mt[N - 1]!;
        i = 1;
      }
      if (j >= keyLength) j = 0;
    }
    for (let k = N - 1; k; k--) {
      const prev = mt[i - 1]!;
      mt[i] = ((mt[i]! ^ Math.imul(prev ^ (prev >>> 30), 1566083941)) - i) >>> 0;
      i++;
      if (i >= N) {
        mt[0] = mt[N - 1]!;
        i = 1;
      }
    }
    mt[0] = 0x80000000; // MSB is 1, assuring non-zero initial array
  }

  /** One MT19937 output, an unsigned 32-bit integer (C `genrand_uint32`). */
  genrandUint32(): number {
    const mt = this.mt;
    if (this.index >= N) {
      let kk = 0;
      let y: number;
      for (; kk < N - M; kk++) {
        y = (mt[kk]! & UPPER_MASK) | (mt[kk + 1]! & LOWER_MASK);
        mt[kk] = mt[kk + M]! ^ (y >>> 1) ^ (y & 1 ? MATRIX_A : 0);
      }
      for (; kk < N - 1; kk++) {
        y = (mt[kk]! & UPPER_MASK) | (mt[kk + 1]! & LOWER_MASK);
        mt[kk] = mt[kk + (M - N)]! ^ (y >>> 1) ^ (y & 1 ? MATRIX_A : 0);
      }
      y = (mt[N - 1]! & UPPER_MASK) | (mt[0]! & LOWER_MASK);
      mt[N - 1] = mt[M - 1]! ^ (y >>> 1) ^ (y & 1 ? MATRIX_A : 0);
      this.index = 0;
    }
    let y = mt[this.index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** Python's `random()`: a float in [0.0, 1.0) with 53 random bits. */
  random(): number {
    const a = this.genrandUint32() >>> 5;
    const b = this.genrandUint32() >>> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
  }

  /**
   * Python's `getrandbits(k)` for `0 <= k <= 53` (returned exactly as a number). For `k <= 32`
   * this is one output shifted right; above, 32-bit words are filled least significant first and
   * the last (most significant) word keeps its top `k % 32` bits, as in C.
   */
  getrandbits(k: number): number {
    assertInt("k", k);
    if (k < 0) throw new RangeError("number of bits must be non-negative");
    if (k > 53) throw new RangeError("getrandbits(k) with k > 53: use getrandbitsBigInt");
    if (k === 0) return 0;
    if (k <= 32) return this.genrandUint32() >>> (32 - k);
    const lo = this.genrandUint32();
    const hi = this.genrandUint32() >>> (64 - k);
    return hi * TWO_32 + lo;
  }

  /** Python's `getrandbits(k)` for any `k >= 0`, as a bigint. */
  getrandbitsBigInt(k: number): bigint {
    assertInt("k", k);
    if (k < 0) throw new RangeError("number of bits must be non-negative");
    if (k === 0) return 0n;
    if (k <= 32) return BigInt(this.genrandUint32() >>> (32 - k));
    let result = 0n;
    let shift = 0n;
    for (let left = k; left > 0; left -= 32, shift += 32n) {
      let r = this.genrandUint32();
      if (left < 32) r >>>= 32 - left;
      result |= BigInt(r) << shift;
    }
    return result;
  }

  /**
   * Python's `_randbelow(n)` (`_randbelow_with_getrandbits`): a uniform integer in [0, n), by
   * drawing `n.bit_length()` bits until the value is below n. Requires `1 <= n <= 2**53`.
   */
  randbelow(n: number): number {
    if (!Number.isInteger(n) || n <= 0 || n > TWO_53) {
      throw new RangeError(`randbelow(n) needs an integer 1 <= n <= 2**53, got ${n}`);
    }
    const k = bitLength(n);
    let r = this.getrandbitsForBelow(k);
    while (r >= n) r = this.getrandbitsForBelow(k);
    return r;
  }

  // getrandbits for k up to 54 (n = 2**53 has bit_length 54). Above 2**53 the sum may round, but
  // such values are >= 2**53 >= n either way and are rejected, exactly as in Python.
  private getrandbitsForBelow(k: number): number {
    if (k <= 32) return this.genrandUint32() >>> (32 - k);
    const lo = this.genrandUint32();
    const hi = this.genrandUint32() >>> (64 - k);
    return hi * TWO_32 + lo;
  }

  /**
   * Python's `randrange(stop)` / `randrange(start, stop[, step])` for integers in
   * [-2**53, 2**53] (every value of such a range is exact as a number). Ranges wider than 2**53
   * values, e.g. `randint(-(2**52), 2**52)`, go through the bigint path so they still draw
   * exactly as Python.
   */
  randrange(start: number, stop?: number | null, step = 1): number {
    assertRangeArg("start", start);
    if (stop === undefined || stop === null) {
      if (step !== 1) throw new TypeError("Missing a non-None stop argument");
      if (start > 0) return this.randbelow(start);
      throw new RangeError("empty range for randrange()");
    }
    assertRangeArg("stop", stop);
    assertInt("step", step);
    const width = stop - start;
    // Up to 2**53 the subtraction is exact, except that a true 2**53 + 1 rounds to 2**53.
    if (Math.abs(width) >= TWO_53) return this.randrangeBig(BigInt(start), BigInt(stop), BigInt(step));
    if (step === 1) {
      if (width > 0) return start + this.randbelow(width);
      throw new RangeError(`empty range for randrange() (${start}, ${stop}, ${width})`);
    }
    let n: number;
    if (step > 0) n = floorDiv(width + step - 1, step);
    else if (step < 0) n = floorDiv(width + step + 1, step);
    else throw new RangeError("zero step for randrange()");
    if (n <= 0) throw new RangeError("empty range for randrange()");
    return start + step * this.randbelow(n);
  }

  // The same algorithm with exact integers, for very wide ranges.
  private randrangeBig(start: bigint, stop: bigint, step: bigint): number {
    const width = stop - start;
    const floorDivBig = (x: bigint, y: bigint): bigint => {
      const q = x / y; // truncates toward zero
      return (x % y !== 0n && (x < 0n) !== (y < 0n)) ? q - 1n : q;
    };
    let n: bigint;
    if (step === 1n) n = width;
    else if (step > 0n) n = floorDivBig(width + step - 1n, step);
    else if (step < 0n) n = floorDivBig(width + step + 1n, step);
    else throw new RangeError("zero step for randrange()");
    if (n <= 0n) throw new RangeError("empty range for randrange()");
    return Number(start + step * this.randbelowBigInt(n));
  }

  /** Python's `_randbelow(n)` for any bigint `n >= 1`. */
  randbelowBigInt(n: bigint): bigint {
    if (n <= 0n) throw new RangeError("randbelow(n) needs n >= 1");
    const k = n.toString(2).length;
    let r = this.getrandbitsBigInt(k);
    while (r >= n) r = this.getrandbitsBigInt(k);
    return r;
  }

  /** Python's `randint(a, b)`: an integer in [a, b], both included (`randrange(a, b + 1)`). */
  randint(a: number, b: number): number {
    return this.randrange(a, b + 1);
  }

  /** Python's `choice(seq)`. Throws on an empty sequence. */
  choice<T>(seq: ArrayLike<T>): T {
    if (!seq.length) throw new RangeError("Cannot choose from an empty sequence");
    return seq[this.randbelow(seq.length)]!;
  }

  /**
   * Python's `choices(population, weights=None, *, cum_weights=None, k=1)`: `k` draws with
   * replacement. Unweighted draws use `floor(random() * n)`; weighted ones bisect the cumulative
   * weights, as Python does.
   */
  choices<T>(
    population: ArrayLike<T>,
    options: { weights?: readonly number[]; cumWeights?: readonly number[]; k?: number } = {},
  ): T[] {
    const k = options.k ?? 1;
    const n = population.length;
    const out: T[] = [];
    let cum = options.cumWeights;
    if (cum === undefined) {
      if (options.weights === undefined) {
        for (let i = 0; i < k; i++) out.push(population[Math.floor(this.random() * n)]!);
        return out;
      }
      const acc: number[] = [];
      let s = 0;
      for (const w of options.weights) acc.push((s = acc.length ? s + w : w));
      cum = acc;
    } else if (options.weights !== undefined) {
      throw new TypeError("Cannot specify both weights and cumulative weights");
    }
    if (cum.length !== n) throw new RangeError("The number of weights does not match the population");
    const total = cum[n - 1]!;
    if (!(total > 0)) throw new RangeError("Total of weights must be greater than zero");
    if (!Number.isFinite(total)) throw new RangeError("Total of weights must be finite");
    const hi = n - 1;
    for (let i = 0; i < k; i++) out.push(population[bisectRight(cum, this.random() * total, 0, hi)]!);
    return out;
  }

  /** Python's `shuffle(x)`: in place, `for i in reversed(range(1, len(x))): j = _randbelow(i+1)`. */
  shuffle<T>(x: T[]): T[] {
    for (let i = x.length - 1; i > 0; i--) {
      const j = this.randbelow(i + 1);
      const t = x[i]!;
      x[i] = x[j]!;
      x[j] = t;
    }
    return x;
  }

  /**
   * Python's `sample(population, k, *, counts=None)`: `k` distinct positions, in selection order.
   * Like CPython, small populations are drawn from a shrinking pool and large ones by rejection
   * against a set of selected indices; the branch changes the draws, so it is reproduced.
   */
  sample<T>(population: ArrayLike<T>, k: number, counts?: readonly number[]): T[] {
    assertInt("k", k);
    const n = population.length;
    if (counts !== undefined) {
      // Python: sample(range(total), k) then map each selection through bisect(cum_counts, s).
      const cum: number[] = [];
      let s = 0;
      for (const c of counts) {
        assertInt("counts", c);
        cum.push((s += c));
      }
      if (cum.length !== n) throw new RangeError("The number of counts does not match the population");
      const total = cum.pop()!;
      if (total <= 0) throw new RangeError("Total of counts must be greater than zero");
      const selections = this.sampleIndices(total, k);
      return selections.map((sel) => population[bisectRight(cum, sel, 0, cum.length)]!);
    }
    return this.sampleIndices(n, k).map((j) => population[j]!);
  }

  /**
   * `sample(range(n), k)`: the positions CPython's `sample` picks. Picking positions and then
   * mapping them is the same as Python's pool algorithm, since its pool only ever moves items.
   */
  private sampleIndices(n: number, k: number): number[] {
    assertInt("k", k);
    if (!(0 <= k && k <= n)) throw new RangeError("Sample larger than population or is negative");
    const result: number[] = new Array<number>(k);
    let setsize = 21; // size of a small set minus size of an empty list
    // Same float expression as Python's `4 ** _ceil(_log(k * 3, 4))` (log(x)/log(4)). 3k is never
    // a power of 4, so the ceil is not sensitive to last-bit differences between libms.
    if (k > 5) setsize += 4 ** Math.ceil(Math.log(k * 3) / Math.log(4));
    if (n <= setsize) {
      const pool = new Array<number>(n);
      for (let i = 0; i < n; i++) pool[i] = i;
      for (let i = 0; i < k; i++) {
        const j = this.randbelow(n - i);
        result[i] = pool[j]!;
        pool[j] = pool[n - i - 1]!; // move non-selected item into vacancy
      }
    } else {
      const selected = new Set<number>();
      for (let i = 0; i < k; i++) {
        let j = this.randbelow(n);
        while (selected.has(j)) j = this.randbelow(n);
        selected.add(j);
        result[i] = j;
      }
    }
    return result;
  }

  /** Python's `uniform(a, b)`: `a + (b - a) * random()`. */
  uniform(a: number, b: number): number {
    return a + (b - a) * this.random();
  }

  /** The generator state as plain JSON-able data: the same 625 numbers as `getstate()[1]`. */
  getState(): PyRandomState {
    const state = Array.from(this.mt);
    state.push(this.index);
    return state;
  }

  /** Restore a state from `getState()` (or from Python's `random.getstate()[1]`). */
  setState(state: readonly number[]): void {
    if (!Array.isArray(state) || state.length !== N + 1) {
      throw new TypeError(`state must be an array of ${N + 1} integers`);
    }
    const mt = new Uint32Array(N);
    for (let i = 0; i < N; i++) {
      const w = state[i];
      if (typeof w !== "number" || !Number.isInteger(w) || w < 0 || w >= TWO_32) {
        throw new TypeError(`state[${i}] is not an unsigned 32-bit integer`);
      }
      mt[i] = w;
    }
    const index = state[N];
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index > N) {
      throw new RangeError("invalid state index");
    }
    this.mt = mt;
    this.index = index;
  }

  /** A generator resumed from `getState()` output. */
  static fromState(state: readonly number[]): PyRandom {
    const r = new PyRandom(0);
    r.setState(state);
    return r;
  }
}

/** Python's `x // y` for integers (a float quotient can round up to the next integer). */
function floorDiv(x: number, y: number): number {
  let q = Math.floor(x / y);
  const r = x - q * y;
  if (y > 0) {
    if (r < 0) q--;
    else if (r >= y) q++;
  } else {
    if (r > 0) q--;
    else if (r <= y) q++;
  }
  return q;
}

/** Python's `bisect.bisect_right(a, x, lo, hi)`. */
function bisectRight(a: readonly number[], x: number, lo: number, hi: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (x < a[mid]!) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
