/**
 * Child-process entry of the python sandbox (python.ts; started confined, confine.ts): the
 * interpreter (python-worker.ts, imported below) runs on this process's main thread and serves one
 * run at a time from the server (host-protocol.ts over stdin/stdout). Its time limit is a SIGINT
 * written into Pyodide's interrupt buffer by a timer thread (python-timer.ts), which sleeps until a
 * run's deadline; what the interrupt cannot stop (a C-level loop) the server's watchdog ends by
 * killing this process.
 *
 * Why not the interpreter on a worker thread with this thread relaying (as first built): that is a
 * second hop per run, measured at 0.4-0.6x the runs/s of the old in-server threads; on the main
 * thread a run costs one pipe round trip (and rarely a wake-up of the timer).
 *
 * The answer is written as soon as the run is over, before the interpreter restores its snapshot
 * (python-worker.ts), so the restore is off the run's latency. A run blocks this thread: there is
 * no usage heartbeat; the interpreter's memory is bounded by the refused wasm growth, the process's
 * heap and address-space limits.
 */
import { openSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { childPort } from "./host-channel.ts";
import type { HostRequest } from "./host-protocol.ts";
import { link, onInterpreterAnswer, request } from "./python-link.ts";
import { resolveLimits } from "./options.ts";
import { timeoutError } from "./report.ts";
import { delayProbe, RUN_DELAY_FILE } from "./run-delay.ts";
import type { PythonWorkerMessage } from "./python-worker.ts";
import "./python-worker.ts";

const port = childPort();
const control = new Int32Array(new SharedArrayBuffer(24));
// The interpreter's (this thread's) wait for a CPU: the timer reads it through this descriptor at a
// deadline, and gives back to the run what it waited (run-delay.ts).
const delayFd = openSync(RUN_DELAY_FILE, "r");
const waited = delayProbe(delayFd);
// Deadlines are ms since this origin, on a clock both threads share.
const origin = Math.floor(performance.timeOrigin);
const now = () => Math.floor(performance.timeOrigin + performance.now() - origin);
// The host always runs bundled (confine.ts): the timer is the sibling entry of the same bundle.
const timerEntry = new URL("./python-timer.mjs", import.meta.url);
const timer = new Worker(timerEntry, { workerData: { control: control.buffer, interrupt: link.interrupt.buffer, origin, delayFd }, resourceLimits: { maxOldGenerationSizeMb: 16 } });
timer.unref();
timer.on("error", () => process.exit(1));

let heapBytes = 0;
let current: { id: number; timeoutMs: number; waited0: number } | undefined;
let fatal = false;

onInterpreterAnswer((message: PythonWorkerMessage) => {
  if (message.type === "failed-to-start") {
    process.stderr.write(`the interpreter failed to start: ${message.message}\n`);
    process.exit(1);
  }
  heapBytes = message.heapBytes;
  if (message.type === "ready") return;
  const run = current;
  current = undefined;
  Atomics.store(control, 0, 0);
  if (!run || message.id !== run.id) return;
  if (message.fatal) fatal = true;
  // This side's knowledge wins: a run it had to interrupt timed out, whatever it answered.
  const interrupted = Atomics.load(control, 2) === run.id;
  // elapsedMs on the run clock: without the time the interpreter waited for a CPU.
  const elapsedMs = Math.max(0, message.result.elapsedMs - (waited() - run.waited0));
  const result = interrupted ? { ...message.result, elapsedMs, ok: false, result: null, error: timeoutError({ timeoutMs: run.timeoutMs }) } : { ...message.result, elapsedMs };
  port.post({ type: "result", id: run.id, result, bytes: process.memoryUsage.rss(), engineBytes: heapBytes, ...(fatal ? { retire: true } : {}) });
});

port.onMessage((message: HostRequest) => {
  if (message.type !== "run") return; // a cancel arrives after its run is over (this thread was busy): nothing to stop
  const { id, code, options } = message;
  if (fatal) {
    const result = { ok: false, result: null, stdout: "", stderr: "", error: { name: "SandboxError", message: "the interpreter is no longer usable" }, elapsedMs: 0 };
    port.post({ type: "result", id, result, bytes: process.memoryUsage.rss(), engineBytes: heapBytes, retire: true });
    return;
  }
  const limits = resolveLimits(options);
  const waited0 = waited();
  current = { id, timeoutMs: limits.timeoutMs, waited0 };
  const deadline = now() + limits.timeoutMs;
  Atomics.store(control, 4, Math.floor(waited0));
  Atomics.store(control, 5, limits.timeoutMs);
  Atomics.store(control, 1, deadline);
  Atomics.store(control, 0, id);
  // Wake the timer only if it is idle or would wake after this deadline (python-timer.ts).
  const wake = Atomics.load(control, 3);
  if (wake === 0) Atomics.notify(control, 0);
  else if (deadline < wake) {
    Atomics.store(control, 3, deadline);
    Atomics.notify(control, 3);
  }
  request({ id, code, stdin: options.stdin ?? "", limits, globalsJson: JSON.stringify(options.globals ?? {}) });
});

port.post({ type: "ready", bytes: process.memoryUsage.rss(), engineBytes: heapBytes });
