/**
 * What running every Python environment call that reads model output in a process of its own costs
 * (issue 39), and what it buys. Two phases:
 *
 * 1. The cost: whole episodes (reset, then a step with the gold answer) of rg-leg-counting
 *    (reasoning-gym's catalog in a Python worker) and of reverse-text-py, one client, on this tree's
 *    server (respond, rewards and tools each in a child forked for the call) and on the tree before
 *    (BENCH_PYTHON_ENV_OLD_TREE: every call in the worker itself), side by side, blocks taking turns:
 *    step and reset latency, and the CPU of each server's whole process tree per episode.
 * 2. What it buys: the same client's rg-leg-counting steps alone, then beside another client's
 *    attack (red team 5): steps on rg-countdown answering `9999**9999*…` (120 chains, 1.3 KB: sympy
 *    multiplies 120 exact 40,000-digit integers until the call's deadline), and a 64-item /score of
 *    them, on each tree.
 *
 *   git worktree add --detach /tmp/ew-before b87f8df && ln -s $PWD/node_modules /tmp/ew-before/ && (cd /tmp/ew-before && npm run build)
 *   BENCH_PYTHON_ENV_OLD_TREE=/tmp/ew-before ENVWORKER_PYTHON=$(scripts/trainers-venv.sh) npm run bench -- python-env-calls
 *
 * Needs reasoning-gym in ENVWORKER_PYTHON for the rg-* rows (else only reverse-text-py is measured).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { processTree } from "../src/wall/process-memory.ts";
import { fmt, percentile, startBenchServer, type BenchServer } from "./server.ts";

const ROUNDS = Number(process.env.BENCH_PYTHON_ENV_ROUNDS ?? 3);
const BLOCK = Number(process.env.BENCH_PYTHON_ENV_BLOCK ?? 40);
const ATTACK_S = Number(process.env.BENCH_PYTHON_ENV_ATTACK_S ?? 30);
const VICTIM = { authorization: "Bearer bench-victim" };
const ATTACKER = { authorization: "Bearer bench-attacker" };
const STALL = `<answer>${Array.from({ length: 120 }, () => "9999**9999").join("*")}*1</answer>`;

interface Tree {
  name: string;
  server: BenchServer;
}

/** CPU (ms) of a process tree so far: every live process's own and its reaped children's. */
function treeCpuMs(pid: number): number {
  let ticks = 0;
  for (const p of processTree(pid)) {
    try {
      const f = readFileSync(`/proc/${p}/stat`, "latin1").split(") ")[1]!.split(" ");
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      // Gone meanwhile.
    }
  }
  return ticks * 10;
}

async function post(server: BenchServer, path: string, body: unknown, who: Record<string, string>): Promise<any> {
  const res = await fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...who }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

/** Gold answers by environment and seed: GET /state says an episode's answer once it is over. */
const gold = new Map<string, string>();
let nextSeed = 0;

