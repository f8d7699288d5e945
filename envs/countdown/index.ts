/**
 * countdown: the numbers round of the TV game "Countdown" (Des chiffres et des lettres): reach a
 * target with + − × ÷ over a handful of numbers, each used at most once.
 *
 * Numbers are drawn like the show: `large` of {25, 50, 75, 100} and the rest from the twenty
 * small cards (1–10, two of each). The target is the value of a random expression built from the
 * drawn numbers under the game's rules, so every puzzle is solvable (the witness is kept in
 * `info.solution`). The model answers with one expression in `<answer>…</answer>`; it is parsed
 * by the general parser of `src/math/arith.ts` (recursive descent, never eval) with the strict
 * `COUNTDOWN_SYNTAX` and evaluated with `COUNTDOWN_RULES`, the TV rules: each number at most once,
 * division only when exact, every intermediate result a positive integer.
 *
 * Reward: TV scoring on a 0–1 scale — exact 1.0 (10 points), 1–5 away 0.7 (7 points), 6–10 away
 * 0.5 (5 points), otherwise (or an invalid expression) 0. Metrics (weight 0): `format_reward`,
 * `valid_expression`.
 */
import { arith, defineEnvironment, extractTag, type Message, type PyRandom, stripThink, z } from "envworker";

const { ArithSyntaxError, evaluate, literals, parse, render } = arith;
type ArithNode = arith.ArithNode;
type BinaryOp = arith.BinaryOp;
type EvalRules = arith.EvalRules;
type ParseOptions = arith.ParseOptions;

export const LARGE_NUMBERS = [25, 50, 75, 100] as const;
/** Most numbers a puzzle draws (the `count` arg's bound). */
export const MAX_COUNT = 8;
export const SMALL_NUMBERS = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10] as const;

const args = z
  .object({
    count: z.number().int().min(2).max(MAX_COUNT).default(6).describe("How many numbers are drawn (the show uses 6)."),
    large: z.number().int().min(0).max(4).default(2).describe("How many of them are large (25, 50, 75, 100)."),
    target_min: z.number().int().min(1).default(101).describe("Smallest target (the show: 101)."),
    target_max: z.number().int().min(1).max(1_000_000).default(999).describe("Largest target (the show: 999)."),
    system_prompt: z.string().nullable().default(null).describe("An optional system prompt (default: none)."),
  })
  .strict()
  .refine((a) => a.large <= a.count, { message: "large must be at most count", path: ["large"] })
  .refine((a) => a.target_min <= a.target_max, { message: "target_min must be at most target_max", path: ["target_min"] });

export type CountdownArgs = z.output<typeof args>;

export interface CountdownInfo {
  [key: string]: number | number[] | string;
  numbers: number[];
  target: number;
  /** One expression reaching the target (the generator's witness). */
  solution: string;
}

export function buildPrompt(numbers: readonly number[], target: number): string {
  return (
    `Using the numbers [${numbers.join(", ")}], create an arithmetic expression that equals ${target}.\n` +
    "Rules:\n" +
    "- You may use +, -, *, / and parentheses.\n" +
    "- Each number may be used at most once; you do not have to use all of them.\n" +
    "- Division is only allowed when it is exact, and every intermediate result must be a positive whole number.\n" +
    "- Write only the given numbers: no other numbers, no unary minus, no decimals.\n" +
    "If the target cannot be reached exactly, get as close as you can.\n" +
    "Think step by step, then give only the final expression inside <answer></answer> tags, for example <answer>(1 + 2) * 3</answer>."
  );
}

// --- the arithmetic of the game ------------------------------------------------------------

/** Longest answer expression accepted (characters). */
export const MAX_EXPRESSION_LENGTH = 1000;

/**
 * What an answer may contain: non-negative integer literals, `+ - * /` (also spelled `−` U+2212,
 * `×`, `·` and `÷`) and parentheses, at most `MAX_EXPRESSION_LENGTH` characters. No unary minus or
 * plus, decimals, exponents, powers, modulo, functions, constants, implicit multiplication
 * (`2(3+4)`) or any other character. Nesting is bounded by the length alone.
 */
