/**
 * word-groups: an NYT-Connections-style game, ported from prime-environments `nyt_connections`.
 *
 * 16 words hide four groups of four; the model has 4 lives and guesses one group per turn as
 * `<guess>W1, W2, W3, W4</guess>`. A correct group is removed (the last one completes itself),
 * a wrong guess costs a life, and two consecutive unparseable turns cost a life. At most 12
 * turns. Rubric [1.0, 0.3, 0.2, 0.1]: success, efficiency (lives left / 4 if solved), progress
 * (groups found / 4), format (share of turns with a parseable guess). See README.md.
 * Hardened (issue 39): a found group guessed again is a wrong guess; `faithful: true` keeps the
 * reference's rule, under which it counts again (one group guessed four times scored 1.6 of 1.6).
 *
 * The original puzzles (NYT, via a GitHub JSON) are not redistributable, so the puzzles are
 * assembled by a seeded generator from original groups in `groups.json`: one group per level
 * (NYT-style yellow→purple) by default, 4 of each group's 4–6 candidates, and never two groups
 * of which one lists a word of the other (members or `also`): a puzzle is never ambiguous.
 */
import { defineEnvironment, type JsonObject, type Message, type PyRandom, z } from "envworker";
import { efficiencyReward, formatReward, newGame, progressReward, replay, stepGame, successReward, type GameRecord, type PuzzleGroup } from "./game.ts";
import data from "./groups.json" with { type: "json" };

/**
 * The system prompt. Its opening and rules follow the reference; the instruction lines are
 * reconstructed from the reference's description (the exact original text was not available).
 */
export const SYSTEM_PROMPT = `You are playing NYT Connections, a word puzzle game in which you must group words into sets of 4 with a common theme.

Rules:
- You have 16 words total arranged in 4 groups of 4 words each
- Each group has a specific theme or connection
- You have 4 lives (mistakes allowed)
- You must guess exactly 4 words at once
- If you guess correctly, that group is revealed and removed from the board
- If you guess incorrectly, you lose a life
- The game ends when you find all groups or run out of lives

For each turn, think step-by-step, then make a guess inside <guess>...</guess> tags with exactly 4 words separated by commas.

Example format:
<guess>WORD1, WORD2, WORD3, WORD4</guess>`;

export const MAX_TURNS = 12;

export interface GroupSpec {
  id: string;
  group: string;
  level: number;
  members: string[];
  also?: string[];
}

/** The bundled groups, validated once at load. */
export const GROUPS: readonly GroupSpec[] = validateGroups((data as { groups: GroupSpec[] }).groups);

export function validateGroups(groups: GroupSpec[]): GroupSpec[] {
  const ids = new Set<string>();
  for (const g of groups) {
    if (ids.has(g.id)) throw new Error(`word-groups: duplicate group id ${g.id}`);
    ids.add(g.id);
    if (!(Number.isInteger(g.level) && g.level >= 0 && g.level <= 3)) throw new Error(`word-groups: ${g.id}: level must be 0..3`);
    if (g.members.length < 4 || g.members.length > 6) throw new Error(`word-groups: ${g.id}: needs 4-6 members`);
    const words = [...g.members, ...(g.also ?? [])];
    if (new Set(words).size !== words.length) throw new Error(`word-groups: ${g.id}: repeated word`);
    for (const w of words) {
      if (w !== w.toUpperCase() || w.trim() !== w || w.includes(",") || w === "") throw new Error(`word-groups: ${g.id}: bad word ${JSON.stringify(w)}`);
    }
  }
  return groups;
}

/** Two groups may share a puzzle when no member of either is a member or `also` word of the other. */
export function compatible(a: GroupSpec, b: GroupSpec): boolean {
  const fitsA = new Set([...a.members, ...(a.also ?? [])]);
  const fitsB = new Set([...b.members, ...(b.also ?? [])]);
  return !a.members.some((w) => fitsB.has(w)) && !b.members.some((w) => fitsA.has(w));
}

const DIFFICULTY_LEVELS = {
  mixed: [0, 1, 2, 3],
  easy: [0, 0, 1, 1],
  hard: [2, 2, 3, 3],
  any: null,
} as const;

const args = z
  .object({
    difficulty: z
      .enum(["mixed", "easy", "hard", "any"])
      .default("mixed")
      .describe("mixed: one group per level 0-3 (NYT-style); easy: two of level 0 and two of 1; hard: two of 2 and two of 3; any: four groups of any level."),
    system_prompt: z.string().nullable().default(SYSTEM_PROMPT).describe("The system prompt (null: none)."),
    faithful: z
      .boolean()
      .default(false)
      .describe("true: the reference's rule that a found group guessed again counts again (one group guessed four times scores 1.6 of 1.6); false: a re-guess is a wrong guess."),
  })
  .strict();

export type WordGroupsArgs = z.output<typeof args>;

export interface WordGroupsInfo {
  [key: string]: unknown;
  groups: PuzzleGroup[];
  /** The 16 words in their initial board order. */
  board: string[];
  group_ids: string[];
  shuffle_seed: number;
}

