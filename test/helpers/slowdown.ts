/**
 * How loaded the machine is, as this process sees it: the wall time a fixed amount of CPU work
 * takes, per unit of CPU time. 1 on an idle machine; about 2 when two processes want each core
 * (load 4 on 2 cores); more under heavier load.
 *
 * Bounds on time are stated for an idle machine ("served within 1 s") and scaled by this factor,
 * measured in the same run, so a busy machine does not fail them and an idle one holds them to
 * the letter. It measures the scheduler, not the code under test: a server that blocks its event
 * loop does not slow this process down.
 */
export function cpuSlowdown(cpuMs = 50): number {
  const wall0 = performance.now();
  const cpu0 = process.cpuUsage();
  let cpuUs = 0;
  while (cpuUs < cpuMs * 1000) {
    for (let i = 0; i < 10_000; i++) {
      // spin: the CPU work being timed
    }
    const d = process.cpuUsage(cpu0);
    cpuUs = d.user + d.system;
  }
  return Math.max(1, (performance.now() - wall0) / (cpuUs / 1000));
}

/** The median of `values` (not empty). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Reads the load (cpuSlowdown of `cpuMs`) every `everyMs` while something is under way, starting
 * `afterMs` from now: a read after the fact misses the machine's other work where it came and went
 * (a second copy of the suite, a neighbour's busy loops). `stop()` ends the reads and returns them.
 * With `afterMs` at an idle bound, what finishes within it costs no read at all.
 */
export function loadDuring(opts: { afterMs?: number; everyMs: number; cpuMs?: number }): { stop(): number[] } {
  const reads: number[] = [];
  let every: ReturnType<typeof setInterval> | undefined;
  const start = setTimeout(() => {
    reads.push(cpuSlowdown(opts.cpuMs ?? 20));
    every = setInterval(() => reads.push(cpuSlowdown(opts.cpuMs ?? 20)), opts.everyMs);
  }, opts.afterMs ?? 0);
  return {
    stop() {
      clearTimeout(start);
      clearInterval(every);
      return reads;
    },
  };
}