export const COUNTDOWN_SYNTAX: Readonly<ParseOptions> = Object.freeze({
  decimals: false,
  unary: false,
  power: false,
  modulo: false,
  functions: false,
  constants: false,
  operators: Object.freeze({ "+": "+", "-": "-", "\u2212": "-", "*": "*", "\u00d7": "*", "\u00b7": "*", "/": "/", "\u00f7": "/" } as const),
  maxLength: MAX_EXPRESSION_LENGTH,
  // 1000 characters hold at most 500 nested parentheses: the depth limit never cuts in first.
  maxDepth: MAX_EXPRESSION_LENGTH,
});

/** The TV rules: exact integer arithmetic (exact division), every step's result > 0. */
export const COUNTDOWN_RULES: Readonly<EvalRules> = Object.freeze({ integer: true, positiveIntermediates: true });

/** Parse an answer with `COUNTDOWN_SYNTAX`. Throws `ArithSyntaxError`. */
export function parseAnswer(src: string): ArithNode {
  return parse(src, COUNTDOWN_SYNTAX);
}

/**
 * True when every literal of `ast` can be taken from `available` (a multiset: each number at most
 * as often as it is available).
 */
export function usesAvailableNumbers(ast: ArithNode, available: readonly number[]): boolean {
  const counts = new Map<number, number>();
  for (const n of available) counts.set(n, (counts.get(n) ?? 0) + 1);
  for (const n of literals(ast)) {
    const c = counts.get(n) ?? 0;
    if (c === 0) return false;
    counts.set(n, c - 1);
  }
  return true;
}

// --- generation ------------------------------------------------------------------------------

const ROUNDS = 100;
const ATTEMPTS_PER_DRAW = 50;

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** Draw the numbers: `large` large ones, then the rest from the small cards (no replacement). */
export function drawNumbers(rng: PyRandom, count: number, large: number): number[] {
  return [...rng.sample(LARGE_NUMBERS, large), ...rng.sample(SMALL_NUMBERS, count - large)];
}

interface Node {
  expr: ArithNode;
  value: number;
}

const numberNode = (n: number): ArithNode => ({ kind: "num", value: n, text: String(n) });

/**
 * A random expression over a random subset (at least 2) of `numbers`: repeatedly combine two
 * random partial results with a random operation that is legal under the game's rules (the larger
 * operand first; − only when the result stays positive; ÷ only when exact and by more than 1).
 */
export function randomExpression(rng: PyRandom, numbers: readonly number[]): Node {
  const k = rng.randint(2, numbers.length);
  const nodes: Node[] = rng.sample(range(numbers.length), k).map((i) => ({ expr: numberNode(numbers[i]!), value: numbers[i]! }));
  while (nodes.length > 1) {
    const [i, j] = rng.sample(range(nodes.length), 2) as [number, number];
    let a = nodes[i]!;
    let b = nodes[j]!;
    if (a.value < b.value) [a, b] = [b, a];
    const ops: BinaryOp[] = ["+", "*"];
    if (a.value > b.value) ops.push("-");
    if (b.value > 1 && a.value % b.value === 0) ops.push("/");
    const op = rng.choice(ops);
    const value = op === "+" ? a.value + b.value : op === "-" ? a.value - b.value : op === "*" ? a.value * b.value : a.value / b.value;
    for (const idx of [i, j].sort((x, y) => y - x)) nodes.splice(idx, 1);
    nodes.push({ expr: { kind: "bin", op, left: a.expr, right: b.expr }, value });
  }
  return nodes[0]!;
}

/**
 * Numbers and a target in [target_min, target_max] (and not itself one of the numbers), reached
 * by a random expression. All draws go through `rng`, so the seed fixes the puzzle.
 */
export function generatePuzzle(rng: PyRandom, a: CountdownArgs): CountdownInfo {
  for (let round = 0; round < ROUNDS; round++) {
    const numbers = drawNumbers(rng, a.count, a.large);
    for (let attempt = 0; attempt < ATTEMPTS_PER_DRAW; attempt++) {
      const node = randomExpression(rng, numbers);
      if (node.value >= a.target_min && node.value <= a.target_max && !numbers.includes(node.value)) {
        return { numbers, target: node.value, solution: render(node.expr) };
      }
    }
  }
  throw new Error(
    `countdown: no target in [${a.target_min}, ${a.target_max}] found for count=${a.count}, large=${a.large}; widen the target range`,
  );
}

