/**
 * The ways to give every JavaScript run on Node a state no earlier guest touched, against what the
 * server did before (isolated-vm, a host process reused for one client's runs), interleaved in
 * rounds in one process so the machine's load is shared alike: the QuickJS zygote (a process
 * forked per run, the default now) and isolated-vm with single-use hosts (affinity "run": a host
 * serves one run and is killed, spares started ahead). One client, the bench snippet, 1 and 2 at
 * a time on 2 slots; ratios against the reused isolated-vm hosts of the same round.
 *
 *   npm run bench -- js-fresh   (BENCH_ROUNDS, BENCH_SANDBOX_RUNS, BENCH_SANDBOX_KEYED_RUNS)
 */
import type { HostAffinity, HostPoolSandbox } from "../src/sandbox/host/host-pool.ts";
import { createIsolatedVmProcessSandbox } from "../src/sandbox/engines/isolated-vm/isolated-vm-process.ts";
import { createQuickJSProcessSandbox } from "../src/sandbox/engines/quickjs/quickjs-process.ts";
import { measure, SNIPPET, type Row } from "./sandbox.ts";
import { fmt } from "./server.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const RUNS = Number(process.env.BENCH_SANDBOX_RUNS ?? 1000);
/** Single-use hosts start a Node process per run: fewer runs. */
const FRESH_HOST_RUNS = Number(process.env.BENCH_SANDBOX_KEYED_RUNS ?? 40);
const SLOTS = 2;

interface Way {
  name: string;
  runs: number;
  make(): HostPoolSandbox;
}

const WAYS: Way[] = [
  { name: "isolated-vm, a host reused for the client (affinity client: the old default)", runs: RUNS, make: () => ivm("client") },
  { name: "QuickJS zygote, a process forked per run (the default)", runs: RUNS, make: () => createQuickJSProcessSandbox({ maxConcurrency: SLOTS, affinity: "client" }) },
  { name: "isolated-vm, single-use hosts (affinity run)", runs: FRESH_HOST_RUNS, make: () => ivm("run") },
];

function ivm(affinity: HostAffinity): HostPoolSandbox {
  return createIsolatedVmProcessSandbox({ maxConcurrency: SLOTS, affinity });
}

async function rows(way: Way): Promise<Row[]> {
  const sandbox = way.make();
  await sandbox.warm(SLOTS + 1);
  const once = async () => {
    const r = await sandbox.run(SNIPPET, { client: "trainer", queueKey: "episode" });
    if (!r.ok || r.result !== 500500) throw new Error(`unexpected result ${JSON.stringify(r)}`);
  };
  try {
    return [await measure(`${way.name}, 1 at a time`, way.runs, once), await measure(`${way.name}, ${SLOTS} concurrent`, way.runs, once, SLOTS)];
  } finally {
    await sandbox.dispose();
  }
}

export async function benchJsFresh(): Promise<void> {
  console.log(`\n## JavaScript on Node: a fresh state per run (${ROUNDS} rounds; ${RUNS} runs a row, ${FRESH_HOST_RUNS} with single-use hosts)`);
  console.log("| round | way | runs/s | p50 ms | runs/s vs reused isolated-vm | p50 vs reused isolated-vm |");
  console.log("| ---: | --- | ---: | ---: | ---: | ---: |");
  for (let round = 1; round <= ROUNDS; round++) {
    const measured = [];
    for (const way of WAYS) measured.push(await rows(way));
    const [base] = measured;
    for (const way of measured) {
      way.forEach((r, i) => {
        const b = base![i]!;
        console.log(`| ${round} | ${r.name} | ${fmt(r.runsPerSec)} | ${fmt(r.p50Ms, 2)} | ${(r.runsPerSec / b.runsPerSec).toFixed(3)}x | ${(r.p50Ms / b.p50Ms).toFixed(1)}x |`);
      });
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchJsFresh();
