import { describe, expect, it } from "vitest";
import countdown, {
  answerExpression,
  buildPrompt,
  COUNTDOWN_RULES,
  generatePuzzle,
  judge,
  LARGE_NUMBERS,
  parseAnswer,
  SMALL_NUMBERS,
  tvScore,
  usesAvailableNumbers,
  type CountdownArgs,
  type CountdownInfo,
} from "../../envs/countdown/index.ts";
import { ArithSyntaxError, evaluate, literals, render } from "../../src/math/arith.ts";
import { resetEpisode, stepEpisode } from "../../src/env/episode.ts";
import { PyRandom } from "../../src/pycompat/random.ts";
import { scoreItems } from "../../src/server/score.ts";

const value = (src: string) => evaluate(parseAnswer(src), COUNTDOWN_RULES);

describe("arithmetic parser (src/math/arith.ts with the countdown options)", () => {
  it("respects precedence, parentheses and left associativity", () => {
    expect(value("2 + 3 * 4")).toEqual({ ok: true, value: 14 });
    expect(value("(2 + 3) * 4")).toEqual({ ok: true, value: 20 });
    expect(value("100 - 5 - 3")).toEqual({ ok: true, value: 92 });
    expect(value("100 / 5 / 2")).toEqual({ ok: true, value: 10 });
    expect(value("2 * 3 + 4 * 5")).toEqual({ ok: true, value: 26 });
    expect(value("((7))")).toEqual({ ok: true, value: 7 });
    expect(value("6×7−2")).toEqual({ ok: true, value: 40 });
    expect(value("8 ÷ 2 · 3")).toEqual({ ok: true, value: 12 });
    expect(value("  25\n+ 50 ")).toEqual({ ok: true, value: 75 });
  });

  it("rejects unary minus, decimals, implicit products and stray characters", () => {
    const bad: [string, RegExp][] = [
      ["-5 + 10", /unary - is not allowed at position 0/],
      ["10 * (-2 + 5)", /unary -/],
      ["+5", /unary \+/],
      ["3.5 * 2", /decimal/],
      ["2(3 + 4)", /unexpected '\('/],
      ["2 ** 3", /'\*\*' is not allowed/],
      ["2 ^ 3", /unexpected character "\^"/],
      ["(1 + 2", /expected '\)'/],
      ["1 + 2)", /unexpected '\)'/],
      ["", /unexpected end/],
      ["1 +", /unexpected end/],
      ["1 2", /unexpected number/],
      ["eval(1)", /unknown function 'eval'/],
      ["1".repeat(1001), /longer than 1000/],
    ];
    for (const [src, re] of bad) {
      expect(() => parseAnswer(src), src).toThrow(ArithSyntaxError);
      expect(() => parseAnswer(src), src).toThrow(re);
    }
  });

  it("evaluates with the game's rules: exact division, positive intermediates", () => {
    expect(value("7 / 2")).toEqual({ ok: false, error: "7 / 2 is not exact" });
    expect(value("3 - 5")).toEqual({ ok: false, error: "3 - 5 = -2 is not positive" });
    expect(value("5 - 5 + 1")).toEqual({ ok: false, error: "5 - 5 = 0 is not positive" });
    expect(value("6 / (3 - 3)")).toEqual({ ok: false, error: "3 - 3 = 0 is not positive" });
    expect(evaluate(parseAnswer("6 / (3 - 3)"), { ...COUNTDOWN_RULES, positiveIntermediates: false })).toEqual({ ok: false, error: "division by zero" });
    expect(evaluate(parseAnswer("3 - 5"), { ...COUNTDOWN_RULES, positiveIntermediates: false })).toEqual({ ok: true, value: -2 });
    expect(value("99999999 * 99999999")).toEqual({ ok: false, error: "result too large" });
  });

  it("renders with minimal parentheses, round-tripping the tree", () => {
    for (const src of ["(100 - 5) * 9 - (8 - 1)", "1 + 2 * 3", "(1 + 2) * 3", "8 - (3 - 1)", "8 / (4 / 2)", "2 * (3 * 4)", "(2 * 3) * 4"]) {
      const e = parseAnswer(src);
      expect(parseAnswer(render(e))).toEqual(e);
    }
    expect(render(parseAnswer("((2 * 3)) * 4"))).toBe("2 * 3 * 4");
    expect(render(parseAnswer("8 - (3 - 1)"))).toBe("8 - (3 - 1)");
    expect(literals(parseAnswer("(100 - 5) * 9"))).toEqual([100, 5, 9]);
    expect(usesAvailableNumbers(parseAnswer("5 + 5"), [5, 1])).toBe(false);
    expect(usesAvailableNumbers(parseAnswer("5 + 5"), [5, 5])).toBe(true);
  });
});

