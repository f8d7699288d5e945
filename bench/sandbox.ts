/**
 * Runs per second and median latency of each sandbox backend on a small snippet (a loop summing
 * 1..1000 and a console.log), against two baselines measured in the same run:
 *
 * - what a user would otherwise write: spawning `node -e` per execution;
 * - isolated-vm in the server's own process (the old default, which a V8 fatal error in a guest
 *   takes down with the server), to show what running it in supervised child processes costs.
 *
 * Sequential rows (one run at a time) show the cost of one execution; the concurrent rows show a
 * pool using every CPU. The memory table shows what each Node backend holds when idle after the
 * runs: this process's RSS growth plus the RSS of its child processes (as they last reported it).
 * The "affinity" rows give every run a new queue key, with hosts dedicated to a key: the rate at
 * which confined hosts start.
 *
 *   npm run bench -- sandbox      (node --no-node-snapshot --import tsx bench/run.ts sandbox)
 */
import { execFile } from "node:child_process";
import { availableParallelism } from "node:os";
import { promisify } from "node:util";
import type { HostAffinity, HostPoolSandbox } from "../src/sandbox/host/host-pool.ts";
import { createIsolatedVmProcessSandbox } from "../src/sandbox/engines/isolated-vm/isolated-vm-process.ts";
import { createIsolatedVmSandbox } from "../src/sandbox/engines/isolated-vm/isolated-vm.ts";
import { createQuickJSProcessSandbox } from "../src/sandbox/engines/quickjs/quickjs-process.ts";
import { createQuickJSSandbox } from "../src/sandbox/engines/quickjs/quickjs.ts";
import type { Sandbox } from "../src/sandbox/types.ts";
import { fmt } from "./server.ts";

export const SNIPPET = "let s = 0; for (let i = 1; i <= 1000; i++) s += i; console.log('sum', s); s";
const ITERATIONS = Number(process.env.BENCH_SANDBOX_RUNS ?? 2000);
const NODE_ITERATIONS = Number(process.env.BENCH_SANDBOX_NODE_RUNS ?? 20);
/** Runs of the affinity rows: each needs a host of its own (a start-up). */
const KEYED_ITERATIONS = Number(process.env.BENCH_SANDBOX_KEYED_RUNS ?? 30);
const MiB = 1024 * 1024;

export interface Row {
  name: string;
  runsPerSec: number;
  /** Median latency of one run as its caller sees it (queueing included). */
  p50Ms: number;
}

export async function measure(name: string, iterations: number, once: () => Promise<void>, concurrency = 1): Promise<Row> {
  for (let i = 0; i < Math.min(20, iterations); i++) await once(); // warm-up: JIT, pools, threads
  let next = 0;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < iterations) {
        const t = performance.now();
        await once();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { name, runsPerSec: iterations / seconds, p50Ms: latencies[Math.floor(latencies.length / 2)]! };
}

function sandboxRun(sandbox: Sandbox, key?: () => string): () => Promise<void> {
  return async () => {
    const r = await sandbox.run(SNIPPET, key ? { queueKey: key(), client: "trainer" } : {});
    if (!r.ok || r.result !== 500500 || r.stdout !== "sum 500500\n") throw new Error(`unexpected result ${JSON.stringify(r)}`);
  };
}

const execFileAsync = promisify(execFile);
async function nodeDashE(): Promise<void> {
  // What a user would write: a child process per execution, a timeout, stdout captured.
  const { stdout } = await execFileAsync(process.execPath, ["-e", `${SNIPPET.replace(/ s$/, "")}; console.log(JSON.stringify(s))`], {
    timeout: 5000,
    maxBuffer: 64 * 1024,
  });
  if (!stdout.endsWith("500500\n")) throw new Error(`unexpected output ${stdout}`);
}

interface MemoryRow {
  name: string;
  hosts: number;
  /** Growth of this process's RSS since the backend was created. */
  ownMiB: number;
  /** What the backend's threads/processes hold (RSS of a child; wasm memory of a QuickJS thread). */
  hostsMiB: number;
}

