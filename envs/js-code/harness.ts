/**
 * Running a candidate solution on a task's tests: ONE sandbox run per evaluation, in which a fixed
 * harness script loads the candidate's code and calls the function on every test's arguments,
 * answering with each result's canonical form; the expected values never enter that run. They are
 * compared here, in the environment (the environment thread on Node, the Worker on Workers).
 *
 * Threat model. The candidate's code is untrusted and runs in the same JavaScript realm as the
 * harness, so it can redefine any global or prototype (`JSON`, `Object.prototype`,
 * `Array.prototype.every`, `console`...), print anything, throw anything (objects with getters,
 * Proxies), return Proxies or objects with getters, loop forever, exhaust memory, try to end the
 * script itself (a top-level `return`, an injected `})();`, an unterminated comment), or escape
 * the engine altogether and own its process. It must not be able to (a) make a test pass that its
 * function did not pass, (b) read the expected outputs, or (c) crash the host. How:
 *
 * 1. The expected values are never in the sandbox: the run gets the function's name, the
 *    candidate's code and each test's arguments (JSON text), nothing else. Even a candidate that
 *    owns its whole process can only choose the outputs it reports for those arguments, which is
 *    what its function does anyway; the comparison with the expected values happens here.
 * 2. The candidate's code is never concatenated into the harness source: it is passed as data
 *    (a JSON string in the sandbox's `globals`), so no syntax trick can change the harness
 *    program. The harness is one strict-mode IIFE whose return value (a string) is the run's
 *    result; the candidate cannot return or throw its way out of it.
 * 3. Before the candidate's code runs, the harness reads and deletes its input global and
 *    captures every built-in it uses later (Reflect.apply, JSON.parse/stringify, Object.keys,
 *    Object.getPrototypeOf, Array.isArray, Number.prototype.toPrecision, charCodeAt, eval,
 *    console.log...), and makes every array it writes to later (the digest's state).
 * 4. The code is loaded with an indirect eval of the source (so it sees only the global scope,
 *    never the harness's locals); a syntax error or a throw is a load error.
 * 5. Each test parses fresh arguments and calls the function with the captured Reflect.apply.
 *    The returned value is turned into canonical text by the harness's own serialiser, which
 *    touches the value only through captured functions and operators: it reads the value, never
 *    writes to it. A Proxy or getter can run code while being read, but the only thing it can
 *    influence is the text of its own value. The canonical form reported is the text itself when
 *    it is short (at most FORM_TEXT_MAX characters), else its SHA-256 (computed in the harness,
 *    over the text's UTF-16 code units): `canonicalForm` here computes the same for the expected
 *    value, and a test passes when the two are equal.
 * 6. After the candidate's code runs, the harness creates no objects that candidate code could
 *    observe through prototype setters: results are accumulated in strings and numbers. The
 *    harness functions are strict, so `fn.caller` and V8's CallSite.getFunction reveal nothing.
 * 7. The summary is built as a JSON string containing a per-run nonce (random, from the host,
 *    deleted from the globals before the candidate runs). The host accepts only a summary with
 *    the right nonce and sane contents.
 * 8. After each test the harness prints `<nonce> <index> <form as JSON>` with the captured
 *    console.log. If the run is cut short (time or memory limit, e.g. an infinite loop in test 4),
 *    the host compares the forms printed before that; printed lines without the nonce are ignored.
 * Limits (time, memory, output) are the sandbox's; the host never runs candidate code itself.
 */
import { type JsonValue, type RunResult, type Sandbox, stripTypes } from "envworker";
import type { CodeTask, TestCase } from "./tasks.ts";
import type { GradeStatus, Graded } from "../shared/grading.ts";

/** Canonical texts up to this many characters are reported as they are; longer ones by their SHA-256. */
export const FORM_TEXT_MAX = 64;

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
var codeAt = Function.prototype.call.bind(String.prototype.charCodeAt);
var log = G.console.log;
var TOO_DEEP = { tooDeep: true };
var TOO_LARGE = { tooLarge: true };
var HEX = "0123456789abcdef";
var FORM_TEXT_MAX = ${FORM_TEXT_MAX};

var nonce = input.nonce;
var name = input.name;
var code = input.code;
var approx = input.approx === true;
var n = input.args.length;
var argsJson = [];
for (var a = 0; a < n; a++) argsJson[a] = "" + input.args[a];
input = null;
var budget = 0;

// SHA-256 state, made before the candidate's code runs: later writes hit own elements, never a
// setter the candidate put on Array.prototype.
var K = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
];
var W = [];
for (var w = 0; w < 64; w++) W[w] = 0;
var H = [0, 0, 0, 0, 0, 0, 0, 0];

