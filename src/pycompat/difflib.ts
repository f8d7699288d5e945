/**
 * An exact port of the parts of CPython's `difflib.SequenceMatcher` (Lib/difflib.py, 3.11) that a
 * similarity reward needs: `find_longest_match`, `get_matching_blocks` and `ratio`.
 *
 * Why an exact port rather than "some" similarity: reward functions written against Python
 * (`difflib.SequenceMatcher(None, a, b).ratio()`) are common in RL environments, and a score that
 * differs in the last bit from the Python reference makes rewards incomparable across
 * implementations. `test/env/difflib.test.ts` checks this file against vectors produced by CPython
 * (`scripts/gen_vectors.py`) with exact float equality.
 *
 * Things that matter for exactness:
 *
 * - Elements are Unicode code points. A Python `str` is a sequence of code points, so `len("😀")`
 *   is 1 and a combining accent is its own element. JS strings are UTF-16, so comparing
 *   `s[i]`/`s.length` would split an astral character into two surrogates and give different
 *   lengths (hence a different ratio denominator) and spurious half-matches. We convert both
 *   strings once to arrays of code point numbers, walking the string like `Array.from(str)` does
 *   (a lone surrogate stays one element, as it is one code point in Python too).
 * - The "autojunk" heuristic: when `len(b) >= 200`, every element occurring more than
 *   `1 + len(b) // 100` times in `b` is "popular" and is dropped from `b2j`, so it can never seed a
 *   match. It can still be absorbed by the extension loops at the end of `find_longest_match`
 *   (they look at raw `a`/`b`, not `b2j`). This changes results on long texts (spaces and `e` are
 *   popular in any English paragraph), so it must be reproduced rather than "fixed".
 * - The tie-breaking of `find_longest_match` (earliest in `a`, then earliest in `b`), the LIFO
 *   queue of `get_matching_blocks` and its final merge of adjacent blocks.
 * - `ratio = 2.0 * M / T` evaluated in the same order, so the IEEE double is bit-identical.
 *
 * Bounds for untrusted input (not in Python, off by default, results unchanged within them):
 * `maxLength` refuses long sequences and `maxWork` refuses a comparison past a number of
 * `find_longest_match` steps. Both are needed: the work grows with the product of the lengths
 * and, through the matching recursion, can reach their cube on pathological pairs (50 s for two
 * 16,000-element sequences), while ordinary text stays far below any sensible budget.
 *
 * Performance (this runs on paragraphs, thousands of times per batch): code points are stored in
 * `Int32Array`s, `b2j` is a `Map<number, Int32Array>` keyed by code point, and CPython's per-row
 * `j2len` dicts are replaced by two reusable `Int32Array`s plus "touched index" lists, so the
 * inner loop allocates nothing. The semantics are those of the dicts: an entry absent from the
 * previous row reads as 0.
 */

/** A matching block `[i, j, size]`: `a[i:i+size] == b[j:j+size]` (code point indices). */
export type MatchTriple = [i: number, j: number, size: number];

export interface SequenceMatcherOptions {
  /**
   * Python's `autojunk` argument (default `true`, as in Python). When on and `b` has at least 200
   * elements, elements occurring more than `1 + len(b) // 100` times are "popular".
   */
  autojunk?: boolean;
  /**
   * Python's `isjunk` argument, called once per distinct element of `b` with that element as a
   * one-code-point string. Default: none (Python's `None`), which is what `sequenceRatio` uses.
   */
  isjunk?: ((element: string) => boolean) | null;
  /**
   * Refuse (`SequenceTooLongError`) a sequence of more than this many code points. Not in
   * Python: the work grows with the product of the lengths (seconds at a few hundred thousand
   * characters), so a caller comparing untrusted text states the size it can afford. Results
   * under the bound are unchanged. Default: no bound.
   */
  maxLength?: number;
  /**
   * Refuse (`SequenceWorkLimitError`) a comparison that needs more than this many steps of
   * `find_longest_match` (one per element of `a` scanned, one per index of `b` visited), counted
   * per `getMatchingBlocks()`/`ratio()`. Not in Python: a length bound alone does not bound the
   * work (the matching recursion can go as deep as there are blocks: two 16,000-element
   * sequences can take 50 s), a step count does, deterministically. Results within the budget
   * are unchanged. Default: no bound.
   */
  maxWork?: number;
}

