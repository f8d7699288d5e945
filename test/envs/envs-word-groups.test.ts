import { describe, expect, it } from "vitest";
import { formatReward, parseGuess, type PuzzleGroup } from "../../envs/word-groups/game.ts";
import wordGroups, { compatible, GROUPS, SYSTEM_PROMPT, type GroupSpec, type WordGroupsInfo } from "../../envs/word-groups/index.ts";
import { resetEpisode, stepEpisode, type EpisodeState } from "../../src/env/episode.ts";
import type { Message } from "../../src/env/messages.ts";
import { PyRandom } from "../../src/pycompat/random.ts";
import { scoreItems } from "../../src/server/score.ts";

/*
 * Seed 1 deals:
 *   STRINGED INSTRUMENTS (level 0): GUITAR, UKULELE, BANJO, HARP
 *   GREEK LETTERS (1): DELTA, BETA, ALPHA, OMEGA
 *   SYNONYMS OF QUICK (2): RAPID, HASTY, SPEEDY, BRISK
 *   FIRE___ (3): WORK, FLY, MAN, ARM
 */
const BOARD = ["DELTA", "ARM", "BANJO", "ALPHA", "FLY", "WORK", "HARP", "MAN", "RAPID", "SPEEDY", "BRISK", "GUITAR", "BETA", "UKULELE", "HASTY", "OMEGA"];
const STRINGS = "STRINGED INSTRUMENTS: GUITAR, UKULELE, BANJO, HARP";
const GREEK = "GREEK LETTERS: DELTA, BETA, ALPHA, OMEGA";
const QUICK = "SYNONYMS OF QUICK: RAPID, HASTY, SPEEDY, BRISK";
const FIRE = "FIRE___: WORK, FLY, MAN, ARM";
const ALL_GROUPS = [STRINGS, GREEK, QUICK, FIRE].join("\n");
const INITIAL_BOARD = `WORDS ON THE BOARD:\n${BOARD.join(", ")}`;
const WRONG = "<guess>DELTA, ARM, RAPID, ALPHA</guess>";
const FORMAT_ISSUE = (k: number) =>
  `⚠️  Guess format issue (${k}/2 attempts). Please provide exactly 4 words separated by commas inside <guess>...</guess> tags.`;

function start(args: Record<string, unknown> = {}): EpisodeState {
  return resetEpisode(wordGroups, "g", { seed: 1, args }).state;
}

async function play(state: EpisodeState, turns: string[]) {
  const replies: string[] = [];
  let last;
  for (const t of turns) {
    last = await stepEpisode(wordGroups, state, { content: t });
    state = last.state;
    replies.push(...last.result.observation.messages.map((m) => m.content ?? ""));
  }
  return { state, replies, result: last!.result };
}

function expectMetrics(actual: Record<string, number> | undefined, expected: Record<string, number>): void {
  expect(Object.keys(actual ?? {}).sort()).toEqual(Object.keys(expected).sort());
  for (const [k, v] of Object.entries(expected)) expect(actual![k], k).toBeCloseTo(v, 12);
}

/** The board after finds: the remaining words re-shuffled with PyRandom(shuffle_seed + finds before). */
function reshuffled(words: string[], seed: number): string {
  return new PyRandom(seed).shuffle([...words]).join(", ");
}

