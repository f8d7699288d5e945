import { describe, expect, it } from "vitest";
import { evaluateGuess, formatAction, newGame, stepGame } from "../../envs/wordle/engine.ts";
import wordle, {
  correctAnswer,
  DEFAULT_SYSTEM_PROMPT,
  formatReward,
  initialObservation,
  isValidGuessWord,
  lengthBonus,
  partialAnswer,
  replayGame,
  secretWords,
  type WordleArgs,
} from "../../envs/wordle/index.ts";
import { xmlFormatScore } from "../../envs/shared/xml-format.ts";
import { resetEpisode, stepEpisode, type EpisodeState } from "../../src/env/episode.ts";
import { defaultMaxTurns } from "../../src/env/environment.ts";
import type { Message } from "../../src/env/messages.ts";
import { PyRandom } from "../../src/pycompat/random.ts";
import { scoreItems } from "../../src/server/score.ts";

const INVALID = " Please resubmit a valid move and remember to follow the game rules to avoid penalties.";
const WIN = "Congratulations! You guessed the word correctly!";
const DEFAULT_ARGS = wordle.parseArgs({}) as WordleArgs;

/** Seed 0 draws "wrong" (Python: random.Random(0).choice(pool) → pool[864]). */
function start(seed = 0): EpisodeState {
  return resetEpisode(wordle, `w${seed}`, { seed }).state;
}

async function play(state: EpisodeState, turns: string[]) {
  const replies: string[] = [];
  let last;
  for (const t of turns) {
    last = await stepEpisode(wordle, state, { content: t });
    state = last.state;
    replies.push(...last.result.observation.messages.map((m) => m.content ?? ""));
  }
  return { state, replies, result: last!.result };
}

const g = (w: string) => `<guess>[${w}]</guess>`;

/** Same metric names, each value equal to 12 decimal places. */
function expectMetrics(actual: Record<string, number> | undefined, expected: Record<string, number>): void {
  expect(Object.keys(actual ?? {}).sort()).toEqual(Object.keys(expected).sort());
  for (const [k, v] of Object.entries(expected)) expect(actual![k], k).toBeCloseTo(v, 12);
}

describe("wordle engine", () => {
  it("marks greens first, then yellows left to right consuming letters", () => {
    expect(evaluateGuess("crane", "crane").join("")).toBe("GGGGG");
    expect(evaluateGuess("crane", "wrong").join("")).toBe("XGXGX");
    // the greens at 3-4 consume both e/s of "those": the earlier e's are X, not Y
    expect(evaluateGuess("geese", "those").join("")).toBe("XXXGG");
    // secret abbey, guess kebab: b at 2 is green; e, a and the last b take the remaining letters
    expect(evaluateGuess("kebab", "abbey").join("")).toBe("XYGYY");
    // only one yellow per available letter
    expect(evaluateGuess("ooxxo", "abcod").join("")).toBe("YXXXX");
  });

  it("brackets a bare action like ActionFormattingWrapper", () => {
    expect(formatAction("crane")).toBe("[crane]");
    expect(formatAction("[crane]")).toBe("[crane]");
    expect(formatAction("[cr ne]")).toBe("[cr ne]");
    expect(formatAction("None")).toBe("[None]");
  });

  it("validates: brackets, length, repeats, dictionary", () => {
    const game = newGame("wrong", { word_length: 5, num_guesses: 6, error_allowance: 3 });
    expect(stepGame(game, "[cr ne]", isValidGuessWord).message).toBe(
      `You attempted an invalid move. Reason: You tried submitting a word in the wrong format. Please make sure to use squared brackets.${INVALID}`,
    );
    expect(stepGame(game, "[None]", isValidGuessWord).message).toBe(
      `You attempted an invalid move. Reason: Your word must be exactly 5 letters.${INVALID}`,
    );
    expect(stepGame(game, "[xqzvk]", isValidGuessWord).message).toBe(
      `You attempted an invalid move. Reason: 'xqzvk' is not an English word.${INVALID}`,
    );
    expect(game.error_count).toBe(3);
    expect(stepGame(game, "[CRANE]", isValidGuessWord)).toEqual({ message: "\nC R A N E\nX G X G X\nYou have 5 guesses left.", done: false });
    expect(game.error_count).toBe(0);
    expect(stepGame(game, "I say [crane]", isValidGuessWord).message).toBe(
      `You attempted an invalid move. Reason: You have already guessed 'crane' before. Please try a different word.${INVALID}`,
    );
    expect(game.turn).toBe(1);
  });

  it("has common base-form secrets inside the guess dictionary", () => {
    const pool = secretWords(DEFAULT_ARGS);
    expect(pool.length).toBeGreaterThan(500);
    for (const w of pool) {
      expect(w).toMatch(/^[a-z]{5}$/);
      expect(isValidGuessWord(w)).toBe(true);
    }
    expect(pool).toContain("plant");
    expect(pool).not.toContain("cards"); // plural of "card"
    expect(pool).not.toContain("named"); // past tense of "name"
    expect(pool[864]).toBe("wrong");
    expect(secretWords({ ...DEFAULT_ARGS, secret_level: 10 }).length).toBeLessThan(pool.length);
  });
});