/** A sequence longer than the `maxLength` its caller allowed. */
export class SequenceTooLongError extends RangeError {
  constructor(
    readonly which: "a" | "b",
    readonly length: number,
    readonly maxLength: number,
  ) {
    super(`difflib: sequence ${which} has ${length} code points, more than the ${maxLength} allowed`);
    this.name = "SequenceTooLongError";
  }
}

/** A comparison that needed more steps than the `maxWork` its caller allowed. */
export class SequenceWorkLimitError extends RangeError {
  constructor(readonly maxWork: number) {
    super(`difflib: the comparison needs more than ${maxWork} steps (pathological input)`);
    this.name = "SequenceWorkLimitError";
  }
}

function checkLength(which: "a" | "b", seq: Int32Array, maxLength: number | undefined): void {
  if (maxLength !== undefined && seq.length > maxLength) throw new SequenceTooLongError(which, seq.length, maxLength);
}

/** The first `n` code points of `s` (the whole string when it has no more): what a cap keeps. */
export function codePointPrefix(s: string, n: number): string {
  if (s.length <= n) return s; // n UTF-16 units hold at most n code points
  let units = 0;
  for (let count = 0; count < n && units < s.length; count++) units += s.codePointAt(units)! > 0xffff ? 2 : 1;
  return s.slice(0, units);
}

const EMPTY = new Int32Array(0);

/**
 * Convert a string to its code points, exactly the elements Python sees in a `str`. Equivalent to
 * `Int32Array.from(Array.from(s), c => c.codePointAt(0))` without allocating one string per char.
 */
export function toCodePoints(s: string): Int32Array {
  const n = s.length;
  const out = new Int32Array(n);
  let len = 0;
  for (let i = 0; i < n; ) {
    const cp = s.codePointAt(i)!;
    out[len++] = cp;
    i += cp > 0xffff ? 2 : 1;
  }
  return len === n ? out : out.subarray(0, len);
}

/** Input accepted by `SequenceMatcher`: a string (compared by code point) or code points. */
export type SequenceInput = string | ArrayLike<number>;

function asCodePoints(x: SequenceInput): Int32Array {
  if (typeof x === "string") return toCodePoints(x);
  return x instanceof Int32Array ? x : Int32Array.from(x);
}

/**
 * `difflib.SequenceMatcher` restricted to what `ratio()` needs. Sequences are fixed at
 * construction (Python's `set_seqs`); `b2j` is built once, as Python's `__chain_b` does.
 */
export class SequenceMatcher {
  /** `a` as code points (replaced by `setSeq1`). */
  a: Int32Array;
  /** `b` as code points. */
  readonly b: Int32Array;
  /** For each element of `b` that is neither junk nor popular: its ascending indices in `b`. */
  readonly b2j: Map<number, Int32Array>;
  /** Elements of `b` for which `isjunk` returned true (Python's `bjunk`). */
  readonly bjunk: Set<number>;
  /** Elements removed by the autojunk rule (Python's `bpopular`). */
  readonly bpopular: Set<number>;

  private matchingBlocksCache: MatchTriple[] | null = null;
  /** `b2j.get(a[i]) ?? EMPTY` for each i, looked up once per `a` instead of once per scan. */
  private aIndices: Int32Array[] = [];
  private readonly maxLength: number | undefined;
  private readonly maxWork: number;
  /** Steps of `findLongestMatch` since the last `getMatchingBlocks()` started (see `maxWork`). */
  steps = 0;
  // Reusable j2len rows. Python's `j2len[j]` lives at index `j + 1`, so `j2len.get(j - 1, 0)` is
  // `prev[j]` with no bounds special case for j == 0. All entries are 0 between calls.
  private prev: Int32Array;
  private cur: Int32Array;
  private prevTouched: Int32Array;
  private curTouched: Int32Array;

