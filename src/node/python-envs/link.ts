/**
 * A thread's line to the Python worker of one target (Node only). The process itself is owned by
 * an I/O thread of this one (io-thread.ts), so that this thread may wait for a call synchronously:
 * the TypeScript engine asks for examples (dataset, generate), system prompts and turn limits
 * synchronously (src/env/environment.ts), and an environment thread may block on them (the pool
 * moves its other calls while it does, see src/node/env-threads.ts); meanwhile the I/O thread keeps
 * serving the process's pipes and deadlines. respond, rewards and tools are asynchronous calls.
 *
 * A call's `sandbox.run` comes back here as a request: the thread runs it on the services the call
 * was made with (the server's sandboxes, queued fairly there), never in the Python worker.
 */
import { isMainThread, MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from "node:worker_threads";
import { z } from "zod";
import { ApiError } from "../../env/errors.ts";
import type { Services } from "../../env/services.ts";
import { callScopeOf, threadBlocked, waitingOutside } from "../call-waits.ts";
import { anySignal } from "../../sched/signals.ts";
import { siblingModule } from "../../wall/sibling-module.ts";
import { startWorker } from "../ts-worker.ts";
import type { RunOptions } from "../../sandbox/types.ts";
import { PySpecSchema, type CallFailure, type FromIo, type PySpec, type ToIo } from "./protocol.ts";
import { pythonSettings, type PythonSettings } from "./settings.ts";

/** The environment's own Python exception, with its traceback as the stack (the server logs it). */
export class PythonError extends Error {
  constructor(type: string, message: string, traceback: string) {
    super(message);
    this.name = type;
    this.stack = traceback || `${type}: ${message}`;
  }
}

const SandboxRequest = z.object({
  sid: z.number().int(),
  code: z.string(),
  lang: z.enum(["python", "javascript"]),
  options: z.object({ timeoutMs: z.number().positive().optional(), memoryMb: z.number().positive().optional(), stdin: z.string().optional() }).strict(),
});

/** How long the main thread's worker is kept without a call. */
const MAIN_THREAD_IDLE_MS = 30_000;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  services: Services | undefined;
  env: string;
  method: string;
}

export class PythonLink {
  private readonly worker: Worker;
  private readonly syncPort: MessagePort;
  private readonly asyncPort: MessagePort;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private readonly pending = new Map<number, Pending>();
  private readonly describing: { resolve: (s: PySpec[]) => void; reject: (e: Error) => void }[] = [];
  private nextId = 1;
  readonly settings: PythonSettings;

  constructor(readonly target: string, settings: PythonSettings = pythonSettings()) {
    this.settings = settings;
    const sync = new MessageChannel();
    const async = new MessageChannel();
    this.syncPort = sync.port1;
    this.asyncPort = async.port1;
    this.worker = startWorker(siblingModule("io-thread", import.meta.url), {
      // Its worker process's calls start at the server's priority; one that runs long yields (envworker/_call_fork.py).
      io: true,
      // The main thread's worker serves the loading (a handshake, the datasets' check) and little
      // after it (environment threads have their own): it is not kept idle.
      workerData: { target, settings, idleMs: isMainThread ? MAIN_THREAD_IDLE_MS : 0, syncPort: sync.port2, asyncPort: async.port2, flag: this.flag },
      transferList: [sync.port2, async.port2],
    });
    this.worker.on("error", (err) => this.broken(err));
    this.worker.on("exit", (code) => this.broken(new Error(`the I/O thread of the Python worker exited (${code})`)));
    this.worker.unref();
    this.asyncPort.on("message", (msg: FromIo) => this.receive(msg));
    this.asyncPort.unref();
  }

  /** The environments the worker's module exposes (starting the worker). */
  describe(): Promise<PySpec[]> {
    return new Promise<PySpec[]>((resolve, reject) => {
      this.describing.push({ resolve, reject });
      this.refresh();
      this.asyncPort.postMessage({ t: "describe" } satisfies ToIo);
    });
  }

  /** A call answered before this returns: the calling thread waits (see the top of this file). */
  callSync(env: string, method: string, params: Record<string, unknown>): unknown {
    const id = this.nextId++;
    Atomics.store(this.flag, 0, 0);
    this.asyncPort.postMessage({ t: "call", id, sync: true, method, params: { env, ...params } } satisfies ToIo);
    // The I/O thread always answers (a deadline, a crash, a failed start); this bound is for an I/O thread that died.
    const limit = this.settings.startTimeoutMs + 2 * this.settings.timeoutMs + 10_000;
    const end = performance.now() + limit;
    // The worker's start and the call have deadlines of their own (ENVWORKER_PYTHON_START_TIMEOUT_S,
    // ENVWORKER_PYTHON_TIMEOUT_S): the deadlines of this thread's calls stop meanwhile.
    const waited = threadBlocked();
    try {
      return this.waitSync(env, method, id, end);
    } finally {
      waited();
    }
  }

  /** Waits (blocking this thread) for sync call `id`'s answer until `end`. */
  private waitSync(env: string, method: string, id: number, end: number): unknown {
    for (;;) {
      const got = receiveMessageOnPort(this.syncPort);
      if (got) {
        const msg = got.message as FromIo;
        if (msg.t === "done" && msg.id === id) return msg.value;
        if (msg.t === "failed" && msg.id === id) throw this.error(env, method, msg.failure);
        continue;
      }
      const left = end - performance.now();
      if (left <= 0 || Atomics.wait(this.flag, 0, 0, left) === "timed-out") {
        throw new ApiError("EXECUTION_ERROR", `${env}: ${method}: the Python worker's I/O thread did not answer`, { reason: "TIMEOUT" });
      }
      Atomics.store(this.flag, 0, 0);
    }
  }

