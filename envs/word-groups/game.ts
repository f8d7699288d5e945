/**
 * The NYT-Connections game as prime-environments' `nyt_connections` runs it (turn logic of its
 * `env_response`, rubric of its `load_environment`), over a plain-JSON game record so that the
 * live episode and the stateless replay used by the rubric share one implementation.
 */
import { PyRandom } from "envworker";
import { pyStrip } from "../shared/py.ts";

/** A group as a puzzle uses it: its name, level and the 4 members on the board (upper-case). */
export interface PuzzleGroup {
  group: string;
  level: number;
  members: string[];
}

export interface GameRecord {
  groups: PuzzleGroup[];
  /** Words still on the board, in display order. */
  remaining: string[];
  /** Found groups in order; with the `faithful` rules a re-guessed group is appended again (the reference quirk). */
  found: PuzzleGroup[];
  lives: number;
  consecutive_parse_failures: number;
  /** Seed for the board re-shuffles after each find (drawn from the episode rng). */
  shuffle_seed: number;
  done: boolean;
}

export const START_LIVES = 4;
export const MAX_PARSE_FAILURES = 2;

/** How a guess is judged: the hardened default, or the reference's rules. */
export interface GameRules {
  /**
   * The reference's rule: a guess matches any group, found ones included, and each match counts
   * again (one group guessed four times "solves" the puzzle: 1.6 of 1.6). By default a found
   * group's words are off the board, so guessing it again is a wrong guess: it costs a life.
   */
  faithful?: boolean;
}

export function newGame(groups: PuzzleGroup[], board: string[], shuffleSeed: number): GameRecord {
  return {
    groups,
    remaining: [...board],
    found: [],
    lives: START_LIVES,
    consecutive_parse_failures: 0,
    shuffle_seed: shuffleSeed,
    done: false,
  };
}

/**
 * The parser: the first `<guess>…</guess>` (DOTALL, case-insensitive), split on commas, each
 * piece stripped and upper-cased; a guess only when that gives exactly 4 pieces (empty pieces
 * count, so "A, B, C, D," is not a guess). Returns undefined otherwise.
 */
export function parseGuess(text: string): string[] | undefined {
  // Two linear searches instead of /<guess>(.*?)<\/guess>/is, which is quadratic on a reply of
  // many opening tags: the first opening tag, then the first closing tag after it.
  const open = /<guess>/i.exec(text);
  if (!open) return undefined;
  const close = /<\/guess>/gi;
  close.lastIndex = open.index + open[0].length;
  const end = close.exec(text);
  if (!end) return undefined;
  const words = text
    .slice(open.index + open[0].length, end.index)
    .split(",")
    .map((w) => pyStrip(w).toUpperCase());
  return words.length === 4 ? words : undefined;
}

/** `ConnectionsGroup.__repr__`: "NAME: A, B, C, D". */
export function formatGroup(g: PuzzleGroup): string {
  return `${g.group}: ${g.members.join(", ")}`;
}

/** `get_current_prompt`: the board text. */
export function boardText(game: GameRecord): string {
  let text: string;
  if (game.found.length > 0) {
    text = "SOLVED GROUPS:\n";
    for (const g of game.found) text += `${formatGroup(g)}\n`;
    text += "\nREMAINING WORDS:\n";
  } else {
    text = "WORDS ON THE BOARD:\n";
  }
  text += game.remaining.join(", ");
  return pyStrip(text);
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const sa = new Set(a);
  const sb = new Set(b);
  if (sa.size !== sb.size) return false;
  for (const x of sa) if (!sb.has(x)) return false;
  return true;
}

/** `check_guess`: the group whose members equal the guess as a set — any group, found or not. */
export function matchGroup(game: GameRecord, guess: readonly string[]): PuzzleGroup | undefined {
  return game.groups.find((g) => sameSet(guess, g.members));
}

/** `remove_found_words`: drop the group's words from the board, re-shuffle it, record the find. */
function removeFoundWords(game: GameRecord, g: PuzzleGroup): void {
  game.remaining = game.remaining.filter((w) => !g.members.includes(w));
  new PyRandom(game.shuffle_seed + game.found.length).shuffle(game.remaining);
  game.found.push(g);
}

