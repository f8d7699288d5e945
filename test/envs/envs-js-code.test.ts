/**
 * js-code: the task set (every task verified by a reference solution on both sandboxes), the
 * prompt, code extraction, the harness (including attempts to forge results) and the reward on
 * gold, partial, wrong, malformed and malicious solutions.
 */
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import jsCode, { buildPrompt, extractCode, formatReport, SYSTEM_PROMPT } from "../../envs/js-code/index.ts";
import { evaluateSolution, HARNESS_SOURCE, stripExports } from "../../envs/js-code/harness.ts";
import { REFERENCE } from "../../envs/js-code/reference.ts";
import { TASKS, TASKS_BY_ID, type CodeTask } from "../../envs/js-code/tasks.ts";
import { resetEpisode, stepEpisode } from "../../src/env/episode.ts";
import { scoreItems } from "../../src/server/score.ts";
import { createSandbox } from "../../src/sandbox/index.ts";
import type { JsonValue, Sandbox } from "../../src/sandbox/types.ts";

const env = jsCode;
const task = (id: string): CodeTask => TASKS_BY_ID.get(id)!;
const fence = (code: string, lang = "javascript") => "Here is my solution:\n\n```" + lang + "\n" + code + "\n```\n";

const FIZZ_GOLD = REFERENCE.fizzbuzz!.code;
/** Forgets FizzBuzz: passes n = 0, 3 and 10, fails 15 and 16 → 3/5. */
const FIZZ_PARTIAL = `function fizzBuzz(n) {
  const out = [];
  for (let i = 1; i <= n; i++) out.push(i % 3 === 0 ? "Fizz" : i % 5 === 0 ? "Buzz" : String(i));
  return out;
}`;
/** Hangs on n = 15 (the third hidden test) after passing the first two → 2/5 and timed_out. */
const FIZZ_HANGS_ON_15 = FIZZ_GOLD.replace("const out = [];", "const out = [];\n  if (n === 15) for (;;) {}");

const METRICS = (pass_rate: number, flags: Partial<Record<"load_error" | "timed_out" | "out_of_memory" | "sandbox_error", number>> = {}) => ({
  pass_rate,
  all_passed: pass_rate === 1 ? 1 : 0,
  load_error: 0,
  timed_out: 0,
  out_of_memory: 0,
  sandbox_error: 0,
  ...flags,
});

describe("js-code: tasks", () => {
  it("has at least 40 tasks of every category and difficulty, with examples and hidden tests", () => {
    expect(TASKS.length).toBeGreaterThanOrEqual(40);
    expect(new Set(TASKS.map((t) => t.id)).size).toBe(TASKS.length);
    expect(new Set(TASKS.map((t) => t.category))).toEqual(new Set(["string", "array", "math", "parsing", "data-structure"]));
    expect(new Set(TASKS.map((t) => t.difficulty))).toEqual(new Set(["easy", "medium", "hard"]));
    for (const t of TASKS) {
      expect(t.id, t.id).toMatch(/^[a-z0-9-]+$/);
      expect(t.name, t.id).toMatch(/^[A-Za-z_$][A-Za-z0-9_$]*$/);
      expect(t.signature, t.id).toContain(`function ${t.name}`);
      expect(t.description.length, t.id).toBeGreaterThan(40);
      expect(t.examples.length, t.id).toBeGreaterThanOrEqual(1);
      expect(t.examples.length, t.id).toBeLessThanOrEqual(3);
      expect(t.tests.length, t.id).toBeGreaterThanOrEqual(5);
      // Plain JSON in and out (what crosses the sandbox boundary).
      for (const c of [...t.examples, ...t.tests]) expect(JSON.parse(JSON.stringify(c)), t.id).toEqual(c);
    }
    // Most tasks show 2-3 examples; the single-example ones have long inputs.
    expect(TASKS.filter((t) => t.examples.length >= 2).length).toBeGreaterThanOrEqual(50);
  });

  it("has a reference solution for every task (and nothing else)", () => {
    expect(Object.keys(REFERENCE).sort()).toEqual(TASKS.map((t) => t.id).sort());
    expect(Object.values(REFERENCE).filter((r) => r.language === "typescript").length).toBeGreaterThanOrEqual(10);
  });
});

