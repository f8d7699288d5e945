/**
 * Running a candidate solution against hidden tests: ONE sandbox run per evaluation, in which a
 * fixed harness script loads the candidate's code and calls the function on every test.
 *
 * Threat model. The candidate's code is untrusted and runs in the same JavaScript realm as the
 * harness, so it can redefine any global or prototype (`JSON`, `Object.prototype`,
 * `Array.prototype.every`, `console`...), print anything, throw anything (objects with getters,
 * Proxies), return Proxies or objects with getters, loop forever, exhaust memory, or try to end
 * the script itself (a top-level `return`, an injected `})();`, an unterminated comment). It must
 * not be able to (a) make the harness report a test as passed that its function did not pass,
 * (b) read the expected outputs, or (c) crash the host. How the harness ensures that:
 *
 * 1. The candidate's code is never concatenated into the harness source: it is passed as data
 *    (a JSON string in the sandbox's `globals`), so no syntax trick can change the harness
 *    program. The harness is one strict-mode IIFE whose return value (a string) is the run's
 *    result; the candidate cannot return or throw its way out of it.
 * 2. Before the candidate's code runs, the harness reads and deletes its input global and
 *    captures every built-in it uses later (Reflect.apply, JSON.parse/stringify, Object.keys,
 *    Object.getPrototypeOf, Array.isArray, Number.prototype.toPrecision, eval, console.log...).
 *    It precomputes, from the pristine realm, each test's arguments as JSON text and the
 *    expected value's canonical text.
 * 3. The code is loaded with an indirect eval of the source (so it sees only the global scope,
 *    never the harness's locals); a syntax error or a throw is a load error.
 * 4. Each test parses fresh arguments and calls the function with the captured Reflect.apply.
 *    The returned value is turned into canonical text by the harness's own serialiser, which
 *    touches the value only through captured functions and operators: it reads the value, never
 *    writes to it, and it never hands the expected values or any harness object to candidate
 *    code. Expected values exist only as primitive strings inside the IIFE closure; the
 *    comparison is `===` on strings. A Proxy or getter can run code while being read, but the
 *    only thing it can influence is the text of its own value.
 * 5. After the candidate's code runs, the harness creates no objects that candidate code could
 *    observe through prototype setters: results are accumulated in strings and numbers. The
 *    harness functions are strict, so `fn.caller` and V8's CallSite.getFunction reveal nothing.
 * 6. The summary is built as a JSON string containing a per-run nonce (random, from the host,
 *    deleted from the globals before the candidate runs). The host accepts only a summary with
 *    the right nonce and sane numbers.
 * 7. After each test the harness prints `<nonce> <index> pass|fail` with the captured
 *    console.log. If the run is cut short (time or memory limit, e.g. an infinite loop in test
 *    4), the host counts the passes printed before that; without the nonce, printed lines
 *    cannot be forged. Console output is otherwise ignored.
 * Limits (time, memory, output) are the sandbox's; the host never runs candidate code itself.
 */
import { type JsonValue, type RunResult, type Sandbox, stripTypes } from "envworker";
import type { CodeTask, TestCase } from "./tasks.ts";