describe("countdown environment", () => {
  // Seed 0: numbers [100, 50, 1, 5, 9, 8], target 848, witness (100 - 5) * 9 - (8 - 1)
  const start = () => resetEpisode(countdown, "c", { seed: 0 }).state;
  async function answer(content: string) {
    return (await stepEpisode(countdown, start(), { content })).result;
  }

  it("deals a seeded, solvable puzzle with a TV-style draw", () => {
    const s = start();
    expect(s.info).toEqual({ numbers: [100, 50, 1, 5, 9, 8], target: 848, solution: "(100 - 5) * 9 - (8 - 1)" });
    expect(s.answer).toBe("848");
    expect(s.messages).toEqual([{ role: "user", content: buildPrompt([100, 50, 1, 5, 9, 8], 848) }]);
    expect(s.messages[0]!.content).toBe(
      "Using the numbers [100, 50, 1, 5, 9, 8], create an arithmetic expression that equals 848.\n" +
        "Rules:\n" +
        "- You may use +, -, *, / and parentheses.\n" +
        "- Each number may be used at most once; you do not have to use all of them.\n" +
        "- Division is only allowed when it is exact, and every intermediate result must be a positive whole number.\n" +
        "- Write only the given numbers: no other numbers, no unary minus, no decimals.\n" +
        "If the target cannot be reached exactly, get as close as you can.\n" +
        "Think step by step, then give only the final expression inside <answer></answer> tags, for example <answer>(1 + 2) * 3</answer>.",
    );
  });

  it("gold: the exact target scores 1", async () => {
    const r = await answer("<think>95 * 9 = 855, minus 7</think>\n<answer>(100 - 5) * 9 - (8 - 1)</answer>");
    expect(r.done).toBe(true);
    expect(r.observation.metrics).toEqual({ countdown_reward: 1, format_reward: 1, valid_expression: 1 });
    expect(r.reward).toBe(1);
    // a trailing "= target" is tolerated; another exact route also scores 1
    expect((await answer("<answer>(100 - 5) * 9 - (8 - 1) = 848</answer>")).reward).toBe(1);
    expect((await answer("<answer>8 * (100 + 5) + 9 - 1</answer>")).reward).toBe(1);
  });

  it("partial: TV bands — within 5 scores 0.7, within 10 scores 0.5, further 0", async () => {
    expect((await answer("<answer>100 * 8 + 50 - 1</answer>")).reward).toBe(0.7); // 849: 1 away
    expect((await answer("<answer>100 * 8 + 50 - 5 + 1</answer>")).reward).toBe(0.7); // 846: 2 away
    expect((await answer("<answer>(100 - 5) * 9</answer>")).reward).toBe(0.5); // 855: 7 away
    expect((await answer("<answer>100 * 8 + 50 - 1 - 9</answer>")).reward).toBe(0.5); // 840: 8 away
    expect((await answer("<answer>100 * 8 + 50 - 9 + 1 - 5</answer>")).reward).toBe(0); // 837: 11 away
    const far = await answer("<answer>100 * 8</answer>"); // 800: 48 away
    expect(far.reward).toBe(0);
    expect(far.observation.metrics).toEqual({ countdown_reward: 0, format_reward: 1, valid_expression: 1 });
  });

  it("wrong: unavailable or reused numbers, inexact division, non-positive steps score 0", async () => {
    for (const a of ["100 * 8 + 48", "100 * 8 + 50 - 1 - 1", "(100 + 50) / 8 * 5", "(1 - 5) * 9 + 100 * 8"]) {
      const r = await answer(`<answer>${a}</answer>`);
      expect(r.reward, a).toBe(0);
      expect(r.observation.metrics, a).toEqual({ countdown_reward: 0, format_reward: 1, valid_expression: 0 });
    }
  });

  it("malformed: no tag, or not an expression, scores 0 with format 0", async () => {
    for (const a of ["848", "(100 - 5) * 9 - (8 - 1)", "<answer>100 x 8</answer>", "<answer>-1 + 849</answer>", "<answer></answer>"]) {
      const r = await answer(a);
      expect(r.reward, a).toBe(0);
      expect(r.observation.metrics, a).toEqual({ countdown_reward: 0, format_reward: 0, valid_expression: 0 });
    }
  });

  it("reads the answer after the think block, from the newest assistant message", () => {
    expect(answerExpression("<think><answer>1</answer></think><answer>2 + 3</answer>")).toBe("2 + 3");
    expect(answerExpression([{ role: "assistant", content: "<answer>1 + 1</answer>" }, { role: "assistant", content: "no" }])).toBe("1 + 1");
    expect(answerExpression("<answer> 2 * 3 = 6 </answer>")).toBe("2 * 3");
    expect(answerExpression("<answer>2 = 3 = 4</answer>")).toBe("2 = 3 = 4");
    expect(answerExpression("nothing")).toBeUndefined();
    expect(judge("2 = 3 = 4", [2, 3, 4], 5).status).toBe("syntax");
  });

  it("TV score bands", () => {
    expect([0, 1, 5, 6, 10, 11, 500].map(tvScore)).toEqual([1, 0.7, 0.7, 0.5, 0.5, 0, 0]);
  });

  it("scores statelessly from completion + info (or the target in answer)", async () => {
    const info = { numbers: [100, 50, 1, 5, 9, 8], target: 848 };
    const [a, b] = await scoreItems(countdown, [
      { completion: "<answer>100 * 8 + 50 - 1</answer>", info },
      { completion: "<answer>100 * 8 + 50 - 1</answer>", answer: "849", info: { numbers: [100, 50, 1, 5, 9, 8] } },
    ]);
    expect(a!.reward).toBe(0.7);
    expect(b!.reward).toBe(1);
  });

  it("refuses client info with more numbers than a puzzle can have", async () => {
    const [eight, many] = await scoreItems(countdown, [
      { completion: "<answer>1 + 2</answer>", info: { numbers: [1, 2, 3, 4, 5, 6, 7, 8], target: 3 } },
      { completion: "<answer>1 + 2</answer>", info: { numbers: Array.from({ length: 100_000 }, (_, i) => i), target: 3 } },
    ]);
    expect(eight!.reward).toBe(1);
    expect(many!.reward).toBe(0);
    expect(many!.errors?.countdown_reward).toMatch(/holds 100000 numbers; a puzzle has at most 8/);
  });
});

