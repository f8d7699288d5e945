/**
 * A sandbox made of supervised hosts (Node only): confined child processes (confine.ts), each
 * running an in-process sandbox and serving one run at a time (host-protocol.ts). Every engine on
 * Node goes through this one pool: isolated-vm, QuickJS and Python. What the pool adds is what an
 * in-process engine cannot do for itself:
 *
 * - a hard stop: a run not answered by timeoutMs + slack has its host killed (TimeoutError);
 * - containment: a host that dies (a V8 fatal error aborts its whole process; a thread over its
 *   heap limit) takes only its own run with it (MemoryLimitError when it died for lack of memory,
 *   SandboxError otherwise), and a fresh host takes its place;
 * - memory enforcement on the server's own measure (process-memory.ts: the RSS of the host's whole
 *   process tree, never what the host reports): a host that grows past the run's allowance while
 *   running is killed (MemoryLimitError), and one that did not give memory back after a run, or
 *   grew while idle, is replaced, which returns that memory to the OS;
 * - a watch on idle hosts' CPU (the server's measure of the process tree): a host that runs while
 *   it has no run, past housekeeping (IdleCpuPolicy), is stopped;
 * - fair queueing and cancellation (limiter.ts): clients take turns, then a client's queue keys; a
 *   run whose signal aborts leaves the queue, or, when running, is answered at once as a
 *   CancelledError while its host stops it;
 * - affinity (HostAffinity): single-use hosts ("run": a host serves one run and is killed, spares
 *   started ahead), or hosts dedicated to a client (or an episode), so a guest that took over its
 *   host reaches no later run ("run"), or no one else's;
 * - distrust: a reply is bounded (by the run's output cap) and schema-checked before use
 *   (host-handles.ts), must answer the run in flight, and its output must fit the run's cap; a
 *   host that breaks any of this is killed and its run is a SandboxError.
 */
import { Buffer } from "node:buffer";
import { availableParallelism } from "node:os";
import { IDLE_REPLY_BYTES, type HostExit, type HostHandle } from "./host-handles.ts";
import type { HostReply, SentOptions } from "./host-protocol.ts";
import { Limiter } from "../../sched/limiter.ts";
import { cancelledResult, errorResult, prepareRun, queued } from "../options.ts";
import { CAN_MEASURE_PROCESSES } from "../../wall/process-memory.ts";
import { memoryError, timeoutError } from "../report.ts";
import { stretchCapMs } from "../../sched/deadline.ts";
import { TRUNCATION_MARKER, type JsonValue, type RunLimits, type RunOptions, type RunResult, type Sandbox, type SandboxKind } from "../types.ts";

const MiB = 1024 * 1024;
/** Longest a thread/process may take to start (load the engine, warm it) before it is killed. */
const START_TIMEOUT_MS = 60_000;

/**
 * Milliseconds until a limit of `limitMs` on the run clock is reached (0: reached), for something
 * started at `started` (performance.now()) whose host had waited `waited0` ms for a CPU then and
 * `waited` now; never past the stretch cap (deadline.ts).
 */
function onRunClock(limitMs: number, started: number, waited0: number, waited: number): number {
  const endsAt = started + Math.min(stretchCapMs(limitMs), limitMs + Math.max(0, waited - waited0));
  return Math.max(0, endsAt - performance.now());
}

/**
 * What a host may hold. Every bound below is on the memory the SERVER measures (the resident memory
 * of the host's whole process tree, process-memory.ts), never on what the host says about itself:
 * a guest that escaped its engine can report anything. What a host reports is a hint only
 * (`engine`): it can make the pool replace that host sooner, never keep it longer.
 */
export interface MemoryPolicy {
  /** How far a host may grow past its idle size while running before it is killed (MemoryLimitError). Default: DEFAULT_KILL_ABOVE. */
  killAboveBytes?(limits: RunLimits): number;
  /**
   * A host grown past its idle size by more than this after a run (or later, while idle) is
   * replaced, which gives the memory back to the OS. Default: DEFAULT_RETIRE_ABOVE.
   */
  retireAboveBytes?(limits: RunLimits): number;
  /** The engine's own measure (a wasm memory's size) that the host reports: a hint, read where the host sends one. */
  engine?: {
    /** After a run, a host whose engine grew past its idle size by more than this is replaced. */
    retireAboveBytes(limits: RunLimits): number;
    /** Whether an idle host whose engine grew by this much may serve a run with these limits; one that may not is replaced. */
    fits?(limits: RunLimits, grownBytes: number): boolean;
  };
}