describe("word-groups episode", () => {
  it("deals a seeded puzzle: system prompt, board, groups in info", () => {
    const s = start();
    expect(s.messages).toEqual([
      { role: "system", content: SYSTEM_PROMPT },
      { role: "user", content: INITIAL_BOARD },
    ]);
    const info = s.info as unknown as WordGroupsInfo;
    expect(info.groups.map((g) => `${g.group}: ${g.members.join(", ")}`)).toEqual([STRINGS, GREEK, QUICK, FIRE]);
    expect(info.group_ids).toEqual(["stringed-instruments", "greek-letters", "synonyms-of-quick", "fire"]);
    expect(JSON.parse(s.answer)).toEqual(info.groups);
    expect(resetEpisode(wordGroups, "h", { seed: 1 }).state.messages).toEqual(s.messages);
    expect(resetEpisode(wordGroups, "h", { seed: 2 }).state.messages[1]).not.toEqual(s.messages[1]);
  });

  it("solves with one mistake: incorrect, three finds, the last group auto-completes", async () => {
    const s = start();
    const seed = (s.info as unknown as WordGroupsInfo).shuffle_seed;
    const { replies, result } = await play(s, [
      WRONG,
      "The instruments: <guess>guitar, ukulele, banjo, harp</guess>",
      "<guess>OMEGA,ALPHA ,BETA, DELTA</guess>",
      "<think>fast words</think>\n<GUESS>Rapid, Hasty, Speedy, Brisk</GUESS>",
    ]);
    const after1 = ["DELTA", "ARM", "ALPHA", "FLY", "WORK", "MAN", "RAPID", "SPEEDY", "BRISK", "BETA", "HASTY", "OMEGA"];
    const board1 = reshuffled(after1, seed);
    const after2 = board1.split(", ").filter((w) => !["DELTA", "BETA", "ALPHA", "OMEGA"].includes(w));
    expect(replies).toEqual([
      `❌ Incorrect. Lives: 3\n\n${INITIAL_BOARD}`,
      `🎉 CORRECT! You found: ${STRINGS}\n\nSOLVED GROUPS:\n${STRINGS}\n\nREMAINING WORDS:\n${board1}`,
      `🎉 CORRECT! You found: ${GREEK}\n\nSOLVED GROUPS:\n${STRINGS}\n${GREEK}\n\nREMAINING WORDS:\n${reshuffled(after2, seed + 1)}`,
      `🎉 CORRECT! You found: ${QUICK}\n\n🎉 BONUS! The last group completes itself: ${FIRE}\n\nPuzzle solved!`,
    ]);
    expect(result.done).toBe(true);
    expect(result.observation.truncated).toBe(false);
    // success 1, efficiency 3/4, progress 4/4, format 4/4 → 1 + 0.3·0.75 + 0.2 + 0.1
    expectMetrics(result.observation.metrics, { success_reward: 1, efficiency_reward: 0.75, progress_reward: 1, format_reward: 1 });
    expect(result.reward).toBeCloseTo(1.525, 12);
  });

  it("loses all four lives", async () => {
    const { replies, result } = await play(start(), [WRONG, WRONG, "<guess>BANJO, HARP, FLY, MAN</guess>", WRONG]);
    expect(replies).toEqual([
      `❌ Incorrect. Lives: 3\n\n${INITIAL_BOARD}`,
      `❌ Incorrect. Lives: 2\n\n${INITIAL_BOARD}`,
      `❌ Incorrect. Lives: 1\n\n${INITIAL_BOARD}`,
      `❌ Incorrect. Game over! Correct groups were:\n${ALL_GROUPS}`,
    ]);
    expect(result.done).toBe(true);
    expectMetrics(result.observation.metrics, { success_reward: 0, efficiency_reward: 0, progress_reward: 0, format_reward: 1 });
    expect(result.reward).toBeCloseTo(0.1, 12);
  });

  it("parse failures: a warning, then a lost life on the second in a row; a parsed guess resets the count", async () => {
    const { state, replies, result } = await play(start(), [
      "I am not sure yet.",
      "<guess>DELTA, BETA</guess>",
      "<guess>DELTA, BETA, ALPHA, OMEGA,</guess>", // trailing comma: 5 pieces
      WRONG,
      "<guess>DELTA; BETA; ALPHA; OMEGA</guess>",
    ]);
    expect(replies).toEqual([
      FORMAT_ISSUE(1),
      `❌ Too many parsing attempts. Lost a life! Lives: 3\n\n${INITIAL_BOARD}`,
      FORMAT_ISSUE(1),
      `❌ Incorrect. Lives: 2\n\n${INITIAL_BOARD}`,
      FORMAT_ISSUE(1),
    ]);
    expect(result.done).toBe(false);
    expect(state.state.game).toMatchObject({ lives: 2, consecutive_parse_failures: 1 });
  });

  it("eight unparseable turns lose every life", async () => {
    const { replies, result } = await play(start(), Array.from({ length: 8 }, () => "no idea"));
    expect(replies[7]).toBe(`❌ Too many parsing attempts. Lost a life! Lives: 0\n\nGame over! Correct groups were:\n${ALL_GROUPS}`);
    expect(result.done).toBe(true);
    expect(result.reward).toBe(0);
  });

  it("faithful: true keeps the reference quirk: re-guessing a found group counts again (3 distinct groups can 'solve' the puzzle)", async () => {
    const s = start({ faithful: true });
    const seed = (s.info as unknown as WordGroupsInfo).shuffle_seed;
    const strings = "<guess>GUITAR, UKULELE, BANJO, HARP</guess>";
    const { replies, result } = await play(s, [strings, strings, "<guess>DELTA, BETA, ALPHA, OMEGA</guess>", "<guess>RAPID, HASTY, SPEEDY, BRISK</guess>"]);
    const after1 = reshuffled(["DELTA", "ARM", "ALPHA", "FLY", "WORK", "MAN", "RAPID", "SPEEDY", "BRISK", "BETA", "HASTY", "OMEGA"], seed);
    expect(replies[1]).toBe(
      `🎉 CORRECT! You found: ${STRINGS}\n\nSOLVED GROUPS:\n${STRINGS}\n${STRINGS}\n\nREMAINING WORDS:\n${reshuffled(after1.split(", "), seed + 1)}`,
    );
    expect(replies[2]).toContain(`SOLVED GROUPS:\n${STRINGS}\n${STRINGS}\n${GREEK}\n\nREMAINING WORDS:\n`); // 8 words left: no bonus
    expect(replies[3]).toBe(`🎉 CORRECT! You found: ${QUICK}\n\nPuzzle solved!`);
    expect(result.done).toBe(true);
    expectMetrics(result.observation.metrics, { success_reward: 1, efficiency_reward: 1, progress_reward: 1, format_reward: 1 });
    expect(result.reward).toBeCloseTo(1.6, 12);
  });

  it("hardened default: re-guessing a found group is a wrong guess (a life), and is not found again", async () => {
    const s = start();
    const seed = (s.info as unknown as WordGroupsInfo).shuffle_seed;
    const strings = "<guess>GUITAR, UKULELE, BANJO, HARP</guess>";
    const { state, replies, result } = await play(s, [strings, strings, "<guess>DELTA, BETA, ALPHA, OMEGA</guess>", "<guess>RAPID, HASTY, SPEEDY, BRISK</guess>"]);
    const after1 = reshuffled(["DELTA", "ARM", "ALPHA", "FLY", "WORK", "MAN", "RAPID", "SPEEDY", "BRISK", "BETA", "HASTY", "OMEGA"], seed);
    expect(replies[1]).toBe(`❌ Incorrect: STRINGED INSTRUMENTS was already found. Lives: 3\n\nSOLVED GROUPS:\n${STRINGS}\n\nREMAINING WORDS:\n${after1}`);
    // The third distinct group leaves the fourth to complete itself: solved with one mistake.
    expect(replies[3]).toContain("🎉 BONUS! The last group completes itself: FIRE___");
    expect(result.done).toBe(true);
    expect(state.state.game).toMatchObject({ lives: 3 });
    expectMetrics(result.observation.metrics, { success_reward: 1, efficiency_reward: 0.75, progress_reward: 1, format_reward: 1 });
    // One group guessed four times: three lives lost, one group found.
    const spam = await play(start(), [strings, strings, strings, strings]);
    expect(spam.result.done).toBe(false);
    expect(spam.state.state.game).toMatchObject({ lives: 1 });
    const [scored] = await scoreItems(wordGroups, [{ completion: [strings, strings, strings, strings].map((content) => ({ role: "assistant" as const, content })), info: s.info }]);
    expectMetrics(scored!.metrics, { success_reward: 0, efficiency_reward: 0, progress_reward: 0.25, format_reward: 1 });
    expect(scored!.reward).toBeCloseTo(0.15, 12);
  });

  it("truncates after 12 turns", async () => {
    const strings = "<guess>GUITAR, UKULELE, BANJO, HARP</guess>";
    const turns = ["?", strings, "?", strings, "?", WRONG, "?", WRONG, "?", WRONG, "?", "<guess>DELTA, BETA, ALPHA, OMEGA</guess>"];
    const { state, result } = await play(start({ faithful: true }), turns);
    expect(result.done).toBe(true);
    expect(result.observation.truncated).toBe(true);
    expect(state.state.game).toMatchObject({ lives: 1, done: false });
    // progress 3/4 (the repeat counts), format 6/12
    expectMetrics(result.observation.metrics, { success_reward: 0, efficiency_reward: 0, progress_reward: 0.75, format_reward: 0.5 });
    expect(result.reward).toBeCloseTo(0.2, 12);
  });

  it("scores statelessly from completion + info (or the JSON answer)", async () => {
    const s = start();
    const completion: Message[] = [
      { role: "assistant", content: WRONG },
      { role: "user", content: "..." },
      { role: "assistant", content: "<guess>GUITAR, UKULELE, BANJO, HARP</guess>" },
      { role: "user", content: "..." },
      { role: "assistant", content: "no guess" },
    ];
    const [byInfo, byAnswer] = await scoreItems(wordGroups, [
      { completion, info: s.info },
      { completion, answer: s.answer },
    ]);
    for (const r of [byInfo!, byAnswer!]) {
      expectMetrics(r.metrics, { success_reward: 0, efficiency_reward: 0, progress_reward: 0.25, format_reward: 2 / 3 });
      expect(r.reward).toBeCloseTo(0.05 + 0.1 * (2 / 3), 12);
    }
  });

  it("refuses client groups of another shape in /score (the replay's work grows with member counts)", async () => {
    const s = start();
    const groups = (s.info as unknown as WordGroupsInfo).groups;
    const huge = groups.map((g) => ({ ...g, members: Array.from({ length: 50_000 }, (_, i) => `W${i}`) }));
    const [bad, badAnswer, ok] = await scoreItems(wordGroups, [
      { completion: "<guess>A, B, C, D</guess>", info: { groups: huge } },
      { completion: "<guess>A, B, C, D</guess>", answer: JSON.stringify(groups.map((g) => ({ ...g, members: g.members.slice(0, 3) }))) },
      { completion: "<guess>A, B, C, D</guess>", info: { groups } },
    ]);
    for (const r of [bad!, badAnswer!]) {
      // Only format_reward (0.1 for a parseable guess) does not need the groups.
      expect(r.reward).toBeCloseTo(0.1, 12);
      expect(Object.keys(r.errors ?? {}).sort()).toEqual(["efficiency_reward", "progress_reward", "success_reward"]);
      expect(r.errors?.success_reward).toMatch(/4 groups, each \{group, level, members: 4 words\}/);
    }
    expect(ok!.errors).toBeUndefined();
  });
});