  constructor(a: SequenceInput, b: SequenceInput, options: SequenceMatcherOptions = {}) {
    this.maxLength = options.maxLength;
    this.maxWork = options.maxWork ?? Infinity;
    this.a = asCodePoints(a);
    this.b = asCodePoints(b);
    checkLength("a", this.a, this.maxLength);
    checkLength("b", this.b, this.maxLength);
    const autojunk = options.autojunk ?? true;
    const isjunk = options.isjunk ?? null;

    // __chain_b: element -> list of indices where it occurs in b, ascending.
    const bArr = this.b;
    const n = bArr.length;
    const lists = new Map<number, number[]>();
    for (let i = 0; i < n; i++) {
      const elt = bArr[i]!;
      const idx = lists.get(elt);
      if (idx === undefined) lists.set(elt, [i]);
      else idx.push(i);
    }

    this.bjunk = new Set();
    if (isjunk) {
      for (const elt of lists.keys()) if (isjunk(String.fromCodePoint(elt))) this.bjunk.add(elt);
      for (const elt of this.bjunk) lists.delete(elt);
    }

    // The autojunk rule. Note `ntest` uses floor division and the test is strictly ">".
    this.bpopular = new Set();
    if (autojunk && n >= 200) {
      const ntest = Math.floor(n / 100) + 1;
      for (const [elt, idxs] of lists) if (idxs.length > ntest) this.bpopular.add(elt);
      for (const elt of this.bpopular) lists.delete(elt);
    }

    this.b2j = new Map();
    for (const [elt, idxs] of lists) this.b2j.set(elt, Int32Array.from(idxs));
    this.indexA();

    this.prev = new Int32Array(n + 1);
    this.cur = new Int32Array(n + 1);
    this.prevTouched = new Int32Array(n);
    this.curTouched = new Int32Array(n);
  }

  private indexA(): void {
    const a = this.a;
    const out: Int32Array[] = new Array(a.length);
    for (let i = 0; i < a.length; i++) out[i] = this.b2j.get(a[i]!) ?? EMPTY;
    this.aIndices = out;
  }

  /**
   * Python's `set_seq1(a)`: compare a new `a` with the same `b`, keeping `b`'s index (`b2j`), as
   * CPython recommends when one sequence is compared against many.
   */
  setSeq1(a: SequenceInput): void {
    const next = asCodePoints(a);
    checkLength("a", next, this.maxLength);
    this.a = next;
    this.matchingBlocksCache = null;
    this.indexA();
  }

  /**
   * Python's `find_longest_match(alo, ahi, blo, bhi)`: the longest block with `a[i:i+k] ==
   * b[j:j+k]` inside the given ranges; of those, the one starting earliest in `a`, then earliest
   * in `b`. Returns `[alo, blo, 0]` if nothing matches.
   */
  findLongestMatch(alo = 0, ahi: number = this.a.length, blo = 0, bhi: number = this.b.length): MatchTriple {
    const a = this.a;
    const b = this.b;
    const aIndices = this.aIndices;
    const bjunk = this.bjunk;
    let besti = alo;
    let bestj = blo;
    let bestsize = 0;

    let prev = this.prev;
    let cur = this.cur;
    let prevTouched = this.prevTouched;
    let curTouched = this.curTouched;
    let prevN = 0;

    const maxWork = this.maxWork;
    let steps = this.steps;
    for (let i = alo; i < ahi; i++) {
      // One step per element of a, one per index of b visited (the j loop below).
      if (steps > maxWork) throw new SequenceWorkLimitError(maxWork); // the buffers are dirty: the matcher is spent
      let curN = 0;
      const indices = aIndices[i]!;
      const len = indices.length;
      // Python skips `j < blo` one by one; indices are sorted, so binary search for the first
      // j >= blo (same set of j visited, in the same order).
      let lo = 0;
      if (blo > 0 && len > 0 && indices[0]! < blo) {
        let hi = len;
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if (indices[mid]! < blo) lo = mid + 1;
          else hi = mid;
        }
      }
      for (let t = lo; t < len; t++) {
        const j = indices[t]!;
        if (j >= bhi) break;
        // k = newj2len[j] = j2len.get(j - 1, 0) + 1
        const k = prev[j]! + 1;
        cur[j + 1] = k;
        curTouched[curN++] = j + 1;
        if (k > bestsize) {
          besti = i - k + 1;
          bestj = j - k + 1;
          bestsize = k;
        }
      }
      steps += 1 + curN;
      // j2len = newj2len: clear the old row and swap buffers.
      for (let t = 0; t < prevN; t++) prev[prevTouched[t]!] = 0;
      const tmp = prev;
      prev = cur;
      cur = tmp;
      const tmpT = prevTouched;
      prevTouched = curTouched;
      curTouched = tmpT;
      prevN = curN;
    }
    this.steps = steps;
    // Leave both rows all-zero for the next call.
    for (let t = 0; t < prevN; t++) prev[prevTouched[t]!] = 0;
    this.prev = prev;
    this.cur = cur;
    this.prevTouched = prevTouched;
    this.curTouched = curTouched;