/** One episode: a reset, then a step answering it (rg: the gold answer, learnt from an earlier episode of its seed). */
async function episode(server: BenchServer, env: string, who: Record<string, string>): Promise<{ resetMs: number; stepMs: number }> {
  const seed = nextSeed++ % 16;
  const key = `${env}|${seed}`;
  if (env !== "reverse-text-py" && !gold.has(key)) {
    const r = await post(server, `/envs/${env}/reset`, { seed }, who);
    await post(server, `/envs/${env}/step`, { episode_id: r.body.episode_id, action: { content: "<answer>?</answer>" } }, who);
    const state = await fetch(`${server.url}/envs/${env}/state?episode_id=${r.body.episode_id}`, { headers: who }).then((x) => x.json() as Promise<any>);
    await post(server, `/envs/${env}/close`, { episode_id: r.body.episode_id }, who);
    gold.set(key, `<answer>${state.answer}</answer>`);
  }
  // reverse-text-py's reward is a ratio: any answer is scored.
  const content = gold.get(key) ?? "<reversed_text>x</reversed_text>";
  const t0 = performance.now();
  const r = await post(server, `/envs/${env}/reset`, { seed }, who);
  const t1 = performance.now();
  if (r.status !== 200) throw new Error(`${env} reset: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
  const s = await post(server, `/envs/${env}/step`, { episode_id: r.body.episode_id, action: { content } }, who);
  const t2 = performance.now();
  if (s.status !== 200 || s.body.done !== true) throw new Error(`${env} step: ${s.status} ${JSON.stringify(s.body).slice(0, 200)}`);
  if (env !== "reverse-text-py" && s.body.reward !== 1) throw new Error(`${env}: the gold answer scored ${s.body.reward}: ${JSON.stringify(s.body).slice(0, 300)}`);
  // Closed: thousands of episodes kept open would reach the client's share of them (429).
  await post(server, `/envs/${env}/close`, { episode_id: r.body.episode_id }, who);
  return { resetMs: t1 - t0, stepMs: t2 - t1 };
}

function hasReasoningGym(): boolean {
  try {
    execFileSync(process.env.ENVWORKER_PYTHON || "python3", ["-c", "import reasoning_gym"], { stdio: "ignore", timeout: 120_000 });
    return true;
  } catch {
    return false;
  }
}

const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

export async function benchPythonEnvCalls(): Promise<void> {
  const rg = hasReasoningGym();
  if (!rg) console.log("python-env-calls: reasoning-gym is not importable in ENVWORKER_PYTHON: only reverse-text-py is measured");
  const envs = [...(rg ? ["rg-leg-counting"] : []), "reverse-text-py"];
  const serve = [...(rg ? ["reasoning-gym:leg_counting,countdown"] : []), "./envs/reverse-text/env.py"];
  const oldTree = process.env.BENCH_PYTHON_ENV_OLD_TREE;
  const trees: Tree[] = [];
  const env = { ENVWORKER_TOKEN: "bench-victim,bench-attacker" };
  try {
    trees.push({ name: "this tree (a child per call)", server: await startBenchServer(env, { envs: serve }) });
    if (oldTree) trees.push({ name: "before (calls in the worker)", server: await startBenchServer(env, { envs: serve, bin: resolve(oldTree, "bin/envworker.js") }) });
    for (const t of trees) for (const e of envs) for (let i = 0; i < 10; i++) await episode(t.server, e, VICTIM);

    console.log(`\n## Python environment calls: a process per call against calls in the worker (${ROUNDS} rounds, blocks of ${BLOCK} episodes taking turns, one client; load ${load()})`);
    const rows = new Map<string, { step: number[]; reset: number[]; cpuMs: number; episodes: number }>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const e of envs) {
        for (const t of round % 2 === 0 ? trees : [...trees].reverse()) {
          const key = `${e}|${t.name}`;
          const row = rows.get(key) ?? { step: [], reset: [], cpuMs: 0, episodes: 0 };
          rows.set(key, row);
          const cpu0 = treeCpuMs(t.server.pid);
          for (let i = 0; i < BLOCK; i++) {
            const { resetMs, stepMs } = await episode(t.server, e, VICTIM);
            row.step.push(stepMs);
            row.reset.push(resetMs);
          }
          row.cpuMs += treeCpuMs(t.server.pid) - cpu0;
          row.episodes += BLOCK;
        }
      }
    }
    console.log("| environment | tree | step p50 ms | step p90 ms | reset p50 ms | server CPU ms per episode | step p50 vs before | CPU vs before |");
    console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (const e of envs) {
      const before = trees[1] ? rows.get(`${e}|${trees[1].name}`) : undefined;
      for (const t of trees) {
        const row = rows.get(`${e}|${t.name}`)!;
        for (const xs of [row.step, row.reset]) xs.sort((a, b) => a - b);
        before?.step.sort((a, b) => a - b);
        const cpu = row.cpuMs / row.episodes;
        const ratio = (a: number, b: number | undefined) => (b && t !== trees[1] ? `${(a / b).toFixed(2)}x` : "—");
        console.log(`| ${e} | ${t.name} | ${fmt(percentile(row.step, 50), 1)} | ${fmt(percentile(row.step, 90), 1)} | ${fmt(percentile(row.reset, 50), 1)} | ${fmt(cpu, 1)} | ${ratio(percentile(row.step, 50), before && percentile(before.step, 50))} | ${ratio(cpu, before && before.cpuMs / before.episodes)} |`);
      }
    }
    if (rg) await attackPhase(trees);
  } finally {
    await Promise.all(trees.map((t) => t.server.stop()));
  }
}

/** The victim's rg-leg-counting steps for `seconds`, alone or beside the attacker's stalling answers. */
async function victimSteps(server: BenchServer, seconds: number, attacked: boolean): Promise<{ ms: number[]; unanswered: number; failed: number }> {
  let stop = false;
  const attacks: Promise<unknown>[] = [];
  if (attacked) {
    const stallStep = async () => {
      while (!stop) {
        const r = await post(server, "/envs/rg-countdown/reset", {}, ATTACKER);
        await post(server, "/envs/rg-countdown/step", { episode_id: r.body.episode_id, action: { content: STALL } }, ATTACKER);
        await post(server, "/envs/rg-countdown/close", { episode_id: r.body.episode_id }, ATTACKER);
      }
    };
    attacks.push(stallStep(), stallStep());
    attacks.push(post(server, "/envs/rg-countdown/score", { items: Array.from({ length: 64 }, (_, i) => ({ completion: STALL, info: { dataset: "countdown", index: i } })) }, ATTACKER));
  }
  const ms: number[] = [];
  let unanswered = 0;
  let failed = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const left = end - performance.now();
    const t0 = performance.now();
    const played = episode(server, "rg-leg-counting", VICTIM).then(
      (r) => r.stepMs,
      () => (failed++, performance.now() - t0),
    );
    const done = await Promise.race([played, new Promise<undefined>((r) => setTimeout(() => r(undefined), left + 1000))]);
    if (done === undefined) {
      unanswered++;
      ms.push(performance.now() - t0);
      break;
    }
    ms.push(done);
  }
  stop = true;
  // The attacker's requests are left to end on their own deadlines (the /score's may outlive the phase).
  void Promise.allSettled(attacks);
  return { ms: ms.sort((a, b) => a - b), unanswered, failed };
}

async function attackPhase(trees: Tree[]): Promise<void> {
  console.log(`\n## rg-leg-counting steps alone and beside red team 5's stalling answers (${ATTACK_S} s each: 2 clients' worth of rg-countdown steps answering 9999**9999*… and a 64-item /score of them, from another client; load ${load()})`);
  console.log("| tree | phase | steps | p50 ms | p90 ms | max ms | failed | not answered within the phase |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const t of trees) {
    for (const attacked of [false, true]) {
      const { ms, unanswered, failed } = await victimSteps(t.server, ATTACK_S, attacked);
      console.log(`| ${t.name} | ${attacked ? "beside the attack" : "alone"} | ${ms.length} | ${fmt(percentile(ms, 50), 1)} | ${fmt(percentile(ms, 90), 1)} | ${fmt(ms.at(-1) ?? 0, 0)} | ${failed} | ${unanswered} |`);
    }
  }
}
