/**
 * What dedicating sandbox hosts to an EPISODE costs against dedicating them to a CLIENT (the
 * zygotes' default; on isolated-vm an operator's opt-in, the default being a host per run:
 * bench/js-fresh.ts; ENVWORKER_SANDBOX_AFFINITY, src/sandbox/README.md "The residual"), for the engines whose
 * hosts are cheap enough to consider it (isolated-vm, QuickJS: a host start-up is ~0.5 s). A
 * trainer's pattern: one client plays episodes two at a time, each episode `RUNS_PER_EPISODE` runs
 * one after another (tool calls, a code reward), on a pool of 2 hosts (3 with affinity: one
 * started ahead). Per row: runs/s over all episodes, and an episode's start latency (from its
 * start to its first run's answer: with episode affinity, usually a host start-up). Rows take
 * turns (client, episode, client, episode) and each ratio is episode over the mean of the client
 * rows around it, in one process.
 *
 *   npm run bench -- affinity-episode   (BENCH_EPISODES, BENCH_RUNS_PER_EPISODE)
 */
import type { HostAffinity, HostPoolSandbox } from "../src/sandbox/host/host-pool.ts";
import { createIsolatedVmProcessSandbox } from "../src/sandbox/engines/isolated-vm/isolated-vm-process.ts";
import { createQuickJSProcessSandbox } from "../src/sandbox/engines/quickjs/quickjs-process.ts";
import { SNIPPET } from "./sandbox.ts";
import { fmt, percentile } from "./server.ts";

const EPISODES = Number(process.env.BENCH_EPISODES ?? 40);
const RUNS_PER_EPISODE = Number(process.env.BENCH_RUNS_PER_EPISODE ?? 4);
const CONCURRENCY = 2;

interface Engine {
  name: string;
  make(affinity: HostAffinity): HostPoolSandbox;
}

const ENGINES: Engine[] = [
  { name: "isolated-vm", make: (affinity) => createIsolatedVmProcessSandbox({ maxConcurrency: CONCURRENCY, affinity }) },
  { name: "QuickJS", make: (affinity) => createQuickJSProcessSandbox({ maxConcurrency: CONCURRENCY, affinity }) },
];

interface EpisodeRow {
  name: string;
  runsPerSec: number;
  /** Start to first answer of an episode, ms: median and 90th percentile. */
  startP50: number;
  startP90: number;
  /** Host start-ups during the row. */
  starts: number;
}


async function row(engine: Engine, affinity: HostAffinity, runsPerEpisode: number): Promise<EpisodeRow> {
  const sandbox = engine.make(affinity);
  await sandbox.warm(CONCURRENCY + 1);
  const run = async (episode: number) => {
    const r = await sandbox.run(SNIPPET, { client: "trainer", queueKey: `episode-${episode}`, timeoutMs: 30_000 });
    if (!r.ok || r.result !== 500500) throw new Error(`unexpected result ${JSON.stringify(r)}`);
  };
  // Warm-up outside the measure: JIT and pools, in episodes of their own.
  for (let e = 0; e < 4; e++) for (let i = 0; i < runsPerEpisode; i++) await run(-1 - e);
  const startedBefore = sandbox.started;
  const firstAnswers: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let e = next++; e < EPISODES; e = next++) {
        const begun = performance.now();
        await run(e);
        firstAnswers.push(performance.now() - begun);
        for (let i = 1; i < runsPerEpisode; i++) await run(e);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const starts = sandbox.started - startedBefore;
  await sandbox.dispose();
  firstAnswers.sort((a, b) => a - b);
  return {
    name: `${engine.name}, affinity ${affinity}, ${runsPerEpisode} run${runsPerEpisode > 1 ? "s" : ""} an episode`,
    runsPerSec: (EPISODES * runsPerEpisode) / seconds,
    startP50: percentile(firstAnswers, 50),
    startP90: percentile(firstAnswers, 90),
    starts,
  };
}

export async function benchAffinityEpisode(): Promise<void> {
  console.log(`\n## Sandbox affinity per episode vs per client (${CONCURRENCY} hosts, ${CONCURRENCY} episodes at a time, ${EPISODES} episodes a row, one client)`);
  console.log("| engine, affinity, runs an episode | runs/s | episode start p50 ms | p90 ms | runs/s vs client | start p50 vs client | host start-ups |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const engine of ENGINES) {
    for (const runsPerEpisode of [RUNS_PER_EPISODE, 1]) {
      const c1 = await row(engine, "client", runsPerEpisode);
      const e1 = await row(engine, "episode", runsPerEpisode);
      const c2 = await row(engine, "client", runsPerEpisode);
      const e2 = await row(engine, "episode", runsPerEpisode);
      const c3 = await row(engine, "client", runsPerEpisode);
      // Each episode row against the mean of the client rows before and after it.
      const ratios = [
        [e1, c1, c2],
        [e2, c2, c3],
      ] as const;
      for (const r of [c1, c2, c3]) console.log(`| ${r.name} | ${fmt(r.runsPerSec)} | ${fmt(r.startP50, 1)} | ${fmt(r.startP90, 1)} | | | ${r.starts} |`);
      for (const [e, a, b] of ratios) {
        const runs = e.runsPerSec / ((a.runsPerSec + b.runsPerSec) / 2);
        const start = e.startP50 / ((a.startP50 + b.startP50) / 2);
        console.log(`| ${e.name} | ${fmt(e.runsPerSec)} | ${fmt(e.startP50, 1)} | ${fmt(e.startP90, 1)} | ${runs.toFixed(2)}x | ${start.toFixed(1)}x | ${e.starts} |`);
      }
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchAffinityEpisode();
