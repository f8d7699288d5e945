/**
 * The python sandbox's ways of giving every run a state no earlier run touched, measured as ratios
 * in one run of this file (blocks of runs of each option take turns, so all see the same load on a
 * shared, noisy machine):
 *
 * - `python3 -c` per run: what a user would otherwise write (no sandbox at all);
 * - a fresh zygote process per run ("spawn"): the pool replaces its host after every run
 *   (`recycleAfterRuns: 1`), so each run pays a whole start-up (wasmtime loads the .cwasm, CPython
 *   boots and warms up), confined as always;
 * - fork per run from the zygote (this design), with and without copying the pages a run writes
 *   ahead (zygote.py `probe`, `--no-prefault`);
 * - optionally the old design, Pyodide in a Node host restoring its memory after every run, from a
 *   checkout of the old tree (BENCH_PYTHON_OLD_TREE; bench/README.md says how to make one).
 *
 *   node --no-node-snapshot --import tsx bench/python.ts     (or: npm run bench -- python)
 *   BENCH_PYTHON_OLD_TREE=/tmp/old-pyodide npm run bench -- python
 *
 * The task is a small function test (define a function, assert on it, return a value), the shape
 * of most code rewards. Prints per option: p50/p99 latency one run at a time (back to back), p50
 * of runs that each follow a 20 ms pause (a trainer's tool calls come with the model's time
 * between them), runs/s one and two at a time, CPU per run (this process and every process below
 * it, from /proc), and each against the fork design.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import type { ProgramProfile } from "../src/wall/confine.ts";
import { createPythonSandbox, PYTHON_PROFILE } from "../src/sandbox/engines/python/python.ts";
import type { Sandbox } from "../src/sandbox/types.ts";
import { fmt, percentile } from "./server.ts";

const TASK = "def f(x):\n    return x * 2\nassert f(2) == 4\nassert f(-1) == -2\nf(21)";
/** Runs per block of the fast options; the spawning ones run SLOW_RUNS. */
const RUNS = Number(process.env.BENCH_PYTHON_RUNS ?? 300);
const SLOW_RUNS = Number(process.env.BENCH_PYTHON_SPAWNS ?? 12);
const ROUNDS = Number(process.env.BENCH_PYTHON_ROUNDS ?? 3);
const CONCURRENCY = 2;
const GAP_MS = 20;

const execFileAsync = promisify(execFile);

interface Option {
  name: string;
  runs: number;
  /** A sandbox, or undefined for python3 -c. */
  make?(): Promise<Sandbox>;
  sandbox?: Sandbox;
  latencies: number[];
  /** Latencies of runs that each follow a pause (GAP_MS): a trainer's tool calls, with the model's time between them. */
  gapped: number[];
  seqMs: number;
  seqRuns: number;
  parMs: number;
  parRuns: number;
  cpuMs: number;
  cpuRuns: number;
}

/** utime + stime + cutime + cstime (ms) of a process, and its parent. */
function cpuOf(pid: number | "self"): { ppid: number; ms: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(f[1]), ms: (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10 };
  } catch {
    return undefined;
  }
}

/** CPU of this process and every live process below it (dead ones are in their parents' cutime/cstime). */
function treeCpuMs(): number {
  const parent = new Map<number, number>();
  const cpu = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const c = cpuOf(Number(name));
    if (!c) continue;
    parent.set(Number(name), c.ppid);
    cpu.set(Number(name), c.ms);
  }
  let total = 0;
  for (const [pid, ms] of cpu) {
    if (pid === process.pid) total += ms;
    else for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === process.pid) { total += ms; break; }
  }
  return total;
}

async function once(option: Option): Promise<void> {
  if (!option.sandbox) {
    const { stdout } = await execFileAsync("python3", ["-c", `${TASK.replace(/\nf\(21\)$/, "")}\nprint(f(21))`], { timeout: 10_000 });
    if (stdout.trim() !== "42") throw new Error(`unexpected output ${stdout}`);
    return;
  }
  const r = await option.sandbox.run(TASK, { timeoutMs: 10_000 });
  if (!r.ok || r.result !== 42) throw new Error(`${option.name}: unexpected result ${JSON.stringify(r)}`);
}

async function block(option: Option): Promise<void> {
  const cpu0 = treeCpuMs();
  let t = performance.now();
  for (let i = 0; i < option.runs; i++) {
    const t0 = performance.now();
    await once(option);
    option.latencies.push(performance.now() - t0);
  }
  option.seqMs += performance.now() - t;
  option.seqRuns += option.runs;
  let next = 0;
  t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < option.runs) await once(option);
    }),
  );
  option.parMs += performance.now() - t;
  option.parRuns += option.runs;
  option.cpuMs += treeCpuMs() - cpu0;
  option.cpuRuns += 2 * option.runs;
  for (let i = 0; i < Math.min(option.runs, 40); i++) {
    await new Promise((ok) => setTimeout(ok, GAP_MS));
    const t0 = performance.now();
    await once(option);
    option.gapped.push(performance.now() - t0);
  }
}