/** The guest-side harness (plain ES2020, no backticks, strict). Input: the global `__jscInput`. */
export const HARNESS_SOURCE = String.raw`(function () {
"use strict";
var G = globalThis;
var input = G.__jscInput;
delete G.__jscInput;

var apply = Reflect.apply;
var indirectEval = G.eval;
var jsonParse = JSON.parse;
var jsonStringify = JSON.stringify;
var objectKeys = Object.keys;
var getPrototypeOf = Object.getPrototypeOf;
var isArray = Array.isArray;
var objectPrototype = Object.prototype;
var toPrecision = Number.prototype.toPrecision;
var NumberFn = Number;
var strSlice = String.prototype.slice;
var log = G.console.log;
var TOO_DEEP = { tooDeep: true };
var TOO_LARGE = { tooLarge: true };

var nonce = input.nonce;
var name = input.name;
var code = input.code;
var approx = input.approx === true;
var n = input.tests.length;
var budget = 0;

function clip(s, max) {
  return s.length > max ? apply(strSlice, s, [0, max]) + "…" : s;
}

function num(v) {
  if (v !== v) return "NaN";
  if (v === 0) return "0";
  if (approx && v - v === 0) return "" + NumberFn(apply(toPrecision, v, [12]));
  return "" + v;
}

function spend(s) {
  budget -= s.length;
  if (budget < 0) throw TOO_LARGE;
  return s;
}

// Canonical text of a value: JSON-like, object keys sorted, undefined object members dropped.
function canon(v, depth) {
  var type = typeof v;
  if (type === "string") {
    if (v.length > budget) throw TOO_LARGE;
    return spend(jsonStringify(v));
  }
  if (type === "number") return spend(num(v));
  if (type === "boolean") return v ? "true" : "false";
  if (type === "undefined") return "undefined";
  if (type === "bigint") return spend("" + v + "n");
  if (type !== "object") return "<" + type + ">";
  if (v === null) return "null";
  if (depth > 200) throw TOO_DEEP;
  var out, i;
  if (isArray(v)) {
    var len = v.length;
    if (typeof len !== "number" || len > budget) throw TOO_LARGE;
    out = spend("[");
    for (i = 0; i < len; i++) out += (i > 0 ? spend(",") : "") + canon(v[i], depth + 1);
    return out + spend("]");
  }
  var proto = getPrototypeOf(v);
  if (proto !== objectPrototype && proto !== null) return "<object>";
  var keys = objectKeys(v);
  var count = keys.length;
  if (count > budget) throw TOO_LARGE;
  // Insertion sort (the array comes from Object.keys: its indices are its own properties).
  for (i = 1; i < count; i++) {
    var key = keys[i];
    var j = i - 1;
    while (j >= 0 && keys[j] > key) {
      keys[j + 1] = keys[j];
      j--;
    }
    keys[j + 1] = key;
  }
  out = spend("{");
  var first = true;
  for (i = 0; i < count; i++) {
    var member = v[keys[i]];
    if (member === undefined) continue;
    out += (first ? "" : spend(",")) + spend(jsonStringify(keys[i])) + spend(":") + canon(member, depth + 1);
    first = false;
  }
  return out + spend("}");
}

function canonical(v) {
  budget = 1000000;
  return canon(v, 0);
}

function get(o, k) {
  try { return o[k]; } catch (e) { return undefined; }
}

function describe(e) {
  try {
    if (e === TOO_DEEP) return "a value nested too deeply";
    if (e === TOO_LARGE) return "a value too large to compare";
    if (e === null || (typeof e !== "object" && typeof e !== "function")) {
      return "threw " + (typeof e === "string" ? clip(e, 200) : typeof e === "symbol" ? "a symbol" : canonical(e));
    }
    var en = get(e, "name");
    var em = get(e, "message");
    var label = typeof en === "string" ? clip(en, 60) : "Error";
    return "threw " + label + (typeof em === "string" ? ": " + clip(em, 200) : "");
  } catch (x) {
    return "threw an exception";
  }
}

// Everything the tests need, computed before the candidate's code exists.
var argsJson = [];
var expected = [];
var expectedShown = [];
for (var t = 0; t < n; t++) {
  argsJson[t] = jsonStringify(input.tests[t].args);
  expected[t] = canonical(input.tests[t].expected);
  expectedShown[t] = clip(jsonStringify(input.tests[t].expected), 200);
}
input = null;

var fn;
var loadError = null;
try {
  var loaded = indirectEval(code + "\n;typeof " + name + " === \"function\" ? " + name + " : undefined");
  if (typeof loaded === "function") fn = loaded;
  else loadError = "the code does not define a function named " + name;
} catch (e) {
  loadError = "the code failed to load: " + describe(e);
}

var passed = 0;
var failures = "";
var shown = 0;
for (var i = 0; i < n; i++) {
  var ok = false;
  var got = "not run";
  if (fn !== undefined) {
    try {
      var value = apply(fn, undefined, jsonParse(argsJson[i]));
      got = canonical(value);
      ok = got === expected[i];
    } catch (e) {
      got = describe(e);
    }
  }
  if (ok) passed++;
  else if (shown < 5 && fn !== undefined) {
    failures += (shown > 0 ? "," : "") + "{\"test\":" + i + ",\"input\":" + jsonStringify(clip(argsJson[i], 200)) +
      ",\"expected\":" + jsonStringify(expectedShown[i]) + ",\"got\":" + jsonStringify(clip(got, 200)) + "}";
    shown++;
  }
  log(nonce + " " + i + (ok ? " pass" : " fail"));
}

return "{\"nonce\":" + jsonStringify(nonce) + ",\"passed\":" + passed + ",\"total\":" + n +
  ",\"load_error\":" + (loadError === null ? "null" : jsonStringify(loadError)) + ",\"failures\":[" + failures + "]}";
})()`;

export interface TestFailure {
  /** Index of the test. */
  test: number;
  /** The arguments, as JSON (clipped). */
  input: string;
  expected: string;
  got: string;
}

export type EvaluationStatus = "ok" | "no_code" | "load_error" | "timeout" | "memory" | "sandbox_error";

/** The outcome of running a solution against a task's tests (plain JSON, kept in episode state). */
export interface Evaluation {
  passed: number;
  total: number;
  status: EvaluationStatus;
  /** What went wrong, when status is not "ok" (or some tests failed). */
  message: string | null;
  /** The first few failed tests. */
  failures: TestFailure[];
}

export interface EvaluateOptions {
  /** Strip TypeScript types first. */
  typescript?: boolean;
  /** Time limit for the whole run (all tests), default 5000 ms. */
  timeoutMs?: number;
  /** Heap limit, default 64 MiB. */
  memoryMb?: number;
  /** Which tests to run (default: the hidden tests). */
  tests?: readonly TestCase[];
}