/** RSS a host may gain during a run: the engine's limit twice over, and room for its own heap, code and the run's strings. */
export const DEFAULT_KILL_ABOVE = (limits: RunLimits): number => 2 * limits.memoryMb * MiB + 96 * MiB;
/** RSS a host may keep after a run. */
export const DEFAULT_RETIRE_ABOVE = (limits: RunLimits): number => limits.memoryMb * MiB + 64 * MiB;
/**
 * How fast a host's use is forgotten when choosing which one to stop for another client's
 * (Host.heat): a run counts 1 now, 1/2 a minute later.
 */
const HEAT_HALF_LIFE_MS = 60_000;

/**
 * CPU a host may use while it has no run (the server's measure of its process tree: engine
 * housekeeping after a run, a timer): at most `burstMs` at once, refilled at `share` of a CPU. A host
 * that uses more is running something of its own, which only a guest that took it over would do,
 * and is stopped.
 */
export interface IdleCpuPolicy {
  burstMs: number;
  share: number;
}
export const DEFAULT_IDLE_CPU: IdleCpuPolicy = { burstMs: 500, share: 0.05 };

/** How often the server measures a busy host (an idle one: every IDLE_MEASURE_TICKS of these). */
const MEASURE_MS = 20;
const IDLE_MEASURE_TICKS = 25;

export interface HostPoolOptions {
  kind: SandboxKind;
  /** What one host is, for error messages ("QuickJS thread", "isolated-vm process"). */
  label: string;
  start(): HostHandle;
  /** Max concurrent runs = max hosts (default: number of CPUs). */
  maxConcurrency?: number;
  /** Time past timeoutMs before a run's host is killed. */
  watchdogSlackMs: number;
  memory: MemoryPolicy;
  /** The host can stop a run when told to (else a cancelled running run costs its host). */
  cooperativeCancel: boolean;
  /** Replace a host after this many runs (default 1000): nothing a host accumulates lives forever. */
  recycleAfterRuns?: number;
  /** And once it has lived this long (ms; default: no bound), at the end of the run it serves then. */
  recycleAfterMs?: number;
  /** Checks a run's inputs beyond the common ones (throws on misuse, like prepareRun). */
  validate?(code: string, options: RunOptions): void;
  /** Whom a host is dedicated to (HostAffinity). Default "off". */
  affinity?: HostAffinity;
  /** CPU an idle host may use (default DEFAULT_IDLE_CPU). */
  idleCpu?: IdleCpuPolicy;
  /**
   * With affinity, when the pool is full and a run's key already has a host that is busy: false
   * (default) waits for that host (a start-up costs more than the wait); true starts another host
   * for the key while it has fewer hosts than slots, stopping another key's idle host, so one
   * key's runs may use every slot (hosts that start fast: QuickJS instances).
   */
  startWhenBusy?: boolean;
}

/**
 * Whom a host serves. "run": exactly one run, then it is killed; fresh hosts are kept started
 * ahead (one per slot), so a run waits for a start-up only when runs come faster than hosts start.
 * A guest that took over its host reaches nothing later: every run starts in a process no guest
 * has touched (what a Node host needs, which cannot be forked; the zygote backends fork a fresh
 * child per run whatever this says). "client": the runs of one client (RunOptions.client, else its queueKey): a
 * host that served one client never serves another, so a guest that escaped its engine and took
 * over its host process can tamper only with later runs of its own client (README.md "The
 * residual"). "episode": the runs of one queue key (an episode; a client on stateless routes):
 * narrower, and a host start-up per new episode. A new client (key) gets a fresh host (one is kept
 * started ahead); the idle host of another used least lately is stopped to make room, so at most
 * maxConcurrency + 1 hosts live. Runs without either share one. "off": a host serves anyone
 * (nothing is started per client; an escaped guest reaches every later run of its process).
 */
export type HostAffinity = "run" | "client" | "episode" | "off";

/**
 * The largest reply a run may cause: its result and output are each capped at maxOutputBytes
 * (UTF-8 bytes / characters of JSON), and JSON-escaping can make a byte up to 6 (`\u0000`).
 */
function replyBound(limits: RunLimits): number {
  return IDLE_REPLY_BYTES + 12 * limits.maxOutputBytes + 4 * 1024;
}

/** Output a host claims for a run must fit the run's cap (plus the markers of what was cut). */
function outputFits(result: RunResult, limits: RunLimits): boolean {
  const slack = 2 * Buffer.byteLength(TRUNCATION_MARKER) + 8;
  return Buffer.byteLength(result.stdout) + Buffer.byteLength(result.stderr) <= limits.maxOutputBytes + slack;
}

