/**
 * Built-in tools (javascript, calculator), the arithmetic parser behind the calculator
 * (src/math/arith.ts) and numeric answer checking (src/env/math-answer.ts).
 */
import { afterAll, describe, expect, it } from "vitest";
import { ArithSyntaxError, calculate, evaluate, formatNumber, literals, parse, render, type ArithNode } from "../../src/math/arith.ts";
import {
  answersMatch,
  extractBoxedAnswer,
  extractFinalAnswer,
  gradeReply,
  lastAssistantText,
  lastBoxed,
  normalizeAnswerText,
  numericEqual,
  parseNumericAnswer,
} from "../../src/env/math-answer.ts";
import { createSandbox } from "../../src/sandbox/index.ts";
import type { Sandbox } from "../../src/sandbox/types.ts";
import { builtinTools } from "../../src/tools/builtin.ts";
import { calculatorTool, createCalculatorTool } from "../../src/tools/calculator.ts";
import { callTool } from "../../src/env/tool-dispatch.ts";
import { createJavascriptTool, formatRun, javascriptTool, truncateText } from "../../src/tools/javascript.ts";
import { COUNTDOWN_RULES, COUNTDOWN_SYNTAX } from "../../envs/countdown/index.ts";

const value = (src: string, opts = {}, rules = {}) => {
  const r = calculate(src, opts, rules);
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const error = (src: string, opts = {}, rules = {}) => {
  const r = calculate(src, opts, rules);
  if (r.ok) throw new Error(`expected an error, got ${r.value}`);
  return r.error;
};

describe("arith: parsing and evaluating", () => {
  it("follows precedence and associativity", () => {
    expect(value("1 + 2 * 3")).toBe(7);
    expect(value("(1 + 2) * 3")).toBe(9);
    expect(value("10 - 4 - 3")).toBe(3);
    expect(value("64 / 4 / 2")).toBe(8);
    expect(value("2 ^ 3 ^ 2")).toBe(512); // right-associative
    expect(value("2 ** 3 ** 2")).toBe(512);
    expect(value("-2 ^ 2")).toBe(-4); // unary minus binds looser than ^
    expect(value("(-2) ^ 2")).toBe(4);
    expect(value("2 ^ -1")).toBe(0.5);
    expect(value("-3 * -(2 + 1)")).toBe(9);
    expect(value("+5 - -5")).toBe(10);
    expect(value("7 % 3")).toBe(1);
    expect(value("-7 % 3")).toBe(2); // floored modulo: the sign of the divisor
    expect(value("7 % -3")).toBe(-2);
    expect(value("2 * 3 % 4")).toBe(2); // same level as * and /, left to right
  });

  it("reads numbers with decimals and exponents, and operator aliases", () => {
    expect(value("1.5 + .25 + 2.")).toBe(3.75);
    expect(value("1e3 + 2.5E-1")).toBe(1000.25);
    expect(value("10 ÷ 4 × 2 − 1")).toBe(4);
    expect(value("3 · 4 ⋅ 2")).toBe(24);
    expect(value("  \t12\n+ 3 ")).toBe(15);
  });

  it("has functions and constants", () => {
    expect(value("sqrt(16) + abs(-3)")).toBe(7);
    expect(value("floor(2.7) + ceil(2.1)")).toBe(5);
    expect(value("round(2.5)")).toBe(3);
    expect(value("round(-2.5)")).toBe(-3); // half away from zero
    expect(value("round(1.005, 2)")).toBe(1.01);
    expect(value("round(1234, -2)")).toBe(1200);
    expect(value("min(4, 2, 8) + max(1, 9)")).toBe(11);
    expect(value("log(1000)")).toBeCloseTo(3, 12);
    expect(value("log(8, 2)")).toBeCloseTo(3, 12);
    expect(value("ln(e)")).toBe(1);
    expect(value("exp(0)")).toBe(1);
    expect(value("pi")).toBe(Math.PI);
    expect(value("π * 2")).toBe(2 * Math.PI);
    expect(value("SQRT(4) + PI - pi")).toBe(2);
  });

  it("reports division by zero and impossible operations as errors", () => {
    expect(error("1 / 0")).toBe("division by zero");
    expect(error("5 % 0")).toBe("modulo by zero");
    expect(error("0 ^ -1")).toBe("division by zero");
    expect(error("sqrt(-1)")).toBe("square root of a negative number");
    expect(error("ln(0)")).toBe("logarithm of a number that is not positive");
    expect(error("log(8, 1)")).toBe("logarithm base must be positive and not 1");
    expect(error("(-8) ^ 0.5")).toMatch(/not a real number/);
    expect(error("10 ^ 400")).toMatch(/overflows/);
  });

  it("rejects malformed input with positioned syntax errors", () => {
    expect(error("")).toBe("syntax error: unexpected end of expression at position 0");
    expect(error("1 +")).toMatch(/unexpected end of expression/);
    expect(error("2(3)")).toMatch(/unexpected '\('/); // no implicit multiplication
    expect(error("2pi")).toMatch(/unexpected 'pi'/);
    expect(error("1,234")).toMatch(/commas only separate function arguments/);
    expect(value("max(1,234)")).toBe(234); // inside a call the comma separates arguments
    expect(error("foo(1)")).toMatch(/unknown function 'foo'/);
    expect(error("x + 1")).toMatch(/unknown name 'x'/);
    expect(error("sqrt 4")).toMatch(/expected '\(' after sqrt/);
    expect(error("sqrt(1, 2)")).toMatch(/sqrt takes 1 argument, got 2/);
    expect(error("min()")).toMatch(/unexpected '\)'/);
    expect(error("1 $ 2")).toMatch(/unexpected character "\$" at position 2/);
    expect(error("(1 + 2")).toMatch(/expected '\)'/);
    expect(error("1.2.3")).toMatch(/unexpected number \.3/);
    expect(error("1e999")).toMatch(/number too large/);
    expect(() => parse("1 +")).toThrow(ArithSyntaxError);
    const err = (() => {
      try {
        parse("1 + * 2");
      } catch (thrown) {
        return thrown;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(ArithSyntaxError);
    expect((err as ArithSyntaxError).position).toBe(4);
  });

  it("bounds length and nesting depth", () => {
    expect(error("1+".repeat(600) + "1")).toMatch(/longer than 1000 characters/);
    expect(value("(".repeat(60) + "1" + ")".repeat(60))).toBe(1);
    expect(error("(".repeat(65) + "1" + ")".repeat(65))).toMatch(/nested deeper than 64 levels/);
    expect(error("-".repeat(80) + "1")).toMatch(/nested deeper than 64 levels/);
    expect(value("(".repeat(100) + "1" + ")".repeat(100), { maxDepth: 200 })).toBe(1);
    expect(error("1 + 2", { maxLength: 3 })).toMatch(/longer than 3 characters/);
    // A long flat chain is not deep: it parses and evaluates.
    expect(value(Array.from({ length: 300 }, () => "1").join("+"))).toBe(300);
  });

  it("switches features off for stricter games", () => {
    expect(error("1.5 + 1", { decimals: false })).toMatch(/decimal numbers are not allowed/);
    expect(error("-1 + 2", { unary: false })).toMatch(/unary - is not allowed/);
    expect(error("2 ^ 3", { power: false })).toMatch(/'\^' is not allowed/);
    expect(error("2 ** 3", { power: false })).toMatch(/'\*\*' is not allowed/);
    expect(error("5 % 2", { modulo: false })).toMatch(/'%' is not allowed/);
    expect(error("sqrt(4)", { functions: false })).toMatch(/function 'sqrt' is not allowed/);
    expect(value("abs(-4)", { functions: ["abs"] })).toBe(4);
    expect(error("sqrt(4)", { functions: ["abs"] })).toMatch(/function 'sqrt' is not allowed/);
    expect(error("pi", { constants: false })).toMatch(/constant 'pi' is not allowed/);
  });

  it("with countdown's options accepts and rejects exactly what the countdown game does", () => {
    // Accepted, with their values: + - * / and the spellings − × · ÷, integers, parentheses, any
    // whitespace, nesting as deep as 1000 characters allow.
    const accepted: [string, number][] = [
      ["(100 + 4) * 7 - 3", 725],
      ["75 / 3 + 8", 33],
      ["25 * 4 * 100 * 50", 500000],
      ["(2 + 3) * (4 + 6)", 50],
      ["100 - 5 - 3", 92],
      ["100 / 5 / 2", 10],
      ["6×7−2", 40],
      ["8 ÷ 2 · 3", 12],
      ["007 + 1", 8],
      ["0", 0],
      ["  25\n+\t50\u00a0", 75],
      ["(".repeat(499) + "1" + ")".repeat(499), 1],
    ];
    for (const [src, v] of accepted) expect(value(src, COUNTDOWN_SYNTAX, COUNTDOWN_RULES), src).toBe(v);
    // Parsed, then refused by the TV rules (exact integer division, every step > 0).
    const illegal: [string, string][] = [
      ["7 / 2", "7 / 2 is not exact"],
      ["5 - 5 + 10", "5 - 5 = 0 is not positive"],
      ["3 - 5 + 10", "3 - 5 = -2 is not positive"],
      ["10 / (5 - 5)", "5 - 5 = 0 is not positive"],
      ["0 * 5", "0 * 5 = 0 is not positive"],
      ["5 / 0", "division by zero"],
      ["99999999 * 99999999", "result too large"],
      ["9007199254740991 / 2", "9007199254740991 / 2 is not exact"], // exact digits, not 15 significant
    ];
    for (const [src, message] of illegal) expect(error(src, COUNTDOWN_SYNTAX, COUNTDOWN_RULES), src).toBe(message);
    // Syntax errors: unary signs, decimals, powers, modulo, names, other spellings and characters.
    const rejected: [string, RegExp][] = [
      ["-5 + 10", /unary - is not allowed at position 0/],
      ["\u22125 + 10", /unary \u2212 is not allowed/],
      ["+5", /unary \+ is not allowed/],
      ["3.5 * 2", /decimal numbers are not allowed/],
      [".5", /decimal numbers are not allowed/],
      ["1,234", /unexpected ','/],
      ["1e3", /unexpected 'e3'/],
      ["2 ^ 3", /unexpected character "\^"/],
      ["2 ** 3", /'\*\*' is not allowed/],
      ["5 % 2", /unexpected character "%"/],
      ["2 \u22c5 3", /unexpected character "\u22c5"/], // ⋅ (dot operator) is not a countdown spelling
      ["abs(5)", /function 'abs' is not allowed/],
      ["pi", /constant 'pi' is not allowed/],
      ["\u03c0", /constant 'pi' is not allowed/],
      ["x + 1", /unknown name 'x'/],
      ["2(3 + 4)", /unexpected '\('/],
      ["9007199254740992", /number too large/],
      ["1 = 1", /unexpected character "="/],
      ["1".repeat(1001), /longer than 1000 characters/],
    ];
    for (const [src, re] of rejected) {
      expect(() => parse(src, COUNTDOWN_SYNTAX), src).toThrow(ArithSyntaxError);
      expect(error(src, COUNTDOWN_SYNTAX, COUNTDOWN_RULES), src).toMatch(re);
    }
    // The default parser reads the spellings countdown leaves out.
    expect(value("2 \u22c5 3 ^ 2 % 5")).toBe(3); // (2 * 3^2) % 5
    expect(error("2 ^ -1", {}, { integer: true })).toBe("a power needs a non-negative whole exponent");
    expect(error("2 ^ 0.5", {}, { integer: true })).toBe("0.5 is not a whole number");
    expect(error("sqrt(4)", {}, { integer: true })).toBe("sqrt is not allowed in integer arithmetic");
    expect(error("pi", {}, { integer: true })).toBe("constant pi is not allowed in integer arithmetic");
    expect(error("9007199254740991 + 2", {}, { integer: true })).toBe("result too large");
    expect(literals(parse("(25 + 3) * sqrt(4) - -1"))).toEqual([25, 3, 4, 1]);
  });

  it("renders an AST that parses back to the same tree", () => {
    const samples = ["-(2 ^ 2) + (-2) ^ 2", "2 ^ 3 ^ 2", "(2 ^ 3) ^ 2", "a", "1 - (2 - 3)", "1 - 2 - 3", "(1 + 2) * 3 % 4", "-(1 + 2)", "--1", "2 ^ -1 ^ 2", "max(1, 2 + 3) / .5", "1 / (2 * 3)"];
    for (const src of samples) {
      if (src === "a") continue;
      const ast: ArithNode = parse(src);
      const again = parse(render(ast));
      expect(again, src).toEqual(ast);
      const a = evaluate(ast);
      const b = evaluate(again);
      expect(b, src).toEqual(a);
    }
    expect(render(parse("-(2^2)"))).toBe("-2 ^ 2");
    expect(render(parse("(1+2)*3"))).toBe("(1 + 2) * 3");
  });

  it("formats results without float noise", () => {
    expect(formatNumber(0.1 + 0.2)).toBe("0.3");
    expect(formatNumber(1 / 3)).toBe("0.333333333333333");
    expect(formatNumber(-0)).toBe("0");
    expect(formatNumber(123456789012)).toBe("123456789012");
    expect(formatNumber(2 ** 53)).toBe("9007199254740990"); // 15 significant digits
    expect(formatNumber(1e21)).toBe("1e+21");
  });
});

describe("calculator tool", () => {
  const run = (expression: string) => callTool(calculatorTool, { expression }, {});

  it("evaluates and answers with the formatted value", async () => {
    expect(await run("(3.5 + 2) * 4 ^ 2 / sqrt(16)")).toEqual({ ok: true, content: "22" });
    expect(await run("0.1 + 0.2")).toEqual({ ok: true, content: "0.3" });
    expect(await run("12.5% 5")).toEqual({ ok: true, content: "2.5" });
  });

  it("turns errors into tool errors the model can read", async () => {
    expect(await run("1/0")).toEqual({ ok: false, content: "Error: division by zero" });
    expect(await run("2 +")).toEqual({ ok: false, content: "Error: syntax error: unexpected end of expression at position 3" });
    expect(await run("process.exit()")).toEqual({ ok: false, content: "Error: syntax error: unexpected character \".\" at position 7" });
    expect((await callTool(calculatorTool, { expr: "1" }, {})).content).toMatch(/^Error: invalid arguments for calculator/);
  });

  it("never executes code", async () => {
    for (const attack of ["constructor.constructor('return process')()", "this", "globalThis", "(() => 1)()", "`1`", "[1]", "a = 1"]) {
      const r = await run(attack);
      expect(r.ok, attack).toBe(false);
      expect(r.content, attack).toMatch(/^Error: syntax error/);
    }
  });

  it("can be configured", async () => {
    const strict = createCalculatorTool({ name: "int_calc", parse: { decimals: false }, rules: { integer: true } });
    expect(strict.name).toBe("int_calc");
    expect(await callTool(strict, { expression: "7 / 2" }, {})).toEqual({ ok: false, content: "Error: 7 / 2 is not exact" });
    expect(await callTool(strict, { expression: "8 / 2" }, {})).toEqual({ ok: true, content: "4" });
  });

  it("shows its schema and documents its syntax", () => {
    expect(calculatorTool.openai.function.parameters).toMatchObject({ type: "object", required: ["expression"], additionalProperties: false });
    expect(calculatorTool.description).toMatch(/sqrt/);
    expect(calculatorTool.description).toMatch(/no thousands separators/);
    expect(builtinTools.calculator).toBe(calculatorTool);
    expect(builtinTools.javascript).toBe(javascriptTool);
  });
});

describe("javascript tool: formatting", () => {
  it("truncates with a marker that says how much was dropped", () => {
    expect(truncateText("abcdef", 10)).toBe("abcdef");
    expect(truncateText("abcdef", 4)).toBe("abcd…[truncated 2 chars]");
    expect(truncateText("ab😀cd", 3)).toBe("ab…[truncated 4 chars]"); // never splits a surrogate pair
  });

  it("answers without a sandbox with an error", async () => {
    // A tool always gets a sandbox (AuthorServices); with none given, its runs fail saying so.
    expect(await callTool(javascriptTool, { code: "1 + 1" }, {})).toEqual({ ok: false, content: expect.stringMatching(/^Error: no code sandbox was given to this environment/) });
  });

  it("formats runs like a notebook cell", () => {
    const base = { ok: true, stdout: "", stderr: "", elapsedMs: 1 };
    expect(formatRun({ ...base, result: 42 })).toBe("result: 42");
    expect(formatRun({ ...base, result: "hi" })).toBe('result: "hi"');
    expect(formatRun({ ...base, result: null, stdout: "a\nb\n" })).toBe("stdout:\na\nb");
    expect(formatRun({ ...base, result: [1], stdout: "x\n", stderr: "w\n" })).toBe("stdout:\nx\nstderr:\nw\nresult: [1]");
    expect(formatRun({ ...base, result: null })).toMatch(/^result: null \(nothing was printed/);
  });

  it("tells the model its limits", () => {
    expect(javascriptTool.description).toMatch(/2000 ms, 64 MiB/);
    expect(javascriptTool.description).toMatch(/cut after 4000 characters/);
    expect(javascriptTool.openai.function.parameters).toMatchObject({
      properties: { code: { type: "string" }, typescript: { type: "boolean" } },
      required: ["code"],
    });
    const plain = createJavascriptTool({ typescript: false, timeoutMs: 500, maxChars: 100 });
    expect(plain.openai.function.parameters).not.toHaveProperty("properties.typescript");
    expect(plain.description).toMatch(/500 ms/);
  });
});

describe.each(["quickjs", "isolated-vm"] as const)("javascript tool on %s", (kind) => {
  const sandbox: Sandbox = createSandbox(kind);
  afterAll(() => sandbox.dispose());
  const run = (args: Record<string, unknown>, tool = javascriptTool) => callTool(tool, args, { sandbox });

  it("returns the last expression's value and the output", async () => {
    expect(await run({ code: "1 + 2" })).toEqual({ ok: true, content: "result: 3" });
    expect(await run({ code: "console.log('hi', 2); [1, 2].map(x => x * 2)" })).toEqual({ ok: true, content: "stdout:\nhi 2\nresult: [2,4]" });
    expect(await run({ code: "let s = 0; for (let i = 1; i <= 100; i++) s += i; console.log(s)" })).toEqual({ ok: true, content: "stdout:\n5050" });
    // With top-level await the code runs as an async function body: `return` gives the value.
    expect(await run({ code: "const v = await Promise.resolve(7); return v * 6" })).toEqual({ ok: true, content: "result: 42" });
  });

  it("runs TypeScript", async () => {
    expect(await run({ code: "const x: number = 20; const f = (n: number): number => n * 2; f(x) + 2", typescript: true })).toEqual({
      ok: true,
      content: "result: 42",
    });
    expect((await run({ code: "const x: = 1", typescript: true })).content).toMatch(/^Error: SyntaxError/);
  });

  it("keeps nothing between calls", async () => {
    await run({ code: "globalThis.secret = 1; var kept = 2" });
    expect(await run({ code: "typeof secret + ' ' + typeof kept" })).toEqual({ ok: true, content: 'result: "undefined undefined"' });
  });

  it("reports guest errors as readable tool errors", async () => {
    const r = await run({ code: "console.log('before'); null.x" });
    expect(r.ok).toBe(false);
    expect(r.content).toMatch(/^Error: TypeError: .*null.*\nstdout:\nbefore$/s);
    expect((await run({ code: "throw new RangeError('bad')" })).content).toBe("Error: RangeError: bad");
    expect((await run({ code: "let = ;" })).content).toMatch(/^Error: SyntaxError/);
    expect((await run({ code: "require('fs')" })).content).toMatch(/^Error: ReferenceError: .*require.* is not defined/);
    expect((await run({ code: "process.exit(1)" })).content).toMatch(/^Error: ReferenceError: .*process.* is not defined/);
  });

  it("enforces the time limit and keeps working afterwards", async () => {
    const quick = createJavascriptTool({ timeoutMs: 200 });
    // On a loaded machine the watchdog may stop the run before QuickJS's own interrupt does: the
    // same timeout, with a note that the thread was replaced.
    const spun = await run({ code: "while (true) {}" }, quick);
    expect(spun.ok).toBe(false);
    expect(spun.content).toMatch(/^Error: TimeoutError: execution exceeded the time limit of 200 ms( \(stopped by the watchdog: the QuickJS thread was replaced, output lost\))?$/);
    expect(await run({ code: "6 * 7" }, quick)).toEqual({ ok: true, content: "result: 42" });
  });

  it("cuts long output at the advertised limit", async () => {
    const r = await run({ code: "console.log('x'.repeat(10000))" });
    expect(r.ok).toBe(true);
    expect(r.content).toBe(`stdout:\n${"x".repeat(3992)}…[truncated 6008 chars]`);
    const small = createJavascriptTool({ maxChars: 20 });
    expect((await run({ code: "'y'.repeat(50)" }, small)).content).toBe('result: "yyyyyyyyyyy…[truncated 40 chars]');
  });
});

describe("math-answer: extracting the final answer", () => {
  it("takes the last \\boxed{} with balanced braces, like verifiers' extract_boxed_answer", () => {
    expect(lastBoxed("first \\boxed{1}, finally \\boxed{2}")).toBe("2");
    expect(lastBoxed("\\boxed{\\frac{1}{2}}")).toBe("\\frac{1}{2}");
    expect(lastBoxed("\\boxed{{a}{b}} tail")).toBe("{a}{b}");
    expect(lastBoxed("no box")).toBeUndefined();
    expect(lastBoxed("\\boxed{3")).toBeUndefined();
    expect(extractBoxedAnswer("\\boxed{3")).toBe("\\boxed{3"); // unbalanced: the whole text
    expect(extractBoxedAnswer("just 42")).toBe("just 42");
    expect(extractBoxedAnswer("\\boxed{}")).toBe("");
  });

  it("strips think blocks and supports strict mode", () => {
    expect(extractFinalAnswer("<think>\\boxed{1}</think> so \\boxed{2}")).toBe("2");
    expect(extractFinalAnswer("<think>\\boxed{1}</think> 7")).toBe("7");
    expect(extractFinalAnswer("7", true)).toBeUndefined();
    expect(lastAssistantText([{ role: "user", content: "q" }, { role: "assistant", content: "a" }, { role: "tool", tool_call_id: "x", content: "t" }])).toBe("a");
    expect(lastAssistantText([{ role: "assistant", content: "\\boxed{1}" }, { role: "assistant", content: null, tool_calls: [] }])).toBe("");
    expect(lastAssistantText("plain")).toBe("plain");
  });
});

describe("math-answer: reading numbers", () => {
  const read = (s: string) => {
    const r = parseNumericAnswer(s);
    return r ? `${r.exact.num}/${r.exact.den} ${r.form}${r.percent ? " %" : ""}` : undefined;
  };

  it("reads integers, decimals, signs and exponents exactly", () => {
    expect(read("42")).toBe("42/1 integer");
    expect(read("-3.5")).toBe("-7/2 decimal");
    expect(read("+7")).toBe("7/1 integer");
    expect(read("− 7")).toBe("-7/1 integer");
    expect(read(".5")).toBe("1/2 decimal");
    expect(read("5.")).toBe("5/1 integer"); // a trailing period ends the sentence
    expect(read("0.10")).toBe("1/10 decimal");
    expect(read("1e-3")).toBe("1/1000 decimal");
    expect(read("1.5 \\times 10^{3}")).toBe("1500/1 decimal");
    expect(read("2.5\\cdot10^-2")).toBe("1/40 decimal");
    expect(read("123456789012345678901234567890")).toBe("123456789012345678901234567890/1 integer");
  });

  it("reads thousands separators only in groups of three", () => {
    expect(read("1,234,567")).toBe("1234567/1 integer");
    expect(read("1,234.5")).toBe("2469/2 decimal");
    expect(read("1{,}234")).toBe("1234/1 integer");
    expect(read("1\\,000\\,000")).toBe("1000000/1 integer");
    expect(read("1,23")).toBeUndefined();
    expect(read("1234,567")).toBeUndefined();
    expect(read("3, 4")).toBeUndefined();
  });

  it("reads fractions and mixed numbers", () => {
    expect(read("3/4")).toBe("3/4 fraction");
    expect(read("6/8")).toBe("3/4 fraction");
    expect(read("-3/4")).toBe("-3/4 fraction");
    expect(read("\\frac{3}{4}")).toBe("3/4 fraction");
    expect(read("\\dfrac{3}{4}")).toBe("3/4 fraction");
    expect(read("\\tfrac{3}{4}")).toBe("3/4 fraction");
    expect(read("\\frac34")).toBe("3/4 fraction");
    expect(read("-\\frac{3}{4}")).toBe("-3/4 fraction");
    expect(read("\\frac{-3}{4}")).toBe("-3/4 fraction");
    expect(read("\\frac{3}{-4}")).toBe("-3/4 fraction");
    expect(read("\\frac{1.5}{3}")).toBe("1/2 decimal");
    expect(read("2 1/2")).toBe("5/2 fraction");
    expect(read("2\\frac{1}{2}")).toBe("5/2 fraction");
    expect(read("-2 1/2")).toBe("-5/2 fraction");
    expect(read("(3/4)")).toBe("3/4 fraction");
    expect(read("-(3/4)")).toBe("-3/4 fraction");
    expect(read("3/0")).toBeUndefined();
    expect(read("\\frac{1}{0}")).toBeUndefined();
    expect(read("1/2/3")).toBeUndefined();
  });

  it("drops LaTeX wrappers, currency, relations and units", () => {
    expect(read("$12.50$")).toBe("25/2 decimal");
    expect(read("\\$12.50")).toBe("25/2 decimal");
    expect(read("€5")).toBe("5/1 integer");
    expect(read("\\(7\\)")).toBe("7/1 integer");
    expect(read("\\text{12}")).toBe("12/1 integer");
    expect(read("\\mathbf{12}")).toBe("12/1 integer");
    expect(read("\\left( 3 \\right)")).toBe("3/1 integer");
    expect(read("1\\!000")).toBe("1000/1 integer");
    expect(read("x = 5")).toBe("5/1 integer");
    expect(read("2 + 3 = 5")).toBe("5/1 integer");
    expect(read("\\pi \\approx 3.14")).toBe("157/50 decimal");
    expect(read("12 apples")).toBe("12/1 integer");
    expect(read("5\\text{ cm}")).toBe("5/1 integer");
    expect(read("3.5 km.")).toBe("7/2 decimal");
    expect(read("\\displaystyle \\frac{7}{2} \\text{ hours}")).toBe("7/2 fraction");
    expect(normalizeAnswerText("  $\\$1{,}000\\,$ ")).toBe("1,000");
  });

  it("reads percent signs", () => {
    expect(read("25%")).toBe("25/1 integer %");
    expect(read("25\\%")).toBe("25/1 integer %");
    expect(read("12.5 %")).toBe("25/2 decimal %");
  });

  it("refuses what is not one number", () => {
    for (const s of ["", "abc", "2 pi", "2x", "3 or 4", "1, 2", "sqrt(2)", "\\sqrt{2}", "1e1001", "∞", "x".repeat(3000), "(1)(2)", "1 2"]) {
      expect(read(s), s).toBeUndefined();
    }
  });
});

describe("math-answer: comparing", () => {
  it("compares fractions exactly and decimals with a relative tolerance (symmetric: exactExpected false)", () => {
    const faithful = { exactExpected: false };
    expect(answersMatch("0.75", "3/4", faithful)).toBe(true);
    expect(answersMatch("\\frac{6}{8}", "3/4", faithful)).toBe(true);
    expect(answersMatch("2/6", "1/3", faithful)).toBe(true);
    expect(answersMatch("0.3333333333333333", "1/3", faithful)).toBe(true); // a JS double of 1/3
    expect(answersMatch("0.333", "1/3", faithful)).toBe(false);
    expect(answersMatch("1000000001/1000000000", "1", faithful)).toBe(false); // both exact: no tolerance
    expect(answersMatch("1.000000001", "1", faithful)).toBe(false); // just above the relative tolerance
    expect(answersMatch("1.0000000001", "1", faithful)).toBe(true);
    expect(answersMatch("1,000", "1000", faithful)).toBe(true);
    expect(answersMatch("-0", "0", faithful)).toBe(true);
    expect(answersMatch("1e-13", "0", faithful)).toBe(true); // absolute tolerance near zero
    expect(answersMatch("1e-11", "0", faithful)).toBe(false);
    expect(answersMatch("2870166075540.0", "2870166078123", faithful)).toBe(true); // issue 39's hack: off by 2,583
    expect(answersMatch("2.870166078e+12", "2870166078123", faithful)).toBe(true);
  });

  it("matches an expected integer or fraction exactly by default, whatever the prediction's form", () => {
    expect(answersMatch("0.75", "3/4")).toBe(true);
    expect(answersMatch("\\frac{6}{8}", "3/4")).toBe(true);
    expect(answersMatch("2/6", "1/3")).toBe(true);
    expect(answersMatch("0.3333333333333333", "1/3")).toBe(false); // not 1/3 exactly
    expect(answersMatch("1.0000000001", "1")).toBe(false);
    expect(answersMatch("1e-13", "0")).toBe(false);
    expect(answersMatch("1,000", "1000")).toBe(true);
    expect(answersMatch("-0", "0")).toBe(true);
    expect(answersMatch("42.0", "42")).toBe(true);
    expect(answersMatch("4.2e1", "42")).toBe(true);
    expect(answersMatch("4.2 \\times 10^{1}", "42")).toBe(true);
    expect(answersMatch("2870166078123.0", "2870166078123")).toBe(true);
    expect(answersMatch("2870166075540.0", "2870166078123")).toBe(false); // issue 39: off by 2,583
    expect(answersMatch("2.870166078e+12", "2870166078123")).toBe(false);
    expect(answersMatch("2870166078123.000001", "2870166078123")).toBe(false);
    expect(answersMatch("2870166075540", "2870166078123")).toBe(false);
    // An expected decimal keeps the tolerance: it may itself be rounded.
    expect(answersMatch("0.3333333333333333", "0.333333333333333333")).toBe(true);
    expect(answersMatch("36", "36.0")).toBe(true);
    expect(answersMatch("25%", "0.25")).toBe(true);
  });

  it("keeps the exact and tolerant cases that do not depend on the expected answer's form", () => {
    expect(answersMatch("123456789012345678901", "123456789012345678900")).toBe(false); // exact integers
    expect(answersMatch("36", "36.0")).toBe(true);
    expect(answersMatch("73.6", "73.60")).toBe(true);
    expect(answersMatch("19/12", "1.5833333333333333")).toBe(true);
  });

  it("lets a percent sign mean the number or its hundredth", () => {
    expect(answersMatch("25%", "25")).toBe(true);
    expect(answersMatch("25%", "0.25")).toBe(true);
    expect(answersMatch("0.25", "25%")).toBe(true);
    expect(answersMatch("25", "25%")).toBe(true);
    expect(answersMatch("0.25%", "25")).toBe(false);
    const a = parseNumericAnswer("50%")!;
    const b = parseNumericAnswer("1/2")!;
    expect(numericEqual(a, b)).toBe(true);
  });

  it("compares non-numeric expected answers as normalised text", () => {
    expect(answersMatch("\\text{Yes}", "yes")).toBe(true);
    expect(answersMatch("no", "yes")).toBe(false);
    expect(answersMatch("", "")).toBe(false);
    expect(answersMatch("12", "")).toBe(false);
  });

  it("grades replies: 1 for a numerically equal final answer, else 0", () => {
    expect(gradeReply("The total is \\boxed{1{,}250}.", "1250")).toBe(1);
    expect(gradeReply("First \\boxed{3}, no wait: \\boxed{\\frac{7}{2}}", "3.5")).toBe(1);
    expect(gradeReply("\\boxed{3}", "3.5")).toBe(0);
    expect(gradeReply("42", "42")).toBe(1); // no box: the whole reply is read (verifiers, non-strict)
    expect(gradeReply("42", "42", { strict: true })).toBe(0);
    expect(gradeReply("The answer is 42", "42")).toBe(0); // a sentence is not a number
    expect(gradeReply("\\boxed{42", "42")).toBe(0);
    expect(gradeReply("", "42")).toBe(0);
    expect(gradeReply("<think>maybe \\boxed{41}</think>\\boxed{42}", "42")).toBe(1);
  });
});