export const DEFAULT_TIMEOUT_MS = 5000;
export const DEFAULT_MEMORY_MB = 64;

function randomNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Top-level `export` keywords off (`export function f`, `export default function f`,
 * `export const f`): the code runs as a script, and models often write module syntax.
 */
export function stripExports(code: string): string {
  return code.replace(/^([ \t]*)export\s+(?:default\s+)?(?=(?:async\s+)?function\b|const\b|let\b|var\b|class\b)/gm, "$1");
}

/** Passes printed by the harness before the run stopped (see the threat model, point 7). */
function passesFromOutput(stdout: string, nonce: string, total: number): number {
  const passed = new Set<number>();
  for (const line of stdout.split("\n")) {
    const parts = line.split(" ");
    if (parts.length !== 3 || parts[0] !== nonce || parts[2] !== "pass") continue;
    const i = Number(parts[1]);
    if (Number.isInteger(i) && i >= 0 && i < total) passed.add(i);
  }
  return passed.size;
}

function parseSummary(result: JsonValue, nonce: string, total: number): { passed: number; loadError: string | null; failures: TestFailure[] } | undefined {
  if (typeof result !== "string") return undefined;
  let s: unknown;
  try {
    s = JSON.parse(result);
  } catch {
    return undefined;
  }
  if (typeof s !== "object" || s === null) return undefined;
  const r = s as Record<string, unknown>;
  if (r.nonce !== nonce || r.total !== total) return undefined;
  if (typeof r.passed !== "number" || !Number.isInteger(r.passed) || r.passed < 0 || r.passed > total) return undefined;
  if (!(r.load_error === null || typeof r.load_error === "string") || !Array.isArray(r.failures)) return undefined;
  const failures: TestFailure[] = [];
  for (const f of r.failures as unknown[]) {
    const x = f as Record<string, unknown>;
    if (typeof x?.test !== "number" || typeof x.input !== "string" || typeof x.expected !== "string" || typeof x.got !== "string") return undefined;
    failures.push({ test: x.test, input: x.input, expected: x.expected, got: x.got });
  }
  return { passed: r.passed, loadError: r.load_error as string | null, failures };
}

const evaluation = (total: number, status: EvaluationStatus, message: string | null, passed = 0, failures: TestFailure[] = []): Evaluation => ({
  passed,
  total,
  status,
  message,
  failures,
});

/**
 * Run `code` against the task's tests in one sandbox run. Never throws: every failure is an
 * Evaluation with a status and a message.
 */
export async function evaluateSolution(sandbox: Sandbox | undefined, task: CodeTask, code: string, options: EvaluateOptions = {}): Promise<Evaluation> {
  const tests = options.tests ?? task.tests;
  const total = tests.length;
  if (code.trim() === "") return evaluation(total, "no_code", "the reply contains no code");
  if (!sandbox) return evaluation(total, "sandbox_error", "no sandbox available");
  let source = stripExports(code);
  if (options.typescript) {
    // The sandbox's own type stripper (the `ts` run option uses the same function): it is applied
    // to the candidate's code only, which reaches the harness as data.
    const stripped = stripTypes(source);
    if (!stripped.ok) return evaluation(total, "load_error", `the code failed to load: ${stripped.name}: ${stripped.message}`);
    source = stripped.code;
  }
  const nonce = randomNonce();
  const globals: Record<string, JsonValue> = {
    __jscInput: {
      nonce,
      name: task.name,
      code: source,
      approx: task.compare === "approx",
      tests: tests.map((t) => ({ args: t.args, expected: t.expected })),
    },
  };
  let run: RunResult;
  try {
    run = await sandbox.run(HARNESS_SOURCE, {
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      memoryMb: options.memoryMb ?? DEFAULT_MEMORY_MB,
      maxOutputBytes: 256 * 1024,
      globals,
    });
  } catch (err) {
    return evaluation(total, "sandbox_error", `the sandbox failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (run.ok) {
    const summary = parseSummary(run.result, nonce, total);
    if (!summary) return evaluation(total, "sandbox_error", "the test harness returned no valid summary");
    if (summary.loadError !== null) return evaluation(total, "load_error", summary.loadError);
    const message = summary.passed === total ? null : `${total - summary.passed} of ${total} tests failed`;
    return evaluation(total, "ok", message, summary.passed, summary.failures);
  }
  const passed = passesFromOutput(run.stdout, nonce, total);
  const error = run.error ?? { name: "SandboxError", message: "the run failed" };
  const text = `${error.name}: ${error.message}`;
  if (error.name === "TimeoutError") return evaluation(total, "timeout", text, passed);
  if (error.name === "MemoryLimitError") return evaluation(total, "memory", text, passed);
  return evaluation(total, "sandbox_error", text, passed);
}
