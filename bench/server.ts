/**
 * Benchmarks drive a real server in its own process (as a trainer would), so the load generator
 * and the server do not share one event loop.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

const BIN = resolve(import.meta.dirname, "../bin/envworker.js");

export interface BenchServer {
  url: string;
  pid: number;
  /** Resident set size of the server process, bytes (Linux /proc). */
  rssBytes(): number;
  /** CPU time the server process has used so far, every thread counted, in µs (Linux /proc). */
  cpuMicros(): number;
  /** CPU time its main thread (the event loop every request passes through) has used, in µs. */
  eventLoopCpuMicros(): number;
  stop(): Promise<void>;
}

/** USER_HZ: the unit of /proc CPU times (100 on Linux everywhere in practice). */
const CLOCK_TICKS = 100;

export interface BenchServerOptions {
  /** The `envworker` command to run (default this tree's bin/envworker.js; another tree's, to compare). */
  bin?: string;
  /** Environments to serve (`envworker serve ENV ...`; default all). */
  envs?: string[];
  /** Node flags besides --no-node-snapshot (`--conditions=envworker-source`: the sources, not dist/). */
  nodeFlags?: string[];
}

export async function startBenchServer(env: Record<string, string> = {}, opts: BenchServerOptions = {}): Promise<BenchServer> {
  // --no-node-snapshot up front so the shim does not re-exec: the pid is the server's own.
  const child: ChildProcess = spawn(process.execPath, ["--no-node-snapshot", ...(opts.nodeFlags ?? []), opts.bin ?? BIN, "serve", "--port", "0", ...(opts.envs ?? [])], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, ...env },
  });
  const url = await new Promise<string>((ok, fail) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += String(d);
      const m = /on (http:\/\/\S+)/.exec(out);
      if (m) ok(m[1]!);
    });
    child.once("exit", (code) => fail(new Error(`server exited with ${code}`)));
  });
  return {
    url,
    pid: child.pid!,
    rssBytes() {
      const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
    },
    cpuMicros: () => cpuMicrosOf(`/proc/${child.pid}/stat`),
    // The main thread's id is the process's.
    eventLoopCpuMicros: () => cpuMicrosOf(`/proc/${child.pid}/task/${child.pid}/stat`),
    stop: () =>
      new Promise((done) => {
        child.once("exit", () => done());
        child.kill("SIGTERM");
      }),
  };
}

/** utime + stime of a /proc stat file, in µs. */
function cpuMicrosOf(path: string): number {
  // Fields 14 and 15 (after the parenthesised command name): utime, stime in clock ticks.
  const stat = readFileSync(path, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
}

export const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** The p-th percentile (0-100) of sorted numbers. */
export const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
