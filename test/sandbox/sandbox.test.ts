/**
 * Sandbox basics on every backend: results, console capture, async code, TypeScript, globals/stdin,
 * output caps, concurrency; plus the host-side helpers (output caps, limiter, factory, CLI).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCodeCommand } from "../../src/cli/run-code.ts";
import { createQuickJSSandbox, createSandbox, DEFAULT_LIMITS, sandboxKindFromEnv, TRUNCATION_MARKER, type Sandbox } from "../../src/sandbox/index.ts";
import { CancelledError, Limiter } from "../../src/sched/limiter.ts";
import { capOutput, truncateUtf8, utf8Length } from "../../src/sandbox/output.ts";
import { BACKENDS, runChecked } from "../fixtures/sandbox/backends.ts";

describe.each(BACKENDS)("sandbox basics: $name", (backend) => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = backend.create();
    await Promise.all([sandbox.run("0"), sandbox.run("0")]); // load the engine, start both threads/processes outside the tests' clocks
  });
  afterAll(() => sandbox.dispose());

  const run = (code: string, options = {}) => runChecked(sandbox, code, options);

  it("returns the completion value of the script", async () => {
    const r = await run("const xs = [1, 2, 3]; let total = 0; for (const x of xs) total += x; total * 2");
    expect(r).toMatchObject({ ok: true, result: 12, stdout: "", stderr: "" });
    expect(r.error).toBeUndefined();
    expect(r.elapsedMs).toBeGreaterThanOrEqual(0);
    expect((await run("({ a: [1, 'two', { three: true }], b: null })")).result).toEqual({ a: [1, "two", { three: true }], b: null });
  });

  it("captures console.log/info to stdout and warn/error to stderr", async () => {
    const r = await run(`console.log("a", 1, { x: [1, 2] }, [3], undefined, null, 2n, true);
      console.info("info"); console.debug("debug");
      console.warn("careful"); console.error(new TypeError("bad"));
      "done"`);
    expect(r.ok).toBe(true);
    expect(r.stdout).toBe('a 1 {"x":[1,2]} [3] undefined null 2n true\ninfo\ndebug\n');
    expect(r.stderr).toBe("careful\nTypeError: bad\n");
  });

  it("awaits a promise result, async functions and top-level await within the time limit", async () => {
    expect((await run("Promise.resolve(41).then((x) => x + 1)")).result).toBe(42);
    expect((await run("async function main() { await null; return 'async'; } main()")).result).toBe("async");
    const tla = await run("const v = await Promise.resolve(5); console.log('v', v); return v * 2;");
    expect(tla).toMatchObject({ ok: true, result: 10, stdout: "v 5\n" });
    // Top-level await without return: the last expression's value, as a script gives (issue 24).
    expect((await run("const r = await Promise.resolve({ x: 41 }); r.x + 1")).result).toBe(42);
    expect((await run("const a = await Promise.resolve([3, 1, 2]);\na.sort()\n  .map((x) => x * 2);\n// done")).result).toEqual([2, 4, 6]);
    expect((await run("const f = (x) => x + 1;\nawait null;\nf\n(1)")).result).toBe(2); // one call, not `return (1)`
    expect((await run("await null; 'a;b'.length")).result).toBe(3);
    // Ending with a declaration or a loop: nothing to give (the value it returns, none).
    expect((await run("const z = await Promise.resolve(1);")).result).toBeNull();
    expect((await run("await null; for (let i = 0; i < 2; i++) {}")).result).toBeNull();
    // A thenable that is not a Promise is awaited too.
    expect((await run("({ then(resolve) { resolve('thenable'); } })")).result).toBe("thenable");
  });

  it("reports rejected and never-settling promises as errors", async () => {
    const rejected = await run("Promise.reject(new RangeError('nope'))");
    expect(rejected).toMatchObject({ ok: false, result: null, error: { name: "RangeError", message: "nope" } });
    const pending = await run("new Promise(() => {})");
    expect(pending).toMatchObject({ ok: false, error: { name: "UnsettledPromiseError" } });
  });

  it("turns values that are not JSON into safe JSON", async () => {
    const r = await run(`const cyc = { name: "c" }; cyc.self = cyc;
      ({ u: undefined, arr: [undefined, () => 1], f: function named() {}, big: 10n, nan: NaN, inf: -Infinity,
         sym: Symbol("s"), date: new Date(0), map: new Map([["k", 1]]), set: new Set([1, 2]),
         err: new Error("boom"), cyc, custom: { toJSON() { return "custom"; } } })`);
    expect(r.ok).toBe(true);
    expect(r.result).toEqual({
      arr: [null, "[Function (anonymous)]"],
      f: "[Function: named]",
      big: "10n",
      nan: "NaN",
      inf: "-Infinity",
      sym: "Symbol(s)",
      date: "1970-01-01T00:00:00.000Z",
      map: [["k", 1]],
      set: [1, 2],
      err: { name: "Error", message: "boom" },
      cyc: { name: "c", self: "[Circular]" },
      custom: "custom",
    });
    expect((await run("undefined")).result).toBe(null);
    expect((await run("(function f() {})")).result).toBe("[Function: f]");
    let deep = "0";
    for (let i = 0; i < 100; i++) deep = `[${deep}]`;
    expect(JSON.stringify((await run(deep)).result)).toContain('"[Array]"');
  });

  it("reports guest errors with their name and message", async () => {
    const r = await run("function f() { throw new TypeError('nope'); } f()");
    expect(r).toMatchObject({ ok: false, result: null, error: { name: "TypeError", message: "nope" } });
    expect(r.error?.stack).toMatch(/f/);
    expect((await run("null.x")).error?.name).toBe("TypeError");
    expect((await run("class E extends Error { constructor() { super('custom'); this.name = 'MyError'; } } throw new E()")).error).toMatchObject({
      name: "MyError",
      message: "custom",
    });
  });

  it("reports syntax errors as results, for JavaScript and TypeScript", async () => {
    const js = await run("let x = ;");
    expect(js).toMatchObject({ ok: false, error: { name: "SyntaxError" } });
    const ts = await run("const x: = 1", { ts: true });
    expect(ts).toMatchObject({ ok: false, error: { name: "SyntaxError" } });
  });

  it("runs TypeScript with types stripped", async () => {
    const r = await run(
      `interface P { x: number; y?: number }
       enum Color { Red, Green }
       function norm(p: P): number { return Math.abs(p.x) + (p.y ?? 0); }
       const value = norm({ x: -3 } as P) satisfies number;
       console.log(Color[Color.Green]);
       value as number`,
      { ts: true },
    );
    expect(r).toMatchObject({ ok: true, result: 3, stdout: "Green\n" });
  });

  it("hands in globals (copied) and stdin", async () => {
    const input = { list: [1, 2, 3], nested: { k: "v" } };
    const r = await run("list.push(4); nested.k = 'changed'; [stdin.trim().toUpperCase(), list.length, nested.k]", {
      globals: input,
      stdin: "hello\n",
    });
    expect(r.result).toEqual(["HELLO", 4, "changed"]);
    expect(input).toEqual({ list: [1, 2, 3], nested: { k: "v" } });
    expect((await run("stdin")).result).toBe("");
  });

  it("gives every run a fresh global scope", async () => {
    await run("var leaked = 1; globalThis.alsoLeaked = 2; Object.prototype.inherited = 3;");
    const r = await run("[typeof leaked, typeof alsoLeaked, typeof ({}).inherited]");
    expect(r.result).toEqual(["undefined", "undefined", "undefined"]);
  });

  it("caps console output at maxOutputBytes and marks the cut", async () => {
    const r = await run("for (let i = 0; i < 10000; i++) console.log('line ' + i); 'finished'", { maxOutputBytes: 1000 });
    expect(r).toMatchObject({ ok: true, result: "finished", truncated: true });
    expect(r.stdout.endsWith(TRUNCATION_MARKER)).toBe(true);
    expect(utf8Length(r.stdout.slice(0, -TRUNCATION_MARKER.length))).toBeLessThanOrEqual(1000);
    expect(r.stdout.startsWith("line 0\nline 1\n")).toBe(true);
    // The cap counts UTF-8 bytes and never splits a character.
    const wide = await run("console.log('é'.repeat(1000)); console.error('after')", { maxOutputBytes: 101 });
    expect(wide.stdout).toBe("é".repeat(50) + TRUNCATION_MARKER);
    expect(wide.stderr).toBe("");
    expect((await run("console.log('short')")).truncated).toBeUndefined();
  });

  it("refuses results larger than the output limit", async () => {
    const r = await run("'x'.repeat(5000)", { maxOutputBytes: 1000 });
    expect(r).toMatchObject({ ok: false, error: { name: "OutputLimitError" } });
    expect((await run("'x'.repeat(900)", { maxOutputBytes: 1000 })).ok).toBe(true);
  });

  it("runs many concurrent runs, queueing beyond the concurrency cap", async () => {
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => run(`let s = 0; for (let j = 0; j <= ${i}; j++) s += j; s`)));
    expect(results.map((r) => r.result)).toEqual(Array.from({ length: 12 }, (_, i) => (i * (i + 1)) / 2));
  });

  it.runIf(backend.name.startsWith("quickjs"))("bounds recursion depth by stackKb (QuickJS)", async () => {
    const depth = "function d(n) { try { return d(n + 1); } catch (e) { return n; } } d(0)";
    const small = await run(depth, { stackKb: 32 });
    const large = await run(depth, { stackKb: 256 });
    expect(small.ok && large.ok).toBe(true);
    expect(small.result as number).toBeGreaterThan(50);
    expect(large.result as number).toBeGreaterThan((small.result as number) * 4);
  });

  it("rejects invalid options (host misuse) instead of running", async () => {
    await expect(sandbox.run("1", { timeoutMs: -1 })).rejects.toThrow(RangeError);
    await expect(sandbox.run("1", { memoryMb: 1 })).rejects.toThrow(/memoryMb/);
    await expect(sandbox.run("1", { stackKb: 4096 })).rejects.toThrow(/stackKb/);
    await expect(sandbox.run(42 as unknown as string)).rejects.toThrow(TypeError);
  });
});

describe("sandbox lifecycle and configuration", () => {
  it("rejects runs after dispose", async () => {
    for (const backend of BACKENDS) {
      const s = backend.create();
      expect((await s.run("1")).result).toBe(1);
      await s.dispose();
      await expect(s.run("1")).rejects.toThrow(/disposed/);
    }
  });

  it("reads the backend from ENVWORKER_SANDBOX, quickjs by default on Node too", () => {
    expect(sandboxKindFromEnv({})).toBe("quickjs");
    expect(sandboxKindFromEnv({ ENVWORKER_SANDBOX: "" })).toBe("quickjs");
    expect(sandboxKindFromEnv({ ENVWORKER_SANDBOX: "quickjs" })).toBe("quickjs");
    expect(sandboxKindFromEnv({ ENVWORKER_SANDBOX: "isolated-vm" })).toBe("isolated-vm");
    expect(() => sandboxKindFromEnv({ ENVWORKER_SANDBOX: "docker" })).toThrow(/ENVWORKER_SANDBOX/);
    expect(createSandbox("quickjs").kind).toBe("quickjs");
    expect(createSandbox("isolated-vm").kind).toBe("isolated-vm");
  });

  it("QuickJS accepts an injected wasm module (how Workers pass `import wasm from './quickjs.wasm'`)", async () => {
    const require = createRequire(resolve(import.meta.dirname, "../../package.json"));
    const pkg = require.resolve("@jitl/quickjs-wasmfile-release-sync/package.json");
    const wasmModule = new WebAssembly.Module(readFileSync(join(dirname(pkg), "dist", "emscripten-module.wasm")));
    const s = createQuickJSSandbox({ wasmModule, deadline: "budget" });
    const r = await s.run("console.log('from injected wasm'); 6 * 7");
    expect(r).toMatchObject({ ok: true, result: 42, stdout: "from injected wasm\n" });
    await s.dispose();
  });

  it("Node backends report the memory their threads/processes hold", async () => {
    for (const kind of ["isolated-vm", "quickjs"] as const) {
      const s = createSandbox(kind, { maxConcurrency: 1 });
      expect(s.memoryBytes?.()).toBe(0); // nothing started yet
      expect((await s.run("1")).ok).toBe(true);
      expect(s.memoryBytes!()).toBeGreaterThan(8 * 1024 * 1024);
      await s.dispose();
    }
    expect(createQuickJSSandbox().memoryBytes()).toBe(0);
  });

  it("DEFAULT_LIMITS are 1 s, 64 MiB, 64 KiB of output", () => {
    expect(DEFAULT_LIMITS).toMatchObject({ timeoutMs: 1000, memoryMb: 64, maxOutputBytes: 65536 });
    expect(DEFAULT_LIMITS.stackKb).toBeLessThanOrEqual(384);
  });
});

describe("output caps (host side)", () => {
  it("truncates UTF-8 on character boundaries", () => {
    expect(truncateUtf8("abc", 10)).toBe("abc");
    expect(truncateUtf8("aé", 2)).toBe("a");
    expect(truncateUtf8("😀😀", 5)).toBe("😀");
    expect(truncateUtf8("x", 0)).toBe("");
  });

  it("shares one budget between stdout and stderr", () => {
    expect(capOutput("12345", "678", 6, null)).toEqual({ stdout: "12345", stderr: `6${TRUNCATION_MARKER}`, truncated: true });
    expect(capOutput("123", "", 2, null)).toEqual({ stdout: `12${TRUNCATION_MARKER}`, stderr: "", truncated: true });
    expect(capOutput("ok", "", 10, "stdout")).toEqual({ stdout: `ok${TRUNCATION_MARKER}`, stderr: "", truncated: true });
    expect(capOutput("ok", "fine", 10, null)).toEqual({ stdout: "ok", stderr: "fine", truncated: false });
  });
});

describe("Limiter", () => {
  it("runs at most `max` tasks at once, in FIFO order", async () => {
    const limiter = new Limiter(2);
    let active = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        limiter.run(async () => {
          active++;
          peak = Math.max(peak, active);
          order.push(i);
          await new Promise((r) => setTimeout(r, 5));
          active--;
        }),
      ),
    );
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(limiter.pending).toBe(0);
    // A failing task frees its slot.
    await expect(limiter.run(() => Promise.reject(new Error("x")))).rejects.toThrow("x");
    expect(await limiter.run(async () => "still works")).toBe("still works");
  });

  it("serves queue keys in turn (FIFO within a key) and drops a waiter whose signal aborts", async () => {
    const limiter = new Limiter(1);
    let open!: () => void;
    const first = limiter.run(() => new Promise<void>((resolve) => (open = resolve)), { key: "A" });
    const order: string[] = [];
    const task = (name: string) => async () => void order.push(name);
    const controller = new AbortController();
    const runs = [
      limiter.run(task("A1"), { key: "A" }),
      limiter.run(task("A2"), { key: "A" }),
      limiter.run(task("A3"), { key: "A", signal: controller.signal }),
      limiter.run(task("B1"), { key: "B" }),
      limiter.run(task("C1"), { key: "C" }),
      limiter.run(task("B2"), { key: "B" }),
    ];
    expect(limiter.pendingFor("A")).toBe(3);
    controller.abort(new Error("episode closed"));
    await expect(runs[2]).rejects.toThrow(CancelledError);
    await expect(runs[2]).rejects.toThrow(/episode closed/);
    expect(limiter.pending).toBe(5);
    await expect(limiter.run(task("never"), { signal: controller.signal })).rejects.toThrow(CancelledError);
    open();
    await first;
    await Promise.allSettled(runs);
    expect(order).toEqual(["A1", "B1", "C1", "A2", "B2"]);
    expect(limiter.pending).toBe(0);
  });

  it("with groups (clients), groups take turns first and a group's keys (its episodes) share its turns", async () => {
    const limiter = new Limiter(1);
    let open!: () => void;
    const first = limiter.run(() => new Promise<void>((resolve) => (open = resolve)), { key: "x" });
    const order: string[] = [];
    const task = (name: string) => async () => void order.push(name);
    const runs: Promise<void>[] = [];
    // Client A opened four episodes, two runs each; client B has one episode with four runs.
    for (const episode of ["a1", "a2", "a3", "a4"]) for (const n of [1, 2]) runs.push(limiter.run(task(`${episode}.${n}`), { group: "A", key: episode }));
    for (const n of [1, 2, 3, 4]) runs.push(limiter.run(task(`b1.${n}`), { group: "B", key: "b1" }));
    // A run with no group is a group of its own (as before groups existed).
    runs.push(limiter.run(task("solo"), { key: "solo" }));
    const cancel = new AbortController();
    const cancelled = limiter.run(task("gone"), { group: "A", key: "a5", signal: cancel.signal });
    cancel.abort(new Error("episode closed"));
    await expect(cancelled).rejects.toThrow(CancelledError);
    expect(limiter.pendingFor("a1")).toBe(2);
    open();
    await first;
    await Promise.all(runs);
    // B gets one turn in every round however many episodes A opened.
    expect(order).toEqual(["a1.1", "b1.1", "solo", "a2.1", "b1.2", "a3.1", "b1.3", "a4.1", "b1.4", "a1.2", "a2.2", "a3.2", "a4.2"]);
    expect(limiter.pending).toBe(0);
  });
});

describe("envworker run-code", () => {
  const FIXTURES = resolve(import.meta.dirname, "../fixtures/sandbox");

  it("prints the result as one JSON line (exit 0 for a successful run)", async () => {
    const lines: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string) => (lines.push(String(chunk)), true)) as typeof process.stdout.write;
    let code: number;
    try {
      code = await runCodeCommand(["--backend", "quickjs", "--timeout-ms", "300", join(FIXTURES, "hello.ts")]);
    } finally {
      process.stdout.write = write;
    }
    expect(code).toBe(0);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ ok: true, result: 3, stdout: "hello from TypeScript\n" });
  });

  it("exits 2 on usage errors", async () => {
    const errors: string[] = [];
    const original = console.error;
    console.error = (msg: string) => void errors.push(msg);
    try {
      expect(await runCodeCommand(["--backend", "docker", "x.js"])).toBe(2);
      expect(await runCodeCommand(["--timeout-ms", "abc", "x.js"])).toBe(2);
      expect(await runCodeCommand(["--memory-mb", "1", "x.js"])).toBe(2);
      expect(await runCodeCommand(["--nope"])).toBe(2);
      expect(await runCodeCommand(["a.js", "b.js"])).toBe(2);
      expect(await runCodeCommand([join(FIXTURES, "does-not-exist.js")])).toBe(2);
    } finally {
      console.error = original;
    }
    expect(errors.join("\n")).toMatch(/--backend must be one of/);
  });

  /** `envworker run-code ARGS` as a process of its own, with `input` on stdin. */
  const runCodeProcess = (args: string[], input: string) =>
    spawnSync(process.execPath, ["--no-node-snapshot", "--import", "tsx", join(FIXTURES, "run-code-main.ts"), ...args], {
      input,
      encoding: "utf8",
      cwd: resolve(import.meta.dirname, "../.."),
      // A synchronous wait no test timeout can end: a process that hangs fails the test instead.
      timeout: 120_000,
    });

  it("TypeScript without --ts: the SyntaxError comes with a hint at --ts; plain JavaScript mistakes do not", () => {
    const ts = runCodeProcess(["--backend", "quickjs"], "const n: number = 6; n * 7");
    expect(ts.status).toBe(1);
    expect(JSON.parse(ts.stdout).error.name).toBe("SyntaxError");
    expect(ts.stderr).toContain("envworker run-code: hint: this looks like TypeScript (it parses once its types are stripped): add --ts, or name the file .ts");
    const js = runCodeProcess(["--backend", "quickjs"], "const n = 6; n *");
    expect(js.status).toBe(1);
    expect(js.stderr).not.toContain("hint");
  });

  it("reads code from stdin in a real process (isolated-vm; a failed run exits 1)", () => {
    const child = runCodeProcess(["--timeout-ms", "200"], "console.log('in'); while (true) {}");
    expect(child.status).toBe(1);
    const out = JSON.parse(child.stdout.trim());
    expect(out).toMatchObject({ ok: false, stdout: "in\n", error: { name: "TimeoutError" } });
  });

  it("--ts strips types from stdin (exit 0), which without it is a syntax error (exit 1)", () => {
    const source = "const n: number = 6; interface P { x: number } (n * 7) as number";
    const typed = runCodeProcess(["--ts"], source);
    expect(typed.status, typed.stderr).toBe(0);
    expect(JSON.parse(typed.stdout.trim())).toMatchObject({ ok: true, result: 42 });
    const untyped = runCodeProcess([], source);
    expect(untyped.status).toBe(1);
    expect(JSON.parse(untyped.stdout.trim())).toMatchObject({ ok: false, error: { name: "SyntaxError" } });
  });

  it("survives code that aborts V8 (isolated-vm runs in a child process): exit 1, not a crash", () => {
    const child = runCodeProcess([], '"x".repeat(2**27).split("")');
    expect(child.signal).toBe(null);
    expect(child.status).toBe(1);
    expect(JSON.parse(child.stdout.trim())).toMatchObject({ ok: false, error: { name: "MemoryLimitError" } });
  });
});

