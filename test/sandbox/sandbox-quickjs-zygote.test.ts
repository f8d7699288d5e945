/**
 * QuickJS on Node (quickjs-process.ts): QuickJS-NG's WASI reactor under wasmtime, warmed once in a
 * zygote (src/sandbox/quickjs-zygote), each run in a fresh process forked from it. The guest
 * contract is the other backends' (test/sandbox/sandbox.test.ts runs it too); what this design adds is
 * checked here: a guest reaches nothing of the reactor's own context (qjs:std / qjs:os / qjs:bjson,
 * print, scriptArgs), nothing a run does survives into the next, TypeScript is stripped inside the
 * run, and the limits hold.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createQuickJSProcessSandbox, type QuickJSProcessSandbox } from "../../src/sandbox/engines/quickjs/quickjs-process.ts";
import type { RunResult } from "../../src/sandbox/types.ts";

function failed(r: RunResult, name: string): void {
  expect(r.ok, JSON.stringify(r).slice(0, 400)).toBe(false);
  expect(r.error?.name, JSON.stringify(r.error)).toBe(name);
}

describe("QuickJS zygote", () => {
  let sandbox: QuickJSProcessSandbox;
  beforeAll(async () => {
    sandbox = createQuickJSProcessSandbox({ maxConcurrency: 2 });
    await sandbox.warm(2);
  });
  afterAll(() => sandbox?.dispose());

  it("runs code with the guest contract: completion value, console, globals, stdin", async () => {
    const t0 = performance.now();
    const r = await sandbox.run("console.log('hi', {a: [1, 2]}); console.error('e'); stdin + g.x", { stdin: "in:", globals: { g: { x: 5 } } });
    const wall = performance.now() - t0;
    expect(r).toMatchObject({ ok: true, result: "in:5", stdout: 'hi {"a":[1,2]}\n', stderr: "e\n" });
    // On the run clock: wall time less the waits for a CPU, so at most the wall time (and 0 when a
    // loaded machine made the run wait for nearly all of it).
    expect(r.elapsedMs).toBeGreaterThanOrEqual(0);
    expect(r.elapsedMs).toBeLessThanOrEqual(wall);
    expect(await sandbox.run("new Map([[1, {d: new Date(0)}]])")).toMatchObject({ ok: true, result: [[1, { d: "1970-01-01T00:00:00.000Z" }]] });
  });

  it("awaits promises and top-level await, and reports what never settles", async () => {
    expect(await sandbox.run("Promise.resolve(5).then((x) => x * 2)")).toMatchObject({ ok: true, result: 10 });
    expect(await sandbox.run("const r = await Promise.resolve({ x: 3 });\nr.x")).toMatchObject({ ok: true, result: 3 });
    expect(await sandbox.run("return 7")).toMatchObject({ ok: true, result: 7 });
    failed(await sandbox.run("new Promise(() => {})"), "UnsettledPromiseError");
  });

  it("reports thrown values as {name, message} computed inside the sandbox", async () => {
    expect(await sandbox.run("throw new TypeError('boom')")).toMatchObject({ ok: false, error: { name: "TypeError", message: "boom" } });
    expect(await sandbox.run("throw 42")).toMatchObject({ ok: false, error: { name: "Error", message: "Uncaught 42" } });
    failed(await sandbox.run("let = ;"), "SyntaxError");
  });

  it("strips TypeScript inside the run's process, with the host's sucrase code", async () => {
    expect(await sandbox.run("interface P { x: number }\nconst p: P = { x: 41 };\np.x + 1", { ts: true })).toMatchObject({ ok: true, result: 42 });
    expect(await sandbox.run("enum E { A = 2 }\nE.A * 3", { ts: true })).toMatchObject({ ok: true, result: 6 });
    failed(await sandbox.run("const f = (x: ) => 1", { ts: true }), "SyntaxError");
  });

  it("gives a guest nothing of the reactor's context: no std, os, bjson, print, scriptArgs", async () => {
    const r = await sandbox.run("[typeof std, typeof os, typeof bjson, typeof print, typeof scriptArgs, typeof execArgv, typeof argv0, typeof navigator, typeof gc]");
    expect(r).toMatchObject({ ok: true, result: Array(9).fill("undefined") });
    for (const code of ["std.open('/etc/passwd', 'r')", "os.exec(['/bin/sh'])", "std.loadFile('/etc/passwd')", "os.write(1, new ArrayBuffer(8), 0, 8)"]) {
      failed(await sandbox.run(code), "ReferenceError");
    }
  });

  it("import() of qjs:std, qjs:os and qjs:bjson fails, by every route", async () => {
    for (const name of ["qjs:std", "qjs:os", "qjs:bjson"]) {
      for (const code of [
        `await import('${name}')`,
        `import('${name}')`,
        `(0, eval)("import('${name}')")`,
        `new Function("return import('${name}')")()`,
        `(async () => (await import('${name}')).open)()`,
      ]) {
        const r = await sandbox.run(code);
        expect(r.ok, `${code}: ${JSON.stringify(r)}`).toBe(false);
        expect(r.error?.message).toContain("could not load module");
      }
    }
    // A file path fails the same way: the reactor has no preopened directory.
    expect((await sandbox.run("import('/etc/passwd')")).ok).toBe(false);
  });

  it("starts every run from the zygote's state: nothing a run does is seen by the next", async () => {
    expect(await sandbox.run("globalThis.leak = 1; Object.prototype.polluted = 2; Array.prototype.push = null; JSON.stringify = () => 'x'; 'done'")).toMatchObject({ ok: true });
    expect(await sandbox.run("[typeof leak, ({}).polluted ?? null, typeof [].push, JSON.stringify({a: 1})]")).toMatchObject({
      ok: true,
      result: ["undefined", null, "function", '{"a":1}'],
    });
  });

  it("gives each run its own Math.random seed (the children are copies of one state)", async () => {
    const draws = await Promise.all(Array.from({ length: 4 }, () => sandbox.run("Math.random()")));
    expect(new Set(draws.map((r) => r.result)).size).toBe(4);
  });

  it("serves runs at the same time, each in its own process", async () => {
    const rs = await Promise.all(Array.from({ length: 6 }, (_, i) => sandbox.run(`let s = 0; for (let i = 0; i <= ${i * 100}; i++) s += i; s`)));
    expect(rs.map((r) => r.result)).toEqual([0, 5050, 20100, 45150, 80200, 125250]);
  });

  it("ends a run at its time limit and keeps what it printed", async () => {
    const r = await sandbox.run("console.log('in'); while (true) {}", { timeoutMs: 200 });
    expect(r).toMatchObject({ ok: false, stdout: "in\n", error: { name: "TimeoutError" } });
    failed(await sandbox.run("async function f() { for (;;) await 0 } f()", { timeoutMs: 200 }), "TimeoutError");
    failed(await sandbox.run("new Promise((r) => { for (;;) {} })", { timeoutMs: 200 }), "TimeoutError");
    expect(await sandbox.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
  });

  it("holds the memory limit: what QuickJS counts and the wasm memory's cap", async () => {
    // 20 MB of strings is within the wasm memory's cap for 16 MiB (1.5 x 16 + 8 MiB) but not within
    // QuickJS's own count, which on quickjs-emscripten let forty such strings pass (no
    // malloc_usable_size there); QuickJS-NG on WASI counts them, and says so catchably.
    const fill = "for (let i = 0; i < 20; i++) a.push('x'.repeat(1 << 20) + i);";
    failed(await sandbox.run(`const a = []; ${fill} a.length`, { memoryMb: 16 }), "MemoryLimitError");
    const caught = await sandbox.run(`const a = []; try { ${fill} } catch (e) { [e.message, a.length] }`, { memoryMb: 16 });
    expect(caught).toMatchObject({ ok: true, result: ["out of memory", expect.any(Number)] });
    expect((caught.result as number[])[1]).toBeLessThan(17);
    failed(await sandbox.run("const a = []; for (;;) a.push(new Array(1e5).fill(1.5))", { memoryMb: 16, timeoutMs: 5000 }), "MemoryLimitError");
    expect(await sandbox.run("const a = []; for (let i = 0; i < 8; i++) a.push('x'.repeat(1 << 20) + i); a.length", { memoryMb: 16 })).toMatchObject({ ok: true, result: 8 });
  });

  it("holds the stack limit, and deep nesting past the native stack is a RangeError", async () => {
    const depth = (stackKb: number) => sandbox.run("let d = 0; function f() { d++; f(); } try { f() } catch (e) { [e.name, d] }", { stackKb });
    const small = await depth(16);
    const large = await depth(384);
    expect(small).toMatchObject({ ok: true, result: ["RangeError", expect.any(Number)] });
    expect(large).toMatchObject({ ok: true, result: ["RangeError", expect.any(Number)] });
    expect((large.result as number[])[1]).toBeGreaterThan((small.result as number[])[1]! * 4);
    failed(await sandbox.run("eval('('.repeat(5000) + '1' + ')'.repeat(5000))"), "RangeError");
    expect(await sandbox.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
  });

  it("caps output as the other backends do", async () => {
    const r = await sandbox.run("for (let i = 0; i < 1000; i++) console.log('x'.repeat(100))", { maxOutputBytes: 1000 });
    expect(r.truncated).toBe(true);
    expect(r.stdout.length).toBeLessThan(1100);
  });
});