interface Job {
  id: number;
  code: string;
  options: SentOptions;
  limits: RunLimits;
  signal: AbortSignal | undefined;
  /** First call wins: the caller's answer. */
  answer(result: RunResult): void;
}

/** A host a pool replaced, and why: what its process did, or what the pool saw (HostPoolSandbox.replaced). */
export interface HostReplacement {
  /** What the host was ("QuickJS process"). */
  label: string;
  why: string;
}

const replacementWatchers = new Set<(replacement: HostReplacement) => void>();

/**
 * Calls `watch` whenever a pool of this process replaces a host; returns the function that stops
 * it. The server logs them (at info): a host replaced is a guest that broke its limits or its
 * engine, or a host that died, and nothing else says why hosts restart.
 */
export function watchHostReplacements(watch: (replacement: HostReplacement) => void): () => void {
  replacementWatchers.add(watch);
  return () => replacementWatchers.delete(watch);
}

/** One supervised thread or process. */
class Host {
  readonly ready: Promise<void>;
  /** When it was started (performance.now()): recycleAfterMs. */
  readonly bornAt = performance.now();
  private isReady = false;
  /** Resident memory of the host's process tree when idle (measured at its ready message). */
  private idleBytes = 0;
  /** The same, when last measured: what the host holds, for budgets and the bounds. */
  lastBytes = 0;
  /** The engine's own measure (wasm memory) when idle and last, where the host reports one: hints. */
  private idleEngineBytes: number | undefined;
  private lastEngineBytes: number | undefined;
  /** Limits of the last run served: the retire bound of an idle host. */
  private lastLimits: RunLimits | undefined;
  /** The run in flight; `bytesAtStart`: what the host held when it was sent (the server's measure). */
  private current: { job: Job; started: number; finished: () => void; bytesAtStart: number } | undefined;
  dead = false;
  /** Set when the host should not serve again (grown, recycled); it is killed when released. */
  retire = false;
  /** Why it was retired or killed (for the server's log of replacements). */
  private retireWhy: string | undefined;
  runs = 0;
  private exit: HostExit | undefined;
  /** The queue key this host serves (affinity), once it served one. */
  key: string | undefined;
  /**
   * Its CPU while it has no run (see IdleCpuPolicy): the tree's CPU time when last read, when, and
   * what it may still use (refilled with time). Undefined until it is ready, or where the system
   * cannot tell.
   */
  private idleCpu: { cpuMs: number; at: number; creditMs: number } | undefined;
  /** How much its key uses it: runs, each worth less the older it is (halved every HEAT_HALF_LIFE_MS); see `heat()`. */
  private heatAtLastRun = 0;
  private lastRunAt = 0;

  /** Recent use (runs, decayed): which host of another key to stop to make room (HostPoolSandbox.startFor). */
  heat(now = performance.now()): number {
    return this.heatAtLastRun * 0.5 ** ((now - this.lastRunAt) / HEAT_HALF_LIFE_MS);
  }

  constructor(
    private readonly handle: HostHandle,
    private readonly options: HostPoolOptions,
  ) {
    // Keep the server's process alive while a host starts or serves a run, not while it idles.
    handle.keepAlive(true);
    // A host that never says it is ready (stuck loading) is not waited for forever; on the run clock
    // (run-delay.ts), so a host starting on a busy machine, below the server's priority, is not
    // killed for the time it waited for a CPU.
    const spawned = performance.now();
    let startTimer: ReturnType<typeof setTimeout>;
    const checkStart = () => {
      const due = onRunClock(START_TIMEOUT_MS, spawned, 0, handle.waitedMs?.() ?? 0);
      if (due > 0) startTimer = setTimeout(checkStart, due).unref();
      else handle.kill();
    };
    startTimer = setTimeout(checkStart, START_TIMEOUT_MS).unref();
    let ready = false;
    this.ready = new Promise<void>((resolve, reject) => {
      handle.onMessage((message: HostReply) => {
        this.lastEngineBytes = message.engineBytes;
        if (message.type === "ready") {
          // Said once, at start: a host saying it again is resetting the size it is measured from.
          if (ready) return handle.kill("it said it was ready a second time");
          ready = true;
          clearTimeout(startTimer);
          // The idle size is measured here, by the server; the host's own figure only where the system cannot measure.
          this.idleBytes = this.lastBytes = handle.measure() ?? message.bytes;
          this.idleEngineBytes = message.engineBytes;
          this.isReady = true;
          if (!this.current) {
            handle.keepAlive(false);
            this.markIdle();
          }
          resolve();
        } else this.onReply(message);
      });
      handle.onExit((exit) => {
        this.dead = true;
        this.exit = exit;
        reject(new Error(exit.why));
        this.onDeath(exit);
      });
    });
    this.ready.catch(() => {});
  }

