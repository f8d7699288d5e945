/**
 * The run clock (src/sched/run-delay.ts, deadline.ts): a run's time limit counts the time it
 * ran, not the time its host waited for a CPU on a busy machine, up to a cap on wall time.
 *
 * The live tests make the machine busy on purpose: busy loops at the default priority, three per
 * core, so a host gets about a quarter of the CPU time it would alone. A run that needs C ms of CPU
 * then takes ~4C of wall time; its limit is 2.5C. On the wall clock it would time out; on the
 * run clock it finishes, and a runaway run still ends at its limit of running.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { availableParallelism } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDeadline, runDeadline, stretchCapMs, type DelayProbe } from "../../src/sched/deadline.ts";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.ts";
import { createPythonSandbox } from "../../src/sandbox/engines/python/python.ts";
import { createQuickJSProcessSandbox } from "../../src/sandbox/engines/quickjs/quickjs-process.ts";
import { delayProbe } from "../../src/sched/run-delay.ts";

/** A probe whose reading the test sets. */
function fakeProbe(): DelayProbe & { set(ms: number): void } {
  let value = 0;
  return Object.assign(() => value, { close() {}, set: (ms: number) => void (value = ms) });
}

describe("runDeadline: wall time minus the wait for a CPU", () => {
  it("expires at the limit when the run never waited", () => {
    let t = 1000;
    const d = runDeadline(300, fakeProbe(), () => t);
    t = 1299;
    expect(d.expired()).toBe(false);
    expect(d.remainingMs()).toBe(1);
    t = 1300;
    expect(d.expired()).toBe(true);
    expect(d.elapsedMs()).toBe(300);
  });

  it("gives back the time waited, read only once the wall clock says the limit passed", () => {
    let t = 0;
    const probe = fakeProbe();
    let reads = 0;
    const counted: DelayProbe = Object.assign(() => (reads++, probe()), { close() {} });
    const d = runDeadline(300, counted, () => t);
    expect(reads).toBe(1); // the baseline
    t = 100;
    probe.set(500);
    expect(d.expired()).toBe(false);
    expect(reads).toBe(1); // still before the limit: no read
    t = 799;
    expect(d.expired()).toBe(false); // 799 - 500 waited = 299 of running
    t = 800;
    expect(d.expired()).toBe(true);
    expect(d.expired()).toBe(true); // latched
    expect(d.elapsedMs()).toBe(300);
  });

  it("never stretches past the cap", () => {
    let t = 0;
    const probe = fakeProbe();
    const d = runDeadline(300, probe, () => t);
    probe.set(10 ** 9);
    t = stretchCapMs(300) - 1;
    expect(d.expired()).toBe(false);
    t = stretchCapMs(300);
    expect(d.expired()).toBe(true);
  });

  it("is the QuickJS host's interrupt deadline when a probe is given (clock strategy only)", () => {
    let t = 0;
    const probe = fakeProbe();
    const onRunClock = createDeadline({ strategy: "clock", timeoutMs: 300, now: () => t, delay: probe });
    const onWall = createDeadline({ strategy: "clock", timeoutMs: 300, now: () => t });
    probe.set(200);
    t = 400;
    expect(onWall.shouldInterrupt()).toBe(true);
    expect(onRunClock.shouldInterrupt()).toBe(false);
    t = 500;
    expect(onRunClock.shouldInterrupt()).toBe(true);
    // The budget strategy (Workers) counts handler calls; a probe changes nothing there.
    const budget = createDeadline({ strategy: "budget", timeoutMs: 1, callsPerMs: 1, now: () => 0, delay: probe });
    expect(budget.shouldInterrupt()).toBe(false);
    expect(budget.shouldInterrupt()).toBe(true);
  });
});

/** Busy loops at the default priority, `perCore` per CPU. */
function busyLoops(perCore: number): { stop(): void } {
  const loops: ChildProcess[] = Array.from({ length: perCore * availableParallelism() }, () =>
    spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }),
  );
  return { stop: () => loops.forEach((l) => l.kill("SIGKILL")) };
}

async function busyWhile<T>(fn: () => Promise<T>): Promise<T> {
  const busy = busyLoops(3);
  try {
    // Let the loops get going.
    await new Promise((r) => setTimeout(r, 200));
    return await fn();
  } finally {
    busy.stop();
  }
}

describe("delayProbe", () => {
  it("reads how long this thread waited for a CPU, and it grows when the CPUs are busy", async () => {
    const probe = delayProbe();
    try {
      const before = probe();
      await busyWhile(async () => {
        const end = performance.now() + 300;
        while (performance.now() < end) {
          // spin beside the busy loops
        }
      });
      expect(probe() - before).toBeGreaterThan(20);
    } finally {
      probe.close();
    }
  });

  it("reads 0 where there is nothing to read", () => {
    const probe = delayProbe("/proc/no-such-process/schedstat");
    expect(probe()).toBe(0);
  });
});