describe.each(["quickjs", "isolated-vm"] as const)("js-code: reference solutions on %s", (kind) => {
  const sandbox = createSandbox(kind);
  afterAll(() => sandbox.dispose());

  it("pass every example and every hidden test of every task", async () => {
    for (const t of TASKS) {
      const ref = REFERENCE[t.id]!;
      const e = await evaluateSolution(sandbox, t, ref.code, { typescript: ref.language === "typescript", tests: [...t.examples, ...t.tests] });
      expect(e, t.id).toEqual({ passed: t.examples.length + t.tests.length, total: t.examples.length + t.tests.length, status: "ok", message: null, failures: [] });
    }
  });
});

describe("js-code: prompt and code extraction", () => {
  it("builds the prompt from the signature, the specification and the examples only", () => {
    const t = task("two-sum");
    const p = buildPrompt(t, "javascript");
    expect(p).toContain("Write a JavaScript function `twoSum`.");
    expect(p).toContain(t.signature);
    expect(p).toContain(t.description);
    expect(p).toContain('twoSum([2,7,11,15], 9)\n// => [0,1]');
    expect(p).toContain("```javascript code block");
    expect(buildPrompt(t, "typescript")).toContain("Write a TypeScript function `twoSum`.");
    expect(buildPrompt(t, "typescript")).toContain("```typescript code block");
    for (const x of TASKS) {
      const prompt = buildPrompt(x, "javascript");
      expect(prompt, x.id).not.toContain(REFERENCE[x.id]!.code.trim().split("\n")[1]!.trim() || "\u0000");
      for (const c of x.tests) {
        const shown = x.examples.some((e) => JSON.stringify(e.args) === JSON.stringify(c.args));
        if (!shown) expect(prompt, x.id).not.toContain(`${x.name}(${c.args.map((a) => JSON.stringify(a)).join(", ")})\n// =>`);
      }
    }
  });

  it("serves tasks as a dataset filtered by difficulty and category", () => {
    const all = env.datasetFor(env.parseArgs({}), "train")!;
    expect(all.map((e) => e.id)).toEqual(TASKS.map((t) => t.id));
    expect(all[0]!.info).toEqual({ task_id: "reverse-words", function_name: "reverseWords", difficulty: "easy", category: "string" });
    const hard = env.datasetFor(env.parseArgs({ difficulty: "hard", category: "parsing" }), "train")!;
    expect(hard.map((e) => e.id)).toEqual(TASKS.filter((t) => t.difficulty === "hard" && t.category === "parsing").map((t) => t.id));
    const { state } = resetEpisode(env, "e", { index: 0 });
    expect(state.messages).toEqual([
      { role: "system", content: SYSTEM_PROMPT },
      { role: "user", content: buildPrompt(TASKS[0]!, "javascript") },
    ]);
    expect(state.answer).toBe("reverse-words");
    expect(env.maxTurns).toBe(1);
    expect(env.tools).toEqual([]);
  });

  it("extracts the last labelled block, else the last unlabelled block, else the whole reply", () => {
    expect(extractCode("```js\na\n```\ntext\n```javascript\nb\n```")).toEqual({ code: "b", typescript: false, source: "labelled_block" });
    expect(extractCode("```ts\nlet x: number = 1\n```")).toEqual({ code: "let x: number = 1", typescript: true, source: "labelled_block" });
    expect(extractCode("```typescript\nT\n```\n```python\nP\n```")).toMatchObject({ code: "T", typescript: true });
    expect(extractCode("```\nplain\n```")).toEqual({ code: "plain", typescript: false, source: "unlabelled_block" });
    expect(extractCode("```js\nlabelled\n```\n```\nunlabelled\n```")).toMatchObject({ code: "labelled" });
    expect(extractCode("function f() { return 1; }")).toEqual({ code: "function f() { return 1; }", typescript: false, source: "whole_reply" });
    expect(extractCode("<think>```js\nold\n```</think>\n```js\nnew\n```")).toMatchObject({ code: "new" });
    expect(extractCode("Sure:\n```js\nfunction f() {\n  return '```';\n}\n```")).toMatchObject({ code: "function f() {\n  return '```';\n}" });
    expect(extractCode("cut off:\n```js\nfunction f() {\n  return 1;")).toMatchObject({ code: "function f() {\n  return 1;", source: "labelled_block" });
    expect(extractCode("")).toEqual({ code: "", typescript: false, source: "whole_reply" });
  });

  it("drops export keywords so module-style answers run as scripts", () => {
    expect(stripExports("export function f() {}\nexport default function g() {}\n  export const h = 1;\nexport { f };")).toBe(
      "function f() {}\nfunction g() {}\n  const h = 1;\nexport { f };",
    );
  });

  it("keeps the harness free of template literals (the candidate's code is data, never spliced in)", () => {
    expect(HARNESS_SOURCE).not.toContain("`");
    expect(HARNESS_SOURCE.startsWith("(function () {\n\"use strict\";")).toBe(true);
  });
});

