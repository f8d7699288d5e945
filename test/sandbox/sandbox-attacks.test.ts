/**
 * Attacks on the sandbox, on every backend. Each must end as an error result within its limits
 * (runChecked: elapsed < timeout + 2 s on an idle machine), the same sandbox instance must serve `1+1` right after it
 * (expectHealthy), and later runs must see nothing of it. Limits are small where the test is about
 * the limit, to keep the suite fast.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunOptions, RunResult, Sandbox } from "../../src/sandbox/index.ts";
import { BACKENDS, expectHealthy, runChecked } from "../fixtures/sandbox/backends.ts";

const FAST = { timeoutMs: 300 };
const SMALL = { timeoutMs: 1000, memoryMb: 16 };
/** For bombs that only a time limit ends: a shorter one. */
const SMALL_FAST = { timeoutMs: 500, memoryMb: 16 };
/** For bombs that only a hard stop ends (at timeout + slack): the shortest. */
const SMALL_HARD = { timeoutMs: 300, memoryMb: 16 };
/**
 * For attacks another limit must end (the output's size, the parser's depth): a time limit out of
 * their way, which at 300 ms a loaded machine reached first (load 14: TimeoutError, not OutputLimitError).
 */
const NOT_TIMED = { timeoutMs: 5000 };

function expectError(r: RunResult, names: string[]): void {
  expect(r.ok, JSON.stringify(r).slice(0, 500)).toBe(false);
  expect(r.result).toBe(null);
  expect(names, JSON.stringify(r.error)).toContain(r.error?.name);
  expect(typeof r.error?.message).toBe("string");
}