export async function benchSandbox(): Promise<void> {
  const cpus = availableParallelism();
  console.log(`\n## Sandbox (snippet: sum 1..1000 + console.log; ${ITERATIONS} runs per backend, ${NODE_ITERATIONS} for node -e)`);
  const rows: Row[] = [];
  const memory: MemoryRow[] = [];
  rows.push(await measure("node -e per execution (child_process.execFile)", NODE_ITERATIONS, nodeDashE));

  const quickjs = createQuickJSSandbox();
  rows.push(await measure("QuickJS in-process, fresh runtime per run (Workers)", ITERATIONS, sandboxRun(quickjs)));
  await quickjs.dispose();

  const pooled = async (name: string, make: (affinity: HostAffinity) => HostPoolSandbox, singleUse = false) => {
    const rssBefore = process.memoryUsage.rss();
    // One client's runs, hosts dedicated to it (what the server did by default for isolated-vm
    // until the per-run rule; for one client the same hosts as affinity "off").
    const sandbox = make("client");
    rows.push(await measure(`${name}, affinity client, 1 at a time`, ITERATIONS, sandboxRun(sandbox, () => "trainer")));
    rows.push(await measure(`${name}, affinity client, ${cpus} concurrent`, ITERATIONS, sandboxRun(sandbox, () => "trainer"), cpus));
    memory.push({ name, hosts: sandbox.hosts, ownMiB: (process.memoryUsage.rss() - rssBefore) / MiB, hostsMiB: sandbox.memoryBytes() / MiB });
    await sandbox.dispose();
    if (singleUse) {
      // Single-use hosts (affinity "run"): each run in a host that served no run before, killed
      // after it, fresh ones started ahead (one per slot). The rate at which hosts start, with the
      // start-up off the run's path while runs come slower than that.
      const fresh = make("run");
      await fresh.warm(cpus);
      rows.push(await measure(`${name}, affinity run (single-use hosts, spares ahead), 1 at a time`, KEYED_ITERATIONS, sandboxRun(fresh, () => "trainer")));
      rows.push(await measure(`${name}, affinity run (single-use hosts, spares ahead), ${cpus} concurrent`, KEYED_ITERATIONS, sandboxRun(fresh, () => "trainer"), cpus));
      await fresh.dispose();
    }
    // Hosts dedicated to a queue key (README "The residual"), every run from a new key: each run
    // needs a fresh host, so this is the rate at which hosts start.
    const keyed = make("episode");
    let key = 0;
    rows.push(await measure(`${name}, affinity, a new key every run, ${cpus} concurrent`, KEYED_ITERATIONS, sandboxRun(keyed, () => `k${key++}`), cpus));
    await keyed.dispose();
  };
  await pooled("QuickJS zygote, a forked process per run (Node default)", (affinity) => createQuickJSProcessSandbox({ affinity }));
  const rssBefore = process.memoryUsage.rss();
  const inProcess = createIsolatedVmSandbox();
  const baselineAt = rows.length;
  rows.push(await measure("isolated-vm in this process (baseline; not used by the server), 1 at a time", ITERATIONS, sandboxRun(inProcess)));
  rows.push(await measure(`isolated-vm in this process (baseline), ${cpus} concurrent`, ITERATIONS, sandboxRun(inProcess), cpus));
  memory.push({ name: "isolated-vm in this process", hosts: 0, ownMiB: (process.memoryUsage.rss() - rssBefore) / MiB, hostsMiB: 0 });
  await inProcess.dispose();

  await pooled("isolated-vm in child processes (ENVWORKER_SANDBOX=isolated-vm)", (affinity) => createIsolatedVmProcessSandbox({ affinity }), true);

  const nodeE = rows[0]!;
  const sequentialBaseline = rows[baselineAt]!;
  const concurrentBaseline = rows[baselineAt + 1]!;
  console.log("| backend | runs/s | p50 ms | vs node -e | runs/s vs isolated-vm in-process | p50 vs isolated-vm in-process |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const r of rows) {
    const base = r.name.endsWith("concurrent") ? concurrentBaseline : sequentialBaseline;
    const vsIvm = r === nodeE ? "" : `${(r.runsPerSec / base.runsPerSec).toFixed(2)}x`;
    const p50 = r === nodeE ? "" : `${(r.p50Ms / base.p50Ms).toFixed(2)}x`;
    console.log(`| ${r.name} | ${fmt(r.runsPerSec)} | ${fmt(r.p50Ms, 2)} | ${(r.runsPerSec / nodeE.runsPerSec).toFixed(1)}x | ${vsIvm} | ${p50} |`);
  }
  console.log("\n| backend (idle, after its runs) | threads/processes | this process's RSS growth MiB | held by its threads/processes MiB |");
  console.log("| --- | ---: | ---: | ---: |");
  for (const m of memory) console.log(`| ${m.name} | ${m.hosts} | ${fmt(m.ownMiB)} | ${fmt(m.hostsMiB)} |`);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchSandbox();