function allGroupsText(game: GameRecord): string {
  return game.groups.map(formatGroup).join("\n");
}

/** Whether `g` was found already (by members: the record may have been through JSON, identities lost). */
function isFound(game: GameRecord, g: PuzzleGroup): boolean {
  return game.found.some((f) => sameSet(f.members, g.members));
}

function wrongGuess(game: GameRecord, what: string): string {
  game.lives -= 1;
  return game.lives <= 0 ? `❌ ${what}. Game over! Correct groups were:\n${allGroupsText(game)}` : `❌ ${what}. Lives: ${game.lives}\n\n${boardText(game)}`;
}

/** Apply one model turn (its text); returns the environment's reply. Mutates `game`. */
export function stepGame(game: GameRecord, text: string, rules: GameRules = {}): string {
  if (game.done) throw new Error("the game is over");
  const guess = parseGuess(text);
  let reply: string;
  if (guess === undefined) {
    game.consecutive_parse_failures += 1;
    if (game.consecutive_parse_failures >= MAX_PARSE_FAILURES) {
      game.consecutive_parse_failures = 0;
      game.lives -= 1;
      reply =
        game.lives <= 0
          ? `❌ Too many parsing attempts. Lost a life! Lives: ${game.lives}\n\nGame over! Correct groups were:\n${allGroupsText(game)}`
          : `❌ Too many parsing attempts. Lost a life! Lives: ${game.lives}\n\n${boardText(game)}`;
    } else {
      reply =
        `⚠️  Guess format issue (${game.consecutive_parse_failures}/${MAX_PARSE_FAILURES} attempts). ` +
        "Please provide exactly 4 words separated by commas inside <guess>...</guess> tags.";
    }
  } else {
    game.consecutive_parse_failures = 0;
    const matched = matchGroup(game, guess);
    if (matched && !rules.faithful && isFound(game, matched)) {
      reply = wrongGuess(game, `Incorrect: ${matched.group} was already found`);
    } else if (matched) {
      removeFoundWords(game, matched);
      reply = `🎉 CORRECT! You found: ${formatGroup(matched)}`;
      const last = game.found.length === 3 && game.remaining.length === 4 ? matchGroup(game, game.remaining) : undefined;
      if (last) {
        removeFoundWords(game, last);
        reply += `\n\n🎉 BONUS! The last group completes itself: ${formatGroup(last)}\n\nPuzzle solved!`;
      } else if (game.found.length >= 4) {
        reply += "\n\nPuzzle solved!";
      } else {
        reply += `\n\n${boardText(game)}`;
      }
    } else {
      reply = wrongGuess(game, "Incorrect");
    }
  }
  game.done = game.lives <= 0 || game.found.length >= 4;
  return reply;
}

// --- rubric ----------------------------------------------------------------------------------

/** The game after replaying the assistant turns of a completion (stops when the game ends). */
export function replay(groups: PuzzleGroup[], turns: readonly string[], rules: GameRules = {}): GameRecord {
  const board = groups.flatMap((g) => g.members);
  const game = newGame(groups, board, 0);
  for (const t of turns) {
    stepGame(game, t, rules);
    if (game.done) break;
  }
  return game;
}

/** `success_reward`: 1 when 4 groups were found. */
export const successReward = (g: GameRecord): number => (g.found.length >= 4 ? 1 : 0);
/** `efficiency_reward`: lives left / 4 when solved (= (4 − mistakes)/4), else 0. */
export const efficiencyReward = (g: GameRecord): number => (g.found.length >= 4 ? Math.max(0, g.lives / START_LIVES) : 0);
/** `progress_reward`: groups found / 4. */
export const progressReward = (g: GameRecord): number => g.found.length / 4;
/** `format_reward`: the fraction of assistant turns holding a parseable 4-word guess. */
export function formatReward(turns: readonly string[]): number {
  if (turns.length === 0) return 0;
  return turns.filter((t) => parseGuess(t) !== undefined).length / turns.length;
}
