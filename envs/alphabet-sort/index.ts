/**
 * alphabet-sort: keep a list of names sorted alphabetically across 1–3 turns (a port of
 * verifiers' `alphabet_sort`, legacy `alphabet_sort.py` and v1 `taskset.py`).
 *
 * Turn 0: sort some names by FIRST or LAST name into `<alphabetical_sorted>`. Each follow-up adds
 * names; the model re-sorts the whole list into `<combined_alphabetical_sorted>`, marking the
 * names new in that turn with `// new name!`. The environment never comments on answers: it
 * replays the scripted follow-ups, then ends after the model's `num_turns`-th answer. Reward =
 * mean over turns of difflib similarity to the ground truth, raised to `similarity_power`.
 *
 * The original draws author lists from HF `kalomaze/alphabetic-arxiv-authors-it1`; here each
 * episode's author list comes from a seeded faker (the seed is the episode rng's first draw),
 * then every other draw happens in the original's order (see `buildEpisode`).
 */
// The English faker alone (\`new Faker({ locale: [en, base] })\`, made by its module): the package's
// root imports every locale, ~150 ms more for each process and environment thread that loads this.
import { faker as englishFaker } from "@faker-js/faker/locale/en";
import { codePointPrefix, defineEnvironment, type Example, extractAllTags, type Message, type PyRandom, SequenceMatcher, z } from "envworker";
import { pyIsUpper, pyJsonDumps, pyLower, pyPowInt, pySorted, pyStrip } from "../shared/py.ts";

/** Upper bound of `max_turns` (the engine's `maxTurns` is the episode's `max_turns`). */
export const MAX_TURNS_BOUND = 10;
/** Upper bound of `max_names_per_turn`. */
export const MAX_NAMES_BOUND = 50;

export const NEW_NAME_SUFFIX = " // new name!";

const args = z
  .object({
    min_turns: z.number().int().min(1).max(MAX_TURNS_BOUND).default(1).describe("Fewest model turns per episode."),
    max_turns: z
      .number()
      .int()
      .min(1)
      .max(MAX_TURNS_BOUND)
      .default(3)
      .describe(`Most model turns per episode (at most ${MAX_TURNS_BOUND}).`),
    min_names_per_turn: z
      .number()
      .int()
      .min(1)
      .max(MAX_NAMES_BOUND)
      .default(1)
      .describe("Fewest names added per turn (also the lower bound of the template line counts)."),
    max_names_per_turn: z
      .number()
      .int()
      .min(1)
      .max(MAX_NAMES_BOUND)
      .default(5)
      .describe(`Most names added per turn (at most ${MAX_NAMES_BOUND}).`),
    similarity_power: z
      .number()
      .int()
      .min(0)
      .max(100)
      .default(4)
      .describe("Exponent applied to the similarity (per turn, or to the mean: see power_per_turn)."),
    power_per_turn: z
      .boolean()
      .default(true)
      .describe("true: mean over turns of similarity**power; false: (mean similarity)**power."),
  })
  .strict()
  .refine((a) => a.min_turns <= a.max_turns, {
    message: "min_turns must be less than or equal to max_turns",
    path: ["min_turns"],
  })
  .refine((a) => a.min_names_per_turn <= a.max_names_per_turn, {
    message: "min_names_per_turn must be less than or equal to max_names_per_turn",
    path: ["min_names_per_turn"],
  });

export type AlphabetSortArgs = z.output<typeof args>;

/** What an episode carries (plain JSON): enough to replay the turns and score statelessly. */
export type AlphabetSortInfo = {
  /** The user messages after the first prompt, one per turn t >= 1. */
  follow_ups: string[];
  /** The names introduced in each turn, in order of introduction. */
  turn_names: string[][];
  /** Per turn: the expected lines (cumulative sorted names, new ones suffixed for t >= 1). */
  ground_truths: string[][];
  num_turns: number;
  sort_by_first: boolean;
  /** The faker seed the author list was generated with (drawn from the episode rng). */
  names_seed: number;
};

// ---------------------------------------------------------------------------------------------
// Names and sorting

