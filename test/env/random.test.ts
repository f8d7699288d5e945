/**
 * Checks src/pycompat/random.ts (PyRandom) against CPython's random.Random(seed). The vectors in
 * test/fixtures/pyrandom-vectors.json come from scripts/gen_vectors.py; every value must be equal
 * (floats exactly).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { PyRandom } from "../../src/pycompat/random.ts";

interface SeedVectors {
  seed: number;
  random: number[];
  getrandbits32: number[];
  getrandbits_small: [number, number][];
  getrandbits_big: [number, string][];
  randint_1_5: number[];
  randint_0_1e6: number[];
  randint_big: number[];
  randrange: number[];
  choice: string[];
  shuffle20: number[][];
  shuffle1000_head: number[];
  sample100_10: number[][];
  sample10_10: number[][];
  sample_misc: [number, number, number[]][];
  sample_counts: string[];
  uniform: number[];
  choices: string[];
  choices_weighted: string[];
  choices_cum: string[];
  interleaved: (number | string)[];
  state_after_interleaved: number[];
  after_state: number[];
}

const fixture = JSON.parse(
  readFileSync(new URL("../fixtures/pyrandom-vectors.json", import.meta.url), "utf8"),
) as { meta: { python: string }; seeds: SeedVectors[] };

const COLORS = ["red", "green", "blue", "cyan", "magenta", "yellow", "black"];
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const times = <T>(n: number, f: () => T): T[] => Array.from({ length: n }, f);

describe("PyRandom vectors from CPython", () => {
  it("covers the required seeds", () => {
    const seeds = fixture.seeds.map((v) => v.seed);
    for (const s of [0, 1, 42, 1337420, 2 ** 32 + 5, 2 ** 40]) expect(seeds).toContain(s);
  });

  describe.each(fixture.seeds.map((v) => [v.seed, v] as const))("seed %s", (seed, v) => {
    it("random()", () => {
      const r = new PyRandom(seed);
      expect(times(20, () => r.random())).toEqual(v.random);
      // toEqual on numbers is Object.is-based; be explicit anyway.
      const r2 = new PyRandom(seed);
      for (const x of v.random) expect(r2.random()).toBe(x);
    });

    it("getrandbits", () => {
      let r = new PyRandom(seed);
      expect(times(20, () => r.getrandbits(32))).toEqual(v.getrandbits32);
      r = new PyRandom(seed);
      for (const [k, x] of v.getrandbits_small) expect([k, r.getrandbits(k)]).toEqual([k, x]);
      for (const [k, x] of v.getrandbits_big) expect([k, r.getrandbitsBigInt(k).toString()]).toEqual([k, x]);
      // The bigint variant draws exactly like the number one.
      r = new PyRandom(seed);
      for (const [k, x] of v.getrandbits_small) expect(r.getrandbitsBigInt(k)).toBe(BigInt(x));
    });

    it("randint / randrange", () => {
      let r = new PyRandom(seed);
      expect(times(30, () => r.randint(1, 5))).toEqual(v.randint_1_5);
      r = new PyRandom(seed);
      expect(times(20, () => r.randint(0, 10 ** 6))).toEqual(v.randint_0_1e6);
      r = new PyRandom(seed);
      const big = [
        ...times(5, () => r.randint(0, 2 ** 40)),
        ...times(5, () => r.randint(-(2 ** 52), 2 ** 52)),
        ...times(5, () => r.randrange(2 ** 53)),
        // Wider than 2**53 values: drawn with bigints, results still exact numbers.
        ...times(3, () => r.randint(-(2 ** 53), 2 ** 53)),
        ...times(3, () => r.randrange(-(2 ** 53), 2 ** 53, 3)),
        ...times(2, () => r.randrange(2 ** 53, -(2 ** 53), -7)),
        ...times(2, () => r.randrange(-(2 ** 52), 2 ** 52 - 5, 9)),
      ];
      expect(big).toEqual(v.randint_big);
      r = new PyRandom(seed);
      expect([
        r.randrange(10),
        r.randrange(3, 17),
        r.randrange(0, 100, 7),
        r.randrange(100, 0, -3),
        r.randrange(-50, 50, 2),
        r.randrange(1),
        r.randrange(5, 6),
        r.randrange(2 ** 32 + 1),
      ]).toEqual(v.randrange);
    });

    it("choice / choices", () => {
      let r = new PyRandom(seed);
      expect(times(20, () => r.choice(COLORS))).toEqual(v.choice);
      r = new PyRandom(seed);
      expect(r.choices(COLORS, { k: 10 })).toEqual(v.choices);
      expect(r.choices(COLORS, { weights: [1, 2, 3, 0, 5, 0.5, 1], k: 10 })).toEqual(v.choices_weighted);
      expect(r.choices(COLORS, { cumWeights: [1, 3, 6, 6, 11, 11.5, 12.5], k: 10 })).toEqual(v.choices_cum);
    });

    it("shuffle", () => {
      let r = new PyRandom(seed);
      expect(times(3, () => r.shuffle(range(20)))).toEqual(v.shuffle20);
      r = new PyRandom(seed);
      const x = range(1000);
      const ret = r.shuffle(x);
      expect(ret).toBe(x); // in place
      expect(x.slice(0, 50)).toEqual(v.shuffle1000_head);
    });

    it("sample (both the pool and the selected-set branch)", () => {
      let r = new PyRandom(seed);
      expect(times(3, () => r.sample(range(100), 10))).toEqual(v.sample100_10);
      r = new PyRandom(seed);
      expect(times(3, () => r.sample(range(10), 10))).toEqual(v.sample10_10);
      r = new PyRandom(seed);
      for (const [n, k, expected] of v.sample_misc) {
        // A lazy range-like population for the big one, as Python's range().
        const got = n > 10_000 ? r.sample(rangeLike(n), k) : r.sample(range(n), k);
        expect([n, k, got]).toEqual([n, k, expected]);
      }
      r = new PyRandom(seed);
      expect(r.sample(["a", "b", "c"], 6, [3, 0, 5])).toEqual(v.sample_counts);
    });

    it("uniform", () => {
      const r = new PyRandom(seed);
      for (const x of v.uniform) expect(r.uniform(-3.5, 10.25)).toBe(x);
    });

    it("interleaved draws, getState matching Python's getstate()[1], JSON round trip", () => {
      const r = new PyRandom(seed);
      const seq: (number | string)[] = [];
      for (let i = 0; i < 30; i++) {
        const m = i % 5;
        if (m === 0) seq.push(r.random());
        else if (m === 1) seq.push(r.randint(1, 6));
        else if (m === 2) seq.push(r.getrandbits(7));
        else if (m === 3) seq.push(r.choice(COLORS));
        else seq.push(r.uniform(0, 100));
      }
      expect(seq).toEqual(v.interleaved);
      const state = r.getState();
      expect(state).toEqual(v.state_after_interleaved);
      // Stored as JSON and resumed, or taken straight from Python's getstate()[1].
      const resumed = PyRandom.fromState(JSON.parse(JSON.stringify(state)) as number[]);
      const fromPython = PyRandom.fromState(v.state_after_interleaved);
      expect(times(5, () => r.random())).toEqual(v.after_state);
      expect(times(5, () => resumed.random())).toEqual(v.after_state);
      expect(times(5, () => fromPython.random())).toEqual(v.after_state);
    });
  });
});

function rangeLike(n: number): ArrayLike<number> {
  return new Proxy({ length: n } as ArrayLike<number>, {
    get: (t, p) => (typeof p === "string" && /^\d+$/.test(p) ? Number(p) : Reflect.get(t, p)),
  });
}

describe("PyRandom hand-written cases", () => {
  it("matches well-known CPython outputs", () => {
    // python3 -c "import random; r = random.Random(42); print(r.random(), r.randint(1, 10))"
    const r = new PyRandom(42);
    expect(r.random()).toBe(0.6394267984578837);
    expect(r.randint(1, 10)).toBe(1);
    expect(r.getState()[624]).toBe(3);
  });

  it("seeds like CPython: abs() of the seed, bigint seeds, default seed 0", () => {
    expect(new PyRandom(-42).random()).toBe(new PyRandom(42).random());
    expect(new PyRandom(2n ** 40n).random()).toBe(new PyRandom(2 ** 40).random());
    expect(new PyRandom().random()).toBe(new PyRandom(0).random());
    const r = new PyRandom(5);
    r.random();
    r.seed(7);
    expect(r.random()).toBe(new PyRandom(7).random());
    expect(() => new PyRandom(1.5)).toThrow(TypeError);
  });

  it("rejects what Python rejects", () => {
    const r = new PyRandom(1);
    expect(() => r.choice([])).toThrow();
    expect(() => r.randrange(0)).toThrow();
    expect(() => r.randrange(5, 5)).toThrow();
    expect(() => r.randrange(0, 10, 0)).toThrow();
    expect(() => r.randint(3, 2)).toThrow();
    expect(() => r.sample([1, 2, 3], 4)).toThrow();
    expect(() => r.sample([1, 2, 3], -1)).toThrow();
    expect(() => PyRandom.fromState([1, 2, 3])).toThrow();
  });

  it("keeps its state as plain JSON-able numbers", () => {
    const r = new PyRandom(1337420);
    r.shuffle(range(50));
    const state = r.getState();
    expect(state).toHaveLength(625);
    expect(state.every((x) => Number.isInteger(x) && x >= 0 && x < 2 ** 32)).toBe(true);
    const copy = PyRandom.fromState(JSON.parse(JSON.stringify(state)) as number[]);
    expect(times(10, () => copy.randint(0, 99))).toEqual(times(10, () => r.randint(0, 99)));
  });
});
