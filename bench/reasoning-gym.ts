/**
 * A reasoning-gym environment served by envworker (`serve reasoning-gym:leg_counting`: the catalog
 * in a Python worker behind the TypeScript engine) against OpenEnv's own FastAPI server running a
 * minimal OpenEnv environment that wraps the same dataset the same way
 * (bench/reasoning_gym_openenv.py), through one client: OpenEnv's GenericEnvClient over the
 * WebSocket, one episode after another (reset, then a step with the gold answer; the step is timed),
 * in alternating rounds so both see the same machine.
 *
 *   ENVWORKER_PYTHON=/path/to/python   has reasoning-gym, readable by the workers' own user
 *   BENCH_OPENENV_PYTHON=/path/to/python   has openenv-core and reasoning-gym (the trainers venv)
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { promisify } from "node:util";
import { fmt, startBenchServer } from "./server.ts";

const DATASET = process.env.BENCH_RG_DATASET ?? "leg_counting";
const EPISODES = Number(process.env.BENCH_EPISODES ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SCRIPT = new URL("./reasoning_gym_openenv.py", import.meta.url).pathname;

async function startOpenEnv(python: string): Promise<{ url: string; child: ChildProcess }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(python, [SCRIPT, "server", String(port), DATASET], { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise<string>((ok, fail) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += String(d);
      const m = /serving on (http:\/\/\S+)/.exec(out);
      if (m) ok(m[1]!);
    });
    child.once("exit", (code) => fail(new Error(`the OpenEnv server exited (${code}) before listening: ${out}`)));
  });
  return { url, child };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

export async function benchReasoningGym(): Promise<void> {
  const python = process.env.BENCH_OPENENV_PYTHON ?? process.env.ENVWORKER_PYTHON ?? "python3";
  const worker = process.env.ENVWORKER_PYTHON ?? "python3";
  for (const [who, modules] of [[python, "openenv, reasoning_gym"], [worker, "reasoning_gym"]] as const) {
    try {
      await promisify(execFile)(who, ["-c", `import ${modules}`]);
    } catch {
      console.log(`\n## reasoning-gym: skipped (${who} cannot import ${modules}; set ENVWORKER_PYTHON and BENCH_OPENENV_PYTHON, see bench/reasoning-gym.ts)`);
      return;
    }
  }
  const ours = await startBenchServer({}, { envs: [`reasoning-gym:${DATASET}`] });
  const theirs = await startOpenEnv(python);
  try {
    const name = `rg-${DATASET.replaceAll("_", "-")}`;
    const targets = [`${ours.url}/envs/${name}=envworker`, `${theirs.url}=openenv`];
    // A warm-up round (the dataset built, every connection's first call made), then the measured ones.
    await promisify(execFile)(python, [SCRIPT, "client", DATASET, "20", "2", ...targets], { maxBuffer: 1 << 26 });
    const { stdout } = await promisify(execFile)(python, [SCRIPT, "client", DATASET, String(EPISODES), String(ROUNDS), ...targets], { maxBuffer: 1 << 26 });
    const times = JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, number[]>;
    console.log(`\n## A reasoning-gym step (${DATASET}): envworker against OpenEnv's FastAPI server, one client (GenericEnvClient, WebSocket), ${ROUNDS} alternating rounds of ${EPISODES} episodes`);
    console.log("| server | steps | p50 ms | p90 ms | p99 ms | p50 vs OpenEnv |");
    console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
    const base = pct([...times.openenv!].sort((a, b) => a - b), 50);
    for (const label of ["envworker", "openenv"]) {
      const t = [...times[label]!].sort((a, b) => a - b);
      console.log(`| ${label} | ${t.length} | ${fmt(pct(t, 50), 2)} | ${fmt(pct(t, 90), 2)} | ${fmt(pct(t, 99), 2)} | ${(pct(t, 50) / base).toFixed(2)}x |`);
    }
  } finally {
    theirs.child.kill();
    await ours.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchReasoningGym();
