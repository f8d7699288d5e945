/**
 * py-code: the task set (every reference solution passes every example and hidden test in the
 * python sandbox), prompts, code extraction, the harness against forgery (fake markers, sys.exit /
 * os._exit mid-run, __eq__ overrides, patched assert helpers, reading the tests), episodes, and
 * the code-reward service (client `info.tests` through POST /envs/py-code/score).
 */
import { inlineEngine } from "../../src/server/engine.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pyCode, { buildPrompt, extractCode, SYSTEM_PROMPT, MAX_TEST_TIMEOUT_MS } from "../../envs/py-code/index.ts";
import { evaluatePython, normaliseOutput, type TestSpec } from "../../envs/py-code/harness.ts";
import { REFERENCE } from "../../envs/py-code/reference.ts";
import { TASKS, TASKS_BY_ID, taskTests, type FunctionTask } from "../../envs/py-code/tasks.ts";
import { resetEpisode, stepEpisode } from "../../src/env/episode.ts";
import { createApp } from "../../src/server/app.ts";
import { StoreEpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { createPythonSandbox, type PythonSandbox } from "../../src/sandbox/engines/python/python.ts";
import type { RunOptions, Sandbox } from "../../src/sandbox/types.ts";

let python: PythonSandbox;
beforeAll(async () => {
  python = createPythonSandbox({ maxConcurrency: 2 });
  await python.warm();
}, 60_000);
afterAll(() => python.dispose());

const fence = (code: string) => "Here you go:\n\n```python\n" + code + "\n```\n";
const ADD_TESTS: TestSpec = { kind: "assert", tests: ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(10, 5) == 15", "assert add(0, 0) == 0"] };
const run = (code: string, spec: TestSpec = ADD_TESTS, timeoutMs = 1000) => evaluatePython(python, code, spec, { timeoutMs });

describe("py-code: tasks", () => {
  it("has at least 60 tasks, half functions and half programs, each with examples and at least 5 hidden tests", () => {
    expect(TASKS.length).toBeGreaterThanOrEqual(60);
    const functions = TASKS.filter((t) => t.kind === "function").length;
    expect(functions).toBeGreaterThanOrEqual(30);
    expect(TASKS.length - functions).toBeGreaterThanOrEqual(30);
    expect(new Set(TASKS.map((t) => t.id)).size).toBe(TASKS.length);
    expect(new Set(TASKS.map((t) => t.difficulty))).toEqual(new Set(["easy", "medium", "hard"]));
    for (const t of TASKS) {
      expect(t.examples.length, t.id).toBeGreaterThanOrEqual(1);
      expect(t.tests.length, t.id).toBeGreaterThanOrEqual(4);
      if (t.kind === "function") for (const a of [...t.examples, ...t.tests]) expect(a, t.id).toMatch(new RegExp(`^assert .*\\b${t.name}\\(`));
    }
    expect(Object.keys(REFERENCE).sort()).toEqual(TASKS.map((t) => t.id).sort());
  });

  it("every reference solution passes every example and hidden test", async () => {
    const failed: string[] = [];
    for (const t of TASKS) {
      const spec = taskTests(t, true);
      const e = await evaluatePython(python, REFERENCE[t.id]!, spec, { timeoutMs: 5000 });
      if (e.passed !== spec.tests.length || e.status !== "ok") failed.push(`${t.id}: ${JSON.stringify(e)}`);
    }
    expect(failed).toEqual([]);
  }, 180_000);

  it("builds prompts without the hidden tests or the reference", () => {
    for (const t of TASKS) {
      const p = buildPrompt(t);
      for (const test of t.tests) {
        const shown = (t.examples as unknown[]).some((e) => JSON.stringify(e) === JSON.stringify(test));
        if (!shown) expect(p, t.id).not.toContain(typeof test === "string" ? test : `\`\`\`\n${test.input}\`\`\`\nOutput`);
      }
      expect(p).not.toContain(REFERENCE[t.id]!.split("\n")[1] || "\u0000");
    }
    const f = TASKS_BY_ID.get("gcd") as FunctionTask;
    expect(buildPrompt(f)).toContain("def gcd(a: int, b: int) -> int:");
    expect(buildPrompt(TASKS_BY_ID.get("sum-two")!)).toContain("Input:\n```\n2 3\n```\nOutput:\n```\n5\n```");
  });

  it("extracts the last python block, else the last unlabelled block, else the whole reply", () => {
    expect(extractCode("```python\na\n```\n```py\nb\n```")).toBe("b");
    expect(extractCode("```\nplain\n```")).toBe("plain");
    expect(extractCode("```python\nlabelled\n```\n```\nunlabelled\n```")).toBe("labelled");
    expect(extractCode("<think>```python\nold\n```</think>```python\nnew\n```")).toBe("new");
    expect(extractCode("def f(): pass")).toBe("def f(): pass");
    expect(extractCode("cut:\n```python\ndef f():\n    return 1")).toBe("def f():\n    return 1");
  });

  it("compares program output line by line, ignoring trailing whitespace and trailing blank lines", () => {
    expect(normaliseOutput("a  \nb\t\n\n\n")).toEqual(["a", "b"]);
    expect(normaliseOutput("a\r\nb")).toEqual(["a", "b"]);
    expect(normaliseOutput("")).toEqual([]);
    expect(normaliseOutput(" a")).toEqual([" a"]);
  });
});

describe("py-code: grading", () => {
  it("scores correct, partial, wrong, broken and hanging code", async () => {
    expect(await run("def add(a, b):\n    return a + b")).toMatchObject({ passed: 4, total: 4, status: "ok", timeouts: 0 });
    expect(await run("def add(a, b):\n    return a + b if a >= 0 else 99")).toMatchObject({ passed: 3, status: "ok", failures: [{ test: 1, reason: "wrong answer" }] });
    expect(await run("def add(a, b):\n    return 'x'")).toMatchObject({ passed: 0, status: "ok" });
    expect(await run("def add(a, b)\n    return a + b")).toMatchObject({ passed: 0, status: "compile_error" });
    expect(await run("import nonexistent_module_xyz\ndef add(a, b): return a + b")).toMatchObject({ passed: 0, status: "compile_error" });
    expect(await run("")).toMatchObject({ passed: 0, status: "no_code" });
    const hang = await run("def add(a, b):\n    while a == 10: pass\n    return a + b", ADD_TESTS, 300);
    expect(hang).toMatchObject({ passed: 3, timeouts: 1, failures: [{ test: 2, reason: "timeout" }] });
    const raises = await run("def add(a, b):\n    raise ValueError('no')");
    expect(raises.passed).toBe(0);
    expect(raises.failures[0]).toEqual({ test: 0, reason: "ValueError" });
  });

  it("grades programs on stdin/stdout, a failing run fails its case", async () => {
    const spec: TestSpec = { kind: "stdio", tests: [{ input: "2 3\n", output: "5\n" }, { input: "10 -4", output: "6" }, { input: "0 0\n", output: "0\n\n" }] };
    expect(await run("a, b = map(int, input().split())\nprint(a + b, ' ')", spec)).toMatchObject({ passed: 3, status: "ok" });
    expect(await run("a, b = map(int, input().split())\nprint(a + b)\nraise SystemExit(1)", spec)).toMatchObject({ passed: 0 });
    expect(await run("import sys\na, b = map(int, input().split())\nprint(a + b)\nsys.exit(0)\nprint('never')", spec)).toMatchObject({ passed: 3 });
    expect(await run("print(5)", spec)).toMatchObject({ passed: 1, failures: [{ test: 1, reason: "wrong output" }, { test: 2, reason: "wrong output" }] });
    expect(await run("print(", spec)).toMatchObject({ passed: 0, status: "compile_error" });
    expect(await run("while True: pass", spec, 200)).toMatchObject({ passed: 0, timeouts: 3 });
  });

  it("resists forgery: fake markers, exits, __eq__/__bool__ overrides, patched helpers, reading the tests", async () => {
    const forgeries = [
      // Printing what a result marker might look like, or a whole fake report.
      "print('pass pass pass')\nprint('{\"status\":\"ok\",\"result\":[\"ok\",[[\"ok\",\"3\"]]]}')\ndef add(a, b): return -777",
      // Ending the run while loading or inside the call.
      "import sys\nsys.exit(0)",
      "import os\ndef add(a, b):\n    os._exit(0)",
      "def add(a, b):\n    raise SystemExit(0)",
      // A value that claims to equal everything, and one that is always truthy.
      "class Any:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n    def __bool__(self): return True\ndef add(a, b): return Any()",
      "class I(int):\n    def __eq__(self, o): return True\ndef add(a, b): return I(0)",
      "class L(list):\n    def __eq__(self, o): return True\ndef add(a, b): return L()",
      // Patching what an assert might use.
      "import builtins\nbuiltins.AssertionError = type('X', (BaseException,), {})\nbuiltins.isinstance = lambda *a: True\nbuiltins.repr = lambda x: '3'\nbuiltins.type = lambda x: int\ndef add(a, b): return -777",
      "import ast\nast.literal_eval = lambda s: 3\nast.parse = None\ndef add(a, b): return -777",
      // Reading the tests: expected values are not in this interpreter, so nothing to find.
      "import gc\nvals = []\nfor o in gc.get_objects():\n    if isinstance(o, str) and 'assert' in o: vals.append(o)\nimport re\ndef add(a, b):\n    for v in vals:\n        m = re.search(r'== (\\-?\\d+)', v)\n        if m: return int(m.group(1))\n    return -777",
      "import sys\ndef add(a, b):\n    f = sys._getframe(1)\n    while f:\n        for v in f.f_locals.values():\n            if isinstance(v, list):\n                for x in v:\n                    if isinstance(x, str) and '==' in x: return int(x.split('==')[1].split()[0])\n        f = f.f_back\n    return -777",
    ];
    for (const code of forgeries) {
      const e = await run(code);
      expect(e.passed, code).toBe(0);
    }
    // Boolean-style tests: a lying __bool__ cannot pass them either.
    const boolSpec: TestSpec = { kind: "assert", tests: ["assert is_even(2)", "assert not is_even(3)"] };
    expect(await run("class T:\n    def __bool__(self): return True\ndef is_even(n): return T()", boolSpec)).toMatchObject({ passed: 0 });
    expect(await run("def is_even(n): return n % 2 == 0", boolSpec)).toMatchObject({ passed: 2 });
    // Programs cannot see the expected output.
    const stdio: TestSpec = { kind: "stdio", tests: [{ input: "1\n", output: "secret-42\n" }] };
    expect(await run("import gc\nprint([o for o in gc.get_objects() if isinstance(o, str) and 'secret' in o][:1])", stdio)).toMatchObject({ passed: 0 });
  });

  it("hidden tests and expected values go only to grading runs; candidate code never does (issue 29)", async () => {
    // Every run the harness makes, with its options.
    const runs: { code: string; options: RunOptions }[] = [];
    const recording: Sandbox = {
      kind: python.kind,
      run: (code, options = {}) => {
        runs.push({ code, options });
        return python.run(code, options);
      },
      dispose: async () => {},
    };
    const text = (r: (typeof runs)[number]) => r.code + JSON.stringify(r.options.globals ?? {}) + (r.options.stdin ?? "");
    const MARK = "# CANDIDATE-7d1f";
    const check = (secrets: string[]) => {
      const candidate = runs.filter((r) => text(r).includes(MARK));
      const grading = runs.filter((r) => r.options.grading === true);
      expect(candidate.length).toBeGreaterThan(0);
      for (const r of candidate) {
        expect(r.options.grading, "a candidate's run is not a grading run").toBeUndefined();
        for (const s of secrets) expect(text(r), "an expected value in a candidate's run").not.toContain(s);
      }
      for (const r of runs) {
        if (secrets.some((s) => text(r).includes(s))) expect(r.options.grading, `a run holding the tests: ${r.code.slice(0, 60)}`).toBe(true);
        if (r.options.grading) expect(text(r)).not.toContain(MARK);
      }
      return grading.length;
    };

    // A client's own asserts: PREPARE and VERIFY (which hold `== 400071`) are grading runs, PROBE is not.
    const asserts: TestSpec = { kind: "assert", tests: ["assert add(400000, 71) == 400071", "assert add(-5, 5) == 0 and add(1, 1) == 2"] };
    expect(await evaluatePython(recording, `${MARK}\ndef add(a, b):\n    return a + b`, asserts, { timeoutMs: 2000 })).toMatchObject({ passed: 2 });
    expect(check(["400071", "== 0 and"])).toBe(2);

    // A shipped task's hidden tests, through the environment (as an episode or /score runs them).
    runs.length = 0;
    const task = TASKS_BY_ID.get("gcd") as FunctionTask;
    const e = await evaluatePython(recording, `${MARK}\n${REFERENCE.gcd}`, taskTests(task), { timeoutMs: 2000 });
    expect(e).toMatchObject({ passed: task.tests.length, status: "ok" });
    expect(check(task.tests)).toBe(2);

    // Programs: the candidate's runs see the input only; the expected output is compared here.
    runs.length = 0;
    const stdio: TestSpec = { kind: "stdio", tests: [{ input: "7 8\n", output: "15\n" }, { input: "1 1\n", output: "expected-9f3e\n" }] };
    expect(await evaluatePython(recording, `${MARK}\nprint(sum(map(int, input().split())))`, stdio, { timeoutMs: 2000 })).toMatchObject({ passed: 1 });
    expect(check(["expected-9f3e"])).toBe(0);
  });

  it("accepts tests that use builtins and modules around the call, and nested calls", async () => {
    const spec: TestSpec = {
      kind: "assert",
      tests: [
        "assert sorted(pair(3)) == [3, 4]",
        "assert math.isclose(half(3), 1.5)",
        "assert half(half(8)) == 2",
        "assert pair(1) == (1, 2) and len(pair(5)) == 2",
        "assert {1: 'a'} == mapping()",
        "assert half(float('nan')) != half(float('nan'))",
      ],
    };
    const code = "def pair(n): return (n, n + 1)\ndef half(x): return x / 2\ndef mapping(): return {1: 'a'}";
    expect(await run(code, spec)).toMatchObject({ passed: 6, status: "ok" });
    expect(await run("def pair(n): return (n, n)\ndef half(x): return x\ndef mapping(): return {}", spec)).toMatchObject({ passed: 1 });
  });
});

describe("py-code: episodes and the code-reward service", () => {
  const services = () => ({ python });

  it("plays an episode: the reference scores 1, a wrong reply 0 with feedback", async () => {
    const index = TASKS.findIndex((t) => t.id === "sum-two");
    const { state } = resetEpisode(pyCode, "ep", { index, args: { feedback: true } });
    expect(state.messages[0]).toEqual({ role: "system", content: SYSTEM_PROMPT });
    const good = await stepEpisode(pyCode, structuredClone(state), { content: fence(REFERENCE["sum-two"]!) }, services());
    expect(good.result.reward).toBe(1);
    expect(good.result.observation.metrics).toMatchObject({ pass_rate: 1, all_passed: 1, tests_passed: 5, tests_total: 5, compile_error: 0, timed_out: 0 });
    const bad = await stepEpisode(pyCode, structuredClone(state), { content: fence("print('x')") }, services());
    expect(bad.result.reward).toBe(0);
    expect(bad.result.observation.messages.at(-1)?.content).toContain("Hidden tests: 0/5 passed.");
  });

  it("scores a client's own tests over HTTP (asserts and stdin/stdout), and refuses bad ones", async () => {
    const store = new MemoryEpisodeStore({});
    const app = createApp({ envs: [pyCode], host: new StoreEpisodeHost(store, inlineEngine(services()), {}), services: services() });
    const post = (items: unknown[]) => app.request("/envs/py-code/score", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ items }) });
    const res = await post([
      { completion: fence("def f(x):\n    return 2 * x"), info: { tests: ["assert f(2) == 4", "assert f(0) == 0", "assert f(-1) == 3"] } },
      { completion: fence("print(input()[::-1])"), info: { tests: [{ input: "abc\n", output: "cba\n" }, { input: "xy", output: "yx  \n" }], timeout_ms: 500 } },
      { completion: fence("while True: pass"), info: { tests: ["assert f(1) == 1"], timeout_ms: 200 } },
      { completion: fence("def f(x): return x"), info: { tests: "assert f(1) == 1" } },
      { completion: fence("def f(x): return x"), info: { tests: ["assert f(1) == 1"], timeout_ms: MAX_TEST_TIMEOUT_MS + 1 } },
      { completion: fence("def f(x): return x"), info: { task_id: "gcd" } },
    ]);
    expect(res.status).toBe(200);
    const { results } = (await res.json()) as { results: { reward: number; metrics: Record<string, number>; errors?: Record<string, string> }[] };
    expect(results[0]).toMatchObject({ reward: 2 / 3, metrics: { tests_passed: 2, tests_total: 3 } });
    expect(results[1]).toMatchObject({ reward: 1 });
    expect(results[2]).toMatchObject({ reward: 0, metrics: { timed_out: 1 } });
    expect(results[3]!.reward).toBe(0);
    expect(results[3]!.errors?.pass_rate).toMatch(/info.tests must be/);
    expect(results[4]!.errors?.pass_rate).toMatch(/info.timeout_ms/);
    expect(results[5]).toMatchObject({ reward: 0, metrics: { tests_passed: 0 } });
  });

  it("reports sandbox_error when there is no Python sandbox (Workers)", async () => {
    const e = await evaluatePython(undefined, "def add(a, b): return a + b", ADD_TESTS, { timeoutMs: 500 });
    expect(e).toMatchObject({ passed: 0, status: "sandbox_error" });
  });
});

