/**
 * The guest-side half of a run, identical for both engines: a script evaluated first in every fresh
 * context. Its completion value is a `ctl(op, ...)` function that only the host holds (it is never
 * stored on the global object):
 *
 *   ctl("run", configJson, source)  define console, globals and stdin, then indirect-eval `source`
 *                                   and settle its completion value (awaiting it if it is a thenable)
 *   ctl("fail", thrown)             record an error that escaped the guest (QuickJS only)
 *   ctl("report")                   -> one JSON string: {status, result, error, stdout, stderr, truncated}
 *                                      (only string concatenation: it cannot run guest code)
 *
 * Why everything happens inside the guest:
 * - The host never touches a guest object. Errors, results and console arguments are turned into
 *   strings here, so a malicious toString/getter/Proxy runs inside the sandbox, under its limits.
 *   (isolated-vm would otherwise read `.message` of a thrown object on its own thread, outside any
 *   timeout: a `throw {get message(){ while(1){} }}` hangs it for good. Measured.)
 * - Console output is buffered here, capped, so a flood costs the host nothing; the guest has no
 *   reference to any host function at all.
 * - Intrinsics are captured before user code runs, and the code below avoids implicit lookups a guest
 *   could hook (no array pushes or property sets through prototypes, no JSON.stringify of objects),
 *   so a polluted Object.prototype / Array.prototype cannot corrupt the report.
 * The script is strict: a sloppy guest function cannot reach it through `fn.caller`.
 */