describe("countdown generator", () => {
  const defaults = countdown.parseArgs({}) as CountdownArgs;

  it("always deals solvable puzzles within the target range, deterministically", () => {
    for (let seed = 0; seed < 300; seed++) {
      const info = generatePuzzle(new PyRandom(seed), defaults);
      expect(info).toEqual(generatePuzzle(new PyRandom(seed), defaults));
      expect(info.numbers).toHaveLength(6);
      expect(info.numbers.slice(0, 2).every((n) => (LARGE_NUMBERS as readonly number[]).includes(n))).toBe(true);
      expect(info.numbers.slice(2).every((n) => (SMALL_NUMBERS as readonly number[]).includes(n))).toBe(true);
      expect(info.target).toBeGreaterThanOrEqual(101);
      expect(info.target).toBeLessThanOrEqual(999);
      expect(info.numbers).not.toContain(info.target);
      expect(judge(info.solution, info.numbers, info.target)).toEqual({ status: "ok", value: info.target, distance: 0 });
    }
  });

  it("takes difficulty args (count, large, target range) and rejects impossible ones", () => {
    const easy = resetEpisode(countdown, "e", { seed: 5, args: { count: 4, large: 0, target_min: 10, target_max: 50 } }).state.info as unknown as CountdownInfo;
    expect(easy.numbers).toHaveLength(4);
    expect(easy.numbers.every((n) => n <= 10)).toBe(true);
    expect(easy.target).toBeGreaterThanOrEqual(10);
    expect(easy.target).toBeLessThanOrEqual(50);
    expect(judge(easy.solution, easy.numbers, easy.target).status).toBe("ok");
    const big = generatePuzzle(new PyRandom(1), { ...defaults, count: 8, large: 4, target_min: 1000, target_max: 100000 });
    expect(judge(big.solution, big.numbers, big.target)).toMatchObject({ status: "ok", distance: 0 });
    expect(() => resetEpisode(countdown, "x", { args: { count: 3, large: 4 } })).toThrow(/invalid args/);
    expect(() => resetEpisode(countdown, "x", { args: { target_min: 10, target_max: 5 } })).toThrow(/invalid args/);
    expect(() => generatePuzzle(new PyRandom(0), { ...defaults, count: 2, large: 0, target_min: 101, target_max: 999 })).toThrow(/widen the target range/);
  });
});
