/**
 * Worker-thread entry of a Python host (python-host.ts): the interpreter runs on the host's main
 * thread, so the time limit's interrupt is written from here. The two threads share `control`
 * (Int32, times in ms since `origin`):
 *   [0] the id of the run in flight (0: none)   [1] its deadline
 *   [2] the id of the last run interrupted      [3] when this thread will next wake (0: idle)
 *   [4] the main thread's wait for a CPU (ms) when the run started   [5] the run's time limit (ms)
 * At a deadline with its run still going, this thread writes SIGINT into Pyodide's interrupt buffer
 * (Python raises KeyboardInterrupt at the next bytecode boundary), again every INTERRUPT_REPEAT_MS
 * (code that catches the interrupt gets another one). The main thread wakes this one only when a
 * run's deadline is earlier than its next wake-up (or it is idle): back-to-back runs with the same
 * limit cost no wake-up each (measured: one per run cost throughput on a loaded 2-core machine).
 *
 * Limits are on the run clock (run-delay.ts): at a deadline, the time the interpreter's thread has
 * waited for a CPU since its run started is added to the run's time first (up to the stretch cap),
 * so on a busy machine a run is interrupted after its limit of running, not of waiting.
 */
import { workerData } from "node:worker_threads";
import { stretchCapMs } from "./deadline.ts";
import { delayProbe } from "./run-delay.ts";

const SIGINT = 2;
const INTERRUPT_REPEAT_MS = 50;

const { control, interrupt, origin, delayFd } = workerData as { control: SharedArrayBuffer; interrupt: SharedArrayBuffer; origin: number; delayFd: number };
/** The interpreter thread's wait for a CPU (its descriptor, opened by that thread). */
const waited = delayProbe(delayFd);
const ctl = new Int32Array(control);
const irq = new Int32Array(interrupt);
const now = () => Math.ceil(performance.timeOrigin + performance.now() - origin);

/** How long the interpreter must be seen running before its first interrupt (longer than a scheduler tick). */
const CONFIRM_MS = 20;
const pause = new Int32Array(new SharedArrayBuffer(4));

/** The run whose deadline was pushed back, and by how much (ms). */
let extendedRun = 0;
let extension = 0;

for (;;) {
  const id = Atomics.load(ctl, 0);
  if (id === 0) {
    Atomics.store(ctl, 3, 0);
    Atomics.wait(ctl, 0, 0);
    continue;
  }
  if (id !== extendedRun) {
    extendedRun = id;
    extension = 0;
  }
  const deadline = Atomics.load(ctl, 1);
  const t = now();
  if (t < deadline + extension) {
    Atomics.store(ctl, 3, deadline + extension);
    Atomics.wait(ctl, 3, deadline + extension, deadline + extension - t);
    continue;
  }
  // The wall clock passed the limit: first give back the time the interpreter waited for a CPU.
  const timeoutMs = Atomics.load(ctl, 5);
  const owed = Math.min(stretchCapMs(timeoutMs) - timeoutMs, Math.floor(waited() - Atomics.load(ctl, 4)));
  if (owed > extension && Atomics.load(ctl, 0) === id && Atomics.load(ctl, 2) !== id) {
    extension = owed;
    continue;
  }
  // A wait for a CPU still under way is not in run_delay yet (the kernel adds it when the thread
  // runs again): before the first interrupt, make sure the interpreter is running, not waiting.
  // (Where schedstat cannot be read the probe has no `ran`: the wall clock decides, as before.)
  if (waited.ran && Atomics.load(ctl, 2) !== id && extension < stretchCapMs(timeoutMs) - timeoutMs) {
    const ran0 = waited.ran();
    const t0 = now();
    Atomics.wait(pause, 0, 0, CONFIRM_MS);
    if (waited.ran() - ran0 < CONFIRM_MS / 4 && Atomics.load(ctl, 0) === id) {
      extension += now() - t0;
      continue;
    }
  }
  // Past the deadline and the same run still going (checked again just before the write).
  if (Atomics.load(ctl, 0) === id && Atomics.load(ctl, 1) === deadline) {
    Atomics.store(ctl, 2, id);
    Atomics.store(irq, 0, SIGINT);
  }
  const next = t + INTERRUPT_REPEAT_MS;
  Atomics.store(ctl, 3, next);
  Atomics.wait(ctl, 3, next, INTERRUPT_REPEAT_MS);
}