    // Extend the best block with equal elements on both sides, non-junk first: this is where
    // popular elements (which never seed a match) get matched; it also runs when bestsize is 0,
    // growing a match forward from (alo, blo). Then with equal junk elements (no-ops when isjunk
    // is None, kept for fidelity): CPython's two pairs of loops, one with `junk` either way.
    const extend = (junk: boolean) => {
      while (besti > alo && bestj > blo && bjunk.has(b[bestj - 1]!) === junk && a[besti - 1] === b[bestj - 1]) {
        besti--;
        bestj--;
        bestsize++;
      }
      while (besti + bestsize < ahi && bestj + bestsize < bhi && bjunk.has(b[bestj + bestsize]!) === junk && a[besti + bestsize] === b[bestj + bestsize]) {
        bestsize++;
      }
    };
    extend(false);
    if (bjunk.size > 0) extend(true);
    return [besti, bestj, bestsize];
  }

  /**
   * Python's `get_matching_blocks()`: non-adjacent matching blocks, increasing in both `i` and `j`,
   * ending with the dummy `[len(a), len(b), 0]`. The returned array is cached; don't mutate it.
   */
  getMatchingBlocks(): MatchTriple[] {
    if (this.matchingBlocksCache) return this.matchingBlocksCache;
    this.steps = 0;
    const la = this.a.length;
    const lb = this.b.length;

    // Python uses a list as a stack (append/pop from the end); the order of exploration affects
    // nothing after the sort below, but we keep it identical anyway.
    const queue: [number, number, number, number][] = [[0, la, 0, lb]];
    const blocks: MatchTriple[] = [];
    while (queue.length > 0) {
      const [alo, ahi, blo, bhi] = queue.pop()!;
      const x = this.findLongestMatch(alo, ahi, blo, bhi);
      const [i, j, k] = x;
      if (k) {
        blocks.push(x);
        if (alo < i && blo < j) queue.push([alo, i, blo, j]);
        if (i + k < ahi && j + k < bhi) queue.push([i + k, ahi, j + k, bhi]);
      }
    }
    // Tuple sort, as Python's list.sort() on (i, j, k).
    blocks.sort((x, y) => x[0] - y[0] || x[1] - y[1] || x[2] - y[2]);

    // Merge adjacent blocks (a recursion split can cut one run of equal elements in two).
    let i1 = 0;
    let j1 = 0;
    let k1 = 0;
    const nonAdjacent: MatchTriple[] = [];
    for (const [i2, j2, k2] of blocks) {
      if (i1 + k1 === i2 && j1 + k1 === j2) {
        k1 += k2;
      } else {
        if (k1) nonAdjacent.push([i1, j1, k1]);
        i1 = i2;
        j1 = j2;
        k1 = k2;
      }
    }
    if (k1) nonAdjacent.push([i1, j1, k1]);
    nonAdjacent.push([la, lb, 0]);
    this.matchingBlocksCache = nonAdjacent;
    return nonAdjacent;
  }

  /** Python's `ratio()`: `2.0 * M / T` (M matched elements, T total elements), 1.0 if T is 0. */
  ratio(): number {
    let matches = 0;
    for (const block of this.getMatchingBlocks()) matches += block[2];
    return calculateRatio(matches, this.a.length + this.b.length);
  }
}

function calculateRatio(matches: number, length: number): number {
  // Same operation order as Python's `2.0 * matches / length`, so the double is identical.
  return length ? (2.0 * matches) / length : 1.0;
}

/**
 * `difflib.SequenceMatcher(None, a, b).ratio()`, bit for bit. Strings are compared by Unicode
 * code point, autojunk is on (Python's default). `maxLength`: see `SequenceMatcherOptions`.
 */
export function sequenceRatio(a: string, b: string, options: Pick<SequenceMatcherOptions, "maxLength" | "maxWork"> = {}): number {
  if (options.maxLength !== undefined) {
    // Checked before the fast path, so a too-long pair is refused whether or not it is equal.
    // A string of at most maxLength UTF-16 units has at most that many code points.
    if (a.length > options.maxLength) checkLength("a", toCodePoints(a), options.maxLength);
    if (b.length > options.maxLength) checkLength("b", toCodePoints(b), options.maxLength);
  }
  // Fast path: for a == b the first find_longest_match is the full diagonal block (the earliest
  // longest block in `a` is matched at the same index in `b`, and the extension loops absorb any
  // popular elements around it), so Python returns exactly 1.0. Covered by the vectors.
  if (a === b) return 1.0;
  return new SequenceMatcher(a, b, options).ratio();
}

/** `difflib.SequenceMatcher(None, a, b).get_matching_blocks()` as `[i, j, size]` triples. */
export function matchingBlocks(a: string, b: string): MatchTriple[] {
  return new SequenceMatcher(a, b).getMatchingBlocks();
}