  /** Growth of the engine's own measure since idle, as the host reports it (a hint; undefined where it reports none). */
  get engineGrownBytes(): number | undefined {
    if (this.lastEngineBytes !== undefined && this.idleEngineBytes !== undefined) return this.lastEngineBytes - this.idleEngineBytes;
    return undefined;
  }

  /**
   * Measures what the host holds (the server's own measure) and acts on it: a running host over its
   * run's allowance is killed and the run is a MemoryLimitError; an idle host that grew past the
   * retire bound since its last run (a guest that took the process over and kept allocating) is
   * killed. Where the system cannot measure, `reported` (the host's own figure) is all there is.
   * True when it killed the host.
   */
  checkMemory(reported?: number): boolean {
    if (this.dead || !this.isReady) return false;
    const bytes = reported ?? this.handle.measure();
    if (bytes === undefined) return false;
    this.lastBytes = bytes;
    const grown = bytes - this.idleBytes;
    const current = this.current;
    if (current) {
      // A run is held to its own allowance from what the host held when it began: memory a larger
      // run left behind (garbage not yet collected, within that run's bounds) is not this run's.
      const allowed = (this.options.memory.killAboveBytes ?? DEFAULT_KILL_ABOVE)(current.job.limits);
      const grownInRun = bytes - Math.max(this.idleBytes, current.bytesAtStart);
      if (grownInRun <= allowed) return false;
      const error = memoryError(current.job.limits);
      error.message += ` (the ${this.options.label} grew by ${Math.round(grownInRun / MiB)} MiB and was replaced)`;
      current.job.answer({ ok: false, result: null, stdout: "", stderr: "", error, elapsedMs: performance.now() - current.started });
      this.handle.kill(`it grew by ${Math.round(grownInRun / MiB)} MiB`);
      return true;
    }
    if (this.lastLimits && grown > this.retireAbove(this.lastLimits)) {
      this.retireFor(`it grew by ${Math.round(grown / MiB)} MiB while idle`);
      this.handle.kill(this.retireWhy);
      return true;
    }
    return false;
  }

  private retireAbove(limits: RunLimits): number {
    return (this.options.memory.retireAboveBytes ?? DEFAULT_RETIRE_ABOVE)(limits);
  }

  /** It has no run from now on: its CPU time is counted from here (what it may still use carries over). */
  private markIdle(): void {
    const cpuMs = this.handle.cpuMs?.();
    if (cpuMs === undefined) return;
    const { burstMs, share } = this.options.idleCpu ?? DEFAULT_IDLE_CPU;
    const now = performance.now();
    const last = this.idleCpu;
    const creditMs = last ? Math.min(burstMs, last.creditMs + share * (now - last.at)) : burstMs;
    this.idleCpu = { cpuMs, at: now, creditMs };
  }