describe("isolated-vm pool (white box)", () => {
  it("replaces an isolate killed by out-of-memory", async () => {
    const { createIsolatedVmSandbox } = await import("../../src/sandbox/engines/isolated-vm/isolated-vm.ts");
    const s = createIsolatedVmSandbox({ maxConcurrency: 1 });
    expect((await s.run("1")).ok).toBe(true);
    const oom = await s.run("const a = []; for (;;) a.push(new Array(1e5).fill(1.5))", { memoryMb: 16 });
    expect(oom.error?.name).toBe("MemoryLimitError");
    expect(s.replacedIsolates).toBe(1);
    expect((await s.run("2 + 2", { memoryMb: 16 })).result).toBe(4);
    await s.dispose();
  });

  it("the watchdog disposes an isolate that V8 keeps busy outside any timed call", async () => {
    const { IsolatePool } = await import("../../src/sandbox/engines/isolated-vm/isolate-pool.ts");
    const { runInContext } = await import("../../src/sandbox/engines/isolated-vm/isolated-vm.ts");
    const { prepareRun } = await import("../../src/sandbox/options.ts");
    const pool = new IsolatePool(1);
    const pooled = pool.acquire(32);
    // Poison the isolate the way the prelude now prevents: a FinalizationRegistry callback that
    // spins on the isolate's thread after its (raw, prelude-less) run has returned.
    const raw = await pooled.isolate.createContext();
    await raw.eval(
      "globalThis.fr = new FinalizationRegistry(() => { for (;;) {} }); for (let i = 0; i < 1000; i++) fr.register({ big: new Array(1000).fill(i) }, i); const junk = []; for (let i = 0; i < 2e5; i++) junk.push({ i }); 0",
      { timeout: 1000 },
    );
    // Keep the isolate busy outside any call the run makes: an eval with no timeout that never
    // returns holds the isolate's lock, so none of the run's timed calls even starts.
    void raw.eval("for (;;) {}").catch(() => {});
    const prepared = prepareRun("1 + 1", { timeoutMs: 200 });
    if (!prepared.ok) throw new Error("unreachable");
    const r = await runInContext(pooled, prepared.run);
    expect(r).toMatchObject({ ok: false, error: { name: "TimeoutError" } });
    expect(pooled.isolate.isDisposed).toBe(true);
    pool.release(pooled);
    pool.dispose();
  });
});
