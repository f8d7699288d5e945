/**
 * The python sandbox (Node only): CPython 3.14 + its standard library compiled to WebAssembly
 * (Pyodide), one interpreter per worker thread, behind the same `Sandbox` interface as the
 * JavaScript backends. See README.md ("Python") for what a guest can and cannot do.
 *
 * Isolation: each interpreter lives in its own worker thread (python-worker.ts). A run that
 * crashes its interpreter (a trap, a fatal error), or that the time limit cannot stop, costs that
 * thread only: it is terminated and a fresh interpreter takes its place. Every run starts from the
 * same memory snapshot (restored after each run), so nothing leaks from one run to the next.
 *
 * Time limit, in two stages:
 *  1. at `timeoutMs` the host writes SIGINT into the interpreter's interrupt buffer (a
 *     SharedArrayBuffer); Python raises KeyboardInterrupt at the next bytecode boundary. The write
 *     is repeated every INTERRUPT_REPEAT_MS, so code that catches the interrupt gets another one;
 *  2. at `timeoutMs + watchdogSlackMs` a run still going (a C-level loop such as
 *     `sum(range(10**12))` or a catastrophic regex never reaches a bytecode boundary; or code that
 *     keeps swallowing interrupts) is answered with a TimeoutError and its thread terminated.
 * Either way the run ends as TimeoutError.
 *
 * Pool: at most `maxConcurrency` interpreters (~180 MB RSS each), started on first use (~2.5 s;
 * `warm()` starts them ahead) and reused for up to `recycleAfterRuns` runs. An interpreter whose
 * WebAssembly memory grew (memory cannot shrink) is not handed a run whose memory limit is below
 * its size; it is replaced instead.
 */
import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import { siblingModule, startWorker } from "../node/ts-worker.ts";
import { Limiter } from "./limiter.ts";
import { errorResult, resolveLimits, queued } from "./options.ts";
import { timeoutError } from "./report.ts";
import type { PythonWorkerMessage, PythonWorkerRequest } from "./python-worker.ts";
import type { JsonValue, RunLimits, RunOptions, RunResult, Sandbox } from "./types.ts";

export interface PythonSandboxOptions {
  /** Max concurrent runs = max interpreters (default: number of CPUs). */
  maxConcurrency?: number;
  /** Time past timeoutMs before the watchdog terminates the interpreter's thread (default 500 ms). */
  watchdogSlackMs?: number;
  /** Replace an interpreter after this many runs (default 20,000). */
  recycleAfterRuns?: number;
  /** Replace an interpreter whose memory grew more than this above its start size (default 64 MiB). */
  retainedGrowthMb?: number;
}

const WATCHDOG_SLACK_MS = 500;
const INTERRUPT_REPEAT_MS = 50;
const SIGINT = 2;
/** The JavaScript heap of an interpreter's thread (its output buffers); Python's memory is WebAssembly memory, limited per run. */
const THREAD_JS_HEAP_MB = 256;
/**
 * The thread's native stack, on which WebAssembly frames live. Python-to-Python calls use no C
 * stack, but C-level recursion (repr/json of deeply nested data, the parser) does; measured, with
 * the 4 MiB default it overflowed (a fatal error of the interpreter) before CPython's own C-stack
 * check fired, with 64 MiB CPython's check or the time limit ends such runs first.
 */
const THREAD_STACK_MB = 64;

/** One worker thread hosting one Pyodide interpreter. */
class PythonInterpreter {
  private readonly worker: Worker;
  private readonly interrupt = new Int32Array(new SharedArrayBuffer(4));
  readonly ready: Promise<void>;
  private inFlight: { id: number; resolve: (r: RunResult) => void; started: number; interrupted: boolean } | undefined;
  private nextId = 1;
  dead = false;
  runs = 0;
  /** Size of the WebAssembly memory at start and now. */
  baseBytes = 0;
  heapBytes = 0;

