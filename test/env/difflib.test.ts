/**
 * Checks src/pycompat/difflib.ts against CPython. The vectors in test/fixtures/difflib-vectors.json
 * were computed by `difflib.SequenceMatcher(None, a, b)` (see scripts/gen_vectors.py); ratios are
 * compared with exact float equality, matching blocks element for element.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cpuSlowdown } from "../helpers/slowdown.ts";
import {
  codePointPrefix,
  SequenceMatcher,
  SequenceTooLongError,
  SequenceWorkLimitError,
  matchingBlocks,
  sequenceRatio,
  toCodePoints,
} from "../../src/pycompat/difflib.ts";

interface DifflibCase {
  name: string;
  a: string;
  b: string;
  la: number;
  lb: number;
  ratio: number;
  blocks: [number, number, number][];
  npopular: number;
}

const fixture = JSON.parse(
  readFileSync(new URL("../fixtures/difflib-vectors.json", import.meta.url), "utf8"),
) as { meta: { python: string }; cases: DifflibCase[] };
const cases = fixture.cases;

describe("difflib vectors from CPython", () => {
  it("has a meaningful number of vectors, with and without autojunk", () => {
    expect(cases.length).toBeGreaterThanOrEqual(300);
    expect(cases.some((c) => c.npopular > 0)).toBe(true);
    expect(cases.some((c) => c.lb >= 200 && c.npopular === 0)).toBe(true);
  });

  it.each(cases.map((c, i) => [`${i}: ${c.name}`, c] as const))("%s", (_label, c) => {
    const sm = new SequenceMatcher(c.a, c.b);
    // Lengths in code points, as Python's len(str).
    expect(sm.a.length).toBe(c.la);
    expect(sm.b.length).toBe(c.lb);
    expect(sm.bpopular.size).toBe(c.npopular);
    expect(sm.getMatchingBlocks()).toEqual(c.blocks);
    expect(sm.ratio()).toBe(c.ratio);
    expect(sequenceRatio(c.a, c.b)).toBe(c.ratio);
    expect(matchingBlocks(c.a, c.b)).toEqual(c.blocks);
  });
});

describe("difflib hand-written cases", () => {
  it("reproduces the docstring examples", () => {
    expect(sequenceRatio("abcd", "bcde")).toBe(0.75);
    expect(matchingBlocks("abxcd", "abcd")).toEqual([
      [0, 0, 2],
      [3, 2, 2],
      [5, 4, 0],
    ]);
    expect(new SequenceMatcher(" abcd", "abcd abcd").findLongestMatch(0, 5, 0, 9)).toEqual([0, 4, 5]);
    expect(new SequenceMatcher("ab", "c").findLongestMatch(0, 2, 0, 1)).toEqual([0, 0, 0]);
  });

  it("supports isjunk like Python (junk cannot seed a match, only extend one)", () => {
    const isjunk = (x: string) => x === " ";
    expect(new SequenceMatcher(" abcd", "abcd abcd", { isjunk }).findLongestMatch(0, 5, 0, 9)).toEqual([1, 0, 4]);
    const sm = new SequenceMatcher("private Thread currentThread;", "private volatile Thread currentThread;", { isjunk });
    expect(sm.ratio()).toBe(0.8656716417910447);
    expect(sm.getMatchingBlocks()).toEqual([
      [0, 0, 8],
      [8, 17, 21],
      [29, 38, 0],
    ]);
  });

  it("is 1.0 for two empty strings and 0.0 against an empty string", () => {
    expect(sequenceRatio("", "")).toBe(1);
    expect(sequenceRatio("abc", "")).toBe(0);
    expect(sequenceRatio("", "abc")).toBe(0);
  });

  it("compares code points, not UTF-16 units", () => {
    // "😀" and "😃" share their high surrogate: a UTF-16 comparison would report 0.5.
    expect(sequenceRatio("😀", "😃")).toBe(0);
    expect(sequenceRatio("a😀", "a😀")).toBe(1);
    expect(sequenceRatio("a😀", "a😃")).toBe(0.5);
    expect(toCodePoints("a😀e\u0301").length).toBe(4);
    // Combining sequences are not normalised, as in Python: "é" (1 cp) vs "e\u0301" (2 cp).
    expect(sequenceRatio("caf\u00e9", "cafe\u0301")).toBe((2 * 3) / 9);
    // A lone surrogate is one element, like Array.from and like Python.
    expect(Array.from(toCodePoints("x\ud800y"))).toEqual([0x78, 0xd800, 0x79]);
  });

  it("applies autojunk only from len(b) >= 200", () => {
    // b has 200 elements, "a" 199 times > 1 + 200//100: popular, so it cannot seed a match, and
    // nothing else matches: Python reports 0.0 even though a is a long run of "a".
    expect(sequenceRatio("a".repeat(300), "b" + "a".repeat(199))).toBe(0);
    expect(new SequenceMatcher("x", "b" + "a".repeat(199)).bpopular.has(0x61)).toBe(true);
    // With len(b) == 199 there is no autojunk and the run matches.
    expect(sequenceRatio("a".repeat(300), "b" + "a".repeat(198))).toBe((2 * 198) / 499);
    // Turning autojunk off, as Python's autojunk=False.
    const sm = new SequenceMatcher("a".repeat(300), "b" + "a".repeat(199), { autojunk: false });
    expect(sm.ratio()).toBe((2 * 199) / 500);
    // Popular elements still match by extension from a seeded block (or from (alo, blo)).
    expect(sequenceRatio("a".repeat(250), "a".repeat(250))).toBe(1);
    expect(new SequenceMatcher("a".repeat(250), "a".repeat(300)).ratio()).toBe((2 * 250) / 550);
  });

  it("accepts code point arrays and reuses its buffers across calls", () => {
    const sm = new SequenceMatcher([1, 2, 3, 4, 5], [0, 1, 2, 9, 4, 5]);
    expect(sm.findLongestMatch()).toEqual([0, 1, 2]);
    expect(sm.findLongestMatch(2, 5, 3, 6)).toEqual([3, 4, 2]);
    expect(sm.findLongestMatch()).toEqual([0, 1, 2]);
    expect(sm.ratio()).toBe((2 * 4) / 11);
  });

  it("is fast enough for paragraph-sized inputs", () => {
    const long = cases.filter((c) => c.la + c.lb > 800);
    expect(long.length).toBeGreaterThan(10);
    // 200 ms of an idle machine: scaled by the load measured now.
    const budgetMs = 200 * cpuSlowdown();
    const start = performance.now();
    let n = 0;
    while (performance.now() - start < budgetMs) {
      for (const c of long) sequenceRatio(c.a, c.b + "!");
      n += long.length;
    }
    // Loose bound: catches accidental quadratic-allocation regressions, not a benchmark.
    expect(n).toBeGreaterThan(long.length);
  });
});

describe("bounds for untrusted input (not in Python)", () => {
  it("maxLength: every CPython vector within the bound gives the same ratio; longer sequences are refused", () => {
    let refused = 0;
    for (const c of cases) {
      const max = 150;
      if (c.la <= max && c.lb <= max) {
        expect(sequenceRatio(c.a, c.b, { maxLength: max })).toBe(c.ratio);
        expect(new SequenceMatcher(c.a, c.b, { maxLength: max }).ratio()).toBe(c.ratio);
      } else {
        expect(() => sequenceRatio(c.a, c.b, { maxLength: max })).toThrow(SequenceTooLongError);
        expect(() => new SequenceMatcher(c.a, c.b, { maxLength: max })).toThrow(SequenceTooLongError);
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(10);
    // Counted in code points, not UTF-16 units; an equal pair is refused too.
    expect(sequenceRatio("😀😀", "😀", { maxLength: 2 })).toBe(2 / 3);
    expect(() => sequenceRatio("abc", "abc", { maxLength: 2 })).toThrow(/sequence a has 3 code points/);
  });

  it("maxWork: every CPython vector gives the same result within its step count; a pathological pair is cut", () => {
    for (const c of cases) {
      const counted = new SequenceMatcher(c.a, c.b);
      counted.ratio();
      expect(counted.steps).toBeGreaterThanOrEqual(Math.min(c.la, 1));
      const bounded = new SequenceMatcher(c.a, c.b, { maxWork: counted.steps });
      expect(bounded.getMatchingBlocks()).toEqual(c.blocks);
      expect(bounded.ratio()).toBe(c.ratio);
    }
    // Every other element changed in a periodic text: one block per matching element, each
    // found by a scan of the rest of a; quadratic steps for 4,000 elements of 120 symbols.
    const sym = (i: number) => String.fromCodePoint(0x4e00 + i);
    const a = Array.from({ length: 4000 }, (_, i) => sym(i % 120)).join("");
    const b = Array.from(a, (ch, i) => (i % 2 ? sym(500) : ch)).join("");
    expect(() => sequenceRatio(a, b, { maxWork: 1_000_000 })).toThrow(SequenceWorkLimitError);
    expect(() => sequenceRatio(a, b, { maxWork: 1_000_000 })).toThrow(/more than 1000000 steps/);
    // The step count is per comparison: set_seq1 starts a new count.
    const sm = new SequenceMatcher("abc", "abd", { maxWork: 10 });
    for (let k = 0; k < 5; k++) {
      sm.setSeq1("abc");
      expect(sm.ratio()).toBe(2 / 3);
    }
  });

  it("setSeq1 compares new sequences against the same b, as CPython's set_seq1", () => {
    const byB = new Map<string, DifflibCase[]>();
    for (const c of cases) byB.set(c.b, [...(byB.get(c.b) ?? []), c]);
    const shared = [...byB.values()].find((group) => group.length >= 2);
    const b = shared?.[0]!.b ?? cases[0]!.b;
    const sm = new SequenceMatcher("", b);
    for (const c of cases.filter((x) => x.b === b)) {
      sm.setSeq1(c.a);
      expect(sm.ratio()).toBe(c.ratio);
    }
    for (const c of cases.slice(0, 40)) {
      sm.setSeq1(c.a);
      expect(sm.ratio()).toBe(sequenceRatio(c.a, b));
    }
  });

  it("codePointPrefix keeps whole code points", () => {
    expect(codePointPrefix("héllo", 2)).toBe("hé");
    expect(codePointPrefix("😀a😀b", 3)).toBe("😀a😀");
    expect(codePointPrefix("ab", 5)).toBe("ab");
    expect(codePointPrefix("abc", 0)).toBe("");
  });
});