// --- scoring ---------------------------------------------------------------------------------

/**
 * The answer text: `<answer>…</answer>` of the newest assistant message that has one, read after
 * its last `</think>`. A trailing "= <integer>" (the model restating the target) is dropped.
 */
export function answerExpression(completion: readonly Message[] | string): string | undefined {
  const messages: readonly Message[] = typeof completion === "string" ? [{ role: "assistant", content: completion }] : completion;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "assistant" || !m.content) continue;
    const text = extractTag(stripThink(m.content), "answer");
    if (text === undefined) continue;
    const eq = text.split("=");
    if (eq.length === 2 && /^\s*\d+\s*$/.test(eq[1]!)) return eq[0]!.trim();
    return text;
  }
  return undefined;
}

export type Judgement =
  | { status: "missing" }
  | { status: "syntax"; error: string }
  | { status: "illegal"; error: string }
  | { status: "ok"; value: number; distance: number };

/** Parse and check an answer against the puzzle. */
export function judge(answer: string | undefined, numbers: readonly number[], target: number): Judgement {
  if (answer === undefined) return { status: "missing" };
  let expr: ArithNode;
  try {
    expr = parseAnswer(answer);
  } catch (err) {
    if (err instanceof ArithSyntaxError) return { status: "syntax", error: err.message };
    throw err;
  }
  if (!usesAvailableNumbers(expr, numbers)) return { status: "illegal", error: "uses numbers that are not available (or one too often)" };
  const r = evaluate(expr, COUNTDOWN_RULES);
  if (!r.ok) return { status: "illegal", error: r.error };
  return { status: "ok", value: r.value, distance: Math.abs(target - r.value) };
}

/** TV scoring scaled to 1: 10 points exact, 7 within 5, 5 within 10, else 0. */
export function tvScore(distance: number): number {
  if (distance === 0) return 1;
  if (distance <= 5) return 0.7;
  if (distance <= 10) return 0.5;
  return 0;
}

function puzzleOf(info: unknown, answer: string): { numbers: number[]; target: number } {
  const i = (info ?? {}) as Partial<CountdownInfo>;
  if (!Array.isArray(i.numbers)) throw new Error("info.numbers is missing");
  // A /score client supplies info: no puzzle has more numbers than `count` allows.
  if (i.numbers.length > MAX_COUNT) throw new Error(`info.numbers holds ${i.numbers.length} numbers; a puzzle has at most ${MAX_COUNT}`);
  const target = typeof i.target === "number" ? i.target : Number(answer);
  if (!Number.isFinite(target)) throw new Error("no target: give info.target or answer");
  return { numbers: i.numbers, target };
}

export function countdownReward(completion: readonly Message[] | string, info: unknown, answer: string): number {
  const { numbers, target } = puzzleOf(info, answer);
  const j = judge(answerExpression(completion), numbers, target);
  return j.status === "ok" ? tvScore(j.distance) : 0;
}

export default defineEnvironment({
  name: "countdown",
  description: "Countdown numbers round: reach the target with + - * / using each number at most once.",
  version: "0.1.0",
  args,
  generate: ({ rng, args: a }) => {
    const info = generatePuzzle(rng, a);
    return { prompt: buildPrompt(info.numbers, info.target), answer: String(info.target), info };
  },
  systemPrompt: (a: CountdownArgs) => a.system_prompt ?? undefined,
  maxTurns: 1,
  rubric: [
    { name: "countdown_reward", weight: 1.0, fn: ({ completion, info, answer }) => countdownReward(completion, info, answer) },
    {
      name: "format_reward",
      weight: 0,
      fn: ({ completion }) => {
        const text = answerExpression(completion);
        if (text === undefined) return 0;
        try {
          parseAnswer(text);
          return 1;
        } catch {
          return 0;
        }
      },
    },
    {
      name: "valid_expression",
      weight: 0,
      fn: ({ completion, info, answer }) => {
        const { numbers, target } = puzzleOf(info, answer);
        return judge(answerExpression(completion), numbers, target).status === "ok" ? 1 : 0;
      },
    },
  ],
});