  /**
   * Measures the CPU time an idle host used since it was last measured (the server's measure of its
   * process tree) and stops one that used more than IdleCpuPolicy allows: a host whose guest took
   * it over, spinning between runs. True when it killed the host.
   */
  checkIdleCpu(): boolean {
    const last = this.idleCpu;
    if (this.dead || !this.isReady || this.current || !last) return false;
    const cpuMs = this.handle.cpuMs?.();
    if (cpuMs === undefined) return false;
    const { burstMs, share } = this.options.idleCpu ?? DEFAULT_IDLE_CPU;
    const now = performance.now();
    const used = cpuMs - last.cpuMs;
    const creditMs = Math.min(burstMs, last.creditMs + share * (now - last.at)) - used;
    this.idleCpu = { cpuMs, at: now, creditMs };
    if (creditMs >= 0) return false;
    this.retireFor(`it used ${Math.round(used)} ms of CPU while it had no run`);
    this.handle.kill(this.retireWhy);
    return true;
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  /** Serves one job; resolves when the host is free again (or dead), which may be after the answer. */
  serve(job: Job): Promise<void> {
    return new Promise<void>((finished) => {
      if (this.dead) {
        job.answer(this.deathResult(this.exit!, job.limits, 0));
        finished();
        return;
      }
      if (job.signal?.aborted) {
        // Gave up while the host was starting: never sent.
        job.answer(cancelledResult(job.signal, 0));
        finished();
        return;
      }
      const started = performance.now();
      this.runs++;
      this.heatAtLastRun = this.heat(started) + 1;
      this.lastRunAt = started;
      this.current = { job, started, finished, bytesAtStart: this.lastBytes };
      this.handle.keepAlive(true);
      const { timeoutMs } = job.limits;
      // On the run clock (run-delay.ts): the time the host waited for a CPU is not the run's.
      const waited0 = this.handle.waitedMs?.() ?? 0;
      const limitMs = timeoutMs + this.options.watchdogSlackMs;
      const checkRun = () => {
        if (this.current?.job !== job) return;
        const waited = this.handle.waitedMs?.() ?? 0;
        const due = onRunClock(limitMs, started, waited0, waited);
        if (due > 0) {
          watchdog = setTimeout(checkRun, due);
          return;
        }
        const error = timeoutError({ timeoutMs });
        error.message += ` (stopped by the watchdog: the ${this.options.label} was replaced, output lost)`;
        job.answer({ ok: false, result: null, stdout: "", stderr: "", error, elapsedMs: Math.max(0, performance.now() - started - (waited - waited0)) });
        this.kill();
      };
      let watchdog = setTimeout(checkRun, limitMs);
      const onAbort = () => {
        if (this.current?.job !== job) return;
        job.answer(cancelledResult(job.signal, performance.now() - started));
        // The host may finish the run on its own terms; it stays busy (and watched) until then.
        if (this.options.cooperativeCancel) this.handle.post({ type: "cancel", id: job.id });
        else this.kill();
      };
      const cleanup = () => {
        this.handle.setMaxReplyBytes(IDLE_REPLY_BYTES);
        clearTimeout(watchdog);
        job.signal?.removeEventListener("abort", onAbort);
      };
      this.current.finished = () => {
        cleanup();
        if (!this.dead) {
          this.handle.keepAlive(false);
          this.markIdle();
        }
        finished();
      };
      if (job.signal?.aborted) onAbort();
      else job.signal?.addEventListener("abort", onAbort, { once: true });
      this.handle.setMaxReplyBytes(replyBound(job.limits));
      this.handle.post({ type: "run", id: job.id, code: job.code, options: job.options });
    });
  }

  kill(): void {
    if (!this.dead) this.handle.kill();
  }

  /** It serves no more runs, for this reason (the first one given is kept). */
  retireFor(why: string): void {
    this.retire = true;
    this.retireWhy ??= why;
  }

  /** Why it is gone or going: how it ended, else why it was retired. */
  get endedWhy(): string {
    return this.exit?.why ?? this.retireWhy ?? "replaced";
  }

  private onReply(message: Exclude<HostReply, { type: "ready" }>): void {
    const current = this.current;
    // A host answers each run once, and only the run it was sent: anything else is a host that no
    // longer runs our code (each such reply would cost the server a parse and a check, for ever).
    if (!current || current.job.id !== message.id) return this.handle.kill(`it answered run ${message.id}, which it was not running`);
    const { job, started } = current;
    if (message.type === "usage") {
      // Only where the server cannot measure the host itself is the host's figure used.
      if (!CAN_MEASURE_PROCESSES) this.checkMemory(message.bytes);
      return;
    }
    if (message.type === "result" && !outputFits(message.result, job.limits)) {
      // Only a host that no longer runs our code sends more than the cap it was given.
      job.answer(errorResult("SandboxError", `the ${this.options.label} answered with more output than the run allows; it was replaced`, performance.now() - started));
      this.kill();
      return;
    }
    this.current = undefined;
    this.lastLimits = job.limits;
    job.answer(message.type === "result" ? (message.result as RunResult) : errorResult("SandboxError", message.message, performance.now() - started));
    if (!CAN_MEASURE_PROCESSES) this.lastBytes = message.bytes;
    // The last measure of the tree may be up to MEASURE_MS old, from before the run grew: the engine
    // process is measured now too (a few µs), so a host grown by this run never serves the next
    // one, whose smaller allowance it would exceed from the start (seen on a loaded machine).
    const engineNow = CAN_MEASURE_PROCESSES ? this.handle.measureEngine?.() : undefined;
    if (engineNow !== undefined) this.lastBytes = Math.max(this.lastBytes, engineNow);
    if (this.lastBytes - this.idleBytes > this.retireAbove(job.limits)) this.retireFor(`it held ${Math.round((this.lastBytes - this.idleBytes) / MiB)} MiB more after a run than idle`);
    const engineGrown = this.engineGrownBytes;
    if (engineGrown !== undefined && this.options.memory.engine && engineGrown > this.options.memory.engine.retireAboveBytes(job.limits)) this.retireFor(`its engine grew by ${Math.round(engineGrown / MiB)} MiB`);
    if (message.type === "result" && message.retire) this.retireFor("it asked to be replaced after its run");
    current.finished();
  }

  private onDeath(exit: HostExit): void {
    const current = this.current;
    this.current = undefined;
    if (!current) return;
    current.job.answer(this.deathResult(exit, current.job.limits, performance.now() - current.started));
    current.finished();
  }

  private deathResult(exit: HostExit, limits: RunLimits, elapsedMs: number): RunResult {
    if (exit.outOfMemory) {
      const error = memoryError(limits);
      error.message += ` (the engine aborted: ${exit.why}; the ${this.options.label} was replaced)`;
      return { ok: false, result: null, stdout: "", stderr: "", error, elapsedMs };
    }
    return errorResult("SandboxError", `the ${this.options.label} died: ${exit.why}`, elapsedMs);
  }
}

export class HostPoolSandbox implements Sandbox {
  readonly kind: SandboxKind;
  private readonly limiter: Limiter;
  private readonly idle: Host[] = [];
  private readonly all = new Set<Host>();
  private disposed = false;
  private nextId = 1;
  private measuring: ReturnType<typeof setInterval> | undefined;
  /** Hosts killed or retired so far (watchdog, memory, death, recycling): for tests and metrics. */
  replaced = 0;
  /** Hosts started so far: for tests, metrics and benchmarks. */
  started = 0;

