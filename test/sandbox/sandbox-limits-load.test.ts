/**
 * The memory limit holds at fixed sizes on a loaded machine (issue 29, finding 4): in `npm test` at
 * load ~15, test/sandbox/sandbox-limits.test.ts saw 40 MB succeed under `memoryMb: 16` on isolated-vm,
 * whose `memoryLimit` is checked in V8's garbage collections, so what it stops depends on when V8
 * collects. Here, beside busy loops in child processes (bounded in time), a fixed allocation over
 * the limit must fail and one under it succeed, on each JavaScript engine, several times over
 * (isolated-vm: a fresh isolate each time, the limit alternating). One allocation fails on the
 * previous code without any load: `'x'.repeat(2 ** 23).split('')` (an array of 8 million
 * one-character strings, 64 MB) succeeded under 16 MiB every time on isolated-vm. Python is left
 * to its own tests (its engine is being replaced).
 *
 * Time limits are generous: isolated-vm's own time limit is the wall clock (src/sandbox/README.md),
 * and this is about memory.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { availableParallelism, loadavg } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIsolatedVmProcessSandbox } from "../../src/sandbox/engines/isolated-vm/isolated-vm-process.ts";
import { createQuickJSProcessSandbox } from "../../src/sandbox/engines/quickjs/quickjs-process.ts";
import type { RunResult, Sandbox } from "../../src/sandbox/types.ts";
import { cpuSlowdown } from "../helpers/slowdown.ts";

/** The load this file is about: issue 29 saw the limit fail in `npm test` at load ~15 on 2 cores. */
const TARGET_LOAD = 15;
/**
 * Busy loops beside the test: as many as bring the machine's load to TARGET_LOAD, counting the
 * load it already has (the rest of the suite, when this file runs in it), at least two per core
 * and at most 12 (what it always started before). Twelve more on a machine already at load ~8
 * took 66 s of CPU from the rest of the suite for nothing this test needs.
 */
const LOAD_BEFORE = loadavg()[0]!;
const BUSY_LOOPS = Math.min(12, Math.max(2 * availableParallelism(), Math.round(TARGET_LOAD - LOAD_BEFORE)));
/** Each ends by itself after this long, whatever becomes of the test. */
const BUSY_FOR_MS = 300_000;
const REPEATS = 2;
/** What a refused allocation may end as: the engine's out-of-memory (V8 refuses an ArrayBuffer it cannot fit with a RangeError). */
const REFUSED = ["MemoryLimitError", "RangeError"];

let busy: ChildProcess[] = [];
beforeAll(() => {
  busy = Array.from({ length: BUSY_LOOPS }, () =>
    spawn(process.execPath, ["-e", `const end = Date.now() + ${BUSY_FOR_MS}; while (Date.now() < end) {}`], { stdio: "ignore" }),
  );
});
afterAll(() => {
  for (const child of busy) child.kill("SIGKILL");
});

interface Allocation {
  /** The code for `n` units, its result `n`. */
  code(n: number): string;
  /** Over the limit at 16 MiB; also what must succeed under `roomMb`. */
  big: number;
  roomMb: number;
  /** Under the limit at 16 MiB. */
  small: number;
}

const ALLOCATIONS: Record<string, Allocation> = {
  // 5e6 doubles: 40 MB; 5e5: 4 MB.
  "an array of numbers": { code: (n) => `new Array(${n}).fill(1.5).length`, big: 5e6, roomMb: 64, small: 5e5 },
  "many 1 MB arrays of numbers": {
    code: (n) => `const parts = []; for (let i = 0; i < ${n / 125_000}; i++) parts.push(new Array(125000).fill(i + 0.5)); parts.length * 125000`,
    big: 5e6,
    roomMb: 64,
    small: 5e5,
  },
  "a typed array": { code: (n) => `new Float64Array(${n}).fill(1.5).length`, big: 5e6, roomMb: 64, small: 5e5 },
  // 2^23 one-character strings: a 64 MB array of pointers in V8 (128 MB of values in QuickJS, and
  // QuickJS-NG counts the strings and the array's growth too: past 256 MiB); 2^17: 1 MB of
  // pointers (2^19 came to more than 16 MiB in QuickJS-NG's count).
  "an array of one-character strings": { code: (n) => `'x'.repeat(${n}).split('').length`, big: 2 ** 23, roomMb: 640, small: 2 ** 17 },
};

const ENGINES = [
  { name: "isolated-vm", create: () => createIsolatedVmProcessSandbox({ maxConcurrency: 2 }) },
  { name: "QuickJS", create: () => createQuickJSProcessSandbox({ maxConcurrency: 2 }) },
];

function expectRefused(r: RunResult, label: string): void {
  expect(r.ok, `${label}: ${JSON.stringify(r).slice(0, 300)}`).toBe(false);
  expect(REFUSED, `${label}: ${JSON.stringify(r.error)}`).toContain(r.error?.name);
}

describe.each(ENGINES)("the memory limit holds at fixed sizes under load: $name", ({ create }) => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = create();
    await sandbox.run("0");
    console.log(`[limits under load] load factor ${cpuSlowdown().toFixed(2)} beside ${BUSY_LOOPS} busy loops (load ${LOAD_BEFORE.toFixed(1)} before them)`);
  }, 120_000);
  afterAll(() => sandbox.dispose());

  const run = (code: string, memoryMb: number) => sandbox.run(code, { memoryMb, timeoutMs: 60_000 });

  for (const [what, a] of Object.entries(ALLOCATIONS)) {
    it(`${what}: over the limit fails under memoryMb 16, the same succeeds under ${a.roomMb}, a sixteenth (or tenth) of it under 16; ${REPEATS} times`, async () => {
      for (let i = 0; i < REPEATS; i++) {
        expectRefused(await run(a.code(a.big), 16), `round ${i}: ${a.big} under 16 MiB`);
        const roomy = await run(a.code(a.big), a.roomMb);
        expect(roomy, `round ${i}: ${a.big} under ${a.roomMb} MiB: ${JSON.stringify(roomy.error)}`).toMatchObject({ ok: true, result: a.big });
        const small = await run(a.code(a.small), 16);
        expect(small, `round ${i}: ${a.small} under 16 MiB: ${JSON.stringify(small.error)}`).toMatchObject({ ok: true, result: a.small });
      }
    }, 240_000);
  }
});