  /**
   * An asynchronous call; its `sandbox.run` requests run on `services`. It is queued with its
   * client's calls (the services' scope) and dropped when `signal` or the scope's signal fires.
   */
  call(env: string, method: string, params: Record<string, unknown>, services?: Services, signal?: AbortSignal): Promise<unknown> {
    const id = this.nextId++;
    const scope = callScopeOf(services);
    if (scope) signal = signal ? anySignal(signal, scope.signal) : scope.signal;
    // As callSync: the worker's deadlines bound this wait, not the environment call's.
    const waited = waitingOutside(services);
    return new Promise<unknown>((resolve, reject) => {
      this.pending.set(
        id,
        {
          resolve: (value) => (waited(), resolve(value)),
          reject: (e) => (waited(), reject(e)),
          services,
          env,
          method,
        },
      );
      this.refresh();
      if (signal?.aborted) return this.abandoned(id, signal, waited, reject);
      this.asyncPort.postMessage({ t: "call", id, sync: false, method, params: { env, ...params }, client: scope?.client } satisfies ToIo);
      signal?.addEventListener(
        "abort",
        () => {
          if (!this.pending.has(id)) return;
          this.asyncPort.postMessage({ t: "forget", id } satisfies ToIo);
          this.abandoned(id, signal, waited, reject);
        },
        { once: true },
      );
    });
  }

  private abandoned(id: number, signal: AbortSignal, waited: () => void, reject: (e: Error) => void): void {
    this.pending.delete(id);
    this.refresh();
    waited();
    reject(signal.reason instanceof Error ? signal.reason : new Error("the call was abandoned"));
  }

  /** Stops the worker process and its I/O thread. */
  async close(): Promise<void> {
    this.asyncPort.postMessage({ t: "stop" } satisfies ToIo);
    await this.worker.terminate().catch(() => {});
  }

  /** The port keeps this process alive only while something waits for the worker. */
  private refresh(): void {
    if (this.pending.size > 0 || this.describing.length > 0) this.asyncPort.ref();
    else this.asyncPort.unref();
  }

  private error(env: string, method: string, f: CallFailure): Error {
    // Args the schema accepts that the args class's __post_init__ refuses: the client's input.
    if (f.reason === "ERROR" && f.type === "ArgsError") return new ApiError("VALIDATION_ERROR", `invalid args for ${env}: ${f.message}`);
    if (f.reason === "ERROR") return new PythonError(f.type, f.message, f.traceback);
    return new ApiError("EXECUTION_ERROR", `${env}: ${method}: ${f.message}`, { reason: f.reason });
  }

  private broken(err: Error): void {
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.reject(new ApiError("EXECUTION_ERROR", `${p.env}: ${p.method}: ${err.message}`, { reason: "CRASHED" }));
    }
    for (const d of this.describing.splice(0)) d.reject(err);
    this.refresh();
  }

  private receive(msg: FromIo): void {
    switch (msg.t) {
      case "described": {
        const parsed = z.array(PySpecSchema).safeParse(msg.envs);
        for (const d of this.describing.splice(0)) {
          if (parsed.success) d.resolve(parsed.data);
          else d.reject(new Error(`the Python worker described its environments wrongly: ${parsed.error.message}`));
        }
        break;
      }
      case "describe-failed":
        for (const d of this.describing.splice(0)) d.reject(new Error(msg.message));
        break;
      case "done":
      case "failed": {
        const p = this.pending.get(msg.id);
        if (!p) return;
        this.pending.delete(msg.id);
        if (msg.t === "done") p.resolve(msg.value);
        else p.reject(this.error(p.env, p.method, msg.failure));
        break;
      }
      case "sandbox":
        void this.runSandbox(msg);
        return;
    }
    this.refresh();
  }

  private async runSandbox(msg: Extract<FromIo, { t: "sandbox" }>): Promise<void> {
    const p = this.pending.get(msg.id);
    const sid = typeof msg.sid === "number" ? msg.sid : -1;
    const refuse = (message: string) => this.asyncPort.postMessage({ t: "sandbox-error", id: msg.id, sid, message } satisfies ToIo);
    if (!p) return refuse("the call was abandoned");
    const req = SandboxRequest.safeParse(msg);
    if (!req.success) return refuse(`a bad sandbox request: ${req.error.issues.map((i) => i.message).join("; ")}`);
    const { code, lang, options } = req.data;
    const sandbox = lang === "python" ? p.services?.python : p.services?.sandbox;
    if (!sandbox) return refuse(lang === "python" ? "this server has no Python sandbox" : "no code sandbox was given to this call");
    const run: RunOptions = { ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}), ...(options.memoryMb ? { memoryMb: options.memoryMb } : {}), ...(options.stdin !== undefined ? { stdin: options.stdin } : {}) };
    try {
      const result = await sandbox.run(code, run);
      this.asyncPort.postMessage({ t: "sandbox-result", id: msg.id, sid, result } satisfies ToIo);
    } catch (err) {
      refuse(err instanceof Error ? err.message : String(err));
    }
  }
}

/** One link per target per thread: the environments of a module share their worker. */
const links = new Map<string, PythonLink>();
export function linkFor(target: string): PythonLink {
  let link = links.get(target);
  if (!link) links.set(target, (link = new PythonLink(target)));
  return link;
}