/** Index (in code points) of the first uppercase letter after index 0, or -1. */
function splitIndex(chars: readonly string[]): number {
  for (let i = 1; i < chars.length; i++) if (pyIsUpper(chars[i]!)) return i;
  return -1;
}

/** `extract_first_name`: "VladimirDrinfeld" → "Vladimir"; the whole name if there is no split. */
export function extractFirstName(combined: string): string {
  const chars = Array.from(combined);
  const i = splitIndex(chars);
  return i === -1 ? combined : chars.slice(0, i).join("");
}

/** `extract_last_name`: "VladimirDrinfeld" → "Drinfeld"; "" if there is no split. */
export function extractLastName(combined: string): string {
  const chars = Array.from(combined);
  const i = splitIndex(chars);
  return i === -1 ? "" : chars.slice(i).join("");
}

/** Python's `sorted(names, key=extract_first_name | extract_last_name)`: stable, by code point. */
export function sortNames(names: readonly string[], byFirst: boolean): string[] {
  return pySorted(names, byFirst ? extractFirstName : extractLastName);
}

/**
 * An "author list" of `count` distinct combined names ("Vladimir Drinfeld" → "VladimirDrinfeld",
 * spaces removed as `name.replace(" ", "")`), de-duplicated in order. Deterministic for a seed
 * (and a faker version); the first k names do not depend on `count`. Only names whose capital
 * split falls exactly between first and last name are kept, so FIRST/LAST sorting means what it
 * says ("JohnVanDyke" → "John" + "VanDyke", "AnnaO'Keefe" → "Anna" + "O'Keefe").
 */
export function authorNames(seed: number, count: number): string[] {
  const faker = englishFaker;
  faker.seed(seed); // synchronous from here to the return: no other episode can interleave
  const names: string[] = [];
  const seen = new Set<string>();
  for (let attempts = 0; names.length < count; attempts++) {
    if (attempts > 1000 + 100 * count) throw new Error(`could not generate ${count} distinct names`);
    const first = faker.person.firstName().replaceAll(" ", "");
    const last = faker.person.lastName().replaceAll(" ", "");
    const combined = first + last;
    const firstChars = Array.from(first);
    if (firstChars.length === 0 || last.length === 0 || !pyIsUpper(firstChars[0]!)) continue;
    if (splitIndex(Array.from(combined)) !== firstChars.length) continue;
    if (seen.has(combined)) continue;
    seen.add(combined);
    names.push(combined);
  }
  return names;
}

// ---------------------------------------------------------------------------------------------
// Episode generation

function formatLines(count: number, suffix: (j: number) => string): string {
  const lines: string[] = [];
  for (let j = 1; j <= count; j++) lines.push(`Name${j}${suffix(j)}`);
  return lines.join("\n");
}

/**
 * One episode, drawing from `rng` in the original's order: the faker seed (ours: it replaces
 * the dataset row), `num_turns`, the per-turn counts, `by_first`, the shuffle of turn 0 and its
 * template count K, then per follow-up t: the shuffle of turn t, K and the `// new name!`
 * threshold. (The original skips rows with fewer names than needed, after drawing the counts;
 * ours always has enough, so nothing is skipped.)
 */