describe("wordle environment", () => {
  it("limits turns to num_guesses × (error_allowance + 1): 12 with the defaults, as GET /envs lists", () => {
    expect(defaultMaxTurns(wordle)).toBe(12);
    expect(wordle.maxTurnsFor(wordle.parseArgs({ num_guesses: 3, error_allowance: 0 }))).toBe(3);
    expect(resetEpisode(wordle, "ep", { seed: 1, args: { num_guesses: 4 } }).state.max_turns).toBe(8);
  });

  it("serves the TextArena observation and the verifiers system prompt; the seed picks the word", () => {
    const s = start(0);
    expect(s.answer).toBe("wrong");
    expect(s.messages).toEqual([
      { role: "system", content: DEFAULT_SYSTEM_PROMPT },
      {
        role: "user",
        content:
          "\n[GAME] You are Playing Wordle.\nA secret 5-letter word has been chosen. You have 6 attempts to guess it.\n" +
          "For each guess, wrap your word in square brackets (e.g., '[apple]').\nFeedback for each letter will be given as follows:\n" +
          "  - G (green): correct letter in the correct position\n" +
          "  - Y (yellow): letter exists in the word but in the wrong position\n" +
          "  - X (wrong): letter is not in the word\n" +
          "Enter your guess to begin.\n",
      },
    ]);
    expect(DEFAULT_SYSTEM_PROMPT).toBe(
      "You are a competitive game player. Make sure you read the game instructions carefully, and always follow the required format.\n\n" +
        "In each turn, think step-by-step, then give your guess inside <guess>...</guess> tags.",
    );
    expect(start(0).answer).toBe(start(0).answer);
    expect(start(12345).answer).toBe(new PyRandom(12345).choice(secretWords(DEFAULT_ARGS)));
    const answers = new Set(Array.from({ length: 20 }, (_, i) => start(i).answer));
    expect(answers.size).toBeGreaterThan(10);
  });

  it("takes args: word length, guesses, system prompt", () => {
    const s = resetEpisode(wordle, "a", { seed: 3, args: { word_length: 6, num_guesses: 4, system_prompt: null } }).state;
    expect(s.answer).toHaveLength(6);
    expect(s.messages).toHaveLength(1);
    expect(s.messages[0]!.content).toBe(initialObservation(6, 4));
    expect(s.messages[0]!.content).toContain("A secret 6-letter word has been chosen. You have 4 attempts to guess it.");
    expect(() => resetEpisode(wordle, "b", { args: { word_length: 3 } })).toThrow(/invalid args/);
    expect(() => resetEpisode(wordle, "b", { args: { secret_level: 30 } })).toThrow(/invalid args/);
  });

  it("wins in 3 guesses: feedback lines, then the win reason; reward 1 + 1/3 + 0.2", async () => {
    const { state, replies, result } = await play(start(0), [g("crane"), g("sport"), `Thinking...\n${g("wrong")}`]);
    expect(replies).toEqual([
      "\nC R A N E\nX G X G X\nYou have 5 guesses left.",
      "\nS P O R T\nX X G Y X\nYou have 4 guesses left.",
      WIN,
    ]);
    expect(result.done).toBe(true);
    expect(result.observation.truncated).toBe(false);
    // the third message does not start with <guess>: its format score is 0.4 + 0.2 + 0.2 = 0.8
    expectMetrics(result.observation.metrics, {
      correct_answer: 1,
      partial_answer: 0,
      length_bonus: 1 / 3,
      format_reward: (1 + 1 + 0.8) / 3,
      game_reward: 1,
    });
    expect(result.reward).toBeCloseTo(1 + 1 / 3 + 0.2 * (2.8 / 3), 12);
    expect((state.state.game as { history: unknown[] }).history).toHaveLength(3);
  });

  it("loses after 6 guesses: the turn-limit reason; partial credit from the 5th feedback", async () => {
    const { replies, result } = await play(start(0), ["crane", "sport", "light", "about", "chair", "money"].map(g));
    expect(replies).toEqual([
      "\nC R A N E\nX G X G X\nYou have 5 guesses left.",
      "\nS P O R T\nX X G Y X\nYou have 4 guesses left.",
      "\nL I G H T\nX X Y X X\nYou have 3 guesses left.",
      "\nA B O U T\nX X G X X\nYou have 2 guesses left.",
      "\nC H A I R\nX X X X Y\nYou have 1 guesses left.",
      "The turn limit has been reached. You didn't guess the word, but your best guess matched 20% of the letters in the correct positions.\nThe secret word was: **wrong**.",
    ]);
    expect(result.done).toBe(true);
    // partial: the newest 3-line user message is CHAIR's (1 Y) → 0.1; the engine's own reward is
    // MONEY's completion (2 Y → 0.5·2/5 = 0.2)
    expectMetrics(result.observation.metrics, { correct_answer: 0, partial_answer: 0.1, length_bonus: 0, format_reward: 1, game_reward: 0.2 });
    expect(result.reward).toBeCloseTo(0.3, 12);
  });

  it("forgives one invalid move, and ends the game on the second in a row", async () => {
    const { replies, result } = await play(start(0), [g("xqzvk"), g("crane"), g("zzzzz"), "<guess>[qqqqq]</guess>"]);
    expect(replies).toEqual([
      `You attempted an invalid move. Reason: 'xqzvk' is not an English word.${INVALID}`,
      "\nC R A N E\nX G X G X\nYou have 5 guesses left.",
      `You attempted an invalid move. Reason: 'zzzzz' is not an English word.${INVALID}`,
      "Invalid Move: 'qqqqq' is not an English word.",
    ]);
    expect(result.done).toBe(true);
    // partial from CRANE's feedback (2 G): 0.4; engine reward = CRANE's completion 2/5
    expectMetrics(result.observation.metrics, { correct_answer: 0, partial_answer: 0.4, length_bonus: 0, format_reward: 1, game_reward: 0.4 });
    expect(result.reward).toBeCloseTo(0.6, 12);
  });

  it("two invalid moves at once: no guess tag is str(None) → wrong length", async () => {
    const { replies, result } = await play(start(0), ["crane?", "I give up"]);
    expect(replies).toEqual([
      `You attempted an invalid move. Reason: Your word must be exactly 5 letters.${INVALID}`,
      "Invalid Move: Your word must be exactly 5 letters.",
    ]);
    // format: 0.2 per message (the spacing term is always earned)
    expectMetrics(result.observation.metrics, { correct_answer: 0, partial_answer: 0, length_bonus: 0, format_reward: 0.2, game_reward: 0 });
    expect(result.reward).toBeCloseTo(0.04, 12);
  });

  it("re-sends the previous guess when a turn has no <guess> (newest tagged message)", async () => {
    const { replies } = await play(start(0), [g("crane"), "hmm"]);
    expect(replies[1]).toBe(`You attempted an invalid move. Reason: You have already guessed 'crane' before. Please try a different word.${INVALID}`);
  });

  it("quirk: a bracket-less correct guess wins the game but scores correct_answer 0", async () => {
    const { replies, result } = await play(start(0), ["<guess>wrong</guess>"]);
    expect(replies).toEqual([WIN]);
    expect(result.done).toBe(true);
    expectMetrics(result.observation.metrics, { correct_answer: 0, partial_answer: 0, length_bonus: 0, format_reward: 1, game_reward: 1 });
    expect(result.reward).toBeCloseTo(0.2, 12);
  });

  it("scores statelessly from completion + answer (POST /score)", async () => {
    const completion: Message[] = [
      { role: "assistant", content: g("crane") },
      { role: "user", content: "\nC R A N E\nX G X G X\nYou have 5 guesses left." },
      { role: "assistant", content: g("wrong") },
      { role: "user", content: WIN },
    ];
    const [score] = await scoreItems(wordle, [{ completion, answer: "wrong" }]);
    expectMetrics(score!.metrics, { correct_answer: 1, partial_answer: 0, length_bonus: 0.5, format_reward: 1, game_reward: 1 });
    expect(score!.reward).toBeCloseTo(1.7, 12);
    const [wrong] = await scoreItems(wordle, [{ completion, answer: "crane" }]);
    expect(wrong!.metrics.correct_answer).toBe(0);
    expect(wrong!.metrics.partial_answer).toBeCloseTo(0.4, 12); // from the 3-line feedback
  });
});

