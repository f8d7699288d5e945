/**
 * A Python environment against the same environment in TypeScript, through the same client and
 * server: reverse-text-py (envs/reverse-text/env.py, a Python worker per environment thread) and
 * reverse-text (envs/reverse-text/index.ts), whole episodes (reset + step with the gold answer +
 * close) under autocannon, in alternating rounds so both see the same machine; then one client's
 * step alone (its latency, nothing queued). The ratio is what running the environment's functions in
 * a Python worker costs on top of the engine.
 */
import autocannon from "autocannon";
import { reverseTextGold } from "../test/helpers/oracles.ts";
import { fmt, startBenchServer } from "./server.ts";

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SINGLE_STEPS = Number(process.env.BENCH_SINGLE_STEPS ?? 200);
const ENVS = ["reverse-text", "reverse-text-py"] as const;

function episode(env: string): autocannon.Request[] {
  const json = { "content-type": "application/json" };
  return [
    {
      method: "POST",
      path: `/envs/${env}/reset`,
      headers: json,
      body: "{}",
      onResponse: (_s: number, body: string, ctx: any) => {
        const r = JSON.parse(body);
        ctx.id = r.episode_id;
        ctx.answer = reverseTextGold(r.observation.messages);
      },
    },
    { method: "POST", path: `/envs/${env}/step`, headers: json, setupRequest: (req: any, ctx: any) => ({ ...req, body: JSON.stringify({ episode_id: ctx.id, action: { content: ctx.answer } }) }) },
    { method: "POST", path: `/envs/${env}/close`, headers: json, setupRequest: (req: any, ctx: any) => ({ ...req, body: JSON.stringify({ episode_id: ctx.id }) }) },
  ] as autocannon.Request[];
}

async function post(url: string, body: unknown): Promise<any> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** One client, one step at a time: the step's own latency (ms, sorted). */
async function singleSteps(base: string, env: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < SINGLE_STEPS; i++) {
    const r = await post(`${base}/envs/${env}/reset`, {});
    const t0 = performance.now();
    await post(`${base}/envs/${env}/step`, { episode_id: r.episode_id, action: { content: reverseTextGold(r.observation.messages) } });
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

export async function benchPythonEnv(): Promise<void> {
  const server = await startBenchServer({}, ["reverse-text", "./envs/reverse-text/env.py"]);
  try {
    // Warm: every thread's worker started, the datasets read.
    for (const env of ENVS) await autocannon({ url: server.url, connections: 4, amount: 200, requests: episode(env) });
    const rps: Record<string, number[]> = { "reverse-text": [], "reverse-text-py": [] };
    const p50: Record<string, number[]> = { "reverse-text": [], "reverse-text-py": [] };
    let errors = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const env of round % 2 === 0 ? ENVS : [...ENVS].reverse()) {
        const r = await autocannon({ url: server.url, connections: CONNECTIONS, duration: DURATION_S, requests: episode(env) });
        rps[env]!.push(r.requests.average);
        p50[env]!.push(r.latency.p50);
        errors += r.errors + r.non2xx;
      }
    }
    const single: Record<string, number[]> = {};
    for (const env of ENVS) single[env] = await singleSteps(server.url, env);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(`\n## A Python environment against the same one in TypeScript (${ROUNDS} alternating rounds of ${DURATION_S}s, ${CONNECTIONS} connections; ${SINGLE_STEPS} single steps; ${errors} errors)`);
    console.log("| environment | req/s (reset+step+close) | p50 ms under load | single step p50 ms | single step p99 ms | req/s vs TypeScript | single step p50 vs TypeScript |");
    console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (const env of ENVS) {
      console.log(
        `| ${env} | ${fmt(mean(rps[env]!))} | ${fmt(mean(p50[env]!), 1)} | ${fmt(pct(single[env]!, 50), 2)} | ${fmt(pct(single[env]!, 99), 2)} | ${(mean(rps[env]!) / mean(rps["reverse-text"]!)).toFixed(2)}x | ${(pct(single[env]!, 50) / pct(single["reverse-text"]!, 50)).toFixed(2)}x |`,
      );
    }
  } finally {
    await server.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchPythonEnv();
