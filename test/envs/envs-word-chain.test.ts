import { describe, expect, it } from "vitest";
import wordChain, {
  createPrompt,
  DEFAULT_STARTING_WORDS,
  editDistance,
  isValidEnglishWord,
  isValidLink,
  longestValidChainFromStart,
  parseWordChain,
  startingWords,
  totalInvalidLinks,
  totalValidLinks,
} from "../../envs/word-chain/index.ts";
import { PY_WORD_CLASS, pyStrip } from "../../envs/shared/py.ts";
import { resetEpisode, stepEpisode } from "../../src/env/episode.ts";
import { PyRandom } from "../../src/pycompat/random.ts";
import { scoreItems } from "../../src/server/score.ts";

async function answer(text: string, index = 0, args: Record<string, unknown> = {}) {
  const { state } = resetEpisode(wordChain, "c", { seed: 1, index, args });
  return (await stepEpisode(wordChain, state, { content: text })).result;
}

function expectMetrics(actual: Record<string, number> | undefined, expected: Record<string, number>): void {
  expect(Object.keys(actual ?? {}).sort()).toEqual(Object.keys(expected).sort());
  for (const [k, v] of Object.entries(expected)) expect(actual![k], k).toBeCloseTo(v, 12);
}

/** The reference parser line by line (strip, drop "N.", "->" to a space, non-word to a space, words). */
function parseLineByLine(text: string): string[] {
  let response = text;
  if (response.includes("</think>")) response = pyStrip(response.split("</think>").pop()!);
  const words: string[] = [];
  for (const line of pyStrip(response).split("\n")) {
    let clean = pyStrip(line).replace(/^\p{Nd}+\.\s*/u, "");
    clean = clean.replace(/\s*->\s*/g, " ");
    clean = clean.replace(new RegExp(`[^${PY_WORD_CLASS}\\s]`, "gu"), " ");
    for (const m of clean.toLowerCase().matchAll(new RegExp(`(?<![${PY_WORD_CLASS}])[a-zA-Z]+(?![${PY_WORD_CLASS}])`, "gu"))) words.push(m[0]);
  }
  return words;
}

describe("word-chain parser and edit distance", () => {
  it("the one-pass parser takes the same words as the reference's line-by-line parse", () => {
    // Pieces that exercise every step: numbering, arrows, think tags, Unicode letters and digits,
    // Python-only whitespace, case changes that alter length (İ), final sigma, underscores.
    const pieces = ["hat", "Cat", "1.", "12. ", "٣.", "->", " -> ", "\n", " ", "\t", "\x1c", "\x85", "\u3000", ",", ".", "é", "İ", "ΣΑΣ", "_", "2", "x", "</think>", "<think>", "[", "]", "→", "😀", "a-b", "..."];
    const rng = new PyRandom(7);
    for (let n = 0; n < 3000; n++) {
      let text = "";
      const len = rng.randint(0, 12);
      for (let i = 0; i < len; i++) text += rng.choice(pieces);
      expect(parseWordChain(text), JSON.stringify(text)).toEqual(parseLineByLine(text));
    }
  });

  it("parses lists, numbered lines, arrows and think blocks like the reference", () => {
    expect(parseWordChain("hat, cat, cot")).toEqual(["hat", "cat", "cot"]);
    expect(parseWordChain("hat, [cat], [cot], ...")).toEqual(["hat", "cat", "cot"]);
    expect(parseWordChain("1. Hat\n2. CAT\n3. cot")).toEqual(["hat", "cat", "cot"]);
    expect(parseWordChain("hat -> cat->cot → dot")).toEqual(["hat", "cat", "cot", "dot"]);
    expect(parseWordChain("<think>dog, log</think>\nhat, hot")).toEqual(["hat", "hot"]);
    // Python's \b is Unicode-aware: "café" is one word, and not [a-zA-Z]+, so it yields nothing
    expect(parseWordChain("café, cat, naïve")).toEqual(["cat"]);
    // digits and underscores glue to letters (\w): no word is taken from them
    expect(parseWordChain("hat2, snake_case, cat")).toEqual(["cat"]);
    expect(parseWordChain([{ role: "assistant", content: "hat, hot" }])).toEqual(["hat", "hot"]);
    expect(parseWordChain([{ role: "assistant", content: null }])).toEqual([]);
  });

  it("edit distance: Hamming for equal lengths, Levenshtein otherwise", () => {
    expect(editDistance("cat", "bat")).toBe(1);
    expect(editDistance("cat", "cats")).toBe(1);
    expect(editDistance("cats", "cat")).toBe(1);
    expect(editDistance("spat", "pats")).toBe(4); // equal length: 4 positions differ
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("cat", "cat")).toBe(0);
    expect(editDistance("", "abc")).toBe(3);
  });

  it("isValidLink (linear) agrees with editDistance === 1 on every pair of short words", () => {
    // All words of length 0..4 over {a, b}, plus astral characters: every case of the rule.
    const words = [""];
    for (let len = 1; len <= 4; len++) for (const w of words.filter((x) => x.length === len - 1)) words.push(w + "a", w + "b");
    words.push("😀", "a😀", "😀a", "😀😀", "ab😀");
    let ones = 0;
    for (const x of words) {
      for (const y of words) {
        const expected = editDistance(x, y) === 1;
        if (expected) ones++;
        expect(isValidLink(x, y), `${x} → ${y}`).toBe(expected);
      }
    }
    expect(ones).toBeGreaterThan(50);
  });

  it("uses the SCOWL ≤ 50 dictionary", () => {
    for (const w of ["hat", "cat", "cot", "dot", "dog", "hot", "traveller", "traveler", "colour", "color"]) expect(isValidEnglishWord(w), w).toBe(true);
    for (const w of ["hax", "xqz", "qwertyuiop"]) expect(isValidEnglishWord(w), w).toBe(false);
  });
});

