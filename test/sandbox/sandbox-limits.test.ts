/**
 * Two limits checked with FIXED amounts, on every engine: the memory limit and the Python output
 * budget. The attack suites allocate or print without end, so any limit at all (a default, a host
 * cap, a heap limit) stops them, and a limit that was silently lost went unnoticed there: deleting
 * `memoryLimit` in isolate-pool.ts let a 40 MB allocation succeed under `memoryMb: 16`, and
 * deleting the Python output budget's decrement let many small writes kill the interpreter while
 * the 300 ms flood test still passed. Here the same allocation must succeed under a limit above it
 * and fail under one below it; and many small writes must end as a normal, capped run.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPythonSandbox, type PythonSandbox } from "../../src/sandbox/engines/python/python.ts";
import type { RunResult, Sandbox } from "../../src/sandbox/index.ts";
import { BACKENDS, expectHealthy, runChecked } from "../fixtures/sandbox/backends.ts";

/** What a refused allocation may end as: the engine's out-of-memory (V8 refuses an ArrayBuffer it cannot fit with a RangeError). */
const REFUSED = ["MemoryLimitError", "RangeError"];

function expectRefused(r: RunResult, label: string): void {
  expect(r.ok, `${label}: ${JSON.stringify(r).slice(0, 300)}`).toBe(false);
  expect(REFUSED, `${label}: ${JSON.stringify(r.error)}`).toContain(r.error?.name);
}

describe.each(BACKENDS)("the memory limit holds at a fixed size: $name", (backend) => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = backend.create();
    await sandbox.run("0");
  }, 120_000);
  afterAll(() => sandbox.dispose());

  // 5e6 doubles: 40 MB in a packed double array or a Float64Array; 5e5 of them: 4 MB.
  const ALLOCATIONS = {
    "an array of numbers": (n: number) => `new Array(${n}).fill(1.5).length`,
    "a typed array": (n: number) => `new Float64Array(${n}).fill(1.5).length`,
    // V8 took their memory past isolated-vm's allocator, so past memoryLimit (see isolate-pool.ts).
    "a resizable ArrayBuffer": (n: number) => `const b = new ArrayBuffer(${8 * n}, { maxByteLength: ${8 * n} }); new Float64Array(b).fill(1.5).length`,
    "a small resizable ArrayBuffer resized": (n: number) =>
      `let b = new ArrayBuffer(8, { maxByteLength: 2 ** 30 }); if (typeof b.resize === "function") b.resize(${8 * n}); else b = new ArrayBuffer(${8 * n}); new Float64Array(b).fill(1.5).length`,
    // QuickJS refused single allocations over its limit but did not add up many small ones (see quickjs.ts).
    "many 1 MB typed arrays": (n: number) => `const parts = []; for (let i = 0; i < ${n / 125_000}; i++) parts.push(new Float64Array(125000).fill(i)); parts.length * 125000`,
    "many 1 MB arrays of numbers": (n: number) => `const parts = []; for (let i = 0; i < ${n / 125_000}; i++) parts.push(new Array(125000).fill(i + 0.5)); parts.length * 125000`,
    // QuickJS-NG (the QuickJS zygote) refuses to make a growable SharedArrayBuffer: a plain one then.
    "a growable SharedArrayBuffer grown": (n: number) =>
      `let b; try { b = new SharedArrayBuffer(8, { maxByteLength: 2 ** 30 }); } catch (e) { b = new SharedArrayBuffer(8); } if (typeof b.grow === "function") b.grow(${8 * n}); else b = new SharedArrayBuffer(${8 * n}); new Float64Array(b).fill(1.5).length`,
  };
  for (const [what, code] of Object.entries(ALLOCATIONS)) {
    it(`${what}: 40 MB fails under memoryMb 16 and succeeds under 64 and 128; 4 MB succeeds under 16`, async () => {
      const options = (memoryMb: number) => ({ memoryMb, timeoutMs: 5000 });
      expectRefused(await runChecked(sandbox, code(5e6), options(16)), `40 MB under 16 MiB`);
      await expectHealthy(sandbox);
      expect(await runChecked(sandbox, code(5e6), options(64)), "40 MB under 64 MiB").toMatchObject({ ok: true, result: 5e6 });
      expect(await runChecked(sandbox, code(5e6), options(128)), "40 MB under 128 MiB").toMatchObject({ ok: true, result: 5e6 });
      expect(await runChecked(sandbox, code(5e5), options(16)), "4 MB under 16 MiB").toMatchObject({ ok: true, result: 5e5 });
      // And once more below the limit, after runs that were allowed more (a pooled isolate or
      // instance made for a larger limit must not serve a smaller one).
      expectRefused(await runChecked(sandbox, code(5e6), options(16)), `40 MB under 16 MiB, after 64 and 128`);
    });
  }
});

