/**
 * Sandbox hosts of two checkouts, interleaved in one process: blocks of 200 runs alternate between
 * an older tree's backend and this tree's, so both see the same machine load (on a shared, loaded
 * 2-core machine the figures of back-to-back runs differ more than the change being measured).
 * Prints runs/s and CPU per run (this process plus every process below it, from /proc) of each,
 * and where that CPU went, per thread (/proc/<pid>/task): this process's main thread (the server's
 * side of every run), the engine threads the old tree starts in this process (those its warm()
 * starts; threads started later count as other threads), the hosts' main threads, and every other
 * thread (V8's compiler and GC helpers, timers).
 *
 *   git archive 0a84d36 | tar -x -C /tmp/old && ln -s "$PWD/node_modules" /tmp/old/node_modules
 *   node --no-node-snapshot --import tsx bench/hosts-ab.ts /tmp/old python 2 [warm-up runs, default 100]
 *   (python | quickjs | isolated-vm; concurrency)
 *
 * The warm-up runs each side serves before it is measured: with the default 100 the measured runs
 * include a new host's warm-up (its JIT compiles what a process-wide engine shares between threads);
 * a few thousand measure the steady state a long-lived host (up to 20,000 runs for Python) is in.
 * The measured runs per side (default 1,200: 6 blocks of 200) can be made a host's whole life or
 * more (warm-up 0, 20000 measured): then host replacements (recycling) and their start-ups and JIT
 * warm-ups are in the figures, as in a long training run.
 */
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Sandbox } from "../src/sandbox/types.ts";

const [oldTree, which = "python", concArg = "2", warmArg = "100", measuredArg = "1200"] = process.argv.slice(2);
if (!oldTree) {
  console.error("usage: bench/hosts-ab.ts OLD_TREE [python|quickjs|isolated-vm] [concurrency] [warm-up runs] [measured runs per side]");
  process.exit(2);
}
const conc = Number(concArg);
const WARM_RUNS = Number(warmArg);
const RUNS = 200;
const BLOCKS = Math.max(1, Math.round(Number(measuredArg) / RUNS));

/** utime + stime in ms of a /proc stat line (clock ticks of 10 ms: fine over thousands of runs). */
function statCpuMs(path: string): { ppid: number; ms: number } | undefined {
  try {
    const stat = readFileSync(path, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(fields[1]), ms: (Number(fields[11]) + Number(fields[12])) * 10 };
  } catch {
    return undefined; // gone
  }
}

/** Processes below this one. */
function descendants(): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = statCpuMs(`/proc/${name}/stat`);
    if (stat) parent.set(Number(name), stat.ppid);
  }
  return [...parent.keys()].filter((pid) => {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === process.pid) return true;
    return false;
  });
}

/** CPU ms of every thread of this process and the processes below it, by "pid/tid". */
function threadCpuMs(): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of [process.pid, ...descendants()]) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // gone
    }
    for (const tid of tids) {
      const stat = statCpuMs(`/proc/${pid}/task/${tid}/stat`);
      if (stat) out.set(`${pid}/${tid}`, stat.ms);
    }
  }
  return out;
}

async function backend(tree: string): Promise<Sandbox & { warm?(n?: number): Promise<void> }> {
  const mod = async (rel: string) => (await import(pathToFileURL(resolve(tree, rel)).href)) as Record<string, (o: object) => Sandbox>;
  if (which === "python") return (await mod("src/sandbox/engines/python/python.ts")).createPythonSandbox!({ maxConcurrency: conc });
  if (which === "isolated-vm") return (await mod("src/sandbox/engines/isolated-vm/isolated-vm-process.ts")).createIsolatedVmProcessSandbox!({ maxConcurrency: conc });
  // QuickJS: worker threads before issue 22, processes after.
  try {
    return (await mod("src/sandbox/engines/quickjs/quickjs-process.ts")).createQuickJSProcessSandbox!({ maxConcurrency: conc });
  } catch {
    return (await mod("src/sandbox/quickjs-thread.ts")).createQuickJSThreadSandbox!({ maxConcurrency: conc });
  }
}

const code = which === "python" ? "def f(x):\n    return x * 2\nassert f(2) == 4\nf(21)" : "let s = 0; for (let i = 1; i <= 1000; i++) s += i; console.log('sum', s); s";
type Side = { name: string; sandbox: Awaited<ReturnType<typeof backend>>; ms: number; cpu: number; threads: Map<string, number>; latencies: number[] };
// The threads the old tree starts in this process (its engine threads, when it has them).
const threadsBefore = new Set(threadCpuMs().keys());
const oldSandbox = await backend(oldTree);
await oldSandbox.warm?.(conc);
const oldThreads = new Set([...threadCpuMs().keys()].filter((k) => !threadsBefore.has(k) && k.startsWith(`${process.pid}/`)));
const threadClass = (key: string): string => {
  const [pid, tid] = key.split("/");
  if (Number(pid) === process.pid) return tid === pid ? "server main" : oldThreads.has(key) ? "engine threads in the server" : "other threads";
  return tid === pid ? "hosts' main threads" : "other threads";
};
const sides: Side[] = [
  { name: `old (${oldTree})`, sandbox: oldSandbox, ms: 0, cpu: 0, threads: new Map(), latencies: [] },
  { name: "this tree", sandbox: await backend(resolve(import.meta.dirname, "..")), ms: 0, cpu: 0, threads: new Map(), latencies: [] },
];
const block = async (sandbox: Sandbox, n: number, latencies?: number[]) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (next++ < n) {
        const t = performance.now();
        const r = await sandbox.run(code);
        latencies?.push(performance.now() - t);
        if (!r.ok) throw new Error(`unexpected result ${JSON.stringify(r)}`);
      }
    }),
  );
};
for (const side of sides) await side.sandbox.warm?.(conc);
for (const side of sides) await block(side.sandbox, WARM_RUNS);
for (let i = 0; i < BLOCKS; i++) {
  for (const side of sides) {
    const cpu0 = threadCpuMs();
    const t0 = performance.now();
    await block(side.sandbox, RUNS, side.latencies);
    side.ms += performance.now() - t0;
    for (const [key, ms] of threadCpuMs()) {
      const spent = ms - (cpu0.get(key) ?? 0);
      side.cpu += spent;
      side.threads.set(threadClass(key), (side.threads.get(threadClass(key)) ?? 0) + spent);
    }
  }
}
const runs = BLOCKS * RUNS;
const p50 = (s: Side) => [...s.latencies].sort((a, b) => a - b)[Math.floor(s.latencies.length / 2)]!;
console.log(`| ${which}, ${conc} concurrent | runs/s | p50 ms | CPU ms per run |`);
console.log("| --- | ---: | ---: | ---: |");
for (const s of sides) console.log(`| ${s.name} | ${Math.round(runs / (s.ms / 1000))} | ${p50(s).toFixed(2)} | ${(s.cpu / runs).toFixed(3)} |`);
console.log(`| this tree / old | ${(sides[0]!.ms / sides[1]!.ms).toFixed(2)}x | ${(p50(sides[1]!) / p50(sides[0]!)).toFixed(2)}x | ${(sides[1]!.cpu / sides[0]!.cpu).toFixed(2)}x |`);
console.log("\nCPU ms per run, by thread:");
for (const s of sides) {
  const parts = [...s.threads].filter(([, ms]) => ms > 0).sort((a, b) => b[1] - a[1]);
  console.log(`  ${s.name}: ${parts.map(([name, ms]) => `${name} ${(ms / runs).toFixed(3)}`).join(", ")}`);
}
for (const s of sides) await s.sandbox.dispose();
