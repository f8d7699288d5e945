/**
 * Child-process entry of the python sandbox (python.ts; started confined, confine.ts). The
 * interpreter itself runs on a worker thread of this process (python-worker.ts): its time limit is
 * a SIGINT written into a SharedArrayBuffer the interpreter polls, and someone must be free to write
 * it while Python runs. This process's main thread is that someone: it relays runs between the
 * server (host-protocol.ts over stdin/stdout) and the interpreter thread, interrupts a run at its
 * deadline (again every INTERRUPT_REPEAT_MS, for code that catches KeyboardInterrupt) or when the
 * server cancels it, and reports the process's RSS while a run is in flight. What the interrupt
 * cannot stop (a C-level loop) the server's watchdog ends by killing this process.
 */
import { Worker } from "node:worker_threads";
import { siblingModule } from "../node/ts-worker.ts";
import { childPort } from "./host-channel.ts";
import { serveRuns, type ServedSandbox } from "./host-protocol.ts";
import { resolveLimits } from "./options.ts";
import type { PythonWorkerMessage, PythonWorkerRequest } from "./python-worker.ts";
import { errorResult } from "./options.ts";
import { timeoutError } from "./report.ts";
import type { RunOptions, RunResult } from "./types.ts";

const INTERRUPT_REPEAT_MS = 50;
const SIGINT = 2;
const HEARTBEAT_MS = 20;
/** The JavaScript heap of the interpreter's thread (its output buffers); Python's memory is WebAssembly memory, limited per run. */
const THREAD_JS_HEAP_MB = 256;
/**
 * The thread's native stack, on which WebAssembly frames live. Python-to-Python calls use no C
 * stack, but C-level recursion (repr/json of deeply nested data, the parser) does; measured, with
 * the 4 MiB default it overflowed (a fatal error of the interpreter) before CPython's own C-stack
 * check fired, with 64 MiB CPython's check or the time limit ends such runs first.
 */
const THREAD_STACK_MB = 64;

const indexURL = process.argv[2];
if (!indexURL) throw new Error("python-host: Pyodide's directory is its first argument");
const port = childPort();
const interrupt = new Int32Array(new SharedArrayBuffer(4));
// Bundled (confined), the worker is a sibling `.mjs`; from source, the `.ts` beside this file.
const workerEntry = import.meta.url.endsWith(".mjs") ? new URL("./python-worker.mjs", import.meta.url) : siblingModule("python-worker", import.meta.url);
const worker = new Worker(workerEntry, {
  workerData: { interrupt: interrupt.buffer, indexURL },
  resourceLimits: { maxOldGenerationSizeMb: THREAD_JS_HEAP_MB, stackSizeMb: THREAD_STACK_MB },
});
// The interpreter's thread is gone (out of its heap, a crash): so is this host; the server sees it die.
worker.on("error", (err) => die(err.message));
worker.on("exit", (code) => die(`the interpreter's thread exited (${code})`));
function die(why: string): never {
  process.stderr.write(`${why}\n`);
  process.exit(1);
}

let heapBytes = 0;
let fatal = false;
let inFlight: { id: number; resolve: (r: RunResult) => void } | undefined;
let nextId = 1;

const ready = new Promise<void>((resolve, reject) => {
  worker.on("message", (msg: PythonWorkerMessage) => {
    if (msg.type === "ready") {
      heapBytes = msg.heapBytes;
      resolve();
    } else if (msg.type === "failed-to-start") reject(new Error(msg.message));
    else if (inFlight && msg.id === inFlight.id) {
      heapBytes = msg.heapBytes;
      if (msg.fatal) fatal = true;
      const done = inFlight.resolve;
      inFlight = undefined;
      done(msg.result);
    }
  });
});
await ready.catch((err: Error) => die(`the interpreter failed to start: ${err.message}`));

const python: ServedSandbox = {
  kind: "python",
  run(code: string, options: RunOptions = {}): Promise<RunResult> {
    const limits = resolveLimits(options);
    const id = nextId++;
    const started = performance.now();
    return new Promise<RunResult>((resolve) => {
      let interrupted = false;
      let repeat: ReturnType<typeof setInterval> | undefined;
      const poke = () => {
        if (inFlight?.id !== id) return;
        interrupted = true;
        Atomics.store(interrupt, 0, SIGINT);
      };
      const soft = setTimeout(() => {
        poke();
        repeat = setInterval(poke, INTERRUPT_REPEAT_MS);
      }, limits.timeoutMs);
      const onAbort = () => {
        // The server answered the caller already; stop the run so this host is free sooner.
        poke();
        repeat ??= setInterval(poke, INTERRUPT_REPEAT_MS);
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      inFlight = {
        id,
        resolve: (r) => {
          clearTimeout(soft);
          clearInterval(repeat);
          options.signal?.removeEventListener("abort", onAbort);
          // This side's knowledge wins: a run it had to interrupt timed out, whatever it answered.
          resolve(interrupted ? { ...r, ok: false, result: null, error: timeoutError({ timeoutMs: limits.timeoutMs }) } : r);
        },
      };
      if (fatal) {
        inFlight = undefined;
        resolve(errorResult("SandboxError", "the interpreter is no longer usable", performance.now() - started));
        return;
      }
      const request: PythonWorkerRequest = { id, code, stdin: options.stdin ?? "", limits, globalsJson: JSON.stringify(options.globals ?? {}) };
      worker.postMessage(request);
    });
  },
  retire: () => fatal,
  memoryBytes: () => heapBytes,
  dispose: async () => void (await worker.terminate()),
};

serveRuns(port, python, { usage: () => process.memoryUsage.rss(), engineUsage: () => heapBytes, heartbeatMs: HEARTBEAT_MS });