/** The real profile with extra zygote arguments. */
function withArgs(...extra: string[]): ProgramProfile {
  return {
    ...PYTHON_PROFILE,
    async command() {
      const real = await PYTHON_PROFILE.command();
      return { ...real, args: [...real.args, ...extra] };
    },
  };
}

export async function benchPython(): Promise<void> {
  const options: Option[] = [];
  const add = (name: string, runs: number, make?: () => Promise<Sandbox>) =>
    options.push({ name, runs, make, latencies: [], gapped: [], seqMs: 0, seqRuns: 0, parMs: 0, parRuns: 0, cpuMs: 0, cpuRuns: 0 });
  const warmed = async (sandbox: Sandbox & { warm?(n?: number): Promise<void> }) => {
    await sandbox.warm?.();
    return sandbox;
  };
  add("fork per run from the zygote (default)", RUNS, () => warmed(createPythonSandbox({ maxConcurrency: CONCURRENCY })));
  add("fork per run, no pages copied ahead (--no-prefault)", RUNS, () => warmed(createPythonSandbox({ maxConcurrency: CONCURRENCY, profile: withArgs("--no-prefault") })));
  add("a fresh zygote process per run (spawn)", SLOW_RUNS, () => warmed(createPythonSandbox({ maxConcurrency: CONCURRENCY, recycleAfterRuns: 1 })));
  const oldTree = process.env.BENCH_PYTHON_OLD_TREE;
  if (oldTree) {
    add("old: Pyodide in a Node host, memory restored after each run", RUNS, async () => {
      const mod = (await import(pathToFileURL(resolve(oldTree, "src/sandbox/python.ts")).href)) as { createPythonSandbox(o: object): Sandbox };
      return warmed(mod.createPythonSandbox({ maxConcurrency: CONCURRENCY }));
    });
  }
  let spawnAvailable = true;
  try {
    await execFileAsync("python3", ["-c", "0"]);
  } catch {
    spawnAvailable = false;
  }
  if (spawnAvailable) add("python3 -c per run (no sandbox)", SLOW_RUNS);

  console.log(`\n## Python sandbox (a small function test; ${ROUNDS} rounds, blocks of ${RUNS} runs, ${SLOW_RUNS} for the spawning options, 1 then ${CONCURRENCY} at a time)`);
  const starts: string[] = [];
  for (const option of options) {
    if (!option.make) continue;
    const t = performance.now();
    option.sandbox = await option.make();
    starts.push(`${option.name}: ${fmt(performance.now() - t)} ms`);
    for (let i = 0; i < 20; i++) await once(option);
  }
  console.log(`start-up (${CONCURRENCY} hosts): ${starts.join("; ")}`);
  for (let round = 0; round < ROUNDS; round++) for (const option of options) await block(option);
  const memory = options.map((o) => `${o.name}: ${fmt((o.sandbox?.memoryBytes?.() ?? 0) / 2 ** 20)} MiB`);
  for (const option of options) await option.sandbox?.dispose();

  const base = options[0]!;
  const seq = (o: Option) => (1000 * o.seqRuns) / o.seqMs;
  const par = (o: Option) => (1000 * o.parRuns) / o.parMs;
  const cpu = (o: Option) => o.cpuMs / o.cpuRuns;
  console.log(`load average: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}; memory held at the end (server's measure): ${memory.join("; ")}`);
  console.log(`| option | p50 ms | p99 ms | p50 ms after a ${GAP_MS} ms pause | runs/s, 1 at a time | runs/s, 2 at a time | CPU ms per run | runs/s vs fork (1 / 2 at a time) | CPU vs fork |`);
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const o of options) {
    o.latencies.sort((a, b) => a - b);
    o.gapped.sort((a, b) => a - b);
    console.log(
      `| ${o.name} | ${fmt(percentile(o.latencies, 50), 2)} | ${fmt(percentile(o.latencies, 99), 2)} | ${fmt(percentile(o.gapped, 50), 2)} | ${fmt(seq(o))} | ${fmt(par(o))} | ${fmt(cpu(o), 2)} | ${(seq(o) / seq(base)).toFixed(2)}x / ${(par(o) / par(base)).toFixed(2)}x | ${(cpu(o) / cpu(base)).toFixed(2)}x |`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchPython();
