/**
 * isolated-vm backend (Node only; needs `node --no-node-snapshot` on Node >= 20). V8 isolates from
 * a small pool (isolate-pool.ts), a fresh context per run, the isolate's `memoryLimit` and a
 * `timeout` on every call into it. Guest code runs on isolated-vm's threads, so the host's event
 * loop keeps serving while it runs.
 *
 * The host only ever calls the prelude's ctl() and receives copied strings; anything the guest
 * throws is caught and described inside the guest (see guest.ts for why that matters here).
 */
import { availableParallelism } from "node:os";
import type ivm from "isolated-vm";
import { lastExpressionCandidates, wrapAsync } from "../../guest.ts";
import { IsolatePool, type PooledIsolate } from "./isolate-pool.ts";
import { Limiter } from "../../../sched/limiter.ts";
import { cancelledResult, errorResult, prepareRun, queued, type PreparedRun } from "../../options.ts";
import { memoryError, toRunResult, type RunEnding } from "../../report.ts";
import type { RunError, RunOptions, RunResult, Sandbox } from "../../types.ts";

export interface IsolatedVmSandboxOptions {
  /** Max concurrent runs, which is also the max number of isolates (default: number of CPUs). */
  maxConcurrency?: number;
  /** Replace an isolate after this many runs (default 500). */
  recycleAfterRuns?: number;
  /**
   * Hold each run to heldLimitBytes by this process's resident memory while it runs (sampled every
   * RSS_SAMPLE_MS): only where one run at a time has the process to itself (a host process).
   */
  watchResident?: boolean;
}

const MiB = 1024 * 1024;

/**
 * What a run may hold in all, heap and buffers, before it fails as MemoryLimitError: 1.5 x its limit
 * + 8 MiB, as QuickJS's wasm memory cap (quickjs.ts wasmMemoryCapMb). isolated-vm's `memoryLimit` is
 * a guideline: its own check runs in V8's garbage collections and in memory-pressure interrupts, so
 * whether a run past it is stopped depends on when V8 collects. Measured: `'x'.repeat(2**23).split('')`
 * (a 64 MB array) succeeds under a 16 MiB limit every time, and at load ~15 `new Array(5e6).fill(1.5)`
 * (40 MB) sometimes did (test/sandbox/sandbox-limits.test.ts). The slack: V8 holds an array's old and new
 * backing store at once while it changes its representation (40 MB of numbers under 64 MiB holds
 * ~77 MB for a moment), and garbage not yet collected is counted.
 */
export function heldLimitBytes(memoryMb: number): number {
  return (Math.ceil(1.5 * memoryMb) + 8) * MiB;
}

/**
 * What the process may grow by, around the heap, while a watched run executes: a fresh isolate, its
 * compiled code and V8's own allocations (40 MB of numbers under 64 MiB grew a host by 76-105 MiB,
 * both backing stores included).
 */
const RESIDENT_SLACK_BYTES = 32 * MiB;

/**
 * How often a watched run's resident memory is sampled (watchResident), from RSS_FIRST_SAMPLE_MS
 * on: most runs end before the first sample (and cost nothing); a run that allocates tens of MiB
 * takes longer than that (a 64 MB array: ~70 ms).
 */
const RSS_FIRST_SAMPLE_MS = 5;
const RSS_SAMPLE_MS = 5;

/** Time the host grants after the run itself to collect the guest's report. */
const REPORT_GRACE_MS = 50;
/** How long past its limits a run may take before the watchdog disposes its isolate. */
const WATCHDOG_SLACK_MS = 500;

export class IsolatedVmSandbox implements Sandbox {
  readonly kind = "isolated-vm" as const;
  private readonly limiter: Limiter;
  private readonly pool: IsolatePool;
  private disposed = false;
  private readonly watchResident: boolean;

  constructor(options: IsolatedVmSandboxOptions = {}) {
    this.watchResident = options.watchResident === true;
    const max = options.maxConcurrency ?? availableParallelism();
    this.limiter = new Limiter(max);
    this.pool = new IsolatePool(max, options.recycleAfterRuns);
  }

  /** Isolates replaced so far because a run killed them. */
  get replacedIsolates(): number {
    return this.pool.replaced;
  }

  async run(code: string, options: RunOptions = {}): Promise<RunResult> {
    if (this.disposed) throw new Error("sandbox is disposed");
    const prepared = prepareRun(code, options);
    if (!prepared.ok) return prepared.result;
    return queued(this.limiter, options, async () => {
      if (this.disposed) throw new Error("sandbox is disposed");
      const pooled = this.pool.acquire(prepared.run.limits.memoryMb);
      try {
        pooled.runs++;
        return await runInContext(pooled, prepared.run, options.signal, this.watchResident);
      } finally {
        this.pool.release(pooled);
      }
    });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.pool.dispose();
  }
}

