/**
 * Sandbox hosts of two checkouts, interleaved in one process: blocks of 200 runs alternate between
 * an older tree's backend and this tree's, so both see the same machine load (on a shared, loaded
 * 2-core machine the figures of back-to-back runs differ more than the change being measured).
 * Prints runs/s and CPU per run (this process plus every process below it, from /proc) of each.
 *
 *   git archive 0a84d36 | tar -x -C /tmp/old && ln -s "$PWD/node_modules" /tmp/old/node_modules
 *   node --no-node-snapshot --import tsx bench/hosts-ab.ts /tmp/old python 2    (python | quickjs | isolated-vm; concurrency)
 */
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Sandbox } from "../src/sandbox/types.ts";

const [oldTree, which = "python", concArg = "2"] = process.argv.slice(2);
if (!oldTree) {
  console.error("usage: bench/hosts-ab.ts OLD_TREE [python|quickjs|isolated-vm] [concurrency]");
  process.exit(2);
}
const conc = Number(concArg);
const BLOCKS = 6;
const RUNS = 200;

/** CPU ms of every process below this one (clock ticks of 10 ms: fine over thousands of runs). */
function descendantsCpuMs(): number {
  const parent = new Map<number, number>();
  const cpu = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parent.set(Number(name), Number(fields[1]));
      cpu.set(Number(name), (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // Gone.
    }
  }
  let total = 0;
  for (const pid of parent.keys()) {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (p === process.pid) {
        total += cpu.get(pid)!;
        break;
      }
    }
  }
  return total;
}
const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function backend(tree: string): Promise<Sandbox & { warm?(n?: number): Promise<void> }> {
  const mod = async (rel: string) => (await import(pathToFileURL(resolve(tree, rel)).href)) as Record<string, (o: object) => Sandbox>;
  if (which === "python") return (await mod("src/sandbox/python.ts")).createPythonSandbox!({ maxConcurrency: conc });
  if (which === "isolated-vm") return (await mod("src/sandbox/isolated-vm-process.ts")).createIsolatedVmProcessSandbox!({ maxConcurrency: conc });
  // QuickJS: worker threads before issue 22, processes after.
  try {
    return (await mod("src/sandbox/quickjs-process.ts")).createQuickJSProcessSandbox!({ maxConcurrency: conc });
  } catch {
    return (await mod("src/sandbox/quickjs-thread.ts")).createQuickJSThreadSandbox!({ maxConcurrency: conc });
  }
}

const code = which === "python" ? "def f(x):\n    return x * 2\nassert f(2) == 4\nf(21)" : "let s = 0; for (let i = 1; i <= 1000; i++) s += i; console.log('sum', s); s";
const sides = [
  { name: `old (${oldTree})`, sandbox: await backend(oldTree), ms: 0, cpu: 0 },
  { name: "this tree", sandbox: await backend(resolve(import.meta.dirname, "..")), ms: 0, cpu: 0 },
];
const block = async (sandbox: Sandbox, n: number) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (next++ < n) {
        const r = await sandbox.run(code);
        if (!r.ok) throw new Error(`unexpected result ${JSON.stringify(r)}`);
      }
    }),
  );
};
for (const side of sides) await side.sandbox.warm?.(conc);
for (const side of sides) await block(side.sandbox, 100);
for (let i = 0; i < BLOCKS; i++) {
  for (const side of sides) {
    const cpu0 = ownCpuMs() + descendantsCpuMs();
    const t0 = performance.now();
    await block(side.sandbox, RUNS);
    side.ms += performance.now() - t0;
    side.cpu += ownCpuMs() + descendantsCpuMs() - cpu0;
  }
}
const runs = BLOCKS * RUNS;
console.log(`| ${which}, ${conc} concurrent | runs/s | CPU ms per run |`);
console.log("| --- | ---: | ---: |");
for (const s of sides) console.log(`| ${s.name} | ${Math.round(runs / (s.ms / 1000))} | ${(s.cpu / runs).toFixed(3)} |`);
console.log(`| this tree / old | ${(sides[0]!.ms / sides[1]!.ms).toFixed(2)}x | ${(sides[1]!.cpu / sides[0]!.cpu).toFixed(2)}x |`);
for (const s of sides) await s.sandbox.dispose();