// SHA-256 of the text's UTF-16 code units (two bytes each, big-endian), in hex.
function sha256(s) {
  var len = s.length;
  var bits = len * 16;
  var blocks = ((len * 2 + 8) >> 6) + 1;
  H[0] = 0x6a09e667; H[1] = 0xbb67ae85; H[2] = 0x3c6ef372; H[3] = 0xa54ff53a;
  H[4] = 0x510e527f; H[5] = 0x9b05688c; H[6] = 0x1f83d9ab; H[7] = 0x5be0cd19;
  for (var b = 0; b < blocks; b++) {
    for (var t = 0; t < 16; t++) {
      var u = b * 32 + t * 2;
      var hi = u < len ? codeAt(s, u) : u === len ? 0x8000 : 0;
      var lo = u + 1 < len ? codeAt(s, u + 1) : u + 1 === len ? 0x8000 : 0;
      W[t] = (hi << 16) | lo;
    }
    if (b === blocks - 1) {
      W[14] = (bits / 4294967296) | 0;
      W[15] = bits | 0;
    }
    for (t = 16; t < 64; t++) {
      var x = W[t - 15];
      var y = W[t - 2];
      var s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      var s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      W[t] = (W[t - 16] + s0 + W[t - 7] + s1) | 0;
    }
    var ha = H[0], hb = H[1], hc = H[2], hd = H[3], he = H[4], hf = H[5], hg = H[6], hh = H[7];
    for (t = 0; t < 64; t++) {
      var S1 = ((he >>> 6) | (he << 26)) ^ ((he >>> 11) | (he << 21)) ^ ((he >>> 25) | (he << 7));
      var t1 = (hh + S1 + ((he & hf) ^ (~he & hg)) + K[t] + W[t]) | 0;
      var S0 = ((ha >>> 2) | (ha << 30)) ^ ((ha >>> 13) | (ha << 19)) ^ ((ha >>> 22) | (ha << 10));
      var t2 = (S0 + ((ha & hb) ^ (ha & hc) ^ (hb & hc))) | 0;
      hh = hg; hg = hf; hf = he; he = (hd + t1) | 0; hd = hc; hc = hb; hb = ha; ha = (t1 + t2) | 0;
    }
    H[0] = (H[0] + ha) | 0; H[1] = (H[1] + hb) | 0; H[2] = (H[2] + hc) | 0; H[3] = (H[3] + hd) | 0;
    H[4] = (H[4] + he) | 0; H[5] = (H[5] + hf) | 0; H[6] = (H[6] + hg) | 0; H[7] = (H[7] + hh) | 0;
  }
  var out = "";
  for (var i = 0; i < 8; i++) for (var k = 28; k >= 0; k -= 4) out += HEX[(H[i] >>> k) & 15];
  return out;
}

// What is reported of a canonical text: the text when short, else "#" and its digest.
function form(text) {
  return text.length <= FORM_TEXT_MAX ? "=" + text : "#" + sha256(text);
}

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

var fn;
var loadError = null;
try {
  var loaded = indirectEval(code + "\n;typeof " + name + " === \"function\" ? " + name + " : undefined");
  if (typeof loaded === "function") fn = loaded;
  else loadError = "the code does not define a function named " + name;
} catch (e) {
  loadError = "the code failed to load: " + describe(e);
}

// Per test: [form, shown] (form null when the call threw or its value could not be read).
var outputs = "";
for (var i = 0; fn !== undefined && i < n; i++) {
  var f = null;
  var shown;
  try {
    var text = canonical(apply(fn, undefined, jsonParse(argsJson[i])));
    f = form(text);
    shown = clip(text, 200);
  } catch (e) {
    shown = clip(describe(e), 200);
  }
  var fJson = f === null ? "null" : jsonStringify(f);
  outputs += (i > 0 ? "," : "") + "[" + fJson + "," + jsonStringify(shown) + "]";
  log(nonce + " " + i + " " + fJson);
}

return "{\"nonce\":" + jsonStringify(nonce) + ",\"total\":" + n +
  ",\"load_error\":" + (loadError === null ? "null" : jsonStringify(loadError)) + ",\"outputs\":[" + outputs + "]}";
})()`;

export interface TestFailure {
  /** Index of the test. */
  test: number;
  /** The arguments, as JSON (clipped). */
  input: string;
  expected: string;
  got: string;
}

export type EvaluationStatus = Extract<GradeStatus, "ok" | "no_code" | "load_error" | "timeout" | "memory" | "sandbox_error">;

/** The outcome of running a solution against a task's tests (plain JSON, kept in episode state). */
export type Evaluation = Graded<EvaluationStatus, TestFailure>;

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

/** The canonical text of an expected value, as the harness's `canon` writes a value equal to it. */
export function canonicalText(value: JsonValue, approx: boolean): string {
  // What the guest would have seen of it: JSON (undefined members gone, NaN null...).
  return canonJson(JSON.parse(JSON.stringify(value) ?? "null") as JsonValue, approx);
}

function canonJson(v: JsonValue, approx: boolean): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number") {
    if (v === 0) return "0";
    return approx ? String(Number(v.toPrecision(12))) : String(v);
  }
  if (typeof v === "boolean") return v ? "true" : "false";
  if (v === null) return "null";
  if (Array.isArray(v)) return `[${v.map((x) => canonJson(x, approx)).join(",")}]`;
  // Keys in UTF-16 code unit order, as the harness's insertion sort with `>` leaves them.
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonJson(v[k]!, approx)}`).join(",")}}`;
}

/** SHA-256 of a text's UTF-16 code units (two bytes each, big-endian), in hex: the harness's `sha256`. */
async function sha256Utf16(text: string): Promise<string> {
  const bytes = new Uint8Array(text.length * 2);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    bytes[2 * i] = c >> 8;
    bytes[2 * i + 1] = c & 0xff;
  }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The form the harness reports of a canonical text (threat model, point 5). */
export async function canonicalForm(text: string): Promise<string> {
  return text.length <= FORM_TEXT_MAX ? `=${text}` : `#${await sha256Utf16(text)}`;
}

