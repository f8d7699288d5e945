/**
 * wordle: TextArena's `Wordle-v0` as verifiers hosts it (the `wordle` environment, v0.1.6, on
 * `TextArenaEnv` with TextArena 0.7.4).
 *
 * The user prompt is the engine's initial observation; each turn the model answers with
 * `<guess>[word]</guess>`. The environment parses the newest `<guess>` (XMLParser), steps the
 * game with it and replies with the feedback lines, an invalid-move notice, or — when the game is
 * over — the engine's end reason, which ends the episode. Rubric: `correct_answer`,
 * `partial_answer`, `length_bonus` (weight 1 each) and XMLParser's `format_reward` (0.2), plus
 * the engine's own reward as the weight-0 metric `game_reward`. See README.md. Hardened (issue
 * 39): `length_bonus` counts the guesses the game read; `faithful: true` keeps the reference's count.
 *
 * Words: secrets are common base-form words of the chosen length from SCOWL (level ≤
 * `secret_level`); guesses are validated against SCOWL ≤ 50 (US + UK spellings), see
 * `../shared/words.ts`. TextArena draws secrets from NLTK's Basic English nouns and validates
 * against its own UK/US + NLTK dictionary, so the word lists (only) differ from the original.
 */
import { defineEnvironment, extractTag, type JsonObject, type Message, parseAnswer, z } from "envworker";
import { pyStrip } from "../shared/py.ts";
import { dictionaryUpTo, isRegularInflection, MAX_SCOWL_LEVEL, SCOWL_LEVELS, wordsUpTo } from "../shared/words.ts";
import { xmlFormatReward } from "../shared/xml-format.ts";
import { newGame, stepGame, type WordleGame } from "./engine.ts";

export const DEFAULT_SYSTEM_PROMPT =
  "You are a competitive game player. Make sure you read the game instructions carefully, and always follow the required format.\n\n" +
  "In each turn, think step-by-step, then give your guess inside <guess>...</guess> tags.";

export const MAX_GUESSES = 10;
export const MAX_ERROR_ALLOWANCE = 3;

/**
 * The engine's first observation through `LLMObservationWrapper` (`"\n[GAME] " + prompt`): the
 * user prompt of every episode. The example `'[apple]'` is fixed in TextArena whatever the length.
 */
export function initialObservation(wordLength: number, numGuesses: number): string {
  return (
    `\n[GAME] You are Playing Wordle.\nA secret ${wordLength}-letter word has been chosen. You have ${numGuesses} attempts to guess it.\n` +
    "For each guess, wrap your word in square brackets (e.g., '[apple]').\nFeedback for each letter will be given as follows:\n" +
    "  - G (green): correct letter in the correct position\n" +
    "  - Y (yellow): letter exists in the word but in the wrong position\n" +
    "  - X (wrong): letter is not in the word\n" +
    "Enter your guess to begin.\n"
  );
}

const args = z
  .object({
    word_length: z.number().int().min(4).max(8).default(5).describe("Letters in the secret word and in every guess."),
    num_guesses: z.number().int().min(1).max(MAX_GUESSES).default(6).describe("Valid guesses allowed."),
    error_allowance: z
      .number()
      .int()
      .min(0)
      .max(MAX_ERROR_ALLOWANCE)
      .default(1)
      .describe("Consecutive invalid moves forgiven (TextArena's SinglePlayerState error_allowance)."),
    secret_level: z
      .literal(SCOWL_LEVELS)
      .default(20)
      .describe("Difficulty: secrets come from SCOWL frequency levels up to this one (10 = most common)."),
    base_forms_only: z
      .boolean()
      .default(true)
      .describe("Exclude regular inflections (plurals, -ed, -ing forms) from the secret words."),
    system_prompt: z.string().nullable().default(DEFAULT_SYSTEM_PROMPT).describe("The system prompt (null: none)."),
    faithful: z
      .boolean()
      .default(false)
      .describe("true: the reference's length bonus, which counts only guesses with both tags on one line (wrong guesses split over lines cost nothing); false: it counts the guesses the game read."),
  })
  .strict();

export type WordleArgs = z.output<typeof args>;

const secretCache = new Map<string, readonly string[]>();

/** The secret-word pool for these args: sorted, lower-case a–z, from the dialect-neutral list. */
export function secretWords(a: Pick<WordleArgs, "word_length" | "secret_level" | "base_forms_only">): readonly string[] {
  const k = `${a.word_length}:${a.secret_level}:${a.base_forms_only}`;
  let words = secretCache.get(k);
  if (!words) {
    const dict = dictionaryUpTo(MAX_SCOWL_LEVEL);
    words = wordsUpTo(a.secret_level, ["english"]).filter(
      (w) => w.length === a.word_length && !(a.base_forms_only && isRegularInflection(w, dict)),
    );
    if (words.length === 0) throw new Error(`no secret words of length ${a.word_length} at level ${a.secret_level}`);
    secretCache.set(k, words);
  }
  return words;
}

/** The guess dictionary: SCOWL ≤ 50, US and UK spellings. */
export function isValidGuessWord(word: string): boolean {
  return dictionaryUpTo(MAX_SCOWL_LEVEL).has(word);
}

/** What the env sends the engine: the newest parsed `<guess>`, or Python's `str(None)`. */
function actionFor(messages: readonly Message[]): string {
  return parseAnswer(messages, "guess") ?? "None";
}