describe("js-code: the same code-reward service (client info.tests)", () => {
  it("grades calls of info.function_name and stdin/stdout programs, and refuses bad tests", async () => {
    const { default: jsCode } = await import("../../envs/js-code/index.ts");
    const { scoreItems } = await import("../../src/server/score.ts");
    const { createSandbox } = await import("../../src/sandbox/index.ts");
    const sandbox = createSandbox("quickjs");
    try {
      const js = (code: string) => "```javascript\n" + code + "\n```";
      const results = await scoreItems(
        jsCode,
        [
          { completion: js("function double(x) { return 2 * x; }"), info: { function_name: "double", tests: [{ args: [2], expected: 4 }, { args: [-1], expected: -2 }, { args: [0], expected: 1 }] } },
          { completion: js("console.log(stdin.split(' ').map(Number).reduce((a, b) => a + b, 0))"), info: { tests: [{ input: "2 3", output: "5\n" }, { input: "1 1", output: "3" }] } },
          { completion: js("for (;;) {}"), info: { tests: [{ input: "", output: "x" }], timeout_ms: 200 } },
          { completion: js("function double(x) { return x; }"), info: { tests: [{ args: [1], expected: 1 }] } },
        ],
        { sandbox },
      );
      expect(results[0]).toMatchObject({ reward: 2 / 3 });
      expect(results[1]).toMatchObject({ reward: 0.5 });
      expect(results[2]).toMatchObject({ reward: 0, metrics: { timed_out: 1 } });
      expect(results[3]!.errors?.pass_rate).toMatch(/function_name/);
    } finally {
      await sandbox.dispose();
    }
  });
});