/** The forms printed by the harness before the run stopped (threat model, point 8), by test. */
function formsFromOutput(stdout: string, nonce: string, total: number): Map<number, string> {
  const forms = new Map<number, string>();
  const prefix = `${nonce} `;
  for (const line of stdout.split("\n")) {
    if (!line.startsWith(prefix)) continue;
    const space = line.indexOf(" ", prefix.length);
    if (space === -1) continue;
    const i = Number(line.slice(prefix.length, space));
    if (!Number.isInteger(i) || i < 0 || i >= total || forms.has(i)) continue;
    let form: unknown;
    try {
      form = JSON.parse(line.slice(space + 1));
    } catch {
      continue;
    }
    if (typeof form === "string") forms.set(i, form);
  }
  return forms;
}

interface Summary {
  loadError: string | null;
  /** Per test: the form of its value (null: it threw) and what to show of it. */
  outputs: { form: string | null; shown: string }[];
}

function parseSummary(result: JsonValue, nonce: string, total: number): Summary | undefined {
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
  if (!(r.load_error === null || typeof r.load_error === "string") || !Array.isArray(r.outputs)) return undefined;
  if (r.load_error === null && r.outputs.length !== total) return undefined;
  const outputs: Summary["outputs"] = [];
  for (const o of r.outputs as unknown[]) {
    if (!Array.isArray(o) || o.length !== 2 || !(o[0] === null || typeof o[0] === "string") || typeof o[1] !== "string") return undefined;
    outputs.push({ form: o[0] as string | null, shown: o[1] });
  }
  return { loadError: r.load_error as string | null, outputs };
}

const clip = (s: string, max: number) => (s.length > max ? `${s.slice(0, max)}…` : s);

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
  const approx = task.compare === "approx";
  // The candidate's run gets the arguments only (threat model, point 1).
  const globals: Record<string, JsonValue> = {
    __jscInput: { nonce, name: task.name, code: source, approx, args: tests.map((t) => JSON.stringify(t.args)) },
  };
  let run: RunResult;
  try {
    run = await sandbox.run(HARNESS_SOURCE, {
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      memoryMb: options.memoryMb ?? DEFAULT_MEMORY_MB,
      // The summary of 200 tests at most: ~1.6 KB each when every shown value is escaped text.
      maxOutputBytes: 512 * 1024,
      globals,
    });
  } catch (err) {
    return evaluation(total, "sandbox_error", `the sandbox failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  // The comparison, here: each expected value's form against the form the run reported.
  const expected = await Promise.all(tests.map((t) => canonicalForm(canonicalText(t.expected, approx))));
  if (run.ok) {
    const summary = parseSummary(run.result, nonce, total);
    if (!summary) return evaluation(total, "sandbox_error", "the test harness returned no valid summary");
    if (summary.loadError !== null) return evaluation(total, "load_error", summary.loadError);
    let passed = 0;
    const failures: TestFailure[] = [];
    summary.outputs.forEach((o, i) => {
      if (o.form !== null && o.form === expected[i]) passed++;
      else if (failures.length < 5) {
        const t = tests[i]!;
        failures.push({ test: i, input: clip(JSON.stringify(t.args), 200), expected: clip(JSON.stringify(t.expected) ?? "undefined", 200), got: o.shown });
      }
    });
    const message = passed === total ? null : `${total - passed} of ${total} tests failed`;
    return evaluation(total, "ok", message, passed, failures);
  }
  const printed = formsFromOutput(run.stdout, nonce, total);
  const passed = [...printed].filter(([i, form]) => form === expected[i]).length;
  const error = run.error ?? { name: "SandboxError", message: "the run failed" };
  const text = `${error.name}: ${error.message}`;
  if (error.name === "TimeoutError") return evaluation(total, "timeout", text, passed);
  if (error.name === "MemoryLimitError") return evaluation(total, "memory", text, passed);
  return evaluation(total, "sandbox_error", text, passed);
}
