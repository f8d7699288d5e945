/**
 * Hostile input against the Node sandboxes as the server runs them (isolated-vm in supervised
 * child processes, QuickJS in supervised child processes): code that aborts V8, code that grows far
 * past its memory limit, TypeScript that is slow to strip, a flood of runaway runs from one queue
 * key, and callers that give up. This test process is the "server": it must survive every one, and
 * so must the sandbox instance (a `1+1` right after), and memory must come back.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIsolatedVmProcessSandbox } from "../../src/sandbox/engines/isolated-vm/isolated-vm-process.ts";
import { createQuickJSProcessSandbox } from "../../src/sandbox/engines/quickjs/quickjs-process.ts";
import type { HostPoolSandbox } from "../../src/sandbox/host/host-pool.ts";
import type { RunResult } from "../../src/sandbox/index.ts";

const MiB = 1024 * 1024;

const NODE_BACKENDS: { name: string; create(): HostPoolSandbox }[] = [
  { name: "isolated-vm in child processes", create: () => createIsolatedVmProcessSandbox({ maxConcurrency: 2 }) },
  { name: "QuickJS in child processes", create: () => createQuickJSProcessSandbox({ maxConcurrency: 2 }) },
];

/** `promise`, or a failure saying `why()` once `ms` have passed. */
async function within<T>(promise: Promise<T>, ms: number, why: () => string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(why())), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

function expectFailed(r: RunResult, names: string[]): void {
  expect(r.ok, JSON.stringify(r).slice(0, 400)).toBe(false);
  expect(names, JSON.stringify(r.error)).toContain(r.error?.name);
  expect(r.error?.message.length).toBeGreaterThan(0);
}

describe.each(NODE_BACKENDS)("hostile input: $name", ({ create }) => {
  let sandbox: HostPoolSandbox;
  beforeAll(async () => {
    sandbox = create();
    expect((await sandbox.run("1 + 1")).result).toBe(2);
  });
  afterAll(() => sandbox.dispose());

  const healthy = async () => expect(await sandbox.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
  /** Memory of this process plus what the sandbox's threads/processes hold. */
  const memory = () => process.memoryUsage.rss() + sandbox.memoryBytes();

  it("an array V8 refuses to size (a fatal error in the engine) ends the run, not this process", async () => {
    // On in-process isolated-vm this aborted the whole process (`Fatal JavaScript invalid size error`).
    const r = await sandbox.run('"x".repeat(2**27).split("")', { timeoutMs: 10_000 });
    expectFailed(r, ["MemoryLimitError"]);
    await healthy();
  });

  it("runs far over their memory limit end as errors and their memory is given back", async () => {
    await healthy();
    const before = memory();
    const bombs = [
      "'x'.repeat(2**27).match(/x/g).length", // isolated-vm: ~1.5 GB past a 64 MiB limit, per run
      "'x'.repeat(2**27).match(/x/g).length",
      "'x'.repeat(2**27).match(/x/g).length",
      "'x'.repeat(2**27).match(/x/g).length",
      "const a = []; for (;;) a.push(new Array(1e5).fill(1.5))", // QuickJS: grew wasm memory to 2 GiB uncapped
      "const a = []; for (;;) a.push(new Array(1e5).fill(1.5))",
    ];
    for (const code of bombs) {
      expectFailed(await sandbox.run(code, { timeoutMs: 3000, memoryMb: 64 }), ["MemoryLimitError", "TimeoutError"]);
      await healthy();
    }
    // Generous: a single bomb that kept its memory would hold far more than this.
    expect((memory() - before) / MiB).toBeLessThan(300);
  });

  it("strips hostile TypeScript in the sandbox's thread/process, never on the caller's event loop", async () => {
    // Sucrase takes seconds on this (quadratic in its length).
    const hostile = "a<b>c<d".repeat(1750);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    const started = performance.now();
    const pending = sandbox.run(hostile, { ts: true, timeoutMs: 300 });
    const synchronous = performance.now() - started;
    const r = await pending;
    const total = performance.now() - started;
    clearInterval(ticker);
    // Stopped by the run's deadline (or by the host's stack limit); either way, not run.
    expectFailed(r, ["TimeoutError", "TypeScriptError"]);
    // Stripping this takes sucrase seconds: the call's own synchronous part stays far below that.
    // (A fast refusal, the stack limit's, makes total short: then the bound is 100 ms, not a tenth
    // of it, which a loaded machine's few milliseconds of prologue passed: 2.7 ms of 16 ms in all.)
    expect(synchronous).toBeLessThan(Math.max(total / 10, 100));
    expect(ticks).toBeGreaterThan(0);
    await healthy();
  });

  it("a key's backlog of runaway runs cannot starve another key's run", async () => {
    const hog = new AbortController();
    let finishedA = 0;
    const backlog = Array.from({ length: 20 }, () =>
      sandbox.run("while (true) {}", { queueKey: "A", signal: hog.signal, timeoutMs: 300 }).then((r) => {
        finishedA++;
        return r;
      }),
    );
    const b = await sandbox.run("1 + 1", { queueKey: "B" });
    const finishedAWhenBDone = finishedA;
    expect(b).toMatchObject({ ok: true, result: 2 });
    // B waited for at most one of A's runs per slot, not for A's backlog.
    expect(finishedAWhenBDone).toBeLessThanOrEqual(4);
    hog.abort();
    const results = await Promise.all(backlog);
    expect(results.filter((r) => r.error?.name === "CancelledError").length).toBeGreaterThanOrEqual(14);
    for (const r of results) expectFailed(r, ["TimeoutError", "CancelledError"]);
  });

  it("a caller that gives up cancels its queued and its running runs, and frees their slots", async () => {
    const controller = new AbortController();
    let started = 0;
    let runs: Promise<RunResult>[] = [];
    const bothRunning = new Promise<void>((resolve) => {
      const onStart = () => {
        if (++started === 2) resolve();
      };
      // Ten-minute runs: unless cancelled, they would hold both slots for the rest of this test.
      runs = Array.from({ length: 6 }, () => sandbox.run("while (true) {}", { queueKey: "gone", signal: controller.signal, timeoutMs: 600_000, onStart }));
    });
    // Bounded, so that a hang says where it was (once, under load, this test ran out its 90 s).
    await within(bothRunning, 45_000, () => `the first two runs did not start (${started} started)`);
    controller.abort(new Error("client disconnected"));
    const settled = new Set<number>();
    runs.forEach((r, i) => void r.then(() => settled.add(i)));
    const results = await within(Promise.all(runs), 30_000, () => `cancelled runs did not end: ${runs.length - settled.size} of ${runs.length} still pending (${started} had started)`);
    for (const r of results) expectFailed(r, ["CancelledError"]);
    expect(started).toBe(2); // the queued four never ran
    expect(results.filter((r) => /before it started: client disconnected/.test(r.error!.message))).toHaveLength(4);
    expect(results.filter((r) => /while running: client disconnected/.test(r.error!.message))).toHaveLength(2);
    await healthy();
    await healthy();
    // Already aborted: not even queued.
    expectFailed(await sandbox.run("1", { signal: controller.signal }), ["CancelledError"]);
  });
});
