/**
 * py-code's `POST /score` of one answer with 10 tests, on this tree's server against the tree before
 * the Python engine changed (Pyodide in a Node host, its memory restored after each run; issue 29
 * asked for "within 1.5x"), with the same client in one run: both servers run side by side (each
 * `envworker serve py-code` in its own process) and blocks of requests take turns between them, so
 * both see the same load on a shared machine. Read the ratios.
 *
 *   BENCH_PY_SCORE_OLD_TREE=/tmp/zt-pre-wasi npm run bench -- py-score
 *
 * (bench/README.md says how to make the old tree.) Without BENCH_PY_SCORE_OLD_TREE only this tree
 * is measured. Two answers, each alone in its request, one at a time: a function with 10 assert
 * tests, and a stdin/stdout program with 10 cases; every answer passes all its tests (checked).
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fmt, percentile, startBenchServer, type BenchServer } from "./server.ts";

const ROUNDS = Number(process.env.BENCH_PY_SCORE_ROUNDS ?? 5);
/** Requests per block (one server, one answer kind). */
const BLOCK = Number(process.env.BENCH_PY_SCORE_BLOCK ?? 20);
const WARM = 5;

const ANSWERS: Record<string, { completion: string; info: { tests: unknown[] } }> = {
  "10 assert tests": {
    completion: "```python\ndef f(x):\n    return x * 2\n```",
    info: { tests: Array.from({ length: 10 }, (_, i) => `assert f(${i - 3}) == ${2 * (i - 3)}`) },
  },
  "10 stdin/stdout tests": {
    completion: "```python\nprint(sum(map(int, input().split())))\n```",
    info: { tests: Array.from({ length: 10 }, (_, i) => ({ input: `${i} ${i * 7}\n`, output: `${i * 8}\n` })) },
  },
};

interface Row {
  tree: string;
  kind: string;
  server: BenchServer;
  ms: number[];
}

async function score(server: BenchServer, kind: string): Promise<number> {
  const t = performance.now();
  const res = await fetch(`${server.url}/envs/py-code/score`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ items: [ANSWERS[kind]] }) });
  const body = (await res.json()) as { results?: { reward: number; metrics: Record<string, number> }[] };
  const ms = performance.now() - t;
  const result = body.results?.[0];
  if (res.status !== 200 || result?.reward !== 1 || result.metrics.tests_total !== 10) throw new Error(`py-score: ${kind}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  return ms;
}

export async function benchPyScore(): Promise<void> {
  const oldTree = process.env.BENCH_PY_SCORE_OLD_TREE;
  const trees: [string, string | undefined][] = [["this tree (CPython for WASI, a fork per run)", undefined]];
  if (oldTree) trees.push(["before (Pyodide in a Node host, memory restored)", resolve(oldTree, "bin/envworker.js")]);
  const rows: Row[] = [];
  const servers: BenchServer[] = [];
  try {
    for (const [tree, bin] of trees) {
      const server = await startBenchServer({}, { envs: ["py-code"], ...(bin ? { bin } : {}) });
      servers.push(server);
      for (const kind of Object.keys(ANSWERS)) {
        for (let i = 0; i < WARM; i++) await score(server, kind);
        rows.push({ tree, kind, server, ms: [] });
      }
    }
    console.log(`\n## py-code POST /score of one 10-test answer (${ROUNDS} rounds, blocks of ${BLOCK} requests taking turns, one at a time)`);
    for (let round = 0; round < ROUNDS; round++) for (const row of rows) for (let i = 0; i < BLOCK; i++) row.ms.push(await score(row.server, row.kind));
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
  console.log(`load average: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
  console.log("| answer | tree | p50 ms | p90 ms | mean ms | p50 vs before | mean vs before |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  for (const row of rows) row.ms.sort((a, b) => a - b);
  for (const row of rows) {
    const before = row.tree === rows[0]!.tree ? rows.find((r) => r.kind === row.kind && r.tree !== row.tree) : undefined;
    const ratio = (f: (xs: number[]) => number) => (before ? `${(f(row.ms) / f(before.ms)).toFixed(2)}x` : "—");
    console.log(`| ${row.kind} | ${row.tree} | ${fmt(percentile(row.ms, 50), 1)} | ${fmt(percentile(row.ms, 90), 1)} | ${fmt(mean(row.ms), 1)} | ${ratio((xs) => percentile(xs, 50))} | ${ratio(mean)} |`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchPyScore();
