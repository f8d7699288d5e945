/**
 * math-tools: seeded problems (checked by independent solvers over many seeds), the tool loop
 * with the calculator and the javascript sandbox, and the reward on gold, wrong and malformed
 * answers.
 */
import { readFileSync } from "node:fs";
import { rational } from "../../src/math/rational.ts";
import { afterAll, describe, expect, it } from "vitest";
import mathTools, { MAX_TURNS, SYSTEM_PROMPT } from "../../envs/math-tools/index.ts";
import { DIFFICULTIES, formatExact, GENERATORS, generateProblem } from "../../envs/math-tools/problems.ts";
import { calculate } from "../../src/math/arith.ts";
import { resetEpisode, stepEpisode, type EpisodeState } from "../../src/env/episode.ts";
import { ApiError } from "../../src/env/errors.ts";
import { answersMatch } from "../../src/env/math-answer.ts";
import type { Action, Message } from "../../src/env/messages.ts";
import { PyRandom } from "../../src/pycompat/random.ts";
import { scoreItems } from "../../src/server/score.ts";
import { createSandbox } from "../../src/sandbox/index.ts";
import type { Services } from "../../src/env/services.ts";

const env = mathTools;
const call = (id: string, name: string, args: unknown) => ({ id, type: "function" as const, function: { name, arguments: JSON.stringify(args) } });

/** Every number in a question, in order (ignoring the thousands-free formatting we use). */
const numbers = (q: string): number[] => Array.from(q.matchAll(/\d+(?:\.\d+)?/g), (m) => Number(m[0]));

/** Independent solutions, computed from the question text only. */
function solve(kind: string, q: string): string {
  const n = numbers(q);
  const expression = () => {
    const m = /^Compute (.*?)\.(?: Give|$)/.exec(q);
    if (!m) throw new Error(`no expression in ${q}`);
    const r = calculate(m[1]!);
    if (!r.ok) throw new Error(r.error);
    return String(r.value);
  };
  switch (kind) {
    case "add_sub":
    case "multiply":
    case "divide":
    case "order_of_operations":
    case "fractions":
    case "long_expression":
      return expression();
    case "change":
      return String(n[2]! - n[0]! * n[1]!);
    case "boxes":
      return String(Math.ceil(n[0]! / n[1]!));
    case "percent_of":
      return String((n[0]! * n[1]!) / 100);
    case "price_change":
      return String(n[0]! * (1 + n[1]! / 100) * (1 - n[2]! / 100));
    case "reading_days":
      return String(Math.ceil((n[0]! - n[1]!) / n[2]!));
    case "average_needed": {
      const count = n[0]!;
      const scores = n.slice(1, 1 + count);
      const target = n.at(-1)!;
      return String(target * (count + 1) - scores.reduce((a, b) => a + b, 0));
    }
    case "compound_interest":
      return String(n[0]! * (1 + n[1]! / 100) ** n[2]!);
    case "count_multiples": {
      const [limit, a, b] = [n[1]!, n[2]!, n[3]!];
      let count = 0;
      for (let i = 1; i <= limit; i++) if ((i % a === 0) !== (i % b === 0)) count++;
      return String(count);
    }
    case "sum_of_primes": {
      let sum = 0;
      for (let p = 2; p < n[0]!; p++) {
        let prime = true;
        for (let d = 2; d * d <= p; d++) if (p % d === 0) prime = false;
        if (prime) sum += p;
      }
      return String(sum);
    }
    case "sequence_term": {
      const terms = [BigInt(n[0]!), BigInt(n[1]!)];
      while (terms.length < n[2]!) terms.push(terms.at(-1)! + terms.at(-2)!);
      return terms[n[2]! - 1]!.toString();
    }
    case "tank_fraction": {
      const [capacity, fn, fd, un, ud, added] = n as [number, number, number, number, number, number];
      const water = (capacity * fn) / fd;
      return String((water - (water * un) / ud + added) / capacity);
    }
    case "lcm": {
      const gcd = (x: bigint, y: bigint): bigint => (y === 0n ? x : gcd(y, x % y));
      return n.map(BigInt).reduce((acc, x) => (acc * x) / gcd(acc, x), 1n).toString();
    }
    default:
      throw new Error(`no solver for ${kind}`);
  }
}

