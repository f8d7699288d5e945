/**
 * The clock a run's time limit is measured on (Node, Linux): wall time minus the time the run's
 * thread spent runnable but waiting for a CPU (the scheduler's `run_delay`, second field of
 * /proc/<pid>/schedstat).
 *
 * Why: on a busy machine (a trainer's own processes beside the server, a second test run) a host
 * waits for a CPU much of the time, and a wall-clock limit then ends correct programs as
 * TimeoutError, or a memory bomb as a timeout instead of out-of-memory: rewards that depend on the
 * machine's load, not on the program. On this clock a run gets its time limit of running (or of
 * blocking by itself: a guest waiting on nothing still times out on time), whatever the load.
 * Used by the Python host's timer (zygote/python/zygote.py reads its children's), the QuickJS host's deadline (deadline.ts)
 * and the pool's watchdog and start-up limit (host-pool.ts, reading the host's main thread from
 * the server). isolated-vm's own time limit is its wall clock (it cannot be moved once set).
 *
 * Bounded: a run's wall time may stretch to at most `stretchCapMs(timeoutMs)` (deadline.ts), so a
 * machine too busy to give a run its time still ends it, and slots are not held without end.
 *
 * Not to the millisecond: the kernel adds a wait for a CPU to `run_delay` when the thread runs
 * again, so a wait under way when the deadline is checked is not counted yet, and a run may be
 * stopped up to one such wait early.
 *
 * Where /proc/<pid>/schedstat cannot be read (not Linux, a kernel without schedstats), the probe
 * reads 0 and the clock is the wall clock, as before.
 */
import type { DelayProbe } from "./deadline.ts";
import { procFile } from "./proc-file.ts";

const NO_DELAY: DelayProbe = Object.assign(() => 0, { close() {} });

/** The calling thread's scheduler statistics: what a confined host may read (confine.ts). */
export const RUN_DELAY_FILE = "/proc/thread-self/schedstat";

/**
 * A probe of one thread's run delay: a path (`RUN_DELAY_FILE`: the calling thread;
 * `/proc/<pid>/schedstat`: that process's main thread) or a descriptor of such a file opened by
 * the thread to probe (another thread of the process reads it so). The file stays open and is
 * re-read at offset 0 (~3.5 µs a read).
 */
export function delayProbe(file: string | number = RUN_DELAY_FILE): DelayProbe {
  const schedstat = procFile(file);
  if (!schedstat) return NO_DELAY;
  let last = 0;
  let lastRan = 0;
  const read = () => {
    // The process gone (or the probe closed): its figures stay what they were.
    const [ran, delay] = schedstat.fields() ?? [];
    if (Number.isFinite(delay)) last = Math.max(last, delay! / 1e6);
    if (Number.isFinite(ran)) lastRan = Math.max(lastRan, ran! / 1e6);
  };
  const probe = () => {
    read();
    return last;
  };
  return Object.assign(probe, {
    ran() {
      read();
      return lastRan;
    },
    close: () => schedstat.close(),
  });
}