const MAX_ATTEMPTS = 10_000;

/** Choose four pairwise-compatible groups for the difficulty (rng draws only). */
export function chooseGroups(rng: PyRandom, difficulty: WordGroupsArgs["difficulty"], pool: readonly GroupSpec[] = GROUPS): GroupSpec[] {
  const levels = DIFFICULTY_LEVELS[difficulty];
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    let chosen: GroupSpec[];
    if (levels === null) {
      chosen = rng.sample(pool, 4);
    } else {
      chosen = [];
      for (const level of new Set(levels)) {
        const n = levels.filter((l) => l === level).length;
        chosen.push(...rng.sample(pool.filter((g) => g.level === level), n));
      }
    }
    if (chosen.every((a, i) => chosen.every((b, j) => j <= i || compatible(a, b)))) return chosen;
  }
  throw new Error("word-groups: could not find four compatible groups");
}

/** A puzzle: four groups, 4 members of each, the 16 words shuffled, and a seed for re-shuffles. */
export function generatePuzzle(rng: PyRandom, difficulty: WordGroupsArgs["difficulty"]): WordGroupsInfo {
  const specs = chooseGroups(rng, difficulty);
  const groups: PuzzleGroup[] = specs.map((g) => ({ group: g.group, level: g.level, members: rng.sample(g.members, 4) }));
  const board = rng.shuffle(groups.flatMap((g) => g.members));
  const shuffle_seed = rng.getrandbits(32);
  return { groups, board, group_ids: specs.map((g) => g.id), shuffle_seed };
}

const isPuzzleGroup = (g: unknown): g is PuzzleGroup => {
  const x = g as Partial<PuzzleGroup> | null;
  return (
    typeof x === "object" && x !== null && typeof x.group === "string" && typeof x.level === "number" &&
    Array.isArray(x.members) && x.members.length === 4 && x.members.every((w) => typeof w === "string")
  );
};

/**
 * The puzzle's groups from `info` (or the answer's JSON). A /score client supplies them, so their
 * shape is checked: 4 groups of exactly 4 words, as every dealt puzzle has (the replay compares
 * boards and guesses against the members, work that would grow with their product).
 */
function groupsOf(info: unknown, answer: string): PuzzleGroup[] {
  const groups = (info as Partial<WordGroupsInfo> | undefined)?.groups ?? (answer ? (JSON.parse(answer) as PuzzleGroup[]) : undefined);
  if (!Array.isArray(groups) || groups.length !== 4 || !groups.every(isPuzzleGroup)) {
    throw new Error("info.groups (or answer) must hold the 4 groups, each {group, level, members: 4 words}");
  }
  return groups;
}

function assistantTurns(completion: readonly Message[]): string[] {
  return completion.filter((m) => m.role === "assistant").map((m) => m.content ?? "");
}

/** The game a completion reaches (replayed from the assistant turns and the puzzle's groups). */
export function replayCompletion(completion: readonly Message[], info: unknown, answer: string, a: Pick<WordGroupsArgs, "faithful">): GameRecord {
  return replay(groupsOf(info, answer), assistantTurns(completion), { faithful: a.faithful });
}

export default defineEnvironment({
  name: "word-groups",
  description: "NYT-Connections-style game: find four groups of four among 16 words with 4 lives.",
  version: "0.1.0",
  documentationUrl: "https://github.com/PrimeIntellect-ai/prime-environments/tree/main/environments/nyt_connections",
  args,
  generate: ({ rng, args: a }) => {
    const info = generatePuzzle(rng, a.difficulty);
    return {
      prompt: `WORDS ON THE BOARD:\n${info.board.join(", ")}`,
      answer: JSON.stringify(info.groups),
      info: info as unknown as JsonObject,
      id: info.group_ids.join("+"),
    };
  },
  systemPrompt: (a: WordGroupsArgs) => a.system_prompt ?? undefined,
  maxTurns: MAX_TURNS,
  initialState: (example) => {
    const info = example.info as unknown as WordGroupsInfo;
    return { game: newGame(info.groups, info.board, info.shuffle_seed) as unknown as JsonObject };
  },
  respond: ({ lastText, state, args: a }) => {
    const game = state.game as unknown as GameRecord;
    const reply = stepGame(game, lastText, { faithful: a.faithful });
    return { messages: reply, done: game.done };
  },
  rubric: [
    { name: "success_reward", weight: 1.0, fn: ({ completion, info, answer, args: a }) => successReward(replayCompletion(completion, info, answer, a)) },
    { name: "efficiency_reward", weight: 0.3, fn: ({ completion, info, answer, args: a }) => efficiencyReward(replayCompletion(completion, info, answer, a)) },
    { name: "progress_reward", weight: 0.2, fn: ({ completion, info, answer, args: a }) => progressReward(replayCompletion(completion, info, answer, a)) },
    { name: "format_reward", weight: 0.1, fn: ({ completion }) => formatReward(assistantTurns(completion)) },
  ],
});