describe("math-tools: definition", () => {
  it("is a tool environment with the calculator and the javascript sandbox", () => {
    expect(env.name).toBe("math-tools");
    expect(env.maxTurns).toBe(MAX_TURNS);
    expect(MAX_TURNS).toBe(8);
    expect(env.tools.map((t) => t.name)).toEqual(["calculator", "javascript"]);
    expect(env.rubric.map((r) => [r.name, r.weight ?? 1])).toEqual([
      ["correct_answer", 1],
      ["boxed_answer", 0],
      ["num_turns", 0],
      ["num_tool_calls", 0],
      ["num_tool_errors", 0],
    ]);
    expect(env.parseArgs({})).toEqual({ difficulty: "mixed", system_prompt: SYSTEM_PROMPT, faithful: false });
    expect(() => env.parseArgs({ difficulty: "impossible" })).toThrow();
    expect(() => env.parseArgs({ extra: 1 })).toThrow();
  });

  it("rejects bad args on reset with a validation error", () => {
    expect(() => resetEpisode(env, "e", { seed: 1, args: { difficulty: "extreme" } })).toThrow(ApiError);
  });

  it("builds the prompt: system prompt, question, tool schemas", () => {
    const { state, result } = resetEpisode(env, "e", { seed: 7, args: { difficulty: "easy" } });
    expect(state.messages[0]).toEqual({ role: "system", content: SYSTEM_PROMPT });
    expect(SYSTEM_PROMPT).toMatch(/\\boxed\{\}/);
    expect(state.messages[1]!.role).toBe("user");
    expect(result.observation.tools?.map((t) => (t as { function: { name: string } }).function.name)).toEqual(["calculator", "javascript"]);
    const none = resetEpisode(env, "e", { seed: 7, args: { difficulty: "easy", system_prompt: null } });
    expect(none.state.messages.map((m) => m.role)).toEqual(["user"]);
  });
});

describe("math-tools: problems", () => {
  it("is deterministic per seed and uses only the episode rng", () => {
    for (const difficulty of [...DIFFICULTIES, "mixed"] as const) {
      for (let seed = 0; seed < 20; seed++) {
        const a = resetEpisode(env, "a", { seed, args: { difficulty } }).state;
        const b = resetEpisode(env, "b", { seed, args: { difficulty } }).state;
        expect(b.messages).toEqual(a.messages);
        expect(b.answer).toBe(a.answer);
        const p = generateProblem(new PyRandom(seed), difficulty);
        expect(a.messages.at(-1)!.content).toBe(p.question);
        expect(a.answer).toBe(p.answer);
        expect(a.info).toEqual({ difficulty: p.difficulty, kind: p.kind });
      }
    }
  });

  it("serves every kind of every difficulty, with the difficulty in info", () => {
    for (const difficulty of DIFFICULTIES) {
      const kinds = new Set<string>();
      for (let seed = 0; seed < 300; seed++) {
        const { state } = resetEpisode(env, "k", { seed, args: { difficulty } });
        expect(state.info.difficulty).toBe(difficulty);
        kinds.add(state.info.kind as string);
      }
      expect(kinds.size).toBe(GENERATORS[difficulty].length);
    }
    const mixed = new Set<string>();
    for (let seed = 0; seed < 100; seed++) mixed.add(resetEpisode(env, "m", { seed }).state.info.difficulty as string);
    expect([...mixed].sort()).toEqual(["easy", "hard", "medium"]);
  });

  it("has correct answers (independent solvers, 900 seeds), written exactly", () => {
    for (const difficulty of DIFFICULTIES) {
      for (let seed = 0; seed < 300; seed++) {
        const { state } = resetEpisode(env, "s", { seed, args: { difficulty } });
        const question = state.messages[1]!.content as string;
        const kind = state.info.kind as string;
        expect(state.answer, `${kind}: ${question}`).toMatch(/^-?\d+(\.\d+)?$|^-?\d+\/\d+$/);
        const mine = solve(kind, question);
        if (kind === "compound_interest") {
          // Rounded to cents: the exact answer is within half a cent of the unrounded value.
          expect(Math.abs(Number(mine) - Number(state.answer)), question).toBeLessThanOrEqual(0.005 + 1e-9);
          expect(state.answer).toMatch(/^\d+(\.\d{1,2})?$/);
        } else {
          // The solvers compute doubles: compared with the symmetric tolerance, not the grader's exact rule.
          expect(answersMatch(mine, state.answer, { exactExpected: false }), `${kind}: ${question} → ${state.answer}, solver ${mine}`).toBe(true);
        }
        if (kind === "average_needed") expect(Number(state.answer)).toBeGreaterThanOrEqual(0);
      }
    }
  });

  it("writes exact answers as integers, terminating decimals or reduced fractions", () => {
    const q = (n: bigint, d: bigint) => rational(n, d);
    expect(formatExact(q(36n, 1n))).toBe("36");
    expect(formatExact(q(368n, 5n))).toBe("73.6");
    expect(formatExact(q(1n, 20n))).toBe("0.05");
    expect(formatExact(q(-3n, 8n))).toBe("-0.375");
    expect(formatExact(q(19n, 12n))).toBe("19/12");
    expect(formatExact(q(-1n, 3n))).toBe("-1/3");
  });
});

