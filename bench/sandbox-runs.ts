/**
 * Sandbox runs as a user meets them (issue 42): stateless MCP `tools/call` of math-tools'
 * `javascript` tool on a server of this tree, two programs (`1 + 1`; js-code's to-roman reference
 * solution and its 10 tests as `if (JSON.stringify(f(...)) !== ...) throw` lines), 1 and 2 requests
 * at a time from one client, in two servers side by side: QuickJS instance per run (the default) and
 * the fork zygote (ENVWORKER_QUICKJS_MODE=fork, what was the default), and a bare CPython start
 * (`python3 -I -S -c pass`, spawned by this process) in the same round. Blocks take turns within a
 * round, so all see the same load; read the ratios within a round.
 *
 * CPU per run: the server's process and all its children's (utime+stime, reaped children included,
 * from /proc), over the block, per run; "less HTTP": minus the CPU per request of the same server
 * answering MCP `ping` (the HTTP + JSON-RPC path alone) in the same round. Runs per core-second =
 * 1000 / CPU ms per run. Memory: the server's tree RSS after the block, and the hosts' part of it.
 * Every answer is checked (2, and 10 checks passed).
 *
 *   npm run bench -- sandbox-runs   (BENCH_ROUNDS=2, BENCH_RUNS=200, BENCH_FORK_RUNS=100, BENCH_PYTHON_STARTS=60,
 *                                     BENCH_PYTHON3=/usr/bin/python3 when it exists, else python3)
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { processTree, processTreeCpuMs, processTreeRss } from "../src/wall/process-memory.ts";
import { fmt, percentile, startBenchServer, type BenchServer } from "./server.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const FORK_RUNS = Number(process.env.BENCH_FORK_RUNS ?? 100);
const PYTHON_STARTS = Number(process.env.BENCH_PYTHON_STARTS ?? 60);
const PINGS = Number(process.env.BENCH_PINGS ?? 200);
const WARM = 10;
const MiB = 1024 * 1024;
/** A real interpreter, not a version manager's shim (pyenv's python3 is a shell script: ~10x the start). */
const PYTHON3 = process.env.BENCH_PYTHON3 ?? (existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3");

const TO_ROMAN = `function toRoman(n) {
  const table = [[1000, "M"], [900, "CM"], [500, "D"], [400, "CD"], [100, "C"], [90, "XC"], [50, "L"], [40, "XL"], [10, "X"], [9, "IX"], [5, "V"], [4, "IV"], [1, "I"]];
  let out = "";
  for (const [v, s] of table) while (n >= v) { out += s; n -= v; }
  return out;
}`;
const ROMAN_CASES: [number, string][] = [[3, "III"], [58, "LVIII"], [1994, "MCMXCIV"], [1, "I"], [4, "IV"], [9, "IX"], [40, "XL"], [3999, "MMMCMXCIX"], [444, "CDXLIV"], [2024, "MMXXIV"]];
const REALISTIC = `${TO_ROMAN}\nlet passed = 0;\n${ROMAN_CASES.map(([n, s]) => `if (JSON.stringify(toRoman(${n})) !== ${JSON.stringify(JSON.stringify(s))}) throw new Error("toRoman(${n})"); passed++;`).join("\n")}\npassed`;

const PROGRAMS = [
  { name: "JavaScript `1 + 1`", code: "1 + 1", expect: "result: 2" },
  { name: "JavaScript, to-roman + 10 checks", code: REALISTIC, expect: "result: 10" },
];

interface Way {
  name: string;
  env: Record<string, string>;
  runs: number;
  server?: BenchServer;
}

const WAYS: Way[] = [
  { name: "QuickJS, an instance per run (default)", env: {}, runs: RUNS },
  { name: "QuickJS, a process forked per run (ENVWORKER_QUICKJS_MODE=fork)", env: { ENVWORKER_QUICKJS_MODE: "fork" }, runs: FORK_RUNS },
];

let rpcId = 1;
async function mcp(server: BenchServer, body: unknown): Promise<{ result?: { content: { text: string }[]; isError: boolean } }> {
  const res = await fetch(`${server.url}/envs/math-tools/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`mcp: ${res.status} ${(await res.text()).slice(0, 300)}`);
  return (await res.json()) as { result?: { content: { text: string }[]; isError: boolean } };
}

async function call(server: BenchServer, code: string, expect: string): Promise<void> {
  const r = await mcp(server, { jsonrpc: "2.0", id: rpcId++, method: "tools/call", params: { name: "javascript", arguments: { code } } });
  const text = r.result?.content?.[0]?.text ?? "";
  if (r.result?.isError || !text.includes(expect)) throw new Error(`unexpected answer: ${JSON.stringify(r).slice(0, 400)}`);
}

async function ping(server: BenchServer): Promise<void> {
  await mcp(server, { jsonrpc: "2.0", id: rpcId++, method: "ping" });
}

/** utime+stime (own: every thread's) of one process, ms; 0 when gone. */
function ownCpuOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return -1;
  }
}

function isNode(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0")[0]!.endsWith("node");
  } catch {
    return false;
  }
}

function rssOf(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

interface Tree {
  /** The server's Node processes (bin/envworker.js may re-exec): their own CPU (every thread) and RSS. */
  nodeCpu: number;
  nodeRss: number;
  /** Each sandbox host below them (a subtree: prlimit, bubblewrap, the host, its forked children): CPU with what it reaped, RSS. */
  hosts: Map<number, { cpu: number; rss: number }>;
}

function treeOf(serverPid: number): Tree {
  const tree: Tree = { nodeCpu: 0, nodeRss: 0, hosts: new Map() };
  const all = processTree(serverPid);
  const nodes = new Set(all.filter((pid) => pid === serverPid || isNode(pid)));
  for (const pid of nodes) {
    tree.nodeCpu += ownCpuOf(pid);
    tree.nodeRss += rssOf(pid);
  }
  for (const pid of all) {
    if (nodes.has(pid) || !nodes.has(parentOf(pid))) continue;
    tree.hosts.set(pid, { cpu: processTreeCpuMs(pid) ?? 0, rss: processTreeRss(pid) ?? 0 });
  }
  return tree;
}

interface Block {
  cpuMs: number;
  /** Of cpuMs: the server's Node processes' own (HTTP, environment threads, the pool); the rest is its sandbox hosts'. */
  serverMs: number;
  /** A host ended during the block (recycled, replaced): up to its last 20 ms of CPU may be missing. */
  replaced: boolean;
  p50: number;
  p99: number;
  perSec: number;
  serverBytes: number;
  hostBytes: number;
  hosts: number;
}

/** `n` calls, `conc` at a time; the CPU of the server's processes and of every host that lived meanwhile (sampled every 20 ms). */
async function block(server: BenchServer, n: number, conc: number, once: () => Promise<void>): Promise<Block> {
  for (let i = 0; i < WARM; i++) await once();
  const ms: number[] = [];
  let left = n;
  const first = treeOf(server.pid);
  const last = new Map(first.hosts);
  const sample = setInterval(() => {
    for (const [pid, h] of treeOf(server.pid).hosts) last.set(pid, h);
  }, 20);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (left-- > 0) {
        const t = performance.now();
        await once();
        ms.push(performance.now() - t);
      }
    }),
  );
  const wall = performance.now() - t0;
  clearInterval(sample);
  const end = treeOf(server.pid);
  for (const [pid, h] of end.hosts) last.set(pid, h);
  let hostsMs = 0;
  for (const [pid, h] of last) hostsMs += h.cpu - (first.hosts.get(pid)?.cpu ?? 0);
  const serverMs = (end.nodeCpu - first.nodeCpu) / n;
  ms.sort((a, b) => a - b);
  let hostBytes = 0;
  for (const h of end.hosts.values()) hostBytes += h.rss;
  return {
    cpuMs: serverMs + hostsMs / n,
    serverMs,
    replaced: [...first.hosts.keys()].some((pid) => !end.hosts.has(pid)),
    p50: percentile(ms, 50),
    p99: percentile(ms, 99),
    perSec: (n * 1000) / wall,
    serverBytes: end.nodeRss,
    hostBytes,
    hosts: end.hosts.size,
  };
}

/** Bare CPython starts, one at a time: CPU per start (this process's reaped children, /proc/self/stat). */
function pythonStarts(n: number): { cpuMs: number; p50: number } {
  const own = () => {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(f[13]) + Number(f[14])) * 1000) / 100; // cutime + cstime, in ms
  };
  for (let i = 0; i < 3; i++) spawnSync(PYTHON3, ["-I", "-S", "-c", "pass"]);
  const c0 = own();
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = spawnSync(PYTHON3, ["-I", "-S", "-c", "pass"]);
    if (r.status !== 0) throw new Error("python3 -I -S -c pass failed");
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return { cpuMs: (own() - c0) / n, p50: percentile(ms, 50) };
}

export async function benchSandboxRuns(): Promise<void> {
  console.log(`\n## Sandbox runs through MCP tools/call: an instance per run against a fork per run and a bare CPython start (${ROUNDS} rounds; ${RUNS} runs a block, ${FORK_RUNS} forked)`);
  try {
    for (const way of WAYS) way.server = await startBenchServer(way.env, { envs: ["math-tools"] });
    console.log("| round | load1 | way | program | at a time | CPU ms/run | of it: server / hosts | less HTTP | runs per core-s (less HTTP) | vs bare CPython start (less HTTP) | p50 ms | p99 ms | runs/s | server MiB | hosts MiB (hosts) |");
    console.log("| ---: | ---: | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (let round = 1; round <= ROUNDS; round++) {
      const py = pythonStarts(PYTHON_STARTS);
      const load = loadavg()[0]!.toFixed(1);
      console.log(`| ${round} | ${load} | bare CPython start (\`python3 -I -S -c pass\`) | — | 1 | ${fmt(py.cpuMs, 2)} | | | ${fmt(1000 / py.cpuMs)} | 1 | ${fmt(py.p50, 2)} | | | | |`);
      for (const way of WAYS) {
        const server = way.server!;
        const http = await block(server, PINGS, 1, () => ping(server));
        for (const program of PROGRAMS) {
          for (const conc of [1, 2]) {
            const b = await block(server, way.runs, conc, () => call(server, program.code, program.expect));
            const net = Math.max(0.001, b.cpuMs - http.cpuMs);
            console.log(
              `| ${round} | ${loadavg()[0]!.toFixed(1)} | ${way.name} | ${program.name} | ${conc} | ${fmt(b.cpuMs, 2)}${b.replaced ? " (a host was recycled)" : ""} | ${fmt(b.serverMs, 2)} / ${fmt(b.cpuMs - b.serverMs, 2)} | ${fmt(net, 2)} | ${fmt(1000 / net)} | ${(b.cpuMs / py.cpuMs).toFixed(3)}x (${(net / py.cpuMs).toFixed(3)}x) | ${fmt(b.p50, 2)} | ${fmt(b.p99, 2)} | ${fmt(b.perSec)} | ${fmt(b.serverBytes / MiB)} | ${fmt(b.hostBytes / MiB)} (${b.hosts}) |`,
            );
          }
        }
        console.log(`| ${round} | ${load} | ${way.name}: MCP \`ping\` (the HTTP path) | — | 1 | ${fmt(http.cpuMs, 2)} | | | | ${(http.cpuMs / py.cpuMs).toFixed(3)}x | ${fmt(http.p50, 2)} | ${fmt(http.p99, 2)} | ${fmt(http.perSec)} | | |`);
      }
    }
  } finally {
    await Promise.all(WAYS.map((w) => w.server?.stop()));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchSandboxRuns();
