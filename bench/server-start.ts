/**
 * What starting a server costs: `envworker serve` (every shipped environment, two environment
 * threads) run compiled from dist/ (what bin/envworker.js runs while dist/ is the build of the
 * sources) against the same server run from the sources through tsx (the baseline: what it ran
 * before), in alternating rounds in one run. CPU is the process's own (every thread: main, the
 * environment threads, tsx's loader threads), read from /proc once the process has gone quiet
 * after printing its URL; wall time is until it printed its URL. Builds dist/ first if it is stale.
 *
 *   npm run bench -- server-start   (BENCH_ROUNDS: rounds of one start each way, default 5)
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fmt } from "./server.ts";

const ROOT = join(import.meta.dirname, "..");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TICK_S = 1 / 100; // USER_HZ on Linux

interface Start {
  cpuS: number;
  urlMs: number;
}

/** utime + stime of a process (all its threads), in seconds. */
function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_S;
}

async function startOnce(flags: string[]): Promise<Start> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [...flags, join(ROOT, "bin/envworker.js"), "serve", "--port", "0"], {
    cwd: ROOT,
    env: { ...process.env, PORT: "", HOST: "" },
    stdio: ["ignore", "pipe", "ignore"],
  });
  try {
    let out = "";
    const urlMs = await new Promise<number>((resolve, reject) => {
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        if (/serving \d+ environment\(s\) on http/.test(out)) resolve(performance.now() - t0);
      });
      child.once("exit", (code) => reject(new Error(`serve exited (${code}) before listening: ${out}`)));
    });
    // The environment threads load after the URL is printed: wait until the process is quiet
    // (no CPU over 500 ms), then read what it used.
    let last = cpuOf(child.pid!);
    for (;;) {
      await new Promise((r) => setTimeout(r, 500));
      const now = cpuOf(child.pid!);
      if (now - last < 0.02) return { cpuS: now, urlMs };
      last = now;
    }
  } finally {
    child.kill("SIGKILL");
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function benchServerStart(): Promise<void> {
  execFileSync(process.execPath, [join(ROOT, "bin/envworker.js"), "build", "--if-stale"], { cwd: ROOT, stdio: "inherit" });
  // Given directly, so that bin/envworker.js does not re-execute itself: the process is the server.
  const ways = [
    { name: "from the sources through tsx (baseline)", flags: ["--no-node-snapshot", "--conditions=envworker-source"] },
    { name: "compiled, dist/ (what runs while dist/ is fresh)", flags: ["--no-node-snapshot"] },
  ];
  const starts: Start[][] = ways.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, way] of ways.entries()) starts[i]!.push(await startOnce(way.flags));
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