describe("wordle reward functions", () => {
  const a = (content: string): Message => ({ role: "assistant", content });
  const u = (content: string): Message => ({ role: "user", content });

  it("format_reward: verifiers' XMLParser format score, mean over assistant messages", () => {
    expect(xmlFormatScore("<guess>[crane]</guess>", ["guess"])).toBeCloseTo(1, 12);
    expect(xmlFormatScore("  <guess>[crane]</guess>\n", ["guess"])).toBeCloseTo(1, 12);
    expect(xmlFormatScore("I think <guess>[crane]</guess>", ["guess"])).toBeCloseTo(0.8, 12);
    expect(xmlFormatScore("<guess>[crane]</guess> is my guess", ["guess"])).toBeCloseTo(0.8, 12);
    expect(xmlFormatScore("<guess></guess>", ["guess"])).toBeCloseTo(1, 12);
    expect(xmlFormatScore("<guess> crane", ["guess"])).toBeCloseTo(0.4, 12); // starts with the tag, nothing parsed
    expect(xmlFormatScore("crane", ["guess"])).toBeCloseTo(0.2, 12);
    expect(formatReward([a("I think <guess>[crane]</guess>"), u("x"), a("crane")])).toBeCloseTo(0.5, 12);
    expect(formatReward([a("<guess>[crane]</guess>"), { role: "assistant", content: null }])).toBeCloseTo(0.6, 12);
    expect(formatReward([])).toBe(0);
  });

  it("correct_answer and length_bonus", () => {
    expect(correctAnswer([a(g("wrong"))], "wrong")).toBe(1);
    expect(correctAnswer([a(g("WRONG"))], "wrong")).toBe(0);
    expect(correctAnswer([a(g("wrong")), u("x"), a("no tag")], "wrong")).toBe(1); // newest TAGGED message
    expect(lengthBonus([a(g("crane")), a(g("sport")), a(g("wrong"))], "wrong")).toBeCloseTo(1 / 3, 15);
    // faithful: a guess split over lines is not counted (Python `.` does not match "\n"): 1 / (0 || 1)
    expect(lengthBonus([a("<guess>\n[wrong]\n</guess>")], "wrong", true)).toBe(1);
    expect(lengthBonus([a(g("crane"))], "wrong")).toBe(0);
    // issue 39: wrong guesses split over lines kept the bonus at 1.0 (faithful); hardened they count, as the game reads them
    const split = (w: string) => a(`<guess>\n[${w}]\n</guess>`);
    const game = [split("crane"), u("..."), split("sport"), u("..."), split("slate"), u("..."), split("mound"), u("..."), a(g("wrong"))];
    expect(lengthBonus(game, "wrong", true)).toBe(1);
    expect(lengthBonus(game, "wrong")).toBeCloseTo(1 / 5, 15);
    expect(lengthBonus([a("<guess>\n[wrong]\n</guess>")], "wrong")).toBe(1);
  });

  it("partial_answer reads the newest 3-line user message", () => {
    const fb = (marks: string) => u(`\nC R A N E\n${marks}\nYou have 5 guesses left.`);
    expect(partialAnswer([a(g("crane")), fb("G Y X X G")], "wrong")).toBeCloseTo(0.5, 12);
    expect(partialAnswer([a(g("crane")), fb("G Y X X G"), a(g("xxxxx")), u("You attempted an invalid move.")], "wrong")).toBeCloseTo(0.5, 12);
    expect(partialAnswer([a(g("crane")), fb("G G G G Y")], "wrong")).toBeCloseTo(0.9, 12);
    expect(partialAnswer([a(g("wrong")), fb("G G G G Y")], "wrong")).toBe(0); // correct → 0
    expect(partialAnswer([a("x")], "wrong")).toBe(0);
  });

  it("replays a conversation through the engine", () => {
    const game = replayGame([a(g("crane")), u("..."), a(g("wrong"))], "wrong", DEFAULT_ARGS);
    expect(game).toMatchObject({ done: true, game_reward: 1, turn: 2 });
    expect(replayGame([a(g("crane"))], "wrong", DEFAULT_ARGS)).toMatchObject({ done: false, game_reward: null });
  });
});