  constructor(private readonly options: HostPoolOptions) {
    this.kind = options.kind;
    this.limiter = new Limiter(options.maxConcurrency ?? availableParallelism());
  }

  get maxConcurrency(): number {
    return this.limiter.max;
  }

  /** Starts `count` hosts (default 1, at most maxConcurrency; with client or episode affinity, also the spare) ahead of the first runs and waits for them. */
  async warm(count = 1): Promise<void> {
    const started: Host[] = [];
    const affinity = this.options.affinity ?? "off";
    const most = affinity === "off" || affinity === "run" ? this.limiter.max : this.maxHosts;
    for (let i = this.all.size; i < Math.min(count, most); i++) started.push(this.startHost());
    if (started.length === 0 && this.all.size === 0) started.push(this.startHost());
    try {
      await Promise.all(started.map((h) => h.ready.catch(() => {})));
    } finally {
      for (const host of started) this.release(host);
    }
  }

  async run(code: string, options: RunOptions = {}): Promise<RunResult> {
    if (this.disposed) throw new Error("sandbox is disposed");
    // Validate on this side so misuse throws here, not as a result from the host. Type stripping
    // waits for the host (its cost grows with the input; the host runs it under the watchdog).
    // Only what survives JSON is sent: exactly what the guest would get, and always cloneable.
    this.options.validate?.(code, options);
    const prepared = prepareRun(code, { ...options, ts: false });
    if (!prepared.ok) return prepared.result;
    const { limits, configJson } = prepared.run;
    const { globals, stdin } = JSON.parse(configJson) as { globals: Record<string, JsonValue>; stdin: string };
    const sent: SentOptions = { ...limits, ts: options.ts === true, globals, stdin };

    let answer!: (result: RunResult) => void;
    const answered = new Promise<RunResult>((resolve) => {
      let done = false;
      answer = (result) => {
        if (done) return;
        done = true;
        resolve(result);
      };
    });
    // The run starts (`onStart`: a tool's clock resumes) once its host is ready, not when it gets
    // a slot: a host being started or replaced (after a run that had to be killed) takes a few
    // hundred ms, more on a loaded machine, and that is waiting, not running.
    const { onStart, ...queueOptions } = options;
    const slot = queued(this.limiter, queueOptions, async () => {
      if (this.disposed) throw new Error("sandbox is disposed");
      const host = await this.acquire(limits, this.ownerOf(options), options.signal);
      // Gave up while waiting for its client's host.
      if (!host) return cancelledResult(options.signal, 0);
      try {
        try {
          await host.ready;
        } catch (err) {
          return errorResult("SandboxError", `could not start a ${this.options.label}: ${(err as Error).message}`, 0);
        }
        onStart?.();
        // The slot stays taken until the host is free again, even when the caller was answered earlier.
        await host.serve({ id: this.nextId++, code, options: sent, limits, signal: options.signal, answer });
        return answered;
      } finally {
        this.release(host);
      }
    });
    return Promise.race([answered, slot]);
  }

  /**
   * Memory held by the live hosts: the resident memory of each one's process tree, as the server
   * last measured it (at most MEASURE_MS ago for a busy host, IDLE_MEASURE_TICKS times that for an
   * idle one). For metrics and memory budgets.
   */
  memoryBytes(): number {
    let total = 0;
    for (const host of this.all) if (!host.dead) total += host.lastBytes;
    return total;
  }