describe("python: the memory limit and the output budget at fixed sizes", () => {
  let python: PythonSandbox;
  beforeAll(async () => {
    python = createPythonSandbox({ maxConcurrency: 1 });
    await python.warm();
  }, 60_000);
  afterAll(() => python.dispose());

  it("40 MB fails under memoryMb 16 and succeeds under 64 and 128; 4 MB succeeds under 16", async () => {
    const code = (mb: number) => `len(bytearray(${mb} * 2**20))`;
    const options = (memoryMb: number) => ({ memoryMb, timeoutMs: 5000 });
    const over = await python.run(code(40), options(16));
    expect(over, JSON.stringify(over).slice(0, 300)).toMatchObject({ ok: false, error: { name: "MemoryLimitError" } });
    expect(await python.run(code(40), options(64))).toMatchObject({ ok: true, result: 40 * 2 ** 20 });
    expect(await python.run(code(40), options(128))).toMatchObject({ ok: true, result: 40 * 2 ** 20 });
    expect(await python.run(code(4), options(16))).toMatchObject({ ok: true, result: 4 * 2 ** 20 });
    expect(await python.run(code(40), options(16))).toMatchObject({ ok: false, error: { name: "MemoryLimitError" } });
  });

  it("the same sizes hold under load: beside two runaway runs on the machine's two cores", async () => {
    // The limit is wasmtime's store limit on the run's own child: the load changes nothing of it.
    const loaded = createPythonSandbox({ maxConcurrency: 3 });
    try {
      await loaded.warm();
      const code = (mb: number) => `len(bytearray(${mb} * 2**20))`;
      const options = (memoryMb: number) => ({ memoryMb, timeoutMs: 20_000 });
      const busy = [0, 1].map(() => loaded.run("while True: pass", { timeoutMs: 4000 }));
      const results = [];
      for (const [mb, limit] of [[40, 16], [40, 64], [4, 16], [40, 16]] as const) results.push(await loaded.run(code(mb), options(limit)));
      expect(results.map((r) => (r.ok ? r.result : r.error?.name))).toEqual(["MemoryLimitError", 40 * 2 ** 20, 4 * 2 ** 20, "MemoryLimitError"]);
      expect((await Promise.all(busy)).map((r) => r.error?.name)).toEqual(["TimeoutError", "TimeoutError"]);
    } finally {
      await loaded.dispose();
    }
  }, 90_000);

  it("400 MB printed in 10 KB lines ends as a normal run with its output capped, the interpreter kept", async () => {
    // Each line is its own write (line-buffered) and each is under the 64 KiB cap: only a budget
    // that counts every write stops keeping them. Without it the worker's heap filled and the
    // interpreter died (SandboxError) after ~2.5 s; with it this takes ~0.4 s. The time limit is
    // far away so that only the budget can be what ends the output.
    const before = python.replaced;
    for (const [stream, code] of [
      ["stdout", "s = 'x' * 9999\nfor _ in range(4 * 10**4): print(s)\n'done'"],
      ["stderr", "import sys\ns = 'y' * 9999 + '\\n'\nfor _ in range(4 * 10**4): sys.stderr.write(s)\n'done'"],
    ] as const) {
      const r = await python.run(code, { timeoutMs: 30_000 });
      expect(r, `${stream}: ${JSON.stringify({ ...r, stdout: r.stdout.length, stderr: r.stderr.length })}`).toMatchObject({ ok: true, result: "done", truncated: true });
      expect(r[stream].length).toBeGreaterThan(60_000);
      expect(r[stream].length).toBeLessThanOrEqual(65_536 + 20);
      expect(r[stream].endsWith("…[truncated]")).toBe(true);
    }
    expect(python.replaced, "interpreters replaced").toBe(before);
    expect(await python.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
  }, 90_000);
});
