/**
 * QuickJS on Node, with a hard stop. Runs go to worker threads that each host an in-process QuickJS
 * sandbox (quickjs-worker.ts). QuickJS's own interrupt deadline stops almost every runaway run on
 * time, but the interrupt handler is only consulted every ~10 000 calls/backward jumps; a loop made
 * of long native operations (`for(;;) JSON.parse(JSON.stringify(big))`) can go minutes between two
 * checks (measured: 2 handler calls in 235 s). A watchdog therefore terminates the thread at
 * timeoutMs + WATCHDOG_SLACK_MS; the run ends as a TimeoutError (its output is lost with the
 * thread) and a fresh thread takes its place. On Workers, the platform CPU limit plays this role.
 */
import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import { siblingModule, startWorker } from "../node/ts-worker.ts";
import { Limiter } from "./limiter.ts";
import { errorResult, prepareRun } from "./options.ts";
import { timeoutError } from "./report.ts";
import type { WorkerMessage, WorkerRequest } from "./quickjs-worker.ts";
import type { JsonValue, RunOptions, RunResult, Sandbox } from "./types.ts";

export interface QuickJSThreadSandboxOptions {
  /** Max concurrent runs = max worker threads (default: number of CPUs). */
  maxConcurrency?: number;
  /** Extra time past timeoutMs before the watchdog kills the thread (default 500 ms). */
  watchdogSlackMs?: number;
}

const WATCHDOG_SLACK_MS = 500;

/** One worker thread serving one run at a time. */
class QuickJSThread {
  private readonly worker: Worker;
  readonly ready: Promise<void>;
  private inFlight: { id: number; resolve: (r: RunResult) => void; started: number } | undefined;
  private nextId = 1;
  dead = false;

  constructor() {
    this.worker = startWorker(siblingModule("quickjs-worker", import.meta.url));
    this.worker.unref();
    this.ready = new Promise<void>((resolve, reject) => {
      this.worker.on("message", (msg: WorkerMessage) => {
        if (msg.type === "ready") resolve();
        else if (this.inFlight && msg.id === this.inFlight.id) {
          const { resolve: done, started } = this.inFlight;
          this.inFlight = undefined;
          done(msg.type === "result" ? msg.result : errorResult("SandboxError", msg.message, performance.now() - started));
        }
      });
      const die = (why: string) => {
        this.dead = true;
        reject(new Error(why));
        const pending = this.inFlight;
        this.inFlight = undefined;
        pending?.resolve(errorResult("SandboxError", `the QuickJS thread died: ${why}`, performance.now() - pending.started));
      };
      this.worker.on("error", (err) => die(err.message));
      this.worker.on("exit", (code) => die(`exit code ${code}`));
    });
    this.ready.catch(() => {});
  }

  run(code: string, options: RunOptions, timeoutMs: number, slackMs: number): Promise<RunResult> {
    const id = this.nextId++;
    const started = performance.now();
    return new Promise<RunResult>((resolve) => {
      // Keep the process alive while a run is in flight, not while the thread idles.
      this.worker.ref();
      const watchdog = setTimeout(() => {
        if (this.inFlight?.id !== id) return;
        this.inFlight = undefined;
        this.kill();
        const error = timeoutError({ timeoutMs });
        error.message += " (stopped by the watchdog; output lost)";
        resolve({ ok: false, result: null, stdout: "", stderr: "", error, elapsedMs: performance.now() - started });
      }, timeoutMs + slackMs);
      this.inFlight = {
        id,
        started,
        resolve: (r) => {
          clearTimeout(watchdog);
          if (!this.dead) this.worker.unref();
          resolve(r);
        },
      };
      this.worker.postMessage({ id, code, options } satisfies WorkerRequest);
    });
  }

  kill(): void {
    this.dead = true;
    void this.worker.terminate();
  }
}

export class QuickJSThreadSandbox implements Sandbox {
  readonly kind = "quickjs" as const;
  private readonly limiter: Limiter;
  private readonly idle: QuickJSThread[] = [];
  private readonly all = new Set<QuickJSThread>();
  private readonly slackMs: number;
  private disposed = false;
  /** Threads killed by the watchdog so far (for tests and metrics). */
  killed = 0;

  constructor(options: QuickJSThreadSandboxOptions = {}) {
    this.limiter = new Limiter(options.maxConcurrency ?? availableParallelism());
    this.slackMs = options.watchdogSlackMs ?? WATCHDOG_SLACK_MS;
  }

  /** Starts one thread ahead of the first run (loading it takes a few hundred ms). */
  async warm(): Promise<void> {
    const t = this.acquire();
    try {
      await t.ready;
    } finally {
      this.release(t);
    }
  }

  async run(code: string, options: RunOptions = {}): Promise<RunResult> {
    if (this.disposed) throw new Error("sandbox is disposed");
    // Validate on this side so misuse throws here, not as a result from the thread (type stripping
    // waits for the thread, off this event loop), and send only what survives JSON: exactly what
    // the guest would get, and always cloneable.
    const prepared = prepareRun(code, { ...options, ts: false });
    if (!prepared.ok) return prepared.result;
    const { limits, configJson } = prepared.run;
    const { globals, stdin } = JSON.parse(configJson) as { globals: Record<string, JsonValue>; stdin: string };
    const sent: RunOptions = { ...limits, ts: options.ts === true, globals, stdin };
    return this.limiter.run(async () => {
      if (this.disposed) throw new Error("sandbox is disposed");
      const thread = this.acquire();
      try {
        try {
          await thread.ready;
        } catch (err) {
          return errorResult("SandboxError", `could not start a QuickJS thread: ${(err as Error).message}`, 0);
        }
        const result = await thread.run(code, sent, limits.timeoutMs, this.slackMs);
        if (thread.dead) this.killed++;
        return result;
      } finally {
        this.release(thread);
      }
    });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.idle.length = 0;
    for (const t of this.all) t.kill();
    this.all.clear();
  }

  private acquire(): QuickJSThread {
    for (let t = this.idle.pop(); t; t = this.idle.pop()) {
      if (!t.dead) return t;
      this.all.delete(t); // died while idle
    }
    return this.acquireFresh();
  }

  private release(t: QuickJSThread): void {
    if (t.dead || this.disposed) {
      this.all.delete(t);
      t.kill();
      // Replace a killed thread right away, so the next run does not pay its start-up.
      if (!this.disposed && this.idle.length === 0) this.idle.push(this.acquireFresh());
    } else this.idle.push(t);
  }

  private acquireFresh(): QuickJSThread {
    const fresh = new QuickJSThread();
    this.all.add(fresh);
    return fresh;
  }
}

export function createQuickJSThreadSandbox(options: QuickJSThreadSandboxOptions = {}): QuickJSThreadSandbox {
  return new QuickJSThreadSandbox(options);
}