  /** Hosts alive now (started, idle or busy). */
  get hosts(): number {
    return this.all.size;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    clearInterval(this.measuring);
    this.measuring = undefined;
    this.idle.length = 0;
    for (const host of this.all) host.kill();
    this.all.clear();
    for (const queue of this.waiting.values()) for (const take of queue) take(undefined);
    this.waiting.clear();
  }

  /** Whom a run's host must be dedicated to (affinity), undefined when hosts serve anyone. */
  private ownerOf(options: RunOptions): string | undefined {
    const affinity = this.options.affinity ?? "off";
    if (affinity === "off" || affinity === "run") return undefined;
    return affinity === "client" ? (options.client ?? options.queueKey ?? "") : (options.queueKey ?? "");
  }

  /** Hosts alive at most with affinity: one per slot and a spare started ahead. */
  private get maxHosts(): number {
    return this.limiter.max + 1;
  }

  /** Whether an idle host may serve a run with `limits` (memory a wasm engine took never shrinks); one that may not is killed. */
  private fits(host: Host, limits: RunLimits | undefined): boolean {
    const fits = this.options.memory.engine?.fits;
    const engineGrown = host.engineGrownBytes;
    if (!limits || !fits || engineGrown === undefined || fits(limits, engineGrown)) return true;
    host.retireFor(`its engine grew by ${Math.round(engineGrown / MiB)} MiB, more than a run with these limits may start from`);
    this.noteReplaced(host);
    this.all.delete(host);
    host.kill();
    return false;
  }

  /**
   * A host for a run: without affinity (`key` undefined), the most recently used idle one, else a
   * new one. With affinity, in this order: an idle host of `key`; the spare (a fresh host, kept to
   * `key` from now on; no new spare is started unless there is room, so taking it stops no one
   * else's host); when the pool is full and `key` already has a host (busy), that host, once it is
   * free (waiting for it costs less than a start-up, and stops no other key's host); else a new
   * host, for which the idle host of another key used least lately is stopped. Undefined when
   * the run's signal aborted while it waited.
   */
  private async acquire(limits: RunLimits, key: string | undefined, signal: AbortSignal | undefined): Promise<Host | undefined> {
    for (let i = this.idle.length - 1; i >= 0; i--) {
      const host = this.idle[i]!;
      if (host.dead) {
        this.idle.splice(i, 1);
        this.all.delete(host); // died while idle
        continue;
      }
      if (key !== undefined && host.key !== key) continue;
      this.idle.splice(i, 1);
      if (this.fits(host, limits)) {
        this.keepSpares();
        return host;
      }
      break;
    }
    if (key === undefined) {
      const host = this.startHost();
      this.keepSpares();
      return host;
    }
    const spare = this.idle.findLastIndex((h) => h.key === undefined && !h.dead);
    if (spare >= 0) {
      const host = this.idle.splice(spare, 1)[0]!;
      host.key = key;
      this.keepSpare();
      return host;
    }
    if (this.all.size >= this.maxHosts && this.hasHost(key) && !(this.options.startWhenBusy && this.hostsOf(key) < this.limiter.max && this.idle.some((h) => !h.dead))) {
      const host = await this.waitForHostOf(key, signal);
      if (!host || this.fits(host, limits)) return host;
    }
    const host = this.startFor(key);
    this.keepSpare();
    return host;
  }

  /** Whether `key` has a live host (busy: an idle one would have been taken). */
  private hasHost(key: string): boolean {
    for (const host of this.all) if (host.key === key && !host.dead && !host.retire) return true;
    return false;
  }

  /** How many live hosts `key` has. */
  private hostsOf(key: string): number {
    let n = 0;
    for (const host of this.all) if (host.key === key && !host.dead && !host.retire) n++;
    return n;
  }

  /** Runs waiting for a host of their key to be free, per key, first come first served. */
  private readonly waiting = new Map<string, ((host: Host | undefined) => void)[]>();

