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