describe("word-chain rewards", () => {
  it("gold: a valid chain scores its length + 0.05 per link", async () => {
    const r = await answer("hat, cat, cot, dot, dog");
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 4, total_valid_links: 4, total_invalid_links: 0 });
    expect(r.reward).toBeCloseTo(4.2, 12);
    expect(r.done).toBe(true);
  });

  it("partial: the chain stops at the first bad link; later pairs still count (faithful only)", async () => {
    const r = await answer("hat, cat, cot, xqz, dog");
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 2, total_valid_links: 2, total_invalid_links: 2 });
    expect(r.reward).toBeCloseTo(2 + 0.1 - 0.01, 12);
    // A valid pair after the break: the reference counts it, the hardened default does not.
    const later = "hat, cat, xqz, dog, dot";
    expectMetrics((await answer(later, 0, { faithful: true })).observation.metrics, { longest_valid_chain_from_start: 1, total_valid_links: 2, total_invalid_links: 2 });
    expectMetrics((await answer(later)).observation.metrics, { longest_valid_chain_from_start: 1, total_valid_links: 1, total_invalid_links: 2 });
  });

  it("hardened: the chain starts at the task's word; a chain memorised from another word scores nothing", async () => {
    const memorised = "cat, cot, dot, dog, dig, big, bag";
    let r = await answer(memorised);
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 0, total_valid_links: 0, total_invalid_links: 0 });
    expect(r.reward).toBe(0);
    // faithful: true keeps the reference, which walks from the reply's first word.
    r = await answer(memorised, 0, { faithful: true });
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 6, total_valid_links: 6, total_invalid_links: 0 });
    // Words before the task's word are not part of the chain; the chain from it counts.
    r = await answer("Here is my chain: hat, cat, cot");
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 2, total_valid_links: 2, total_invalid_links: 0 });
    // The task's word in front of an unrelated memorised chain: the chain breaks at once, its later links pay nothing.
    r = await answer(`pattern, ${memorised}`, 4);
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 0, total_valid_links: 0, total_invalid_links: 1 });
    r = await answer(`pattern, ${memorised}`, 4, { faithful: true });
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 0, total_valid_links: 6, total_invalid_links: 1 });
  });

  it("hardened: a repeated word ends the chain before it (faithful: the link into it counts)", async () => {
    const r = await answer("hat, hot, hat, hot");
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 1, total_valid_links: 1, total_invalid_links: 0 });
    expect(r.reward).toBeCloseTo(1.05, 12);
  });

  it("quirk (faithful: true): the link INTO the first repeated word counts for the chain", async () => {
    const r = await answer("hat, hot, hat, hot", 0, { faithful: true });
    // chain: hat→hot→hat (2, the repeat is detected one step later); valid links: only (hat, hot) —
    // the other pairs touch "hat", already a left word; invalid: none (valid pairs are skipped)
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 2, total_valid_links: 1, total_invalid_links: 0 });
    expect(r.reward).toBeCloseTo(2.05, 12);
  });

  it("wrong: unrelated words and unknown words", async () => {
    let r = await answer("dog, cat", 0, { faithful: true });
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 0, total_valid_links: 0, total_invalid_links: 1 });
    expect(r.reward).toBeCloseTo(-0.005, 12);
    r = await answer("dog, cat"); // hardened: no chain from "hat" at all
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 0, total_valid_links: 0, total_invalid_links: 0 });
    r = await answer("hat, hax, has");
    // hat→hax is one edit but "hax" is not a word: nothing counts; 2 invalid pairs
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 0, total_valid_links: 0, total_invalid_links: 2 });
  });

  it("malformed: empty or one-word answers score 0", async () => {
    for (const text of ["", "hat", "!!!", "<think>hat, hot, dot</think>"]) {
      const r = await answer(text);
      expect(r.reward, text).toBe(0);
    }
  });

  it("the invalid-link count has its own `seen` set (not the complement of the valid count)", () => {
    const chain = ["cat", "dog", "cat", "cot"];
    // invalid: (cat,dog) +1 seen{cat}; (dog,cat) cat seen +1; (cat,cot) cat seen +1 → 3
    expect(totalInvalidLinks(chain)).toBe(3);
    // valid: (cat,dog) no; (dog,cat) no; (cat,cot) yes → 1
    expect(totalValidLinks(chain)).toBe(1);
    expect(longestValidChainFromStart(chain)).toBe(0);
    expect(longestValidChainFromStart(["hat"])).toBe(0);
    expect(longestValidChainFromStart(["hat", "hot"])).toBe(1);
  });

  it("hostile: two 30,000-letter words (one letter apart) are not dictionary words: every link is invalid", async () => {
    const long = "a".repeat(30_000);
    const r = await answer(`${long}, ${long}b, hat, hot`, 0, { faithful: true });
    expectMetrics(r.observation.metrics, { longest_valid_chain_from_start: 0, total_valid_links: 1, total_invalid_links: 2 });
    // Hardened: the chain starts at "hat", after the two non-words.
    expectMetrics((await answer(`${long}, ${long}b, hat, hot`)).observation.metrics, { longest_valid_chain_from_start: 1, total_valid_links: 1, total_invalid_links: 0 });
  });

  it("scores statelessly from the completion and the episode's info (faithful: true, from the completion alone)", async () => {
    const [s, alone, faithful] = await scoreItems(wordChain, [
      { completion: "1. hat\n2. hot\n3. dot", answer: "N/A", info: { starting_word: "hat" } },
      { completion: "1. hat\n2. hot\n3. dot", answer: "N/A" },
      { completion: "1. hat\n2. hot\n3. dot", answer: "N/A", args: { faithful: true } },
    ]);
    expect(s!.metrics).toEqual({ longest_valid_chain_from_start: 2, total_valid_links: 2, total_invalid_links: 0 });
    expect(s!.reward).toBeCloseTo(2.1, 12);
    // Without the task's word there is no chain to find: an error that says so, not a silent 0.
    expect(alone!.errors?.longest_valid_chain_from_start).toMatch(/info\.starting_word is needed/);
    expect(faithful!.metrics).toEqual({ longest_valid_chain_from_start: 2, total_valid_links: 2, total_invalid_links: 0 });
    expect(faithful!.errors).toBeUndefined();
  });
});