describe.each(["quickjs", "isolated-vm"] as const)("js-code: episodes on %s", (kind) => {
  const sandbox: Sandbox = createSandbox(kind);
  afterAll(() => sandbox.dispose());
  const fizz = TASKS.findIndex((t) => t.id === "fizzbuzz");
  const gcdIndex = TASKS.findIndex((t) => t.id === "gcd");

  async function play(index: number, reply: string, args: Record<string, unknown> = {}) {
    const { state } = resetEpisode(env, "ep", { index, args: { timeout_ms: 1500, ...args } });
    return stepEpisode(env, state, { content: reply }, { sandbox });
  }

  it("gold: every hidden test passes → reward 1", async () => {
    const r = await play(fizz, fence(FIZZ_GOLD));
    expect(r.result).toMatchObject({ done: true, reward: 1 });
    expect(r.result.observation.metrics).toEqual(METRICS(1));
    expect(r.result.observation.messages).toEqual([]);
    expect(r.state.state.evaluation).toEqual({ passed: 5, total: 5, status: "ok", message: null, failures: [] });
  });

  it("gold in TypeScript, in a module-style answer", async () => {
    const code = "export function gcd(a: number, b: number): number {\n  while (b !== 0) [a, b] = [b, a % b];\n  return a;\n}";
    const r = await play(gcdIndex, fence(code, "ts"));
    expect(r.result.reward).toBe(1);
  });

  it("partial: the fraction of hidden tests passed, with the failures in the state", async () => {
    const r = await play(fizz, fence(FIZZ_PARTIAL));
    expect(r.result.reward).toBe(0.6);
    expect(r.result.observation.metrics).toEqual(METRICS(0.6));
    const e = r.state.state.evaluation as { failures: { test: number; input: string; expected: string }[]; message: string };
    expect(e.message).toBe("2 of 5 tests failed");
    expect(e.failures.map((f) => [f.test, f.input])).toEqual([
      [2, "[15]"],
      [3, "[16]"],
    ]);
    // A gcd that gets gcd(0, x) wrong (1 whenever an argument is 0): 5 of 8. Euclid, not trial
    // division, so a slow machine cannot turn a wrong answer into a timeout.
    const zeroWrong = "function gcd(a, b) {\n  if (a === 0 || b === 0) return 1;\n  while (b) [a, b] = [b, a % b];\n  return a;\n}";
    expect((await play(gcdIndex, fence(zeroWrong))).result.reward).toBe(0.625);
  });

  it("reports the failures as a final message with feedback: true", async () => {
    const r = await play(fizz, fence(FIZZ_PARTIAL), { feedback: true });
    const report = r.result.observation.messages[0]!.content as string;
    expect(report).toMatch(/^Hidden tests: 3\/5 passed\.\nTest 3 failed: input \[15\], expected \["1","2","Fizz",.*"FizzBuzz"\], got \["1","2","Fizz",.*"Fizz"\]\nTest 4 failed/s);
    expect(r.result.reward).toBe(0.6);
    expect(formatReport({ passed: 0, total: 5, status: "timeout", message: "TimeoutError: x", failures: [] })).toBe("Hidden tests: 0/5 passed.\nTimeoutError: x");
  });

  it("wrong: a function that fails every test → 0 with no error flag", async () => {
    const r = await play(fizz, fence('function fizzBuzz(n) { return ["wrong"]; }'));
    expect(r.result.reward).toBe(0);
    expect(r.result.observation.metrics).toEqual(METRICS(0));
  });

  it("malformed: no code, a syntax error, a missing function, a throw at load → 0 with load_error", async () => {
    for (const reply of ["", "I don't know.", fence("function fizzBuzz(n) {"), fence("function fizz(n) { return []; }"), fence("throw new Error('no');")]) {
      const r = await play(fizz, reply);
      expect(r.result.reward, reply).toBe(0);
      expect(r.result.observation.metrics, reply).toEqual(METRICS(0, { load_error: 1 }));
    }
    const syntax = await play(fizz, fence("function fizzBuzz(n) {"));
    expect((syntax.state.state.evaluation as { message: string }).message).toMatch(/^the code failed to load: threw SyntaxError/);
    const missing = await play(fizz, fence("function fizz(n) { return []; }"));
    expect((missing.state.state.evaluation as { message: string }).message).toBe("the code does not define a function named fizzBuzz");
    const badTs = await play(fizz, fence("function fizzBuzz(n: number: string) {}", "ts"));
    expect(badTs.result.observation.metrics).toEqual(METRICS(0, { load_error: 1 }));
  });

  it("malicious: an infinite loop → timed_out, and passes before it still count", async () => {
    const all = await play(fizz, fence("function fizzBuzz(n) { for (;;) {} }"));
    expect(all.result.reward).toBe(0);
    expect(all.result.observation.metrics).toEqual(METRICS(0, { timed_out: 1 }));
    const some = await play(fizz, fence(FIZZ_HANGS_ON_15));
    expect(some.result.reward).toBe(0.4);
    expect(some.result.observation.metrics).toEqual(METRICS(0.4, { timed_out: 1 }));
  });

  it("malicious: host access fails inside the sandbox (process.exit, require('fs'), fetch)", async () => {
    for (const code of ["process.exit(1);\n" + FIZZ_GOLD, "const fs = require('fs');\n" + FIZZ_GOLD, "import fs from 'fs';\n" + FIZZ_GOLD]) {
      const r = await play(fizz, fence(code));
      expect(r.result.observation.metrics, code).toEqual(METRICS(0, { load_error: 1 }));
    }
    const inside = await play(fizz, fence("function fizzBuzz(n) { fetch('http://example.com'); return []; }"));
    expect(inside.result.observation.metrics).toEqual(METRICS(0));
    // The server process is still here and the sandbox still works.
    expect((await play(fizz, fence(FIZZ_GOLD))).result.reward).toBe(1);
  });

  // Not on QuickJS: near its memory limit QuickJS's GC thrashes for seconds (reference/sandboxes.md),
  // so the time limit ends such a run first and it reports timed_out, which the loop tests cover.
  it.skipIf(kind === "quickjs")("malicious: exhausting memory → out_of_memory", async () => {
    const r = await play(fizz, fence("function fizzBuzz(n) { const a = []; for (;;) a.push(new Array(1e6).fill(n)); }"));
    expect(r.result.reward).toBe(0);
    expect(r.result.observation.metrics).toEqual(METRICS(0, { out_of_memory: 1 }));
    expect((await play(fizz, fence(FIZZ_GOLD))).result.reward).toBe(1);
  });

  it("without a sandbox → 0 with sandbox_error", async () => {
    const { state } = resetEpisode(env, "ep", { index: fizz });
    const r = await stepEpisode(env, state, { content: fence(FIZZ_GOLD) }, {});
    expect(r.result.observation.metrics).toEqual(METRICS(0, { sandbox_error: 1 }));
  });

  it("scores statelessly, running the tests once per item", async () => {
    let runs = 0;
    const counting: Sandbox = { kind: sandbox.kind, run: (c, o) => (runs++, sandbox.run(c, o)), dispose: async () => {} };
    const [gold, partial] = await scoreItems(
      env,
      [
        { completion: fence(FIZZ_GOLD), answer: "fizzbuzz" },
        { completion: fence(FIZZ_PARTIAL), info: { task_id: "fizzbuzz" } },
      ],
      { sandbox: counting },
    );
    expect(gold).toEqual({ reward: 1, metrics: METRICS(1) });
    expect(partial).toEqual({ reward: 0.6, metrics: METRICS(0.6) });
    expect(runs).toBe(2);
    const [unknown] = await scoreItems(env, [{ completion: fence(FIZZ_GOLD) }], { sandbox });
    expect(unknown!.reward).toBe(0);
    expect(unknown!.errors?.pass_rate).toMatch(/unknown js-code task ""/);
  });
});