  private waitForHostOf(key: string, signal: AbortSignal | undefined): Promise<Host | undefined> {
    return new Promise<Host | undefined>((resolve) => {
      if (signal?.aborted) return resolve(undefined);
      const queue = this.waiting.get(key) ?? [];
      this.waiting.set(key, queue);
      const onAbort = () => {
        const i = queue.indexOf(take);
        if (i >= 0) queue.splice(i, 1);
        if (queue.length === 0 && this.waiting.get(key) === queue) this.waiting.delete(key);
        resolve(undefined);
      };
      const take = (host: Host | undefined) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(host);
      };
      queue.push(take);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Hands a host of `key` (or undefined: start one) to the first run waiting for one; false when none waits. */
  private handOver(key: string, host: Host | undefined): boolean {
    const queue = this.waiting.get(key);
    const take = queue?.shift();
    if (queue && queue.length === 0) this.waiting.delete(key);
    if (!take) return false;
    take(host ?? this.startFor(key));
    return true;
  }

  /**
   * A new host for `key`, the coolest idle host of another key stopped to make room: the one its
   * key used least lately (`Host.heat`; ties: the least recently used). Not simply the least
   * recently used: a stream of new clients (an attacker with many addresses, each new one asking
   * for a host) would then stop a steady client's host between every two of its runs, and each of
   * its runs would wait for a start-up (bench/affinity-churn.ts: py-code /score every 3 s beside
   * one such attacker, p50 2.6 s instead of 72 ms). A client's one run leaves its host cool; a
   * steady client's host stays warm.
   */
  private startFor(key: string): Host {
    const now = performance.now();
    while (this.all.size >= this.maxHosts) {
      let coolest = -1;
      for (let i = 0; i < this.idle.length; i++) {
        const host = this.idle[i]!;
        if (host.key !== undefined && (coolest < 0 || host.heat(now) < this.idle[coolest]!.heat(now))) coolest = i;
      }
      if (coolest < 0) break;
      const [host] = this.idle.splice(coolest, 1);
      this.all.delete(host!);
      host!.kill();
    }
    const host = this.startHost();
    host.key = key;
    return host;
  }

  /** Affinity: one fresh host started ahead, so a new key does not wait for a start-up; only where there is room. */
  private keepSpare(): void {
    if (this.disposed || this.all.size >= this.maxHosts || this.idle.some((h) => h.key === undefined && !h.dead)) return;
    this.idle.unshift(this.startHost());
  }

  /** Single-use hosts ("run" affinity): fresh hosts started ahead, one per slot (only those never handed a run are idle). */
  private keepSpares(): void {
    if (this.disposed || this.options.affinity !== "run") return;
    let spares = 0;
    for (const host of this.idle) if (!host.dead) spares++;
    for (; spares < this.limiter.max; spares++) this.idle.unshift(this.startHost());
  }

  private release(host: Host): void {
    const singleUse = this.options.affinity === "run" && host.runs > 0;
    // A host that served its one run (or its share of them) ends as planned: not a replacement.
    const old = this.options.recycleAfterMs !== undefined && performance.now() - host.bornAt > this.options.recycleAfterMs;
    const recycle = (singleUse || old || host.runs >= (this.options.recycleAfterRuns ?? 1000)) && !host.dead && !host.retire;
    if (host.dead || host.retire || recycle || this.disposed) {
      if (!this.disposed && !recycle) this.noteReplaced(host);
      this.all.delete(host);
      host.kill();
      if (this.disposed) return;
      // Replace it right away, so the next run does not pay the start-up.
      if (this.options.affinity === "run") this.keepSpares();
      else if (host.key !== undefined) {
        if (!this.handOver(host.key, undefined)) this.keepSpare();
      } else if (this.idle.length === 0) this.idle.push(this.startHost());
    } else if (host.key === undefined || !this.handOver(host.key, host)) this.idle.push(host);
  }

  /** A host replaced (not one that served its share, nor one stopped to make room): counted, and told to the watchers. */
  private noteReplaced(host: Host): void {
    this.replaced++;
    const replacement = { label: this.options.label, why: host.endedWhy };
    for (const watch of replacementWatchers) watch(replacement);
  }

  private startHost(): Host {
    this.started++;
    const host = new Host(this.options.start(), this.options);
    this.all.add(host);
    this.measureHosts();
    return host;
  }

  /**
   * The server's own watch on what its hosts hold (Host.checkMemory): busy hosts every MEASURE_MS,
   * idle ones every IDLE_MEASURE_TICKS of those, whether or not the host says anything; idle ones
   * also for the CPU they use (Host.checkIdleCpu). Where the
   * system cannot measure processes the hosts' own reports are used instead (no watch).
   */
  private measureHosts(): void {
    if (this.measuring || !CAN_MEASURE_PROCESSES || this.disposed) return;
    let tick = 0;
    this.measuring = setInterval(() => {
      const idleToo = ++tick % IDLE_MEASURE_TICKS === 0;
      // Idle: only hosts in the idle list (one just taken from it, about to be sent a run, is neither).
      for (const host of this.all) {
        // A busy host killed here is counted once, when its run releases it (release).
        if (host.busy) host.checkMemory();
        else if (idleToo && this.idle.includes(host) && (host.checkMemory() || host.checkIdleCpu())) this.noteReplaced(host);
      }
    }, MEASURE_MS);
    this.measuring.unref();
  }
}