describe("word-chain dataset and prompt", () => {
  it("serves the reference prompt byte for byte, with no system prompt", () => {
    const { state } = resetEpisode(wordChain, "p", { seed: 0, index: 0 });
    expect(state.messages).toHaveLength(1);
    const p = state.messages[0]!.content ?? "";
    expect(p).toBe(createPrompt("hat"));
    expect(p.startsWith("Your goal is to create the LONGEST possible chain of words where each consecutive word differs by exactly ONE letter (edit distance = 1).\n\n    CRITICAL RULES:\n    - Start with the word: \"hat\"\n")).toBe(true);
    expect(p).toContain("\n    - cat → cats (add 's')  \n    - cats → cat (remove 's')\n");
    expect(p).toContain("\n    hat, [next_word1], [next_word2], [next_word3], ...\n");
    expect(p.endsWith("Remember: NO DUPLICATES AND FOLLOW THE RULES! Continue until you cannot find any more valid words to append!")).toBe(true);
    expect(state.info).toEqual({ starting_word: "hat" });
  });

  it("has the 10 default starting words; the seed picks one (or `index`)", () => {
    expect(startingWords(wordChain.parseArgs({}) as never)).toEqual([...DEFAULT_STARTING_WORDS]);
    expect(DEFAULT_STARTING_WORDS).toEqual(["hat", "mine", "lung", "layer", "pattern", "camping", "avoid", "traveller", "origin", "abysmal"]);
    const pick = (seed: number) => resetEpisode(wordChain, "s", { seed }).state.info.starting_word;
    expect(pick(7)).toBe(pick(7));
    expect(new Set(Array.from({ length: 30 }, (_, i) => pick(i))).size).toBeGreaterThan(5);
    expect(resetEpisode(wordChain, "s", { index: 9 }).state.info.starting_word).toBe("abysmal");
    expect(resetEpisode(wordChain, "s", { seed: 1, args: { n_starting_words: 3 } }).state.info.starting_word).toMatch(/^(hat|mine|lung)$/);
  });

  it("choose_random: Python random.seed(42); random.sample(sorted(words), n)", () => {
    // Expected values computed with CPython 3 on the same sorted word list.
    expect(startingWords({ n_starting_words: 10, choose_random: true, random_seed: 42 })).toEqual([
      "postmodern",
      "cajole",
      "amends",
      "scares",
      "embarrassing",
      "disparaging",
      "deposition",
      "chores",
      "sang",
      "budgerigars",
    ]);
    expect(startingWords({ n_starting_words: 3, choose_random: true, random_seed: 7 })).toEqual(["flashier", "whens", "coarse"]);
  });
});
