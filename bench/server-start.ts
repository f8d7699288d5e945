/**
 * What starting a server costs: `envworker serve` (every shipped environment, two environment
 * threads) run compiled from dist/ (what bin/envworker.js runs while dist/ is the build of the
 * sources) against the same server run from the sources through tsx (the baseline: what it ran
 * before), in alternating rounds in one run. CPU is the process's own (every thread: main, the
 * environment threads, tsx's loader threads), read once the process has gone quiet after printing
 * its URL; wall time is until it printed its URL. Builds dist/ first if it is stale.
 *
 *   npm run bench -- server-start   (BENCH_ROUNDS: rounds of one start each way, default 5)
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { median } from "../test/helpers/slowdown.ts";
import { fmt, startBenchServer } from "./server.ts";

const ROOT = join(import.meta.dirname, "..");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

interface Start {
  cpuS: number;
  urlMs: number;
}

async function startOnce(nodeFlags: string[]): Promise<Start> {
  const t0 = performance.now();
  const server = await startBenchServer({ PORT: "", HOST: "" }, { nodeFlags });
  const urlMs = performance.now() - t0;
  try {
    // The environment threads load after the URL is printed: wait until the process is quiet
    // (under 20 ms of CPU in 500 ms), then read what it used.
    let last = server.cpuMicros();
    for (;;) {
      await new Promise((r) => setTimeout(r, 500));
      const now = server.cpuMicros();
      if (now - last < 20_000) return { cpuS: now / 1e6, urlMs };
      last = now;
    }
  } finally {
    await server.stop();
  }
}

export async function benchServerStart(): Promise<void> {
  execFileSync(process.execPath, [join(ROOT, "bin/envworker.js"), "build", "--if-stale"], { cwd: ROOT, stdio: "inherit" });
  const ways = [
    { name: "from the sources through tsx (baseline)", nodeFlags: ["--conditions=envworker-source"] },
    { name: "compiled, dist/ (what runs while dist/ is fresh)", nodeFlags: [] },
  ];
  const starts: Start[][] = ways.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, way] of ways.entries()) starts[i]!.push(await startOnce(way.nodeFlags));
  }
  const base = { cpu: median(starts[0]!.map((s) => s.cpuS)), url: median(starts[0]!.map((s) => s.urlMs)) };
  console.log(`\nserver start: \`envworker serve\`, every shipped environment, ${ROUNDS} rounds (medians)`);
  console.log("| way | CPU s | vs baseline | ms to its URL | vs baseline |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const [i, way] of ways.entries()) {
    const cpu = median(starts[i]!.map((s) => s.cpuS));
    const url = median(starts[i]!.map((s) => s.urlMs));
    console.log(`| ${way.name} | ${cpu.toFixed(2)} | ${fmt(cpu / base.cpu, 2)}x | ${url.toFixed(0)} | ${fmt(url / base.url, 2)}x |`);
  }
}
