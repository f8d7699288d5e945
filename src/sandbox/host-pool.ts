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
 * - memory enforcement: a host whose reported memory grows past the run's allowance while running
 *   is killed (MemoryLimitError), and one that did not give memory back after a run is replaced,
 *   which returns that memory to the OS;
 * - fair queueing and cancellation (limiter.ts): a run whose signal aborts leaves the queue, or,
 *   when running, is answered at once as a CancelledError while its host stops it;
 * - distrust: a reply is bounded (by the run's output cap) and schema-checked before use
 *   (host-handles.ts), must answer the run in flight, and its output must fit the run's cap; a
 *   host that breaks any of this is killed and its run is a SandboxError.
 */
import { Buffer } from "node:buffer";
import { availableParallelism } from "node:os";
import { IDLE_REPLY_BYTES, type HostExit, type HostHandle } from "./host-handles.ts";
import type { HostReply, SentOptions } from "./host-protocol.ts";
import { Limiter } from "./limiter.ts";
import { cancelledResult, errorResult, prepareRun, queued } from "./options.ts";
import { memoryError, timeoutError } from "./report.ts";
import { stretchCapMs } from "./deadline.ts";
import { TRUNCATION_MARKER, type JsonValue, type RunLimits, type RunOptions, type RunResult, type Sandbox, type SandboxKind } from "./types.ts";

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

export interface MemoryPolicy {
  /** How far a host's RSS may grow past its idle size while running before it is killed (undefined: not watched). */
  killAboveBytes?(limits: RunLimits): number;
  /** After a run, a host grown past its idle size by more than this is replaced (engine bytes where the host reports them, else RSS). */
  retireAboveBytes(limits: RunLimits): number;
  /** Whether an idle host grown by this much (as above) may serve a run with these limits; one that may not is replaced. */
  fits?(limits: RunLimits, grownBytes: number): boolean;
}

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
  /** Checks a run's inputs beyond the common ones (throws on misuse, like prepareRun). */
  validate?(code: string, options: RunOptions): void;
  /**
   * Hosts are dedicated to a queue key (an episode, a client of a stateless route): a host that
   * served one key never serves another, so a guest that escaped its engine and took over its host
   * process can tamper only with later runs of its own key (README.md "The residual"). A new key
   * gets a fresh host (one is kept started ahead); the least recently used idle host of another
   * key is stopped to make room. Runs without a key share one key. Default false: a host serves
   * any key (each switch of key costs a host start-up).
   */
  affinity?: boolean;
}

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