export function createIsolatedVmSandbox(options: IsolatedVmSandboxOptions = {}): IsolatedVmSandbox {
  return new IsolatedVmSandbox(options);
}

/**
 * One run in a fresh context of a pooled isolate (exported for tests). `watchResident`: the
 * process's resident memory is sampled while it runs, and a run grown past heldLimitBytes is
 * stopped as a MemoryLimitError (heldMemoryWatch).
 */
export async function runInContext(pooled: PooledIsolate, prep: PreparedRun, signal?: AbortSignal, watchResident = false): Promise<RunResult> {
  const { isolate } = pooled;
  const { limits } = prep;
  const started = performance.now() - prep.spentMs;

  // Watchdog. Every call below has its own timeout, but V8 can also keep an isolate busy where no
  // timeout reaches: compiling (deeply nested blocks compile in quadratic time), or guest code in
  // tasks of V8's own (a FinalizationRegistry callback; the prelude removes the ones known, see
  // guest.ts). If the run is not over by its deadline plus slack, it ends as a TimeoutError right
  // away and the isolate is disposed (which stops what it runs; the pool replaces it).
  // A caller that gave up (signal) stops the run the same way.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let sampler: { stop(): void } | undefined;
  let onAbort: (() => void) | undefined;
  const stop = () => {
    pooled.broken = true;
    try {
      isolate.dispose();
    } catch {
      // Already gone.
    }
  };
  const watchdog = new Promise<RunResult>((resolve) => {
    timer = setTimeout(() => {
      stop();
      resolve(toRunResult(undefined, { limits, elapsedMs: performance.now() - started, timedOut: true }));
    }, Math.max(0, limits.timeoutMs - prep.spentMs) + REPORT_GRACE_MS + WATCHDOG_SLACK_MS);
    onAbort = () => {
      stop();
      resolve(cancelledResult(signal, performance.now() - started));
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
    if (watchResident) {
      sampler = heldMemoryWatch(limits.memoryMb, (grown) => {
        stop();
        resolve(heldMemoryError(limits.memoryMb, grown, "while it ran, the process's growth", performance.now() - started, RESIDENT_SLACK_BYTES));
      });
    }
  });
  const guarded = runGuarded(pooled, prep, started);
  guarded.catch(() => {}); // may settle after the watchdog answered; nobody listens then
  try {
    return await Promise.race([guarded, watchdog]);
  } finally {
    clearTimeout(timer);
    sampler?.stop();
    if (onAbort) signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * Samples this process's resident memory every RSS_SAMPLE_MS (from RSS_FIRST_SAMPLE_MS) and calls `over` once it has
 * grown past heldLimitBytes(memoryMb) + RESIDENT_SLACK_BYTES: a run's transient allocations, which V8 may have collected
 * by the time the run ends (the process runs one run at a time: what it grows by is the run's).
 */
function heldMemoryWatch(memoryMb: number, over: (grownBytes: number) => void): { stop(): void } {
  const base = process.memoryUsage.rss();
  const limit = heldLimitBytes(memoryMb) + RESIDENT_SLACK_BYTES;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const sample = () => {
    const grown = process.memoryUsage.rss() - base;
    if (grown > limit) over(grown);
    else timer = setTimeout(sample, RSS_SAMPLE_MS);
  };
  timer = setTimeout(sample, RSS_FIRST_SAMPLE_MS);
  return { stop: () => clearTimeout(timer) };
}

function heldMemoryError(memoryMb: number, bytes: number, when: string, elapsedMs: number, slack = 0): RunResult {
  const error = memoryError({ memoryMb });
  error.message += ` (it held ${Math.round(bytes / MiB)} MiB ${when}; at most ${(heldLimitBytes(memoryMb) + slack) / MiB} MiB)`;
  return { ok: false, result: null, stdout: "", stderr: "", error, elapsedMs };
}

/**
 * The isolate's heap after a run, before anything else runs in it: what the run allocated since V8
 * last collected is all still counted, garbage included. Over heldLimitBytes, the run held more
 * than its limit allows (and the isolate, whose heap limit V8 had to raise, is replaced).
 */
async function heapAfterRun(isolate: ivm.Isolate, memoryMb: number): Promise<number | undefined> {
  try {
    // Asynchronous: a synchronous call waited for the isolate's lock on this thread (~10% fewer runs/s).
    const heap = await isolate.getHeapStatistics();
    const held = heap.used_heap_size + heap.externally_allocated_size;
    return held > heldLimitBytes(memoryMb) ? held : undefined;
  } catch {
    return undefined; // disposed meanwhile
  }
}

async function runGuarded(pooled: PooledIsolate, prep: PreparedRun, started: number): Promise<RunResult> {
  const { isolate } = pooled;
  const { limits } = prep;
  const remaining = () => Math.max(1, Math.ceil(started + limits.timeoutMs - performance.now()));
  let context: ivm.Context | undefined;
  let ctl: ivm.Reference | undefined;
  let ending: Pick<RunEnding, "timedOut" | "hostError"> = {};
  let report: unknown;
  try {
    // Everything goes through isolated-vm's async API: a synchronous call would block this thread
    // on the isolate's lock for as long as the isolate is busy.
    const chosen = await chooseSource(isolate, prep.source);
    if ("compileError" in chosen) return errorResult(chosen.compileError.name, chosen.compileError.message, performance.now() - started);
    context = await isolate.createContext();
    ctl = (await pooled.prelude.run(context, { reference: true, timeout: remaining() })) as ivm.Reference;
    // Microtasks (the result promise and everything it waits for) run inside this call, under the
    // same timeout.
    await ctl.apply(undefined, ["run", prep.configJson, chosen.source], { arguments: { copy: true }, timeout: remaining() });
  } catch (err) {
    ending = classify(err, pooled, limits.memoryMb);
  }
  // Queued on the isolate now, before the report call (whose few allocations it must not count).
  const heap = !ending.timedOut && !ending.hostError && !isolate.isDisposed ? heapAfterRun(isolate, limits.memoryMb) : undefined;
  try {
    if (ctl && !isolate.isDisposed) {
      report = await ctl.apply(undefined, ["report"], { result: { copy: true }, timeout: REPORT_GRACE_MS });
    }
  } catch {
    // No report (e.g. an endless microtask chain keeps even this call from finishing): the
    // result still says what happened, without output.
  } finally {
    release(ctl);
    release(context);
  }
  const held = await heap;
  if (held !== undefined) {
    pooled.broken = true;
    ending = { hostError: heldMemoryError(limits.memoryMb, held, "in its heap when it ended", 0).error! };
  }
  return toRunResult(report, { limits, elapsedMs: performance.now() - started, ...ending });
}

/** Errors here come from isolated-vm itself (never from guest values, which stay in the guest). */
function classify(err: unknown, pooled: PooledIsolate, memoryMb: number): Pick<RunEnding, "timedOut" | "hostError"> {
  const message = err instanceof Error ? err.message : String(err);
  if (/timed out/i.test(message)) return { timedOut: true };
  if (pooled.isolate.isDisposed) {
    if (/memory limit/i.test(message)) return { hostError: memoryError({ memoryMb }) };
    return { hostError: { name: "SandboxError", message: `the isolate died: ${message}` } };
  }
  pooled.broken = true;
  return { hostError: { name: "SandboxError", message } };
}

/** Script as is, else as an async function body (top-level await), else the script's own error. */
async function chooseSource(isolate: ivm.Isolate, source: string): Promise<{ source: string } | { compileError: RunError }> {
  const scriptError = await compileError(isolate, source);
  if (scriptError === undefined) return { source };
  const wrapped = wrapAsync(source);
  if ((await compileError(isolate, wrapped)) === undefined) {
    for (const candidate of lastExpressionCandidates(source)) if ((await compileError(isolate, candidate)) === undefined) return { source: candidate };
    return { source: wrapped };
  }
  return { compileError: scriptError };
}

/**
 * Why `source` does not compile, if it does not: V8's SyntaxError, or a RangeError for nesting too
 * deep to parse. Compiling runs no guest code, so the error isolated-vm hands back is V8's own.
 * Failures of the isolate itself (disposed) are rethrown.
 */
async function compileError(isolate: ivm.Isolate, source: string): Promise<RunError | undefined> {
  try {
    const script = await isolate.compileScript(source, { filename: "main.js" });
    script.release();
    return undefined;
  } catch (err) {
    if (isolate.isDisposed || !(err instanceof Error)) throw err;
    return { name: err.name, message: err.message };
  }
}

function release(handle: { release(): void } | undefined): void {
  try {
    handle?.release();
  } catch {
    // Released with its isolate.
  }
}