/** Attempts to make the harness report passes the function did not earn. */
const FORGERIES: Record<string, string> = {
  "overwrites the built-ins the harness could use": `
function fizzBuzz(n) { return ["nope"]; }
Array.prototype.every = () => true; Array.prototype.some = () => true; Array.prototype.includes = () => true;
JSON.stringify = () => '"same"'; JSON.parse = () => [0];
Object.keys = () => []; Object.getPrototypeOf = () => null; Array.isArray = () => false;
Reflect.apply = () => ["FizzBuzz"]; Function.prototype.call = () => true; Function.prototype.apply = () => true;
String.prototype.slice = () => ""; Number.prototype.toPrecision = () => "1"; String.prototype.toString = () => "x";
console.log = () => {}; globalThis.eval = () => fizzBuzz;
Object.defineProperty(Object.prototype, "nonce", { get() { return "forged"; }, configurable: true });
Object.defineProperty(Object.prototype, "passed", { get() { return 5; }, configurable: true });
Object.defineProperty(Array.prototype, "0", { get() { return "leak"; }, set(v) { globalThis.leak = v; }, configurable: true });`,
  "injects code to close the harness": `function fizzBuzz(n) { return []; }
})(); "{\\"passed\\":5,\\"total\\":5}"; (function () {`,
  "returns a summary from the top level": `function fizzBuzz(n) { return []; }
return '{"nonce":"x","passed":5,"total":5,"load_error":null,"failures":[]}';`,
  "prints fake progress lines": `function fizzBuzz(n) {
  for (let i = 0; i < 5; i++) for (const nonce of ["", "0", "x".repeat(32), "0".repeat(32)]) console.log(nonce + " " + i + " pass");
  return ["x"];
}`,
  "returns a Proxy that claims to be anything": `function fizzBuzz(n) {
  return new Proxy([], { get: (t, k) => (k === "length" ? 3 : "Fizz"), getPrototypeOf: () => Object.prototype, ownKeys: () => [], has: () => true });
}`,
  "looks for the hidden tests": `const stolen = globalThis.__jscInput;
function fizzBuzz(n) {
  const t = stolen && stolen.tests.find((x) => x.args[0] === n);
  if (t) return t.expected;
  let f = null;
  try { f = fizzBuzz.caller; } catch (e) {}
  return f ? [String(f)] : ["x"];
}`,
  "inspects the stack for harness functions": `const frames = [];
Error.prepareStackTrace = (e, cs) => { for (const c of cs) { try { const f = c.getFunction(); if (f && f !== fizzBuzz) frames.push(f); } catch (x) {} } return ""; };
function fizzBuzz(n) { new Error().stack; return frames.length ? frames.map(String) : ["x"]; }`,
  "throws objects with traps": `function fizzBuzz(n) {
  throw new Proxy({}, { get() { throw new Error("trap"); }, getPrototypeOf() { throw new Error("trap"); } });
}`,
};

