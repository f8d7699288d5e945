/**
 * The python sandbox against what a user would otherwise write: spawning `python3 -c` per run,
 * measured in the same process on the same machine. The task is a small function test (define a
 * function, assert on it, return a value), the shape of most code rewards.
 *
 *   node --no-node-snapshot --import tsx bench/python.ts     (or: npm run bench -- python)
 *
 * Prints warm latency p50/p99 (one run at a time), runs/s sequentially and with the pool
 * (one interpreter per CPU), RSS per warm interpreter, and the ratios against python3 -c.
 */
import { execFile } from "node:child_process";
import { availableParallelism } from "node:os";
import { promisify } from "node:util";
import { createPythonSandbox } from "../src/sandbox/python.ts";
import { fmt } from "./server.ts";

const TASK = "def f(x):\n    return x * 2\nassert f(2) == 4\nassert f(-1) == -2\nf(21)";
const RUNS = Number(process.env.BENCH_PYTHON_RUNS ?? 1000);
const SPAWNS = Number(process.env.BENCH_PYTHON_SPAWNS ?? 40);

const execFileAsync = promisify(execFile);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

async function throughput(runs: number, concurrency: number, once: () => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < runs) await once();
    }),
  );
  return runs / ((performance.now() - started) / 1000);
}

export async function benchPython(): Promise<void> {
  const cpus = availableParallelism();
  console.log(`\n## Python sandbox (a small function test; ${RUNS} sandbox runs, ${SPAWNS} python3 -c spawns; ${cpus} CPUs)`);

  const spawnOnce = async () => {
    const { stdout } = await execFileAsync("python3", ["-c", `${TASK.replace(/\nf\(21\)$/, "")}\nprint(f(21))`], { timeout: 10_000 });
    if (stdout.trim() !== "42") throw new Error(`unexpected output ${stdout}`);
  };
  let spawnAvailable = true;
  try {
    await spawnOnce();
  } catch {
    spawnAvailable = false;
  }
  const spawnLatencies: number[] = [];
  if (spawnAvailable) {
    for (let i = 0; i < SPAWNS; i++) {
      const t = performance.now();
      await spawnOnce();
      spawnLatencies.push(performance.now() - t);
    }
  }
  const spawnSeq = spawnAvailable ? 1000 / (spawnLatencies.reduce((a, b) => a + b, 0) / spawnLatencies.length) : NaN;
  const spawnPar = spawnAvailable ? await throughput(SPAWNS, cpus, spawnOnce) : NaN;

  const rssBefore = process.memoryUsage().rss;
  const sandbox = createPythonSandbox({ maxConcurrency: cpus });
  const t0 = performance.now();
  await sandbox.warm();
  const warmMs = performance.now() - t0;
  // The interpreters are child processes: their RSS as they report it, plus what this process grew by.
  const rssPerInterpreter = (sandbox.memoryBytes() + process.memoryUsage().rss - rssBefore) / cpus;
  const once = async () => {
    const r = await sandbox.run(TASK);
    if (!r.ok || r.result !== 42) throw new Error(`unexpected result ${JSON.stringify(r)}`);
  };
  for (let i = 0; i < 50; i++) await once();
  const latencies: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await once();
    latencies.push(performance.now() - t);
  }
  latencies.sort((a, b) => a - b);
  const seq = 1000 / (latencies.reduce((a, b) => a + b, 0) / latencies.length);
  const par = await throughput(RUNS, cpus, once);
  await sandbox.dispose();
  // Interpreters dedicated to a queue key (README "The residual"), every run from a new key: each
  // run needs a fresh interpreter, so this is the rate at which they start.
  const keyed = createPythonSandbox({ maxConcurrency: cpus, affinity: "episode" });
  await keyed.warm(1);
  let key = 0;
  const keyedRuns = Number(process.env.BENCH_PYTHON_KEYED_RUNS ?? 10);
  // A fresh interpreter's first run can overrun its limit while the spare starts beside it on a
  // loaded machine (and its wasm is not yet optimised): counted, not fatal.
  let keyedFailed = 0;
  const keyedPar = await throughput(keyedRuns, cpus, async () => {
    const r = await keyed.run(TASK, { queueKey: `k${key++}` });
    if (!r.ok || r.result !== 42) keyedFailed++;
  });
  await keyed.dispose();
  spawnLatencies.sort((a, b) => a - b);

  console.log(`start-up of ${cpus} interpreters: ${fmt(warmMs)} ms; RSS per warm interpreter: ${fmt(rssPerInterpreter / 2 ** 20)} MiB`);
  console.log("| | p50 ms | p99 ms | runs/s (1 at a time) | runs/s (" + cpus + " at a time) |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  if (spawnAvailable) console.log(`| python3 -c per run | ${fmt(percentile(spawnLatencies, 50), 2)} | ${fmt(percentile(spawnLatencies, 99), 2)} | ${fmt(spawnSeq)} | ${fmt(spawnPar)} |`);
  console.log(`| python sandbox (warm pool) | ${fmt(percentile(latencies, 50), 2)} | ${fmt(percentile(latencies, 99), 2)} | ${fmt(seq)} | ${fmt(par)} |`);
  console.log(`| python sandbox, affinity, a new key every run (${keyedRuns - keyedFailed} of ${keyedRuns} ok) | | | | ${fmt(keyedPar, 2)} |`);
  if (spawnAvailable) console.log(`ratio (sandbox / python3 -c): ${(seq / spawnSeq).toFixed(1)}x one at a time, ${(par / spawnPar).toFixed(1)}x with ${cpus} at a time`);
  else console.log("python3 not found: no spawn baseline");
}

if (import.meta.url === `file://${process.argv[1]}`) await benchPython();