/**
 * Replay a finished (or partial) conversation through the engine: the game as it stands after the
 * completion's assistant turns. Used by the rubric so that scoring needs only completion + answer.
 */
export function replayGame(completion: readonly Message[], answer: string, a: WordleArgs): WordleGame {
  const game = newGame(answer, a);
  const seen: Message[] = [];
  for (const m of completion) {
    if (m.role !== "assistant") continue;
    seen.push(m);
    stepGame(game, actionFor(seen), isValidGuessWord);
    if (game.done) break;
  }
  return game;
}

// --- rubric (the verifiers wordle reward functions) ------------------------------------------

/** `correct_answer`: the newest parsed guess is exactly `[answer]`. */
export function correctAnswer(completion: readonly Message[], answer: string): number {
  return parseAnswer(completion, "guess") === `[${answer}]` ? 1 : 0;
}

/**
 * `partial_answer`: 0 when correct; else, from the newest user message whose stripped text has
 * exactly 3 lines (a feedback message), 0.2 per G and 0.1 per Y on its 2nd line.
 */
export function partialAnswer(completion: readonly Message[], answer: string): number {
  if (correctAnswer(completion, answer)) return 0;
  for (let i = completion.length - 1; i >= 0; i--) {
    const m = completion[i]!;
    if (m.role !== "user") continue;
    const parts = pyStrip(m.content ?? "").split("\n");
    if (parts.length === 3) {
      const scoring = pyStrip(parts[1]!);
      const greens = scoring.split("G").length - 1;
      const yellows = scoring.split("Y").length - 1;
      return 0.2 * greens + 0.1 * yellows;
    }
  }
  return 0;
}

/**
 * `length_bonus`: correct / number of assistant messages holding a guess, or correct / 1 when
 * none do. A guess is what the game reads (`<guess>…</guess>` across lines, as `parseAnswer`);
 * `faithful`: the reference's `<guess>.*</guess>` (Python `re.search` without DOTALL: the tags on
 * one line), which let wrong guesses split over lines keep the bonus at 1.0 (issue 39).
 */
export function lengthBonus(completion: readonly Message[], answer: string, faithful = false): number {
  const isGuess = faithful ? hasGuessOnOneLine : (text: string) => extractTag(text, "guess") !== undefined;
  const guesses = completion.filter((m) => m.role === "assistant" && isGuess(m.content ?? "")).length;
  return correctAnswer(completion, answer) / (guesses || 1);
}

/**
 * Python's `re.search(r"<guess>.*</guess>", text)`: an opening and a later closing tag on one line.
 * By string search: the regex is quadratic on a line of many opening tags.
 */
function hasGuessOnOneLine(text: string): boolean {
  return text.split("\n").some((line) => {
    const open = line.indexOf("<guess>");
    return open !== -1 && line.indexOf("</guess>", open + "<guess>".length) !== -1;
  });
}

/** `format_reward`: XMLParser(["guess"]) format score (see ../shared/xml-format.ts). */
export function formatReward(completion: readonly Message[]): number {
  return xmlFormatReward(completion, ["guess"]);
}

export default defineEnvironment({
  name: "wordle",
  description: "Wordle (TextArena Wordle-v0 via verifiers): guess the secret word in 6 tries from G/Y/X feedback.",
  version: "0.1.0",
  documentationUrl: "https://github.com/PrimeIntellect-ai/verifiers/tree/main/environments/wordle",
  args,
  generate: ({ rng, args: a }) => {
    const secret = rng.choice(secretWords(a));
    return {
      prompt: initialObservation(a.word_length, a.num_guesses),
      answer: secret,
      info: { word_length: a.word_length, num_guesses: a.num_guesses },
    };
  },
  systemPrompt: (a: WordleArgs) => a.system_prompt ?? undefined,
  // The game ends the episode itself, after at most num_guesses·(error_allowance+1) turns (each
  // guess may follow error_allowance forgiven invalid moves): 12 with the defaults (6 guesses).
  maxTurns: (a: WordleArgs) => a.num_guesses * (a.error_allowance + 1),
  initialState: (example, a: WordleArgs) => ({ game: newGame(example.answer ?? "", a) as unknown as JsonObject }),
  respond: ({ messages, state, answer, args: a }) => {
    const game = (state.game as unknown as WordleGame | undefined) ?? newGame(answer, a);
    const outcome = stepGame(game, actionFor(messages), isValidGuessWord);
    state.game = game as unknown as JsonObject;
    return { messages: outcome.message, done: outcome.done };
  },
  rubric: [
    { name: "correct_answer", weight: 1.0, fn: ({ completion, answer }) => correctAnswer(completion, answer) },
    { name: "partial_answer", weight: 1.0, fn: ({ completion, answer }) => partialAnswer(completion, answer) },
    { name: "length_bonus", weight: 1.0, fn: ({ completion, answer, args: a }) => lengthBonus(completion, answer, a.faithful) },
    { name: "format_reward", weight: 0.2, fn: ({ completion }) => formatReward(completion) },
    {
      name: "game_reward",
      weight: 0,
      fn: ({ completion, answer, args: a }) => replayGame(completion, answer, a as WordleArgs).game_reward ?? 0,
    },
  ],
});