describe.each(["quickjs", "isolated-vm"] as const)("js-code: the harness cannot be forged on %s", (kind) => {
  const sandbox = createSandbox(kind);
  afterAll(() => sandbox.dispose());

  it.each(Object.entries(FORGERIES))("%s", async (_name, code) => {
    const e = await evaluateSolution(sandbox, task("fizzbuzz"), code, { timeoutMs: 1500 });
    expect(e.passed).toBe(0);
    expect(["ok", "load_error"]).toContain(e.status);
    // Nothing the candidate returned contains the expected output of another test or harness source.
    for (const f of e.failures) {
      expect(f.got).not.toContain("nonce");
      expect(f.got).not.toContain("FizzBuzz");
    }
  });

  it("a solution that passes AND overwrites the built-ins still gets exactly its passes", async () => {
    const code = FIZZ_PARTIAL + "\nJSON.stringify = () => '[]'; Array.prototype.every = () => true; Object.keys = () => [];";
    const e = await evaluateSolution(sandbox, task("fizzbuzz"), code, { timeoutMs: 1500 });
    expect([e.passed, e.total, e.status]).toEqual([3, 5, "ok"]);
  });

  it("the expected values never enter the candidate's run: it reports its outputs, compared outside (issue 29)", async () => {
    const runs: string[] = [];
    // What a run holds besides the fixed harness: its globals.
    const recording: Sandbox = {
      kind: sandbox.kind,
      run: (c, o) => {
        expect(c).toBe(HARNESS_SOURCE);
        runs.push(JSON.stringify(o?.globals ?? {}));
        return sandbox.run(c, o);
      },
      dispose: async () => {},
    };
    // A shipped task: none of its expected values (as the harness would see them) is in the run.
    const fizz = task("fizzbuzz");
    expect(await evaluateSolution(recording, fizz, FIZZ_PARTIAL, { timeoutMs: 1500 })).toMatchObject({ passed: 3, total: 5 });
    expect(runs).toHaveLength(1);
    expect(runs[0]).not.toContain("expected");
    for (const t of fizz.tests) if (JSON.stringify(t.expected).length > 2) expect(runs[0]).not.toContain(JSON.stringify(JSON.stringify(t.expected)).slice(1, -1));
    expect(runs[0]).not.toContain("FizzBuzz");
    // A client's own tests: the same.
    const client: CodeTask = { ...fizz, id: "client", name: "double", tests: [{ args: [21], expected: 42 }, { args: [4], expected: "secret-7e1d" }] };
    expect(await evaluateSolution(recording, client, "function double(x) { return 2 * x; }", { timeoutMs: 1500 })).toMatchObject({ passed: 1, total: 2 });
    expect(runs[1]).not.toContain("secret-7e1d");
    // 42 nowhere in the run's globals but as digits of its random nonce; the arguments are there.
    const withoutNonce = runs[1]!.replace(/"nonce":"[0-9a-f]+"/g, "");
    expect(withoutNonce).not.toContain("42");
    expect(withoutNonce).toContain('"[21]"');
  });

  it("the run's reported forms and the expected values' agree on every kind of value: short texts, digests of long ones, keys in any order", async () => {
    const values: JsonValue[] = [
      0, -0, 1e21, 0.1 + 0.2, -5e-324, 2 ** 53 + 2, "", "x".repeat(64), "x".repeat(65), "é😀\ud800\udfff\n\u0000\"\\", "\ud83d".repeat(40),
      [], [[[]]], { b: 1, a: [1, { d: null, c: true }], "": false, "10": 1, "9": 2, "é": 3, "z": 4, "\ud800": 5 },
      Array.from({ length: 300 }, (_, i) => ({ [`k${i % 7}`]: i / 3, s: "é😀".repeat(i % 5) })),
      "long ".repeat(20_000),
    ];
    const identity: CodeTask = { ...task("fizzbuzz"), id: "client", name: "same", tests: values.map((v) => ({ args: [v], expected: v })) };
    const e = await evaluateSolution(sandbox, identity, "function same(x) { return x; }", { timeoutMs: 5000 });
    expect(e).toMatchObject({ passed: values.length, total: values.length, status: "ok" });
    // And a one-character difference anywhere fails, short or long.
    const off: CodeTask = { ...identity, tests: [{ args: ["x".repeat(64)], expected: "x".repeat(63) + "y" }, { args: ["long ".repeat(20_000)], expected: "long ".repeat(19_999) + "lonG " }, { args: [{ a: 1 }], expected: { a: 1, b: 2 } }] };
    const wrong = await evaluateSolution(sandbox, off, "function same(x) { return x; }", { timeoutMs: 5000 });
    expect(wrong).toMatchObject({ passed: 0, total: 3 });
    expect(wrong.failures[0]).toMatchObject({ test: 0, got: JSON.stringify("x".repeat(64)) });
  });

  it("the summary of 200 failing tests, each shown at its longest, fits the run's output limit", async () => {
    const many: CodeTask = { ...task("fizzbuzz"), id: "client", name: "bad", tests: Array.from({ length: 200 }, (_, i) => ({ args: [i], expected: i })) };
    const e = await evaluateSolution(sandbox, many, 'function bad(i) { if (i % 2) throw new Error("\\u0001".repeat(300)); return "\\u0001".repeat(300); }', { timeoutMs: 5000 });
    expect(e).toMatchObject({ passed: 0, total: 200, status: "ok" });
    expect(e.failures).toHaveLength(5);
  });

  it("compares structurally, whatever the key order, and numbers approximately only when the task says so", async () => {
    const wf = "function wordFrequency(text) { const o = Object.create(null); for (const w of (text.toLowerCase().match(/[a-z0-9]+/g) || []).reverse()) o[w] = (o[w] || 0) + 1; return o; }";
    expect((await evaluateSolution(sandbox, task("word-frequency"), wf)).passed).toBe(7);
    // movingAverage is "approx": float noise in the last digits is fine.
    const noisy = "function movingAverage(nums, k) { const out = []; for (let i = 0; i + k <= nums.length; i++) { let s = 0; for (let j = i; j < i + k; j++) s += nums[j]; out.push(s / k * (1 + 1e-15)); } return out; }";
    expect((await evaluateSolution(sandbox, task("moving-average"), noisy)).passed).toBe(7);
    // gcd is exact: 6 + 1e-15 is 6.000000000000001, not 6.
    const off = "function gcd(a, b) { while (b) [a, b] = [b, a % b]; return a === 6 ? 6.000000000000001 : a; }";
    expect((await evaluateSolution(sandbox, task("gcd"), off)).passed).toBe(7);
    // undefined is not null, "1" is not 1.
    const loose = "function twoSum(nums, target) { for (let j = 0; j < nums.length; j++) for (let i = 0; i < j; i++) if (nums[i] + nums[j] === target) return [String(i), j]; }";
    expect((await evaluateSolution(sandbox, task("two-sum"), loose)).passed).toBe(0);
  });
});

describe("js-code: README", () => {
  it("shows a prompt the code produces", () => {
    const readme = readFileSync(new URL("../../envs/js-code/README.md", import.meta.url), "utf8");
    expect(readme).toContain(buildPrompt(task("fizzbuzz"), "javascript"));
    expect(readme).toContain(SYSTEM_PROMPT);
  });
});