describe.each(BACKENDS)("sandbox attacks: $name", (backend) => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = backend.create();
    // Start every thread/process (2) outside the tests' clocks: start-up is not what these measure.
    await Promise.all([sandbox.run("0"), sandbox.run("0")]);
  });
  afterAll(() => sandbox.dispose());

  /** Runs an attack that must fail with one of `names`, then checks the sandbox still serves. */
  async function attack(code: string, names: string[], options: RunOptions = FAST): Promise<RunResult> {
    const r = await runChecked(sandbox, code, options);
    expectError(r, names);
    await expectHealthy(sandbox);
    return r;
  }

  describe("runaway code", () => {
    it("stops an infinite loop", async () => {
      await attack("while (true) {}", ["TimeoutError"]);
    });

    it("stops an infinite loop that swallows every error, even in finally", async () => {
      await attack("for (;;) { try { while (true) {} } catch (e) {} }", ["TimeoutError"]);
      await attack("for (;;) { try { for (;;) {} } catch {} finally { continue; } }", ["TimeoutError"]);
    });

    it("stops a loop inside a promise, an async function and an endless job chain", async () => {
      await attack("Promise.resolve().then(() => { while (true) {} })", ["TimeoutError"]);
      await attack("(async () => { await null; for (;;) {} })()", ["TimeoutError"]);
      await attack("(async () => { for (;;) await null; })()", ["TimeoutError"]);
      await attack("function again() { return Promise.resolve().then(again); } again(); 'returned'", ["TimeoutError", "MemoryLimitError"]);
    });

    it("stops a loop hidden behind top-level await", async () => {
      await attack("await null; while (true) {}", ["TimeoutError"]);
    });

    it("stops deep recursion", async () => {
      // V8: RangeError "Maximum call stack size exceeded"; QuickJS: InternalError "stack overflow".
      // A stack overflows in milliseconds; the limit is long enough for a loaded machine to get there.
      await attack("function r(n) { return r(n + 1) + 1; } r(0)", ["RangeError", "InternalError"], { timeoutMs: 3000 });
      await attack("const f = (n) => [n, ...f(n + 1)]; f(0)", ["RangeError", "InternalError"], { timeoutMs: 3000 });
    });

    it("survives source nested too deeply to parse", async () => {
      // QuickJS parses recursively on the host's own stack; V8 refuses too-deep nesting itself.
      for (const [open, close] of [["(", ")"], ["[", "]"], ["x => ", ""]] as const) {
        // Not a test of the time limit: a loaded machine's 300 ms could end the parse first.
        await attack(`${open.repeat(20_000)}1${close.repeat(20_000)}`, ["RangeError", "SyntaxError", "InternalError"], NOT_TIMED);
      }
      // V8 compiles deeply nested blocks in quadratic time, where no timeout reaches: depending on
      // the machine this compiles (and runs) or the watchdog ends it. Either way, within limits.
      await runChecked(sandbox, `${"{ let a; ".repeat(20_000)}1${"}".repeat(20_000)}`, FAST);
      await expectHealthy(sandbox);
      expect((await runChecked(sandbox, `${"(".repeat(100)}1${")".repeat(100)}`)).result).toBe(1);
    });

    it.runIf(backend.hardStop)("stops recursion that retries after every stack overflow (hard stop)", async () => {
      // Every overflow builds an error with a stack trace as deep as the stack: few interrupt checks,
      // much work between them (in-process QuickJS: ~5 s at a 300 ms limit).
      await attack("function r() { try { return r(); } catch (e) { return r(); } } r()", ["TimeoutError", "RangeError", "InternalError"]);
    });

    it.runIf(backend.hardStop)("stops a loop of long native operations (hard stop)", async () => {
      // QuickJS checks its interrupt handler every ~10 000 calls/back-jumps; here that is minutes
      // of work. Only a hard stop (isolated-vm's terminate, the QuickJS thread watchdog) ends it.
      await attack("for (;;) JSON.parse(JSON.stringify('ab'.repeat(1e5).split('')))", ["TimeoutError"]);
    });
  });

  describe("memory bombs", () => {
    // Which limit ends a bomb differs by engine (V8 refuses huge strings up front, QuickJS may run
    // out of memory first); what matters is that it ends, within its limits, as an error result.
    const ENDED = ["MemoryLimitError", "RangeError", "InternalError", "TimeoutError"];

    it("stops growing arrays", async () => {
      await attack("const a = []; for (let i = 0; ; i++) a[i] = i * 1.5", ENDED, SMALL);
      await attack("const a = []; for (;;) a.push([a.length, 'item'])", ENDED, SMALL);
    });

    it("stops a growing array that catches out-of-memory and tries again", async () => {
      await attack("const a = []; for (;;) { try { for (;;) a.push({ x: Math.random() }); } catch (e) { a.length = 0; } }", ENDED, SMALL_FAST);
    });

    it("stops huge strings", async () => {
      await attack("'x'.repeat(2 ** 30).length", ENDED, SMALL);
      await attack("let s = 'x'; for (;;) s += s", ENDED, SMALL);
    });

    it("stops a huge JSON.stringify", async () => {
      await attack("JSON.stringify(Array.from({ length: 1e6 }, (_, i) => ({ i, s: 'item' + i }))).length", ENDED, SMALL);
    });

    it("stops huge typed arrays", async () => {
      await attack("const b = new Uint8Array(2 ** 30); b.fill(1); b.length", ENDED, SMALL);
    });

    it.runIf(backend.hardStop)("stops bombs that thrash the GC inside single native calls (hard stop)", async () => {
      // In-process QuickJS needs 2-7 s to end each of these (one native call per interrupt check,
      // each slowed by a GC pass per allocation near the limit); the hard stop ends them on time.
      await attack("const a = []; for (;;) a.push(new Array(1e5).fill(1.5))", ENDED, SMALL_HARD);
      await attack("const a = []; for (;;) a.push(new Float64Array(1e5))", ENDED, SMALL_HARD);
      await attack("const parts = []; for (;;) parts.push('x'.repeat(1e5) + parts.length)", ENDED, SMALL_HARD);
      await attack("let o = [1]; for (let i = 0; i < 26; i++) o = [o, o]; JSON.stringify(o).length", ENDED, SMALL_HARD);
    });
  });

  describe("reaching for the host", () => {
    it("finds no process, require, module, fetch or other host globals", async () => {
      const r = await runChecked(
        sandbox,
        `const names = ["process", "require", "module", "exports", "Buffer", "global", "fetch", "XMLHttpRequest",
           "WebSocket", "setTimeout", "setInterval", "setImmediate", "queueMicrotask", "Deno", "Bun", "__dirname", "ivm", "_ivm"];
         names.filter((n) => typeof globalThis[n] !== "undefined")`,
      );
      expect(r).toMatchObject({ ok: true, result: [] });
      const own = await runChecked(sandbox, "Object.getOwnPropertyNames(globalThis)");
      expect(own.result).not.toContain("process");
      expect(own.result).not.toContain("require");
    });

    it("import() cannot load modules", async () => {
      const ANY = ["TypeError", "Error", "ReferenceError"];
      await attack("import('node:fs')", ANY);
      await attack("await import('fs')", ANY);
      await attack("import fs from 'node:fs'; fs", ["SyntaxError"]);
    });

    it("Function and eval exist but only reach the sandbox's own global", async () => {
      const r = await runChecked(
        sandbox,
        `const F = globalThis.constructor.constructor;
         const viaCtor = F("return typeof process")();
         const viaThis = typeof new Function("return this")().process;
         const viaEval = eval("typeof require");
         const indirect = (0, eval)("typeof process");
         const sameGlobal = F("return globalThis")() === globalThis;
         const arrowCtor = (() => {}).constructor("return typeof process")();
         const asyncCtor = typeof (async () => {}).constructor;
         [viaCtor, viaThis, viaEval, indirect, sameGlobal, arrowCtor, asyncCtor]`,
      );
      expect(r.result).toEqual(["undefined", "undefined", "undefined", "undefined", true, "undefined", "function"]);
      await attack('globalThis.constructor.constructor("return process")().exit(1)', ["ReferenceError", "TypeError"]);
    });

    it("stack-trace hooks expose no host objects or functions", async () => {
      // V8 hands structured call sites to Error.prepareStackTrace: every function and receiver on
      // the stack must be the guest's own (the prelude is strict, so its frames show nothing).
      const r = await runChecked(
        sandbox,
        `function probe() { return new Error("probe").stack; }
         Error.prepareStackTrace = (e, frames) => frames.map((f) => {
           const fn = f.getFunction && f.getFunction(); const self = f.getThis && f.getThis();
           return (fn === undefined || fn === probe) && (self === undefined || self === globalThis) ? "guest" : "FOREIGN";
         });
         const s = probe(); typeof s === "string" ? ["guest"] : s`,
      );
      expect(r.ok).toBe(true);
      expect(r.result).not.toContain("FOREIGN");
      expect(JSON.stringify(r.result)).toContain("guest");
    });

    it("cannot schedule code to run after the run (FinalizationRegistry, Atomics.waitAsync, async wasm)", async () => {
      const r = await runChecked(sandbox, "[typeof FinalizationRegistry, typeof WebAssembly, typeof Atomics === 'object' ? typeof Atomics.waitAsync : 'undefined']");
      expect(r.result).toEqual(["undefined", "undefined", "undefined"]);
      // The attack they would allow: a callback that spins on the engine's thread once the run is over.
      await attack(
        "new FinalizationRegistry(() => { for (;;) {} }).register({}, 1); const junk = []; for (let i = 0; i < 1e5; i++) junk.push({ i }); 'returned'",
        ["ReferenceError"],
      );
      for (let i = 0; i < 3; i++) await expectHealthy(sandbox);
    });

    it("a grown buffer reads nothing beyond its own memory, of this run or an earlier one", async () => {
      // QuickJS grew a growable SharedArrayBuffer without reallocating it: the 8 MB "grown" past
      // a 16-byte buffer were the wasm heap, holding the previous run's strings.
      const marker = `M${Math.random().toString(36).slice(2)}`;
      const left = await runChecked(sandbox, `const keep = []; for (let i = 0; i < 2000; i++) keep.push("${marker.slice(0, 4)}" + "${marker.slice(4)}-" + i + "-".repeat(100)); keep.length`);
      expect(left.result).toBe(2000);
      for (const make of [
        "new SharedArrayBuffer(16, { maxByteLength: 2 ** 23 })",
        "new ArrayBuffer(16, { maxByteLength: 2 ** 23 })",
      ]) {
        // QuickJS-NG (the QuickJS zygote) refuses to make a growable SharedArrayBuffer at all.
        const r = await runChecked(
          sandbox,
          `let b; try { b = ${make}; } catch (e) { b = new ArrayBuffer(16); }
           try { (b.grow || b.resize).call(b, 2 ** 23); } catch (e) {}
           const u = new Uint8Array(b);
           let s = "", nonZero = 0;
           for (let i = 0; i < u.length; i += 32768) s += String.fromCharCode.apply(null, u.subarray(i, i + 32768));
           for (let i = 0; i < u.length; i++) if (u[i] !== 0) { nonZero++; break; }
           [s.indexOf("${marker.slice(0, 4)}" + "${marker.slice(4)}") >= 0, nonZero]`,
          { timeoutMs: 3000 },
        );
        // Either the buffer did not grow, or it grew into fresh zeroed memory of its own.
        expect(r, make).toMatchObject({ ok: true, result: [false, 0] });
      }
      await expectHealthy(sandbox);
    });

    it("Atomics.wait cannot block past the time limit", async () => {
      // Refused (QuickJS has no Atomics) or stopped by the deadline (V8 lets the guest block: it waits
      // forever on a value nobody will change); runChecked bounds the time either way.
      const r = await runChecked(sandbox, "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)", FAST);
      expectError(r, backend.name === "isolated-vm" ? ["TimeoutError"] : ["ReferenceError"]);
      await expectHealthy(sandbox);
    });
  });

  describe("pollution", () => {
    it("prototype and global pollution stays in its run and never reaches the host", async () => {
      const polluted = await runChecked(
        sandbox,
        `Object.prototype.polluted = "yes";
         Array.prototype.push = function () { throw new Error("hijacked push"); };
         Array.prototype.map = () => "hijacked";
         JSON.stringify = () => "hijacked";
         String.prototype.slice = () => "hijacked";
         Reflect.apply = () => "hijacked";
         Promise.prototype.then = function () { throw new Error("hijacked then"); };
         globalThis.console = { log() { throw new Error("hijacked console"); } };
         var leaked = "global";
         ({ ok: [1, 2, 3] })`,
      );
      // The pollution does not corrupt this run's own result either: the prelude captured its tools.
      expect(polluted).toMatchObject({ ok: true, result: { ok: [1, 2, 3] } });
      const next = await runChecked(
        sandbox,
        "[({}).polluted, [1].map((x) => x + 1), JSON.stringify({ a: 1 }), 'abc'.slice(1), typeof leaked, typeof Reflect.apply(Math.max, null, [1])]",
      );
      expect(next.result).toEqual([null, [2], '{"a":1}', "bc", "undefined", "number"]);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Array.prototype.push.toString()).toMatch(/native code/);
      expect(JSON.stringify({ a: 1 })).toBe('{"a":1}');
    });

    it("setters and getters planted on prototypes do not break the report", async () => {
      const r = await runChecked(
        sandbox,
        `for (const key of ["status", "result", "error", "stdout", "stderr", "name", "message", "v", "up", "0", "1"]) {
           Object.defineProperty(Object.prototype, key, { get() { throw new Error("getter " + key); }, set() { throw new Error("setter " + key); }, configurable: true });
           Object.defineProperty(Array.prototype, key, { get() { throw new Error("getter " + key); }, set() { throw new Error("setter " + key); }, configurable: true });
         }
         console.log("still", "printing");
         [42]`,
      );
      expect(r.stdout).toBe("still printing\n");
      // The own element "0" shadows the planted getter: the value itself comes through.
      expect(r).toMatchObject({ ok: true, result: [42] });
      await expectHealthy(sandbox);
    });

    it("Object.prototype.toJSON applies to the guest's own value only, never to the report", async () => {
      // JSON semantics: the guest's toJSON shapes its own result (here the whole array)...
      const r = await runChecked(sandbox, "Object.prototype.toJSON = () => 'hijacked'; console.log('out', { a: 1 }); [1, { a: 2 }]");
      // ...but the report around it, and the output, are intact.
      expect(r).toMatchObject({ ok: true, result: "hijacked", stdout: 'out "hijacked"\n' });
    });
  });

  describe("output floods", () => {
    it("caps a console.log flood and still ends at the time limit", async () => {
      const r = await runChecked(sandbox, "for (;;) console.log('spam '.repeat(50))", { timeoutMs: 300, maxOutputBytes: 4096 });
      expectError(r, ["TimeoutError"]);
      if (r.stdout !== "") {
        // (A watchdog kill loses the output; otherwise it is there, capped.)
        expect(r.truncated).toBe(true);
        expect(r.stdout.length).toBeLessThanOrEqual(4096 + 20);
      }
      await expectHealthy(sandbox);
    });

    it("caps one enormous line and a stderr flood", async () => {
      const big = await runChecked(sandbox, "console.log('x'.repeat(5e6)); console.error('e'); 'done'", { maxOutputBytes: 1000 });
      expect(big).toMatchObject({ ok: true, result: "done", truncated: true });
      expect(big.stdout.length).toBeLessThanOrEqual(1000 + 20);
      const err = await runChecked(sandbox, "for (let i = 0; i < 1e5; i++) console.error('warn', i); 7", { maxOutputBytes: 2000 });
      expect(err).toMatchObject({ ok: true, result: 7, stdout: "", truncated: true });
      expect(err.stderr.length).toBeLessThanOrEqual(2000 + 20);
    });
  });

  describe("hostile thrown values and results", () => {
    it("describes non-Error throws inside the sandbox", async () => {
      expect((await attack("throw 42", ["Error"])).error?.message).toBe("Uncaught 42");
      expect((await attack("throw null", ["Error"])).error?.message).toBe("Uncaught null");
      expect((await attack("throw undefined", ["Error"])).error?.message).toBe("Uncaught undefined");
      expect((await attack("throw 'plain string'", ["Error"])).error?.message).toBe("Uncaught plain string");
      expect((await attack("throw Symbol('s')", ["Error"])).error?.message).toBe("Uncaught Symbol(s)");
      expect((await attack("throw 10n", ["Error"])).error?.message).toBe("Uncaught 10n");
    });

    it("never calls a thrown object's toString/valueOf", async () => {
      const r = await attack("throw { toString() { while (1) {} }, valueOf() { while (1) {} } }", ["Error"]);
      expect(r.error?.message).toContain("toString");
      await attack("Promise.reject({ toString() { while (1) {} } })", ["Error"]);
    });

    it("malicious getters and Proxies run inside the sandbox, under its limits", async () => {
      await attack("throw { get name() { while (1) {} }, get message() { while (1) {} } }", ["TimeoutError"]);
      await attack("throw new Proxy({}, { get() { while (1) {} } })", ["TimeoutError"]);
      const trap = await attack("throw new Proxy({}, { get() { throw new Error('trap'); }, ownKeys() { throw 1; } })", ["Error"]);
      expect(trap.error?.message).toMatch(/^Uncaught/);
      await attack("const e = new Error('x'); Object.defineProperty(e, 'message', { get() { throw e; } }); throw e", ["Error"]);
      await attack("Promise.reject(new Proxy(new Error('p'), { get() { for (;;) {} } }))", ["TimeoutError"]);
    });

    it("hostile results: looping getters, toJSON, thenables and Proxies", async () => {
      await attack("({ get x() { while (1) {} } })", ["TimeoutError"]);
      await attack("({ toJSON() { while (1) {} } })", ["TimeoutError"]);
      await attack("({ get then() { while (1) {} } })", ["TimeoutError"]);
      await attack("({ then() { while (1) {} } })", ["TimeoutError"]);
      await attack("new Proxy({}, { ownKeys() { while (1) {} } })", ["TimeoutError"]);
      const thrower = await attack("({ get x() { throw new TypeError('getter') } })", ["TypeError"]);
      expect(thrower.error?.message).toBe("getter");
      const sparse = await attack("const a = []; a.length = 2 ** 32 - 1; a", ["OutputLimitError"], NOT_TIMED);
      expect(sparse.error?.message).toMatch(/output limit/);
    });
  });

  describe("floods of runs", () => {
    it("queues many runaway runs and serves a normal one afterwards", async () => {
      // Each waits for a slot behind at most the 5 others (in-process backends run one at a time).
      const runs = await Promise.all(Array.from({ length: 6 }, () => runChecked(sandbox, "while (true) {}", { timeoutMs: 200 }, 5)));
      for (const r of runs) expectError(r, ["TimeoutError"]);
      await expectHealthy(sandbox);
    });

    it.runIf(!backend.inProcess)("keeps the host's event loop serving while a guest spins", async () => {
      let ticks = 0;
      const timer = setInterval(() => ticks++, 10);
      try {
        const r = await runChecked(sandbox, "while (true) {}", { timeoutMs: 500 });
        expectError(r, ["TimeoutError"]);
      } finally {
        clearInterval(timer);
      }
      expect(ticks).toBeGreaterThanOrEqual(10);
    });
  });
});