export const GUEST_PRELUDE = String.raw`(function () {
"use strict";
const G = globalThis;
const apply = Reflect.apply;
const defineProperty = Object.defineProperty;
const objectKeys = Object.keys;
const isArray = Array.isArray;
const jsonStringify = JSON.stringify;
const jsonParse = JSON.parse;
const toStr = String;
const isFiniteNumber = Number.isFinite;
const objectToString = Object.prototype.toString;
const strSlice = String.prototype.slice;
const PromiseCtor = Promise;
const promiseResolve = Promise.resolve;
const promiseThen = Promise.prototype.then;
const indirectEval = G.eval;
const dateGetTime = Date.prototype.getTime;
const dateToISO = Date.prototype.toISOString;
const mapForEach = Map.prototype.forEach;
const setForEach = Set.prototype.forEach;
const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, "size").get;
const setSize = Object.getOwnPropertyDescriptor(Set.prototype, "size").get;

// APIs that make V8 run guest code later, in tasks of its own, outside any call the host timed
// (measured: a FinalizationRegistry callback spinning forever on an isolated-vm thread after its
// run had returned, blocking the isolate and even process exit). QuickJS runs such callbacks as
// jobs, under the deadline, but both engines get the same globals. Async WebAssembly compilation
// resolves the same way; guest code has no use for WebAssembly, so it goes whole.
delete G.FinalizationRegistry;
delete G.WebAssembly;
if (typeof G.Atomics === "object" && G.Atomics !== null) delete G.Atomics.waitAsync;
// Growing a buffer in place. QuickJS (2025-09-13) grows a growable SharedArrayBuffer without
// reallocating it: measured, grow() let a 16-byte buffer read and write the 8 MB of wasm heap after
// it, where an earlier run's strings were read back (another client's tests, on a shared instance).
// V8 takes a resizable buffer's memory past isolated-vm's memory limit (see isolate-pool.ts). Guest
// code has no use for either, so both go on both engines.
if (typeof G.SharedArrayBuffer === "function") delete G.SharedArrayBuffer.prototype.grow;
delete G.ArrayBuffer.prototype.resize;

const MAX_DEPTH = 64;
const TOO_LARGE = { tooLarge: true };
const FALLBACK_ERROR = { name: "Error", message: "uncaught exception that could not be described", stack: undefined };
let budget = 0;
let maxOut = 0, maxResult = 0;
let outText = "", errText = "", used = 0, full = false, truncatedIn = null;
// state: 0 pending, 1 ok (value = its JSON text), 2 error, 3 result too large
let state = 0, value = "null", error = null;

function spend(s) { budget -= s.length; if (budget < 0) throw TOO_LARGE; return s; }
function str(s) { if (s.length > budget) throw TOO_LARGE; return spend(jsonStringify(s)); }
function clip(s, n) { return s.length > n ? apply(strSlice, s, [0, n]) + "…" : s; }
function get(o, k) { try { return o[k]; } catch (e) { return undefined; } }
function hasBrand(getter, v) { try { apply(getter, v, []); return true; } catch (e) { return false; } }
function isErrorLike(v) { try { return apply(objectToString, v, []) === "[object Error]"; } catch (e) { return false; } }
function fnText(f) {
  const n = get(f, "name");
  return typeof n === "string" && n !== "" ? "[Function: " + clip(n, 100) + "]" : "[Function (anonymous)]";
}
function primitiveText(v) { return typeof v === "bigint" ? toStr(v) + "n" : toStr(v); }

// JSON text of any guest value, spending from budget (throws TOO_LARGE when it runs out).
function enc(v, depth, chain, useToJSON) {
  switch (typeof v) {
    case "string": return str(v);
    case "number": return isFiniteNumber(v) ? spend(toStr(v)) : str(toStr(v));
    case "boolean": return spend(v ? "true" : "false");
    case "undefined": return spend("null");
    case "bigint": return str(toStr(v) + "n");
    case "symbol": return str(toStr(v));
    case "function": return str(fnText(v));
  }
  if (v === null) return spend("null");
  for (let c = chain; c !== null; c = c.up) if (c.v === v) return str("[Circular]");
  if (depth >= MAX_DEPTH) return str(isArray(v) ? "[Array]" : "[Object]");
  const link = { v: v, up: chain };
  if (hasBrand(dateGetTime, v)) {
    const t = apply(dateGetTime, v, []);
    return t === t ? str(apply(dateToISO, v, [])) : spend("null");
  }
  if (useToJSON) {
    const toJSON = v.toJSON;
    if (typeof toJSON === "function") return enc(apply(toJSON, v, [""]), depth + 1, link, false);
  }
  if (isErrorLike(v)) {
    const n = get(v, "name"), m = get(v, "message");
    return spend("{\"name\":") + str(typeof n === "string" ? n : "Error") + spend(",\"message\":") + str(typeof m === "string" ? m : "") + spend("}");
  }
  if (hasBrand(mapSize, v) || hasBrand(setSize, v)) {
    const isMap = hasBrand(mapSize, v);
    let out = spend("["), first = true;
    apply(isMap ? mapForEach : setForEach, v, [function (val, key) {
      out += (first ? "" : spend(",")) + (isMap ? spend("[") + enc(key, depth + 1, link, true) + spend(",") + enc(val, depth + 1, link, true) + spend("]") : enc(val, depth + 1, link, true));
      first = false;
    }]);
    return out + spend("]");
  }
  if (isArray(v)) {
    const len = v.length;
    let out = spend("[");
    for (let i = 0; i < len; i++) out += (i > 0 ? spend(",") : "") + enc(v[i], depth + 1, link, true);
    return out + spend("]");
  }
  const keys = objectKeys(v);
  let out = spend("{"), first = true;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i], val = v[k];
    if (val === undefined) continue;
    out += (first ? "" : spend(",")) + str(k) + spend(":") + enc(val, depth + 1, link, true);
    first = false;
  }
  return out + spend("}");
}

// {name, message, stack} strings for anything thrown; never calls toString/valueOf.
function describe(e) {
  try {
    if (e === null || (typeof e !== "object" && typeof e !== "function")) {
      return { name: "Error", message: "Uncaught " + clip(primitiveText(e), 2000), stack: undefined };
    }
    const n = get(e, "name"), m = get(e, "message"), s = get(e, "stack");
    let message;
    if (typeof m === "string") message = m;
    else {
      try { budget = 2000; message = "Uncaught " + enc(e, 0, null, false); } catch (x) { message = "Uncaught [object]"; }
    }
    return {
      name: typeof n === "string" && n !== "" ? clip(n, 200) : "Error",
      message: clip(message, 2000),
      stack: typeof s === "string" ? clip(s, 4000) : undefined,
    };
  } catch (x) {
    return FALLBACK_ERROR;
  }
}

let overflow = false;
function fmt(v) {
  switch (typeof v) {
    case "string": return v;
    case "number": case "boolean": case "undefined": case "symbol": case "bigint": return primitiveText(v);
    case "function": return fnText(v);
  }
  if (v === null) return "null";
  if (isErrorLike(v)) {
    const n = get(v, "name"), m = get(v, "message");
    return (typeof n === "string" ? n : "Error") + ": " + (typeof m === "string" ? m : "");
  }
  try { budget = maxOut - used + 16; return enc(v, 0, null, true); }
  catch (e) { if (e === TOO_LARGE) overflow = true; return e === TOO_LARGE ? "[…]" : "[unprintable]"; }
}
function emit(isErr, s) {
  const room = maxOut - used;
  if (s.length > room || overflow) {
    if (s.length > room) s = apply(strSlice, s, [0, room]);
    full = true;
    truncatedIn = isErr ? "stderr" : "stdout";
  }
  used += s.length;
  if (isErr) errText += s; else outText += s;
}
function writer(isErr) {
  return function () {
    if (full) return;
    let line = "";
    overflow = false;
    for (let i = 0; i < arguments.length; i++) {
      line += (i > 0 ? " " : "") + fmt(arguments[i]);
      if (line.length > maxOut - used) break;
    }
    emit(isErr, line + "\n");
  };
}
const log = writer(false), warn = writer(true);
const consoleObject = { log: log, info: log, debug: log, dir: log, warn: warn, error: warn, trace: warn };

function setup(cfg) {
  maxOut = cfg.maxOutputChars;
  maxResult = cfg.maxResultChars;
  defineProperty(G, "console", { value: consoleObject, writable: true, configurable: true, enumerable: false });
  const globals = cfg.globals, keys = objectKeys(globals);
  for (let i = 0; i < keys.length; i++) {
    defineProperty(G, keys[i], { value: globals[keys[i]], writable: true, configurable: true, enumerable: true });
  }
  defineProperty(G, "stdin", { value: cfg.stdin, writable: true, configurable: true, enumerable: true });
}

// The result is serialised the moment it settles: inside the run, under its time limit (a looping
// getter or toJSON is the guest's time), and as a snapshot later jobs cannot change.
function ok(v) {
  if (state !== 0) return;
  try { budget = maxResult; value = enc(v, 0, null, true); state = 1; }
  catch (e) { if (e === TOO_LARGE) state = 3; else { state = 2; error = describe(e); } }
}
function fail(e) { if (state === 0) { state = 2; error = describe(e); } }
function settle(v) {
  try {
    if (v !== null && (typeof v === "object" || typeof v === "function")) {
      const then = v.then;
      if (typeof then === "function") {
        apply(promiseThen, apply(promiseResolve, PromiseCtor, [v]), [ok, fail]);
        return;
      }
    }
    ok(v);
  } catch (e) { fail(e); }
}
function run(configJson, source) {
  try { setup(jsonParse(configJson)); } catch (e) { fail(e); return; }
  let v;
  try { v = indirectEval(source); } catch (e) { fail(e); return; }
  settle(v);
}
function errorJson(err) {
  return "{\"name\":" + jsonStringify(err.name) + ",\"message\":" + jsonStringify(err.message) +
    ",\"stack\":" + (typeof err.stack === "string" ? jsonStringify(err.stack) : "null") + "}";
}
function report() {
  try {
    const status = state === 1 ? "ok" : state === 2 ? "error" : state === 3 ? "too_large" : "pending";
    return "{\"status\":\"" + status + "\",\"result\":" + (state === 1 ? value : "null") +
      ",\"error\":" + (error === null ? "null" : errorJson(error)) +
      ",\"stdout\":" + jsonStringify(outText) + ",\"stderr\":" + jsonStringify(errText) +
      ",\"truncated\":" + (truncatedIn === null ? "null" : "\"" + truncatedIn + "\"") + "}";
  } catch (e) {
    return "{\"status\":\"broken\"}";
  }
}

return function ctl(op, a, b) {
  if (op === "run") { run(a, b); return; }
  if (op === "fail") { state = 0; fail(a); return; }
  if (op === "report") return report();
};
})()`;

/**
 * Code that does not parse as a script but parses as the body of an async function (top-level
 * `await`, top-level `return`) runs wrapped like this; its result is then its `return` value.
 * The newline before the closer keeps a trailing line comment from swallowing it.
 */
export function wrapAsync(source: string): string {
  return `(async () => {\n${source}\n})()`;
}