function step(state: EpisodeState, action: Action, services: Services = {}) {
  return stepEpisode(env, state, action, services);
}

describe("math-tools: episodes", () => {
  // seed 2, easy: "Compute 1600 + 1490 - 379." → 2711
  const start = () => resetEpisode(env, "ep", { seed: 2, args: { difficulty: "easy" } }).state;

  it("uses the problem the tests expect", () => {
    const s = start();
    expect(s.messages[1]!.content).toBe("Compute 1600 + 1490 - 379.");
    expect(s.answer).toBe("2711");
  });

  it("gold: a calculator call, then the boxed answer → reward 1 with tool metrics", async () => {
    const r1 = await step(start(), { content: null, tool_calls: [call("c1", "calculator", { expression: "1600 + 1490 - 379" })] });
    expect(r1.result.done).toBe(false);
    expect(r1.result.observation.messages).toEqual([{ role: "tool", tool_call_id: "c1", content: "2711" }]);
    const r2 = await step(r1.state, { content: "1600 + 1490 - 379 = 2711, so the answer is \\boxed{2711}." });
    expect(r2.result).toMatchObject({ done: true, reward: 1 });
    expect(r2.result.observation.metrics).toEqual({ correct_answer: 1, boxed_answer: 1, num_turns: 2, num_tool_calls: 1, num_tool_errors: 0 });
  });

  it("accepts equal numbers written differently", async () => {
    for (const reply of ["\\boxed{2,711}", "\\boxed{2711.0}", "\\boxed{\\text{2711}}", "$\\boxed{2711}$", "\\boxed{x = 2711}"]) {
      const r = await step(start(), { content: reply });
      expect(r.result.reward, reply).toBe(1);
    }
  });

  it("hardened: a wrong integer written as a decimal scores 0; faithful: true keeps the old tolerance", async () => {
    const faithful = () => resetEpisode(env, "ep", { seed: 2, args: { difficulty: "easy", faithful: true } }).state;
    for (const reply of ["\\boxed{2711.0000000001}", "\\boxed{2.7110000000001e3}", "\\boxed{2710.9999999999}"]) {
      expect((await step(start(), { content: reply })).result.reward, reply).toBe(0);
      expect((await step(faithful(), { content: reply })).result.reward, reply).toBe(1);
    }
    for (const reply of ["\\boxed{2711.0}", "\\boxed{2.711e3}"]) expect((await step(start(), { content: reply })).result.reward, reply).toBe(1);
  });

  it("wrong: a wrong number scores 0; the last boxed answer counts", async () => {
    expect((await step(start(), { content: "\\boxed{2710}" })).result.reward).toBe(0);
    expect((await step(start(), { content: "\\boxed{2711}... no, \\boxed{2712}" })).result.reward).toBe(0);
    expect((await step(start(), { content: "\\boxed{2712}... no, \\boxed{2711}" })).result.reward).toBe(1);
  });

  it("malformed: prose without a box scores 0, a bare number still counts (non-strict, like verifiers)", async () => {
    const prose = await step(start(), { content: "The answer is 2711." });
    expect(prose.result.reward).toBe(0);
    expect(prose.result.observation.metrics).toMatchObject({ correct_answer: 0, boxed_answer: 0, num_turns: 1, num_tool_calls: 0 });
    const bare = await step(start(), { content: "2711" });
    expect(bare.result.reward).toBe(1);
    expect(bare.result.observation.metrics).toMatchObject({ correct_answer: 1, boxed_answer: 0 });
    expect((await step(start(), { content: "" })).result.reward).toBe(0);
    expect((await step(start(), { content: "\\boxed{2711" })).result.reward).toBe(0);
  });

  it("counts tool errors and goes on", async () => {
    const r1 = await step(start(), {
      content: null,
      tool_calls: [call("a", "calculator", { expression: "1600 + 1490 - 379 / 0" }), call("b", "calculator", { expression: "1600 + 1490 - 379" })],
    });
    expect(r1.result.observation.messages).toEqual([
      { role: "tool", tool_call_id: "a", content: "Error: division by zero" },
      { role: "tool", tool_call_id: "b", content: "2711" },
    ]);
    const r2 = await step(r1.state, { content: "\\boxed{2711}" });
    expect(r2.result.observation.metrics).toEqual({ correct_answer: 1, boxed_answer: 1, num_turns: 2, num_tool_calls: 2, num_tool_errors: 1 });
  });

  it("without a sandbox, the javascript tool answers with an error and the episode goes on", async () => {
    const r1 = await step(start(), { content: null, tool_calls: [call("j", "javascript", { code: "1600 + 1490 - 379" })] });
    expect(r1.result.observation.messages).toEqual([{ role: "tool", tool_call_id: "j", content: expect.stringMatching(/^Error: no code sandbox was given to this environment/) }]);
    expect(r1.result.done).toBe(false);
  });

  it(`truncates after ${MAX_TURNS} tool turns with reward 0`, async () => {
    let s = start();
    let last;
    for (let i = 0; i < MAX_TURNS; i++) {
      last = await step(s, { content: null, tool_calls: [call(`c${i}`, "calculator", { expression: "1+1" })] });
      s = last.state;
    }
    expect(last!.result).toMatchObject({ done: true, reward: 0 });
    expect(last!.result.observation.truncated).toBe(true);
    expect(last!.result.observation.metrics).toMatchObject({ num_turns: MAX_TURNS, num_tool_calls: MAX_TURNS });
  });

  it("scores statelessly (POST /score) from the answer and the completion", async () => {
    const completion: Message[] = [
      { role: "assistant", content: null, tool_calls: [call("c", "calculator", { expression: "2*3" })] },
      { role: "tool", tool_call_id: "c", content: "6" },
      { role: "assistant", content: "\\boxed{6}" },
    ];
    const [good, bad] = await scoreItems(env, [
      { prompt: "What is 2*3?", completion, answer: "6" },
      { prompt: "What is 2*3?", completion: "\\boxed{7}", answer: "6" },
    ]);
    expect(good).toEqual({ reward: 1, metrics: { correct_answer: 1, boxed_answer: 1, num_turns: 2, num_tool_calls: 1, num_tool_errors: 0 } });
    expect(bad!.reward).toBe(0);
  });
});

