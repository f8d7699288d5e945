/**
 * When to interrupt a QuickJS run. QuickJS calls the interrupt handler every ~10 000 bytecode
 * "ticks" (calls and backward jumps); the handler's answer is the only way to stop guest code.
 *
 * - "clock": interrupt once the clock passes start + timeoutMs. Precise on Node.
 * - "budget": interrupt after timeoutMs × callsPerMs handler calls (or when the clock passes the
 *   deadline, should it move). In deployed Cloudflare Workers Date.now()/performance.now() stand
 *   still during synchronous code (a Spectre mitigation), so a clock deadline never fires there; a
 *   count of handler calls does. The count is a coarse clock: its rate varies ~60x with the workload
 *   (0.1–6.4 calls/ms measured in sandboxes.md, up to ~11 on tight try/catch loops), so the budget
 *   bounds runaway loops, not CPU time, and the platform CPU limit stays the backstop.
 */

export type DeadlineStrategy = "clock" | "budget";

/**
 * Default calls per ms of time limit for the "budget" strategy. Measured on Node for QuickJS's sync
 * release build: `while(1){}` ≈ 1.8 calls/ms, a summing for-loop ≈ 0.65, recursive calls ≈ 1.9,
 * Array.map ≈ 0.3. At 2 calls/ms the common runaway loop stops at ~1–3× the time limit and
 * call-heavy legitimate code is not cut much before it.
 */
export const DEFAULT_CALLS_PER_MS = 2;

export interface DeadlineOptions {
  strategy: DeadlineStrategy;
  timeoutMs: number;
  /** "budget" only: interrupt-handler calls allowed per ms of timeoutMs. */
  callsPerMs?: number;
  /** Monotonic-ish clock in ms; injectable so tests can freeze it like Workers do. */
  now?: () => number;
  /** "clock" only: the thread's wait for a CPU (run-delay.ts); the limit is then on the run clock. */
  delay?: DelayProbe;
}

export interface Deadline {
  /** The interrupt handler: true = stop the guest now. Latches: once true, stays true. */
  shouldInterrupt(): boolean;
  /** Whether the deadline has fired. */
  readonly expired: boolean;
  /** Handler calls so far (for tests and calibration). */
  readonly calls: number;
}

export function defaultClock(): () => number {
  return typeof performance !== "undefined" && typeof performance.now === "function" ? () => performance.now() : () => Date.now();
}

export function createDeadline(options: DeadlineOptions): Deadline {
  const now = options.now ?? defaultClock();
  const endsAt = now() + options.timeoutMs;
  const onRunClock = options.delay && options.strategy === "clock" ? runDeadline(options.timeoutMs, options.delay, now) : undefined;
  const clockPassed = onRunClock ? () => onRunClock.expired() : () => now() >= endsAt;
  const callsPerMs = options.callsPerMs ?? DEFAULT_CALLS_PER_MS;
  if (!(callsPerMs > 0)) throw new RangeError(`callsPerMs must be > 0, got ${callsPerMs}`);
  // At least one call: a budget of 0 would stop code that never loops, which cannot run away.
  const budget = options.strategy === "budget" ? Math.max(1, Math.ceil(options.timeoutMs * callsPerMs)) : Infinity;
  let calls = 0;
  let expired = false;
  return {
    shouldInterrupt() {
      calls++;
      if (!expired && (calls > budget || clockPassed())) expired = true;
      return expired;
    },
    get expired() {
      return expired;
    },
    get calls() {
      return calls;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The run clock (Node): wall time minus time spent waiting for a CPU. Why, and the probe: run-delay.ts.

/** How far a run's wall time may stretch past its limit: 10× the limit plus 30 s. */
export function stretchCapMs(timeoutMs: number): number {
  return timeoutMs * 10 + 30_000;
}

/** Milliseconds the probed thread has waited for a CPU so far (monotonic); 0 when unknown. */
export interface DelayProbe {
  (): number;
  close(): void;
  /** The thread's CPU time so far (ms; the same file's first field), 0 when unknown. */
  ran?(): number;
}

/**
 * A deadline on the run clock: `expired()` is true once `timeoutMs` of wall time minus waiting
 * for a CPU have passed since it was made, or the wall time reached the stretch cap. The probe is
 * read at the start and then only when the wall clock says the limit has passed.
 */
export interface RunDeadline {
  expired(): boolean;
  /** Milliseconds until the limit could next be reached (0 when expired): when to check again. */
  remainingMs(): number;
  /** Time on the run clock so far. */
  elapsedMs(): number;
}

export function runDeadline(timeoutMs: number, probe: DelayProbe, now: () => number = () => performance.now(), startedAt = now()): RunDeadline {
  const delay0 = probe();
  const cap = startedAt + stretchCapMs(timeoutMs);
  let endsAt = startedAt + timeoutMs;
  let done = false;
  const check = () => {
    if (done) return 0;
    const t = now();
    if (t < endsAt) return endsAt - t;
    // The wall clock says the limit passed: push the end back by the time spent waiting for a CPU.
    endsAt = Math.min(cap, startedAt + timeoutMs + (probe() - delay0));
    if (t < endsAt) return endsAt - t;
    done = true;
    return 0;
  };
  return {
    expired: () => check() === 0,
    remainingMs: check,
    elapsedMs: () => Math.max(0, now() - startedAt - (probe() - delay0)),
  };
}
