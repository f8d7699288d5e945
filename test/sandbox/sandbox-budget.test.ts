/**
 * The QuickJS time limit on Workers: the clock stands still during synchronous code there, so the
 * deadline is a budget of interrupt-handler calls. A test in local workerd cannot catch a broken
 * budget (its clock moves), so the logic is tested here, with a frozen clock.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createDeadline, createQuickJSSandbox, DEFAULT_CALLS_PER_MS } from "../../src/sandbox/index.ts";

describe("createDeadline", () => {
  it("budget: interrupts after timeoutMs × callsPerMs handler calls, whatever the clock says", () => {
    const d = createDeadline({ strategy: "budget", timeoutMs: 100, callsPerMs: 2, now: () => 0 });
    for (let i = 0; i < 200; i++) expect(d.shouldInterrupt()).toBe(false);
    expect(d.expired).toBe(false);
    expect(d.shouldInterrupt()).toBe(true);
    expect(d.expired).toBe(true);
    // It latches: QuickJS may call again while unwinding, and must keep getting "stop".
    expect(d.shouldInterrupt()).toBe(true);
    expect(d.calls).toBe(202);
  });

  it("budget: scales with the time limit and the rate, and allows at least one call", () => {
    const callsUntilStop = (timeoutMs: number, callsPerMs?: number) => {
      const d = createDeadline({ strategy: "budget", timeoutMs, callsPerMs, now: () => 0 });
      let n = 0;
      while (!d.shouldInterrupt()) n++;
      return n;
    };
    expect(callsUntilStop(1000)).toBe(1000 * DEFAULT_CALLS_PER_MS);
    expect(callsUntilStop(50, 4)).toBe(200);
    expect(callsUntilStop(10, 0.5)).toBe(5);
    expect(callsUntilStop(1, 0.01)).toBe(1);
    expect(() => createDeadline({ strategy: "budget", timeoutMs: 1, callsPerMs: 0 })).toThrow(RangeError);
  });

  it("budget: still stops early if the clock does move past the deadline", () => {
    let t = 0;
    const d = createDeadline({ strategy: "budget", timeoutMs: 100, callsPerMs: 1000, now: () => t });
    expect(d.shouldInterrupt()).toBe(false);
    t = 100;
    expect(d.shouldInterrupt()).toBe(true);
  });

  it("clock: interrupts when the clock passes the deadline, however many calls it took", () => {
    let t = 5_000;
    const d = createDeadline({ strategy: "clock", timeoutMs: 100, now: () => t });
    let stopped = false;
    for (let i = 0; i < 100_000; i++) stopped ||= d.shouldInterrupt();
    expect(stopped).toBe(false);
    t = 5_099;
    expect(d.shouldInterrupt()).toBe(false);
    t = 5_100;
    expect(d.shouldInterrupt()).toBe(true);
    expect(d.expired).toBe(true);
  });
});

describe("QuickJS with a frozen clock (as in deployed Workers)", () => {
  afterEach(() => vi.unstubAllGlobals());

  /** A clock that never moves, counting how often the sandbox reads it. */
  function frozenClock() {
    const clock = { reads: 0, now: () => (clock.reads++, 1_000_000) };
    return clock;
  }

  it("the budget stops runaway code although the clock never moves", async () => {
    const clock = frozenClock();
    const sandbox = createQuickJSSandbox({ deadline: "budget", now: clock.now });
    for (const code of [
      "while (true) {}",
      "for (;;) { try { while (true) {} } catch (e) {} }",
      "Promise.resolve().then(() => { for (;;) {} })",
      "(async () => { for (;;) await null; })()",
    ]) {
      const started = performance.now();
      const r = await sandbox.run(code, { timeoutMs: 200 });
      expect(r.error?.name, code).toBe("TimeoutError");
      expect(r.elapsedMs).toBe(0); // measured with the frozen clock: it stood still
      expect(performance.now() - started).toBeLessThan(10_000);
    }
    // Code that finishes is not affected.
    const ok = await sandbox.run("let s = 0; for (let i = 1; i <= 10000; i++) s += i; console.log(s); s", { timeoutMs: 200 });
    expect(ok).toMatchObject({ ok: true, result: 50005000, stdout: "50005000\n" });
  });

  it("the number of interrupt calls a run gets is timeoutMs × callsPerMs", async () => {
    // With a frozen clock the budget deadline reads the clock once per handler call (after the
    // budget check), so clock reads count handler calls, give or take the run's own reads.
    const callsFor = async (timeoutMs: number, interruptCallsPerMs: number) => {
      const clock = frozenClock();
      const sandbox = createQuickJSSandbox({ deadline: "budget", now: clock.now, interruptCallsPerMs });
      await sandbox.run("0");
      clock.reads = 0;
      const r = await sandbox.run("while (true) {}", { timeoutMs });
      expect(r.error?.name).toBe("TimeoutError");
      return clock.reads;
    };
    const small = await callsFor(100, 2);
    const large = await callsFor(400, 2);
    const faster = await callsFor(100, 8);
    expect(small).toBeGreaterThanOrEqual(200);
    expect(small).toBeLessThan(200 + 20);
    expect(large).toBeGreaterThanOrEqual(800);
    expect(large).toBeLessThan(800 + 20);
    expect(faster).toBeGreaterThanOrEqual(800);
    expect(faster).toBeLessThan(800 + 20);
  });

  it("defaults to the budget on Workers and to the clock on Node", () => {
    expect(createQuickJSSandbox().strategy).toBe("clock");
    vi.stubGlobal("navigator", { userAgent: "Cloudflare-Workers" });
    expect(createQuickJSSandbox().strategy).toBe("budget");
    expect(createQuickJSSandbox({ deadline: "clock" }).strategy).toBe("clock");
  });
});

describe("the deadline interrupts guest code, not the sandbox's own setup", () => {
  it("a clock that passes the deadline while the prelude starts gives the guest's result (or a TimeoutError), never a SandboxError", async () => {
    // On a loaded machine the prelude itself outlived a 200 ms limit and the run became
    // "SandboxError: the guest prelude failed to start" (a flood of runaway runs in sandbox-attacks).
    let t = 0;
    const sandbox = createQuickJSSandbox({ deadline: "clock", now: () => (t += 1000) });
    const r = await sandbox.run("1 + 1", { timeoutMs: 200 });
    expect(r.error?.name ?? "none", JSON.stringify(r)).not.toBe("SandboxError");
    if (r.ok) expect(r.result).toBe(2);
    else expect(r.error?.name).toBe("TimeoutError");
    const spin = await sandbox.run("while (true) {}", { timeoutMs: 200 });
    expect(spin.error?.name).toBe("TimeoutError");
  });
});