/** One supervised thread or process. */
class Host {
  readonly ready: Promise<void>;
  /** RSS of the host when idle (from its ready message). */
  private idleBytes = 0;
  /** RSS of the host when it last said. */
  lastBytes = 0;
  /** The engine's own measure (wasm memory) when idle and last, where the host reports one. */
  private idleEngineBytes: number | undefined;
  private lastEngineBytes: number | undefined;
  private current: { job: Job; started: number; finished: () => void } | undefined;
  dead = false;
  /** Set when the host should not serve again (grown, recycled); it is killed when released. */
  retire = false;
  runs = 0;
  private exit: HostExit | undefined;
  /** The queue key this host serves (affinity), once it served one. */
  key: string | undefined;

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
        this.lastBytes = message.bytes;
        this.lastEngineBytes = message.engineBytes;
        if (message.type === "ready") {
          // Said once, at start: a host saying it again is resetting the size it is measured from.
          if (ready) return handle.kill("it said it was ready a second time");
          ready = true;
          clearTimeout(startTimer);
          this.idleBytes = message.bytes;
          this.idleEngineBytes = message.engineBytes;
          if (!this.current) handle.keepAlive(false);
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

  /** Growth since idle as the memory policy reads it: the engine's measure where reported, else RSS. */
  get grownBytes(): number {
    if (this.lastEngineBytes !== undefined && this.idleEngineBytes !== undefined) return this.lastEngineBytes - this.idleEngineBytes;
    return this.lastBytes - this.idleBytes;
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
      this.current = { job, started, finished };
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
        job.answer({ ok: false, result: null, stdout: "", stderr: "", error, elapsedMs: performance.now() - started - (waited - waited0) });
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
        if (!this.dead) this.handle.keepAlive(false);
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

  private onReply(message: Exclude<HostReply, { type: "ready" }>): void {
    const current = this.current;
    // A host answers each run once, and only the run it was sent: anything else is a host that no
    // longer runs our code (each such reply would cost the server a parse and a check, for ever).
    if (!current || current.job.id !== message.id) return this.handle.kill(`it answered run ${message.id}, which it was not running`);
    const { job, started } = current;
    const grown = message.bytes - this.idleBytes;
    if (message.type === "usage") {
      const allowed = this.options.memory.killAboveBytes?.(job.limits);
      if (allowed !== undefined && grown > allowed) {
        const error = memoryError(job.limits);
        error.message += ` (the ${this.options.label} grew by ${Math.round(grown / MiB)} MiB and was replaced)`;
        job.answer({ ok: false, result: null, stdout: "", stderr: "", error, elapsedMs: performance.now() - started });
        this.kill();
      }
      return;
    }
    if (message.type === "result" && !outputFits(message.result, job.limits)) {
      // Only a host that no longer runs our code sends more than the cap it was given.
      job.answer(errorResult("SandboxError", `the ${this.options.label} answered with more output than the run allows; it was replaced`, performance.now() - started));
      this.kill();
      return;
    }
    this.current = undefined;
    job.answer(message.type === "result" ? (message.result as RunResult) : errorResult("SandboxError", message.message, performance.now() - started));
    if (this.grownBytes > this.options.memory.retireAboveBytes(job.limits)) this.retire = true;
    if (message.type === "result" && message.retire) this.retire = true;
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
  /** Hosts killed or retired so far (watchdog, memory, death, recycling): for tests and metrics. */
  replaced = 0;

  constructor(private readonly options: HostPoolOptions) {
    this.kind = options.kind;
    this.limiter = new Limiter(options.maxConcurrency ?? availableParallelism());
  }

  get maxConcurrency(): number {
    return this.limiter.max;
  }

  /** Starts `count` hosts (default 1, at most maxConcurrency) ahead of the first runs and waits for them. */
  async warm(count = 1): Promise<void> {
    const started: Host[] = [];
    for (let i = this.all.size; i < Math.min(count, this.limiter.max); i++) started.push(this.startHost());
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
      const host = this.acquire(limits, options.queueKey ?? "");
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
   * Memory held by the live hosts, as each last reported it (RSS of each isolated-vm process; wasm
   * memory of each QuickJS thread). For metrics and memory budgets.
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
    this.idle.length = 0;
    for (const host of this.all) host.kill();
    this.all.clear();
  }

  /**
   * An idle host that can serve `limits` (memory a wasm engine took never shrinks) and, with
   * affinity, `key` (its own, else a fresh one); else a newly started one.
   */
  private acquire(limits?: RunLimits, key?: string): Host {
    const affinity = this.options.affinity === true && key !== undefined;
    for (let i = this.idle.length - 1; i >= 0; i--) {
      const host = this.idle[i]!;
      if (host.dead) {
        this.idle.splice(i, 1);
        this.all.delete(host); // died while idle
        continue;
      }
      if (affinity && host.key !== key) continue;
      this.idle.splice(i, 1);
      if (!limits || !this.options.memory.fits || this.options.memory.fits(limits, host.grownBytes)) return host;
      this.replaced++;
      this.all.delete(host);
      host.kill();
      break;
    }
    if (!affinity) return this.startHost();
    // A fresh host (the spare started ahead, if any), kept to this key from now on.
    const fresh = this.idle.findLastIndex((h) => h.key === undefined && !h.dead);
    const host = fresh >= 0 ? this.idle.splice(fresh, 1)[0]! : this.startHost();
    host.key = key;
    this.makeRoom();
    this.keepSpare();
    return host;
  }

  /** Affinity: at most maxConcurrency + 1 hosts alive; the least recently used idle ones go first. */
  private makeRoom(): void {
    while (this.all.size > this.limiter.max + 1) {
      const oldest = this.idle.findIndex((h) => h.key !== undefined);
      if (oldest < 0) return;
      const [host] = this.idle.splice(oldest, 1);
      this.all.delete(host!);
      host!.kill();
    }
  }

  /** Affinity: one fresh host started ahead, so a new key does not wait for a start-up. */
  private keepSpare(): void {
    if (this.disposed || this.idle.some((h) => h.key === undefined && !h.dead)) return;
    this.idle.unshift(this.startHost());
    this.makeRoom();
  }

  private release(host: Host): void {
    const recycle = host.runs >= (this.options.recycleAfterRuns ?? 1000);
    if (host.dead || host.retire || recycle || this.disposed) {
      if (!this.disposed && !recycle) this.replaced++;
      this.all.delete(host);
      host.kill();
      // Replace it right away, so the next run does not pay the start-up.
      if (this.options.affinity) this.keepSpare();
      else if (!this.disposed && this.idle.length === 0) this.idle.push(this.startHost());
    } else this.idle.push(host);
  }

  private startHost(): Host {
    const host = new Host(this.options.start(), this.options);
    this.all.add(host);
    return host;
  }
}
