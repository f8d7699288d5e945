/**
 * QuickJS backend, in-process (quickjs-emscripten, sync release build). Portable: this is what runs
 * on Cloudflare Workers. On Node, createSandbox("quickjs") is the QuickJS zygote instead
 * (quickjs-process.ts: QuickJS-NG in wasmtime, a process forked per run, which can be killed when
 * the interrupt handler cannot stop a run in time).
 *
 * Each run gets a fresh QuickJS runtime and context (≈0.3–0.5 ms) with all three limits set:
 * memory, stack (without it, deep recursion overflows the *host* stack) and an interrupt handler.
 * The memory limit alone is not a stop: guests can catch OOM, and allocation near the limit thrashes
 * the GC for seconds; the interrupt deadline is what ends such runs.
 *
 * Known limit of in-process QuickJS: the interrupt handler only runs every ~10 000 calls/backward
 * jumps, so a loop whose every iteration is a long native operation (`for(;;) JSON.parse(
 * JSON.stringify(bigArray))`) is checked rarely and can overrun the time limit by orders of
 * magnitude. Workers' CPU limit and Node's thread watchdog are the backstops.
 */
import * as releaseSyncModule from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import { createDeadline, defaultClock, type Deadline, type DeadlineStrategy, type DelayProbe } from "../../../sched/deadline.ts";
import { GUEST_PRELUDE, lastExpressionCandidates, wrapAsync } from "../../guest.ts";
import { Limiter } from "../../../sched/limiter.ts";
import { errorResult, prepareRun, queued, type PreparedRun } from "../../options.ts";
import { isCloudflareWorkers } from "../../platform.ts";
import { memoryError, toRunResult } from "../../report.ts";
import { DEFAULT_LIMITS, type RunOptions, type RunResult, type Sandbox } from "../../types.ts";

export interface QuickJSSandboxOptions {
  /**
   * The compiled QuickJS wasm. Required on Workers, which refuse to compile wasm from bytes:
   * `import wasm from "#quickjs/sync.wasm"` (see src/workers/sandbox.ts) and pass it here.
   * Without it the variant loads its own .wasm file (Node).
   */
  wasmModule?: WebAssembly.Module;
  /** "clock" (default on Node) or "budget" (default on Workers, whose clock stands still). See deadline.ts. */
  deadline?: DeadlineStrategy;
  /** "budget" strategy: interrupt-handler calls allowed per ms of time limit (default DEFAULT_CALLS_PER_MS). */
  interruptCallsPerMs?: number;
  /** Clock used for deadlines and elapsedMs (tests freeze it to play Workers). */
  now?: () => number;
  /**
   * "clock": this thread's wait for a CPU (run-delay.ts `delayProbe`), so that the limit and
   * elapsedMs are on the run clock (time running, not time waiting for a CPU on a busy machine).
   * The confined QuickJS host passes one; in-process QuickJS shares its thread with its caller.
   */
  delay?: DelayProbe;
  /** Runs are synchronous, so more than one at a time only queues; kept for symmetry (default 1). */
  maxConcurrency?: number;
}

const MiB = 1024 * 1024;
/** Time and memory the host grants after the run itself, to collect the guest's report. */
const REPORT_GRACE_MS = 50;
const REPORT_HEADROOM_BYTES = 2 * MiB;
/** Pending jobs run in batches so the host can check its deadline between them. */
const JOB_BATCH = 64;

/**
 * The sync release variant (imported directly, not through the quickjs-emscripten umbrella, so a
 * Workers bundle carries one variant, not four). Its package is CJS-typed but loaded as ESM, so the
 * default export arrives wrapped once or twice depending on the loader: unwrap it.
 */
const RELEASE_SYNC: QuickJSSyncVariant = (() => {
  let v: unknown = releaseSyncModule;
  while (v && typeof v === "object" && "default" in v && v.default) v = v.default;
  return v as QuickJSSyncVariant;
})();

/** The sync release variant, pointed at a caller-provided wasm module when there is one. */
export function quickjsVariant(wasmModule?: WebAssembly.Module, wasmMemory?: WebAssembly.Memory): QuickJSSyncVariant {
  if (!wasmModule && !wasmMemory) return RELEASE_SYNC;
  return newVariant(RELEASE_SYNC, { ...(wasmModule ? { wasmModule } : {}), ...(wasmMemory ? { wasmMemory } : {}) });
}