export function buildEpisode(rng: PyRandom, a: AlphabetSortArgs): Example<AlphabetSortInfo> & { prompt: string } {
  const namesSeed = rng.getrandbits(32);
  const numTurns = rng.randint(a.min_turns, a.max_turns);
  const counts: number[] = [];
  for (let t = 0; t < numTurns; t++) counts.push(rng.randint(a.min_names_per_turn, a.max_names_per_turn));
  const needed = counts.reduce((s, c) => s + c, 0);
  const names = authorNames(namesSeed, needed);

  const byFirst = rng.choice([true, false]);
  const label = byFirst ? "FIRST" : "LAST";

  const turnNames: string[][] = [];
  let idx = 0;
  for (const c of counts) {
    turnNames.push(names.slice(idx, idx + c));
    idx += c;
  }

  const cumulative: string[] = [];
  const groundTruths: string[][] = [];
  turnNames.forEach((turn, t) => {
    cumulative.push(...turn);
    const ranked = sortNames(cumulative, byFirst);
    groundTruths.push(t === 0 ? ranked : ranked.map((n) => (turn.includes(n) ? n + NEW_NAME_SUFFIX : n)));
  });

  const first = turnNames[0]!.slice();
  rng.shuffle(first);
  const k0 = rng.randint(a.min_names_per_turn, a.max_names_per_turn);
  const prompt =
    `Sort these names in alphabetical order by ${label} name: ${first.join(", ")}\n\n` +
    `Use exactly this format:\n<alphabetical_sorted>\n${formatLines(k0, () => "")}\n</alphabetical_sorted>`;

  const followUps: string[] = [];
  for (let t = 1; t < numTurns; t++) {
    const shuffled = turnNames[t]!.slice();
    rng.shuffle(shuffled);
    let cumulativeCount = 0;
    for (let i = 0; i <= t; i++) cumulativeCount += turnNames[i]!.length;
    const k = rng.randint(a.min_names_per_turn, cumulativeCount);
    const threshold = rng.randint(0, k - 1);
    let text =
      `Now sort ALL of these names alphabetically by ${label} name: ${shuffled.join(", ")}\n\n` +
      "These are in addition to the prior list. Mark any NEW names (that weren't in the prior list) " +
      "with `// new name!` at the end.";
    if (t === 1) {
      text +=
        "\n\nUse exactly this format:\n<combined_alphabetical_sorted>\n" +
        formatLines(k, (j) => (j > threshold ? NEW_NAME_SUFFIX : "")) +
        "\n</combined_alphabetical_sorted>";
    } else {
      text += " Follow the same format as before.";
    }
    followUps.push(text);
  }

  return {
    prompt,
    // The original's answer column: json.dumps({"ground_truths": ..., "turn_names": ...}).
    answer: pyJsonDumps({ ground_truths: groundTruths, turn_names: turnNames }),
    info: {
      follow_ups: followUps,
      turn_names: turnNames,
      ground_truths: groundTruths,
      num_turns: numTurns,
      sort_by_first: byFirst,
      names_seed: namesSeed,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Reward

/**
 * The most code points one attempt or one ground truth is compared at: about 2x the longest ground
 * truth the args allow (7,715 characters measured at 10 turns of 50 names). difflib's work grows
 * with the product of the lengths, so a longer attempt is compared up to here, and a longer
 * ground truth (only possible in `POST /score`, where the client supplies `info`) is refused.
 */
export const MAX_COMPARED_CHARS = 16_000;

/**
 * The most difflib steps one attempt's comparison may take (`maxWork` in
 * src/pycompat/difflib.ts, under 0.1 s on an idle core): lengths alone do not bound the work
 * (two pathological 16,000-character texts take ~50 s). Answers to real episodes stay far below it (the worst
 * measured at 10 turns of 50 names: 0.6 M steps); past it the attempt is refused (reported,
 * reward 0).
 */
export const MAX_COMPARE_STEPS = 5_000_000;

const cleanLines = (lines: readonly string[]) => lines.map((s) => pyLower(pyStrip(s))).join("\n");

/**
 * `score_response` for one turn's ground truth, as a function of the attempt: the ground truth's
 * difflib index is built once and reused for every attempt of the turn (CPython's `set_seq1`).
 */
function turnScorer(expected: readonly string[], power: number | null): (predicted: readonly string[]) => number {
  let matcher: SequenceMatcher | undefined;
  return (predicted) => {
    if (predicted.length === 0 || expected.length === 0) return 0.0;
    matcher ??= new SequenceMatcher("", cleanLines(expected), { maxLength: MAX_COMPARED_CHARS, maxWork: MAX_COMPARE_STEPS });
    matcher.setSeq1(codePointPrefix(cleanLines(predicted), MAX_COMPARED_CHARS));
    const similarity = matcher.ratio();
    return power === null ? similarity : pyPowInt(similarity, power);
  };
}

/** `score_response`: difflib ratio of the cleaned lines (0 if either side is empty), powered. */
export function scoreResponse(predicted: readonly string[], expected: readonly string[], power: number | null): number {
  return turnScorer(expected, power)(predicted);
}

/**
 * `eval_turn` for turn t (0-based): the t-th assistant message's `<tag>(.*?)</tag>` blocks, each
 * scored; one block → its score, several → the last score only if each strictly improves on the
 * previous one, else 0; no block or no such message → 0. Blocks are scored in order and the
 * first that does not improve ends it (the same result as scoring them all first).
 */
export function evalTurn(assistantTexts: readonly string[], t: number, groundTruths: readonly (readonly string[])[], power: number | null): number {
  const expected = groundTruths[t];
  if (expected === undefined) return 0.0;
  if (t >= assistantTexts.length) return 0.0;
  const tag = t === 0 ? "alphabetical_sorted" : "combined_alphabetical_sorted";
  const blocks = extractAllTags(assistantTexts[t]!, tag);
  if (blocks.length === 0) return 0.0;
  const score = turnScorer(expected, power);
  let previous: number | undefined;
  for (const content of blocks) {
    let current = 0.0;
    if (content) {
      const predicted = pyStrip(content)
        .split("\n")
        .filter((line) => pyStrip(line) !== "")
        .map((line) => pyStrip(line));
      current = score(predicted);
    }
    if (previous !== undefined && current <= previous) return 0.0;
    previous = current;
  }
  return previous!;
}

function isStringMatrix(x: unknown): x is string[][] {
  return Array.isArray(x) && x.every((row) => Array.isArray(row) && row.every((s) => typeof s === "string"));
}

/**
 * The reward (`weighted_reward` in the original): power_per_turn → mean over turns of
 * similarity**power; otherwise (mean of raw similarities)**power. Sums left to right as the
 * original's loop does.
 */
export function alphabetSortReward(
  completion: readonly Message[],
  info: Partial<AlphabetSortInfo>,
  a: Pick<AlphabetSortArgs, "similarity_power" | "power_per_turn">,
): number {
  const numTurns = info.num_turns;
  if (typeof numTurns !== "number" || !Number.isInteger(numTurns) || numTurns < 0) {
    throw new TypeError("info.num_turns must be a non-negative integer (pass the episode's info when scoring)");
  }
  if (!isStringMatrix(info.ground_truths)) throw new TypeError("info.ground_truths must be a list of lists of strings");
  const groundTruths = info.ground_truths;
  const texts = completion.filter((m) => m.role === "assistant").map((m) => m.content ?? "");
  let total = 0.0;
  // Turns past the ground truths or the answers score 0 and adding 0.0 changes no sum, so the
  // loop stops there: a client's num_turns of 10^15 in /score costs nothing.
  const scoredTurns = Math.min(numTurns, groundTruths.length, texts.length);
  for (let t = 0; t < scoredTurns; t++) {
    total += evalTurn(texts, t, groundTruths, a.power_per_turn ? a.similarity_power : null);
  }
  const avg = numTurns > 0 ? total / numTurns : 0.0;
  return a.power_per_turn ? avg : pyPowInt(avg, a.similarity_power);
}

// ---------------------------------------------------------------------------------------------

export default defineEnvironment({
  name: "alphabet-sort",
  description: "Keep a list of names sorted by first or last name over 1-3 turns, marking new names; difflib-scored.",
  version: "0.1.0",
  documentationUrl: "https://github.com/PrimeIntellect-ai/verifiers/tree/main/environments/alphabet_sort",
  args,
  splits: ["train"],
  generate: ({ rng, args: a }: { rng: PyRandom; args: AlphabetSortArgs }) => buildEpisode(rng, a),
  // Safety net only: every episode ends by itself after info.num_turns <= max_turns turns; this
  // is also the limit GET /envs and the playground show (3 with the defaults).
  maxTurns: (a: AlphabetSortArgs) => a.max_turns,
  respond({ turn, info }) {
    // The original's is_completed: stop once the model has answered num_turns times.
    if (turn >= info.num_turns) return { done: true };
    // env_response: follow-up for the (turn)-th answer; "Continue" only if info is inconsistent.
    return { messages: [{ role: "user", content: info.follow_ups[turn - 1] ?? "Continue" }] };
  },
  rubric: [
    {
      name: "weighted_reward",
      weight: 1.0,
      fn: ({ completion, info, args: a }) => alphabetSortReward(completion, info, a as AlphabetSortArgs),
    },
  ],
});
