/**
 * What dedicating sandbox hosts to clients costs (ENVWORKER_SANDBOX_AFFINITY; src/sandbox/README.md
 * "The residual"), per engine, as ratios against hosts that serve anyone (`off`) measured in the
 * same process: runs spread over 1 client, 2 clients and 8 clients in turn (run i is client
 * i mod n), 2 at a time, on a pool of 2 hosts (3 with affinity: one started ahead). With more
 * clients than hosts, nearly every run waits for a host start-up: that row runs fewer times.
 * The `off` baseline is measured before and after the affinity rows; the ratio uses their mean.
 *
 *   npm run bench -- affinity      (BENCH_AFFINITY_RUNS, BENCH_AFFINITY_CHURN_RUNS)
 */
import type { HostAffinity, HostPoolSandbox } from "../src/sandbox/host/host-pool.ts";
import { createIsolatedVmProcessSandbox } from "../src/sandbox/engines/isolated-vm/isolated-vm-process.ts";
import { createPythonSandbox } from "../src/sandbox/engines/python/python.ts";
import { createQuickJSProcessSandbox } from "../src/sandbox/engines/quickjs/quickjs-process.ts";
import { measure, SNIPPET, type Row } from "./sandbox.ts";
import { fmt } from "./server.ts";

const RUNS = Number(process.env.BENCH_AFFINITY_RUNS ?? 2000);
/** Runs of the rows where clients outnumber hosts (each run mostly a host start-up). */
const CHURN_RUNS = Number(process.env.BENCH_AFFINITY_CHURN_RUNS ?? 24);
const CONCURRENCY = 2;

interface Engine {
  name: string;
  make(affinity: HostAffinity): HostPoolSandbox;
  code: string;
  expected: unknown;
}

const ENGINES: Engine[] = [
  { name: "isolated-vm", make: (affinity) => createIsolatedVmProcessSandbox({ maxConcurrency: CONCURRENCY, affinity }), code: SNIPPET, expected: 500500 },
  { name: "QuickJS", make: (affinity) => createQuickJSProcessSandbox({ maxConcurrency: CONCURRENCY, affinity }), code: SNIPPET, expected: 500500 },
  {
    name: "Python",
    make: (affinity) => createPythonSandbox({ maxConcurrency: CONCURRENCY, affinity }),
    code: "s = 0\nfor i in range(1, 1001):\n    s += i\nprint('sum', s)\ns",
    expected: 500500,
  },
];

async function row(engine: Engine, affinity: HostAffinity, clients: number, runs: number): Promise<Row & { starts: number }> {
  const sandbox = engine.make(affinity);
  // Every host the pool may keep (with affinity: one more, the spare), so the rows measure the steady state.
  await sandbox.warm(CONCURRENCY + 1);
  let i = 0;
  const once = async () => {
    const n = i++;
    const client = `client-${n % clients}`;
    const r = await sandbox.run(engine.code, { client, queueKey: `${client}/episode-${n % (clients * 2)}`, timeoutMs: 10_000 });
    if (!r.ok || r.result !== engine.expected) throw new Error(`unexpected result ${JSON.stringify(r)}`);
  };
  const startedBefore = sandbox.started;
  const measured = await measure(`${engine.name}, affinity ${affinity}, ${clients} client${clients > 1 ? "s" : ""}`, runs, once, CONCURRENCY);
  const starts = sandbox.started - startedBefore;
  await sandbox.dispose();
  return { ...measured, starts };
}

export async function benchAffinity(): Promise<void> {
  console.log(`\n## Sandbox affinity (${CONCURRENCY} hosts, ${CONCURRENCY} runs at a time; ${RUNS} runs a row, ${CHURN_RUNS} with 8 clients)`);
  console.log("| engine, affinity, clients | runs/s | p50 ms | runs/s vs off | p50 vs off | host start-ups |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const engine of ENGINES) {
    const before = await row(engine, "off", 8, RUNS);
    const rows = [await row(engine, "client", 1, RUNS), await row(engine, "client", 2, RUNS), await row(engine, "client", 8, CHURN_RUNS)];
    const after = await row(engine, "off", 8, RUNS);
    const base = { runsPerSec: (before.runsPerSec + after.runsPerSec) / 2, p50Ms: (before.p50Ms + after.p50Ms) / 2 };
    for (const r of [before, ...rows, after]) {
      console.log(`| ${r.name} | ${fmt(r.runsPerSec)} | ${fmt(r.p50Ms, 2)} | ${(r.runsPerSec / base.runsPerSec).toFixed(2)}x | ${(r.p50Ms / base.p50Ms).toFixed(2)}x | ${r.starts} |`);
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchAffinity();