describe.each(["quickjs", "isolated-vm"] as const)("math-tools with the javascript tool on %s", (kind) => {
  const sandbox = createSandbox(kind);
  afterAll(() => sandbox.dispose());

  it("solves a hard problem with code", async () => {
    // seed 0, hard: "What is the least common multiple of 209, 400, 227?" → 18977200
    let { state } = resetEpisode(env, "h", { seed: 0, args: { difficulty: "hard" } });
    expect(state.messages[1]!.content).toBe("What is the least common multiple of 209, 400, 227?");
    const code = "const gcd = (a, b) => b ? gcd(b, a % b) : a;\nconst lcm = (a, b) => a / gcd(a, b) * b;\nconsole.log(lcm(lcm(209, 400), 227));";
    const r1 = await stepEpisode(env, state, { content: null, tool_calls: [call("js", "javascript", { code })] }, { sandbox });
    expect(r1.result.observation.messages).toEqual([{ role: "tool", tool_call_id: "js", content: "stdout:\n18977200" }]);
    state = r1.state;
    const r2 = await stepEpisode(env, state, { content: "The least common multiple is \\boxed{18977200}." }, { sandbox });
    expect(r2.result).toMatchObject({ done: true, reward: 1 });
    expect(r2.result.observation.metrics).toEqual({ correct_answer: 1, boxed_answer: 1, num_turns: 2, num_tool_calls: 1, num_tool_errors: 0 });
  });

  it("reports guest errors and time-outs as tool errors", async () => {
    const { state } = resetEpisode(env, "h", { seed: 0, args: { difficulty: "hard" } });
    const r = await stepEpisode(
      env,
      state,
      { content: null, tool_calls: [call("a", "javascript", { code: "undefinedFunction()" }), call("b", "javascript", { code: "for (;;) {}" })] },
      { sandbox },
    );
    const [a, b] = r.result.observation.messages;
    expect(a!.content).toMatch(/^Error: ReferenceError: .*undefinedFunction/);
    expect(b!.content).toBe("Error: TimeoutError: execution exceeded the time limit of 2000 ms");
  });
});

describe("math-tools: README", () => {
  it("shows the example exchange the code produces", () => {
    const readme = readFileSync(new URL("../../envs/math-tools/README.md", import.meta.url), "utf8");
    const { state } = resetEpisode(env, "r", { seed: 1, args: { difficulty: "medium" } });
    expect(readme).toContain(state.messages[1]!.content as string);
    expect(readme).toContain(state.answer);
    expect(readme).toContain(SYSTEM_PROMPT);
  });
});