const WASM_PAGE = 64 * 1024;
/** The build's own ceiling for its memory (an imported memory may not declare more). */
const WASM_MAX_MB = 2048;

/** Wasm memory beyond the run's limit: the module's own data and stack, the allocator's overhead, the report's headroom. */
const WASM_HEADROOM_MB = 8;

/**
 * Most a QuickJS instance's wasm memory may grow to for runs limited to `memoryMb`. This cap is what
 * makes the limit hold: QuickJS's own memory limit cannot count what is held in this build, because
 * it adds `malloc_usable_size` per allocation and that is 0 under Emscripten ("malloc_usable_size
 * unavailable" in its memory dump), so it refuses only single allocations larger than the limit.
 * Measured under `memoryMb: 16`: one 40 MB array was refused, but forty 1 MB strings (40 MB) or
 * three 15 MB ArrayBuffers were not; and `for(;;) a.push(new Array(1e5).fill(1.5))` under a 64 MiB
 * limit grew an uncapped instance to 2 GiB (the build's maximum) in 7 s. Every run has a fresh
 * runtime that frees all it allocated, so the memory in use when a run starts is the module's
 * small baseline (a 2 MiB headroom was enough for runs and reports in a measurement), and the
 * cap counts what the run holds. Half the limit again on top: QuickJS grows an array by
 * reallocating it 1.5x, so the old and the new copy are both held for a moment (a 40 MB array
 * failed under a 64 MiB limit with only the headroom). So a run holds at most 1.5 x memoryMb +
 * 8 MiB in all, and no single allocation above memoryMb (was 2 x memoryMb + 32 MiB). Wasm memory
 * never shrinks, so this is also what an idle instance can keep.
 */
export function wasmMemoryCapMb(memoryMb: number): number {
  return Math.min(WASM_MAX_MB, Math.ceil(memoryMb * 1.5) + WASM_HEADROOM_MB);
}

export class QuickJSSandbox implements Sandbox {
  readonly kind = "quickjs" as const;
  private module: Promise<QuickJSWASMModule> | undefined;
  private loaded: QuickJSWASMModule | undefined;
  private moduleCapMb = 0;
  private readonly limiter: Limiter;
  /** How runs are timed: "clock" or "budget" (see deadline.ts). */
  readonly strategy: DeadlineStrategy;
  private readonly now: () => number;
  private disposed = false;
  /** The current run wanted more wasm memory than the cap allows. */
  private growRefused = false;

  constructor(private readonly options: QuickJSSandboxOptions = {}) {
    this.limiter = new Limiter(options.maxConcurrency ?? 1);
    this.strategy = options.deadline ?? (isCloudflareWorkers() ? "budget" : "clock");
    this.now = options.now ?? defaultClock();
  }

  /** Loads (instantiates) the wasm module ahead of the first run. */
  async warm(memoryMb = DEFAULT_LIMITS.memoryMb): Promise<void> {
    await this.getModule(memoryMb);
  }

  async run(code: string, options: RunOptions = {}): Promise<RunResult> {
    if (this.disposed) throw new Error("sandbox is disposed");
    const prepared = prepareRun(code, options);
    if (!prepared.ok) return prepared.result;
    return queued(this.limiter, options, async () => {
      const module = await this.getModule(prepared.run.limits.memoryMb);
      const started = this.now();
      try {
        this.growRefused = false;
        const { result, healthy } = runInFreshRuntime(module, prepared.run, { strategy: this.strategy, callsPerMs: this.options.interruptCallsPerMs, now: this.now, delay: this.options.delay });
        if (!healthy) this.dropModule();
        // Out of wasm memory, QuickJS often cannot even build its out-of-memory error: the run
        // ends as "Uncaught null". The refused growth says what it was.
        if (!result.ok && this.growRefused && result.error?.name !== "TimeoutError") return { ...result, error: memoryError(prepared.run.limits) };
        return result;
      } catch (err) {
        // Not a guest error (those are results): the host failed inside QuickJS. The wasm instance
        // is left inconsistent, so the next run gets a new one.
        this.dropModule();
        if (err instanceof RangeError && /call stack/i.test(err.message)) {
          // QuickJS's parser and interpreter recurse on the host's native stack, which its own
          // stack limit does not measure: ~600 nested parentheses exhaust Node's main-thread stack.
          return errorResult("RangeError", "Maximum call stack size exceeded: the program nests too deeply for QuickJS", this.now() - started);
        }
        return errorResult("SandboxError", `QuickJS failed: ${err instanceof Error ? err.message : String(err)}`, this.now() - started);
      }
    });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.dropModule();
  }