describe("word-groups parser", () => {
  it("takes the first <guess> (any case, across lines), splits on commas, strips, upper-cases", () => {
    expect(parseGuess("<guess>a, b ,c,d</guess>")).toEqual(["A", "B", "C", "D"]);
    expect(parseGuess("<Guess>\nice cream, b, c, d\n</GUESS>")).toEqual(["ICE CREAM", "B", "C", "D"]);
    expect(parseGuess("<guess>a, b, c, d</guess> <guess>e, f, g, h</guess>")).toEqual(["A", "B", "C", "D"]);
    expect(parseGuess("<guess>a, b, c</guess>")).toBeUndefined();
    expect(parseGuess("<guess>a, b, c, d,</guess>")).toBeUndefined();
    expect(parseGuess("a, b, c, d")).toBeUndefined();
    expect(parseGuess("<guess>a, a, b, c</guess>")).toEqual(["A", "A", "B", "C"]); // parses; can never match a group
    expect(formatReward(["<guess>a,b,c,d</guess>", "x", "<guess>a,b</guess>", "<guess>w,x,y,z</guess>"])).toBe(0.5);
    expect(formatReward([])).toBe(0);
  });
});

describe("word-groups data and generator", () => {
  const byId = new Map(GROUPS.map((g) => [g.id, g]));

  it("ships at least 60 well-formed groups across the four levels", () => {
    expect(GROUPS.length).toBeGreaterThanOrEqual(60);
    for (const level of [0, 1, 2, 3]) expect(GROUPS.filter((g) => g.level === level).length).toBeGreaterThanOrEqual(12);
    for (const g of GROUPS) {
      expect(g.members.length, g.id).toBeGreaterThanOrEqual(4);
      expect(g.members.length, g.id).toBeLessThanOrEqual(6);
      for (const w of [...g.members, ...(g.also ?? [])]) expect(w, g.id).toMatch(/^[A-Z][A-Z ]*$/);
    }
    // overlapping themes exist (e.g. SNOW is in WEATHER and ___BALL): such groups never share a puzzle
    const weather = byId.get("weather")!;
    const ball = byId.get("ball")!;
    expect(compatible(weather, ball)).toBe(false);
    // a PLANETS board may show GALAXY (a chocolate bar) as a red herring
    expect(compatible(byId.get("planets")!, byId.get("chocolate-bars")!)).toBe(true);
  });

  it("never deals a word that fits two of the puzzle's groups; levels follow the difficulty", () => {
    const expectedLevels = { mixed: [0, 1, 2, 3], easy: [0, 0, 1, 1], hard: [2, 2, 3, 3] } as const;
    for (const difficulty of ["mixed", "easy", "hard", "any"] as const) {
      for (let seed = 0; seed < 150; seed++) {
        const s = resetEpisode(wordGroups, "d", { seed, args: { difficulty } }).state;
        const info = s.info as unknown as WordGroupsInfo;
        const specs = info.group_ids.map((id) => byId.get(id)!) as GroupSpec[];
        expect(specs.every(Boolean)).toBe(true);
        expect(info.groups).toHaveLength(4);
        expect(new Set(info.board).size).toBe(16);
        expect([...info.board].sort()).toEqual(info.groups.flatMap((g: PuzzleGroup) => g.members).sort());
        expect(s.messages[1]!.content).toBe(`WORDS ON THE BOARD:\n${info.board.join(", ")}`);
        info.groups.forEach((g, i) => {
          expect(new Set(g.members).size).toBe(4);
          for (const w of g.members) {
            expect(specs[i]!.members).toContain(w);
            specs.forEach((other, j) => {
              if (j !== i) expect([...other.members, ...(other.also ?? [])], `${w} in ${other.id}`).not.toContain(w);
            });
          }
        });
        if (difficulty !== "any") expect(info.groups.map((g) => g.level).sort()).toEqual([...expectedLevels[difficulty]]);
      }
    }
  });

  it("is deterministic per seed", () => {
    for (const seed of [0, 7, 99]) {
      const a = resetEpisode(wordGroups, "a", { seed }).state;
      const b = resetEpisode(wordGroups, "b", { seed }).state;
      expect(a.info).toEqual(b.info);
      expect(a.messages).toEqual(b.messages);
    }
  });
});