  constructor() {
    this.worker = startWorker(siblingModule("python-worker", import.meta.url), {
      workerData: { interrupt: this.interrupt.buffer },
      resourceLimits: { maxOldGenerationSizeMb: THREAD_JS_HEAP_MB, stackSizeMb: THREAD_STACK_MB },
    });
    this.worker.unref();
    this.ready = new Promise<void>((resolve, reject) => {
      this.worker.on("message", (msg: PythonWorkerMessage) => {
        if (msg.type === "ready") {
          this.baseBytes = this.heapBytes = msg.heapBytes;
          resolve();
        } else if (msg.type === "failed-to-start") {
          this.dead = true;
          reject(new Error(msg.message));
        } else if (this.inFlight && msg.id === this.inFlight.id) {
          this.heapBytes = msg.heapBytes;
          if (msg.fatal) this.dead = true;
          const { resolve: done, interrupted } = this.inFlight;
          this.inFlight = undefined;
          // The host's knowledge wins: a run it had to interrupt timed out, whatever it answered.
          done(interrupted ? { ...msg.result, ok: false, result: null, error: timeoutError({ timeoutMs: this.currentTimeout }) } : msg.result);
        }
      });
      const die = (why: string) => {
        this.dead = true;
        reject(new Error(why));
        const pending = this.inFlight;
        this.inFlight = undefined;
        pending?.resolve(errorResult("SandboxError", `the Python interpreter died: ${why}`, performance.now() - pending.started));
      };
      this.worker.on("error", (err) => die(err.message));
      this.worker.on("exit", (code) => die(`exit code ${code}`));
    });
    this.ready.catch(() => {});
  }

  private currentTimeout = 0;

  run(req: Omit<PythonWorkerRequest, "id">, slackMs: number): Promise<RunResult> {
    const id = this.nextId++;
    const started = performance.now();
    const { timeoutMs } = req.limits;
    this.currentTimeout = timeoutMs;
    this.runs++;
    return new Promise<RunResult>((resolve) => {
      this.worker.ref();
      let repeat: ReturnType<typeof setInterval> | undefined;
      const poke = () => {
        if (this.inFlight?.id !== id) return;
        this.inFlight.interrupted = true;
        Atomics.store(this.interrupt, 0, SIGINT);
      };
      const soft = setTimeout(() => {
        poke();
        repeat = setInterval(poke, INTERRUPT_REPEAT_MS);
      }, timeoutMs);
      const hard = setTimeout(() => {
        if (this.inFlight?.id !== id) return;
        this.inFlight = undefined;
        clearInterval(repeat);
        this.kill();
        const error = timeoutError({ timeoutMs });
        error.message += " (stopped by the watchdog; output lost)";
        resolve({ ok: false, result: null, stdout: "", stderr: "", error, elapsedMs: performance.now() - started });
      }, timeoutMs + slackMs);
      this.inFlight = {
        id,
        started,
        interrupted: false,
        resolve: (r) => {
          clearTimeout(soft);
          clearTimeout(hard);
          clearInterval(repeat);
          if (!this.dead) this.worker.unref();
          resolve(r);
        },
      };
      this.worker.postMessage({ id, ...req } satisfies PythonWorkerRequest);
    });
  }

  kill(): void {
    this.dead = true;
    void this.worker.terminate();
  }
}

export class PythonSandbox implements Sandbox {
  readonly kind = "python" as const;
  private readonly limiter: Limiter;
  private readonly idle: PythonInterpreter[] = [];
  private readonly all = new Set<PythonInterpreter>();
  private readonly slackMs: number;
  private readonly recycleAfterRuns: number;
  private readonly retainedGrowthBytes: number;
  private disposed = false;
  /** Interpreters replaced because a run killed or dirtied them beyond repair (for tests and metrics). */
  replaced = 0;

  constructor(options: PythonSandboxOptions = {}) {
    this.limiter = new Limiter(options.maxConcurrency ?? availableParallelism());
    this.slackMs = options.watchdogSlackMs ?? WATCHDOG_SLACK_MS;
    this.recycleAfterRuns = options.recycleAfterRuns ?? 20_000;
    this.retainedGrowthBytes = (options.retainedGrowthMb ?? 64) * 1024 * 1024;
  }

  get maxConcurrency(): number {
    return this.limiter.max;
  }