/**
 * A run that needs about `C` ms of CPU (measured first, on the run clock), then the same under busy
 * loops with a limit of 2.5C: it must finish, and say it ran about C.
 */
const ENGINES: { name: string; create: () => Sandbox; work: (n: number) => string; n: number }[] = [
  { name: "QuickJS host", create: () => createSandbox("quickjs", { maxConcurrency: 1 }), work: (n) => `let s = 0; for (let i = 0; i < ${n}; i++) s += i % 7; s`, n: 3e6 },
  { name: "Python host", create: () => createPythonSandbox({ maxConcurrency: 1 }), work: (n) => `s = 0\nfor i in range(${n}): s += i % 7\ns`, n: 1e6 },
];

describe.each(ENGINES)("$name: limits on the run clock", ({ create, work, n }) => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = create();
    await sandbox.run("0");
  }, 120_000);
  afterAll(() => sandbox.dispose());

  it("a run that fits its limit on an idle machine still fits it on a busy one; a runaway one still ends at it", async () => {
    // Enough work for ~150 ms of running, measured on the run clock.
    const alone = await sandbox.run(work(n), { timeoutMs: 30_000 });
    expect(alone.ok, JSON.stringify(alone)).toBe(true);
    const scale = Math.max(1, 150 / Math.max(1, alone.elapsedMs));
    const code = work(Math.round(n * scale));
    const measured = await sandbox.run(code, { timeoutMs: 30_000 });
    expect(measured.ok).toBe(true);
    const cpuMs = measured.elapsedMs;
    const timeoutMs = Math.ceil(cpuMs * 2.5);

    const { busy, runaway, wall } = await busyWhile(async () => {
      const started = performance.now();
      const busy = await sandbox.run(code, { timeoutMs });
      const wall = performance.now() - started;
      const runaway = await sandbox.run(code.includes("range") ? "while True: pass" : "for (;;) {}", { timeoutMs });
      return { busy, runaway, wall };
    });
    // Busy loops took most of the CPU (else this test shows nothing): on the wall clock it would have timed out.
    expect(wall, `the run took ${wall.toFixed(0)} ms of wall time for ${cpuMs.toFixed(0)} ms of running`).toBeGreaterThan(timeoutMs);
    expect(busy, JSON.stringify(busy).slice(0, 300)).toMatchObject({ ok: true });
    expect(busy.elapsedMs).toBeLessThan(timeoutMs);
    expect(runaway.error?.name).toBe("TimeoutError");
    // Ended by its limit of running. Not to the millisecond: a wait for a CPU still under way is
    // counted by the kernel only once the thread runs again (run-delay.ts), so at load a run may be
    // stopped up to one such wait early.
    expect(runaway.elapsedMs).toBeGreaterThan(timeoutMs * 0.5);
  }, 120_000);
});

/**
 * The pool's watchdog (the backstop behind a zygote's own limit) on the run clock of a forking
 * host: its child's waits for a CPU count from the child's birth. A run sent while the zygote had
 * no spare child yet (right after another run) was served by a child whose waits until the
 * watchdog's first look were lost: at load ~20 a 2 s QuickJS run was stopped as "replaced, output
 * lost" before the zygote's own limit ended it with its output.
 */
// The Python zygote's host is watched by the same code (host-handles.ts, `forksPerRun`); its row
// passed before the fix too (its spare is forked sooner), so the QuickJS row alone is kept.
const FORKING: { name: string; create: (slackMs: number) => Sandbox; runaway: string }[] = [
  { name: "QuickJS zygote", create: (watchdogSlackMs) => createQuickJSProcessSandbox({ maxConcurrency: 1, watchdogSlackMs }), runaway: "for (;;) {}" },
];

describe.each(FORKING)("$name: the watchdog counts its child's waits", ({ create, runaway }) => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    // A slack of a second: the zygote's own limit (and its grace to report) ends a runaway run well
    // within it on its run clock; a busy machine's waits are several times that.
    sandbox = create(1000);
    await sandbox.run("0");
  }, 120_000);
  afterAll(() => sandbox.dispose());

  it("runaway runs back to back on a busy machine end at their own limit, with their output", async () => {
    const timeoutMs = 1000;
    const results = await busyWhile(async () => {
      const out = [];
      // Back to back: the second is sent as the first's answer arrives, before the zygote has a spare.
      for (let i = 0; i < 2; i++) out.push(await sandbox.run(runaway, { timeoutMs }));
      return out;
    });
    for (const r of results) {
      expect(r.error?.name, JSON.stringify(r).slice(0, 300)).toBe("TimeoutError");
      expect(r.error?.message).not.toMatch(/watchdog/);
    }
  }, 180_000);
});