  private dropModule(): void {
    this.module = undefined;
    this.loaded = undefined;
  }

  /** Size of the current wasm instance's memory (wasm memory only grows; 0 before the first run). */
  memoryBytes(): number {
    return this.loaded?.getWasmMemory().buffer.byteLength ?? 0;
  }

  /** The instance for runs limited to `memoryMb`: its wasm memory is capped to match (a new instance when the cap differs). */
  private getModule(memoryMb: number): Promise<QuickJSWASMModule> {
    const capMb = wasmMemoryCapMb(memoryMb);
    if (this.module && this.moduleCapMb !== capMb) this.dropModule();
    if (!this.module) {
      const wasmMemory = new WebAssembly.Memory({ initial: Math.min(256, (capMb * 1024 * 1024) / WASM_PAGE), maximum: (capMb * 1024 * 1024) / WASM_PAGE });
      // Emscripten grows through this object's grow() and turns a refusal into a failed malloc.
      const grow = wasmMemory.grow.bind(wasmMemory);
      wasmMemory.grow = (delta: number) => {
        try {
          return grow(delta);
        } catch (err) {
          this.growRefused = true;
          throw err;
        }
      };
      const loading = newQuickJSWASMModuleFromVariant(quickjsVariant(this.options.wasmModule, wasmMemory));
      this.module = loading;
      this.moduleCapMb = capMb;
      loading.then(
        (module) => {
          if (this.module === loading) this.loaded = module;
        },
        () => {
          if (this.module === loading) this.module = undefined;
        },
      );
    }
    return this.module;
  }

}

export function createQuickJSSandbox(options: QuickJSSandboxOptions = {}): QuickJSSandbox {
  return new QuickJSSandbox(options);
}

/**
 * One run, start to finish, synchronously, in a fresh runtime. `healthy: false` means freeing the
 * runtime failed: QuickJS asserts that a runtime it frees holds no objects, and some out-of-memory
 * and interrupt paths leak a reference, which aborts the wasm instance (printing "Aborted(...)" on
 * stderr). The run's result stands; the caller replaces the instance.
 *
 * If anything throws on the host side instead, the instance is abandoned as it is, without freeing
 * anything: typically the host's own stack overflowed inside QuickJS (deeply nested source), which
 * leaves QuickJS half-way through and the instance unusable.
 */
function runInFreshRuntime(module: QuickJSWASMModule, prep: PreparedRun, clock: RunClock): { result: RunResult; healthy: boolean } {
  const rt = module.newRuntime();
  const result = runInRuntime(rt, prep, clock);
  try {
    rt.dispose();
    return { result, healthy: true };
  } catch {
    return { result, healthy: false };
  }
}

/** How a run is timed (see deadline.ts). */
interface RunClock {
  strategy: DeadlineStrategy;
  callsPerMs: number | undefined;
  now: () => number;
  delay: DelayProbe | undefined;
}