  /** Starts `count` interpreters (default: all) ahead of the first runs and waits for them. */
  async warm(count = this.limiter.max): Promise<void> {
    const started: PythonInterpreter[] = [];
    for (let i = this.all.size; i < Math.min(count, this.limiter.max); i++) started.push(this.create());
    try {
      await Promise.all(started.map((p) => p.ready));
    } finally {
      for (const p of started) this.release(p);
    }
  }

  async run(code: string, options: RunOptions = {}): Promise<RunResult> {
    if (this.disposed) throw new Error("sandbox is disposed");
    if (typeof code !== "string") throw new TypeError("sandbox: code must be a string");
    if (options.ts) throw new TypeError("sandbox: the python sandbox runs Python; the ts option is for JavaScript backends");
    const limits = resolveLimits(options);
    if (options.stdin !== undefined && typeof options.stdin !== "string") throw new TypeError("sandbox: stdin must be a string");
    const globals = options.globals ?? {};
    if (typeof globals !== "object" || globals === null || Array.isArray(globals)) throw new TypeError("sandbox: globals must be an object");
    for (const name of Object.keys(globals)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new TypeError(`sandbox: global name ${JSON.stringify(name)} is not a Python identifier`);
    }
    // Throws on cycles / BigInt: the caller handed in something that is not JSON.
    const globalsJson = JSON.stringify(globals as Record<string, JsonValue>);
    const stdin = options.stdin ?? "";
    // Fair across keys (episodes, clients) and dropped from the queue when its caller gives up,
    // like the JavaScript backends.
    // The run starts (`onStart`: a tool's clock resumes) once it has an interpreter: loading one
    // takes seconds, and that is the server's cost, not the guest's.
    const { onStart, ...rest } = options;
    return queued(this.limiter, rest, async () => {
      if (this.disposed) throw new Error("sandbox is disposed");
      const interpreter = await this.acquire(limits);
      if (!interpreter) return errorResult("SandboxError", "could not start a Python interpreter", 0);
      onStart?.();
      try {
        return await interpreter.run({ code, stdin, limits, globalsJson }, this.slackMs);
      } finally {
        this.release(interpreter);
      }
    });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.idle.length = 0;
    for (const p of this.all) p.kill();
    this.all.clear();
  }

  /** An idle interpreter that can honour `limits` (memory cannot shrink), else a fresh one. */
  private async acquire(limits: RunLimits): Promise<PythonInterpreter | undefined> {
    const maxBytes = (p: PythonInterpreter) => p.baseBytes + limits.memoryMb * 1024 * 1024;
    for (let i = this.idle.length - 1; i >= 0; i--) {
      const p = this.idle[i]!;
      if (p.dead) {
        this.idle.splice(i, 1);
        this.all.delete(p);
      } else if (p.baseBytes === 0 || p.heapBytes <= maxBytes(p)) {
        this.idle.splice(i, 1);
        try {
          await p.ready;
          return p;
        } catch {
          this.all.delete(p);
          break;
        }
      }
    }
    // Only interpreters grown past this run's limit are idle (or none): make room and start afresh.
    if (this.all.size >= this.limiter.max) {
      const evicted = this.idle.shift();
      if (evicted) this.retire(evicted);
    }
    const fresh = this.create();
    try {
      await fresh.ready;
      return fresh;
    } catch {
      this.all.delete(fresh);
      return undefined;
    }
  }

  private release(p: PythonInterpreter): void {
    if (this.disposed) {
      this.retire(p);
      return;
    }
    const grown = p.baseBytes > 0 && p.heapBytes - p.baseBytes > this.retainedGrowthBytes;
    if (p.dead || grown || p.runs >= this.recycleAfterRuns) {
      if (p.dead || grown) this.replaced++;
      this.retire(p);
      // Start the replacement now, so the next run does not wait for its 2.5 s start-up.
      if (this.all.size < this.limiter.max) this.idle.push(this.create());
    } else this.idle.push(p);
  }

  private retire(p: PythonInterpreter): void {
    this.all.delete(p);
    p.kill();
  }

  private create(): PythonInterpreter {
    const p = new PythonInterpreter();
    this.all.add(p);
    return p;
  }
}

export function createPythonSandbox(options: PythonSandboxOptions = {}): PythonSandbox {
  return new PythonSandbox(options);
}
