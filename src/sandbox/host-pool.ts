/**
 * A sandbox made of supervised hosts (Node only): worker threads or child processes, each running
 * an in-process sandbox and serving one run at a time (host-protocol.ts). What the pool adds is
 * what an in-process engine cannot do for itself:
 *
 * - a hard stop: a run not answered by timeoutMs + slack has its host killed (TimeoutError);
 * - containment: a host that dies (a V8 fatal error aborts its whole process; a thread over its
 *   heap limit) takes only its own run with it (MemoryLimitError when it died for lack of memory,
 *   SandboxError otherwise), and a fresh host takes its place;
 * - memory enforcement: a host whose reported memory grows past the run's allowance while running
 *   is killed (MemoryLimitError), and one that did not give memory back after a run is replaced,
 *   which returns that memory to the OS;
 * - fair queueing and cancellation (limiter.ts): a run whose signal aborts leaves the queue, or,
 *   when running, is answered at once as a CancelledError while its host stops it.
 */
import { availableParallelism } from "node:os";
import type { HostExit, HostHandle } from "./host-handles.ts";
import type { HostReply, SentOptions } from "./host-protocol.ts";
import { Limiter } from "./limiter.ts";
import { cancelledResult, errorResult, prepareRun, queued } from "./options.ts";
import { memoryError, timeoutError } from "./report.ts";
import type { JsonValue, RunLimits, RunOptions, RunResult, Sandbox, SandboxKind } from "./types.ts";

const MiB = 1024 * 1024;
/** Longest a thread/process may take to start (load the engine, warm it) before it is killed. */
const START_TIMEOUT_MS = 60_000;

export interface MemoryPolicy {
  /** How far a host may grow past its idle size while running before it is killed (undefined: not watched). */
  killAboveBytes?(limits: RunLimits): number;
  /** After a run, a host grown past its idle size by more than this is replaced. */
  retireAboveBytes(limits: RunLimits): number;
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
  /** Memory the host holds when idle (from its ready message). */
  private idleBytes = 0;
  /** Memory the host held when it last said (RSS of a process; wasm memory of a QuickJS thread). */
  lastBytes = 0;
  private current: { job: Job; started: number; finished: () => void } | undefined;
  dead = false;
  /** Set when the host should not serve again (grown, recycled); it is killed when released. */
  retire = false;
  runs = 0;
  private exit: HostExit | undefined;

  constructor(
    private readonly handle: HostHandle,
    private readonly options: HostPoolOptions,
  ) {
    // Keep the server's process alive while a host starts or serves a run, not while it idles.
    handle.keepAlive(true);
    // A host that never says it is ready (stuck loading) is not waited for forever.
    const startTimer = setTimeout(() => handle.kill(), START_TIMEOUT_MS);
    startTimer.unref();
    this.ready = new Promise<void>((resolve, reject) => {
      handle.onMessage((message: HostReply) => {
        this.lastBytes = message.bytes;
        if (message.type === "ready") {
          clearTimeout(startTimer);
          this.idleBytes = message.bytes;
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
      const watchdog = setTimeout(() => {
        if (this.current?.job !== job) return;
        const error = timeoutError({ timeoutMs });
        error.message += ` (stopped by the watchdog: the ${this.options.label} was replaced, output lost)`;
        job.answer({ ok: false, result: null, stdout: "", stderr: "", error, elapsedMs: performance.now() - started });
        this.kill();
      }, timeoutMs + this.options.watchdogSlackMs);
      const onAbort = () => {
        if (this.current?.job !== job) return;
        job.answer(cancelledResult(job.signal, performance.now() - started));
        // The host may finish the run on its own terms; it stays busy (and watched) until then.
        if (this.options.cooperativeCancel) this.handle.post({ type: "cancel", id: job.id });
        else this.kill();
      };
      const cleanup = () => {
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
      this.handle.post({ type: "run", id: job.id, code: job.code, options: job.options });
    });
  }

  kill(): void {
    if (!this.dead) this.handle.kill();
  }

  private onReply(message: Exclude<HostReply, { type: "ready" }>): void {
    const current = this.current;
    if (!current || current.job.id !== message.id) return;
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
    this.current = undefined;
    job.answer(message.type === "result" ? message.result : errorResult("SandboxError", message.message, performance.now() - started));
    if (grown > this.options.memory.retireAboveBytes(job.limits)) this.retire = true;
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

  /** Starts one host ahead of the first run (starting one takes a few hundred ms). */
  async warm(): Promise<void> {
    const host = this.acquire();
    try {
      await host.ready;
    } finally {
      this.release(host);
    }
  }

  async run(code: string, options: RunOptions = {}): Promise<RunResult> {
    if (this.disposed) throw new Error("sandbox is disposed");
    // Validate on this side so misuse throws here, not as a result from the host. Type stripping
    // waits for the host (its cost grows with the input; the host runs it under the watchdog).
    // Only what survives JSON is sent: exactly what the guest would get, and always cloneable.
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
      const host = this.acquire();
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

  private acquire(): Host {
    for (let host = this.idle.pop(); host; host = this.idle.pop()) {
      if (!host.dead) return host;
      this.all.delete(host); // died while idle
    }
    return this.startHost();
  }

  private release(host: Host): void {
    const recycle = host.runs >= (this.options.recycleAfterRuns ?? 1000);
    if (host.dead || host.retire || recycle || this.disposed) {
      if (!this.disposed && !recycle) this.replaced++;
      this.all.delete(host);
      host.kill();
      // Replace it right away, so the next run does not pay the start-up.
      if (!this.disposed && this.idle.length === 0) this.idle.push(this.startHost());
    } else this.idle.push(host);
  }

  private startHost(): Host {
    const host = new Host(this.options.start(), this.options);
    this.all.add(host);
    return host;
  }
}