/** Handles are freed on the way out only when nothing threw (see runInFreshRuntime). */
function runInRuntime(rt: QuickJSRuntime, prep: PreparedRun, { strategy, callsPerMs, now, delay }: RunClock): RunResult {
  const { limits } = prep;
  const started = now() - prep.spentMs;
  const waited0 = delay?.() ?? 0;
  const newDeadline = (timeoutMs: number, onRunClock: boolean): Deadline =>
    createDeadline({ strategy, timeoutMs, callsPerMs, now, ...(onRunClock && delay ? { delay } : {}) });
  let deadline = newDeadline(Math.max(1, limits.timeoutMs - prep.spentMs), true);

  rt.setMemoryLimit(limits.memoryMb * MiB);
  rt.setMaxStackSize(limits.stackKb * 1024);
  const ctx = rt.newContext();
  // The prelude is the host's own fixed code: the deadline interrupts guest code only. (Interrupted
  // on a loaded machine, a late prelude made a runaway run a SandboxError, not a TimeoutError.)
  const prelude = ctx.evalCode(GUEST_PRELUDE, "envworker-prelude.js", { type: "global", strict: true });
  if (prelude.error) throw new Error("the guest prelude failed to start");
  rt.setInterruptHandler(() => deadline.shouldInterrupt());
  const ctl = prelude.value;
  const call = (op: string, ...args: (string | QuickJSHandle)[]) => callCtl(ctx, ctl, op, args);

  let escaped: QuickJSHandle | undefined;
  const chosen = chooseSource(ctx, prep.source);
  if ("syntaxError" in chosen) {
    escaped = chosen.syntaxError;
  } else {
    const ran = call("run", prep.configJson, chosen.source);
    if (ran.error) escaped = ran.error;
    else ran.value.dispose();
    // Promise jobs: the host is QuickJS's event loop. Batches let the deadline be checked even
    // when each job is too short to reach the interrupt handler.
    while (!escaped && rt.hasPendingJob() && !deadline.shouldInterrupt()) {
      const jobs = rt.executePendingJobs(JOB_BATCH);
      if (jobs.error) escaped = jobs.error;
      else jobs.dispose();
    }
  }
  const timedOut = deadline.expired;

  // Report phase: a short grace period and a little memory headroom, so a run that ended at a
  // limit can still hand over its output.
  deadline = newDeadline(REPORT_GRACE_MS, false);
  rt.setMemoryLimit(limits.memoryMb * MiB + REPORT_HEADROOM_BYTES);
  if (escaped) {
    if (!timedOut) call("fail", escaped).dispose();
    escaped.dispose();
  }
  const reported = call("report");
  let text: string | undefined;
  if (reported.error) reported.error.dispose();
  else {
    if (ctx.typeof(reported.value) === "string") text = ctx.getString(reported.value);
    reported.value.dispose();
  }
  // (Never below 0: the scheduler's clock and this one may differ by a hair.)
  const elapsedMs = Math.max(0, now() - started - ((delay?.() ?? 0) - waited0));
  const result = toRunResult(text, { limits, elapsedMs, timedOut });
  ctl.dispose();
  ctx.dispose();
  return result;
}

/** ctl(op, ...args) with string args turned into (and freed as) guest strings. */
function callCtl(ctx: QuickJSContext, ctl: QuickJSHandle, op: string, args: (string | QuickJSHandle)[]) {
  const owned = [ctx.newString(op), ...args.map((a) => (typeof a === "string" ? ctx.newString(a) : undefined))];
  const handles = args.map((a, i) => (typeof a === "string" ? owned[i + 1]! : a));
  const result = ctx.callFunction(ctl, ctx.undefined, owned[0]!, ...handles);
  for (const h of owned) h?.dispose();
  return result;
}

/** Script as is, else as an async function body (top-level await), else the script's SyntaxError. */
function chooseSource(ctx: QuickJSContext, source: string): { source: string } | { syntaxError: QuickJSHandle } {
  const asScript = compileError(ctx, source);
  if (!asScript) return { source };
  const wrapped = wrapAsync(source);
  const asAsync = compileError(ctx, wrapped);
  if (!asAsync) {
    asScript.dispose();
    for (const candidate of lastExpressionCandidates(source)) {
      const error = compileError(ctx, candidate);
      if (!error) return { source: candidate };
      error.dispose();
    }
    return { source: wrapped };
  }
  asAsync.dispose();
  return { syntaxError: asScript };
}

function compileError(ctx: QuickJSContext, source: string): QuickJSHandle | undefined {
  const compiled = ctx.evalCode(source, "main.js", { type: "global", compileOnly: true });
  if (compiled.error) return compiled.error;
  compiled.value.dispose();
  return undefined;
}
