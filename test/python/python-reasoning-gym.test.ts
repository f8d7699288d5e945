/**
 * `envworker serve reasoning-gym:...` (src/node/python-envs/catalogs.ts; the catalog is
 * clients/python/src/envworker/catalogs/reasoning_gym.py): the named datasets are served, an
 * episode played over HTTP gets reasoning-gym's reward (the gold answer from GET /state scores 1,
 * another item's answer less), POST /score with the episode's info and args gives the episode's
 * reward, and a dataset whose tasks depend on string hashing gives, in the worker, the task
 * reasoning-gym gives under PYTHONHASHSEED=0 (src/node/python-envs/settings.ts runs workers with it).
 *
 * Needs reasoning-gym in ENVWORKER_PYTHON's interpreter (the trainers venv of scripts/trainers-venv.sh
 * has it); skipped, saying so, where it is not.
 */
import { execFileSync } from "node:child_process";
import { serverPython } from "../helpers/python-workers.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnServe, type ServeProcess } from "../helpers/serve-process.ts";

// The interpreter the server will run its workers on: a python3 they cannot read is passed over.
const python = serverPython() ?? "python3";
function hasReasoningGym(): boolean {
  try {
    execFileSync(python, ["-c", "import reasoning_gym"], { stdio: "ignore", timeout: 120_000 });
    return true;
  } catch {
    return false;
  }
}
const available = hasReasoningGym();
if (!available) console.warn(`test/python/python-reasoning-gym.test.ts: skipped: ${python} cannot import reasoning_gym (pip install reasoning-gym there, or set ENVWORKER_PYTHON)`);

const DATASETS = ["leg_counting", "basic_arithmetic", "knight_swap", "n_queens"];
const NAMES = ["rg-leg-counting", "rg-basic-arithmetic", "rg-knight-swap", "rg-n-queens"];
let server: ServeProcess;

async function post(path: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

// 300 s a test: at load ~15 (two copies of the suite at once) playing four datasets' episodes took more than 90 s.
describe.skipIf(!available)("reasoning-gym served as envworker environments", { timeout: 300_000 }, () => {
  beforeAll(async () => {
    server = await spawnServe(["--port", "0", `reasoning-gym:${DATASETS.join(",")}`]);
  }, 300_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("serves the named datasets", async () => {
    const envs = (await (await fetch(`${server.url}/envs`)).json()) as { envs: { name: string }[] };
    expect(envs.envs.map((e) => e.name).sort()).toEqual([...NAMES].sort());
  });

  it("plays episodes whose reward /score recomputes from the episode's info", async () => {
    for (const name of NAMES) {
      for (const seed of [1, 2024]) {
        const args = name === "rg-basic-arithmetic" ? { min_terms: 3, max_terms: 4 } : {};
        const reset = await post(`/envs/${name}/reset`, { seed, args });
        expect(reset.status, JSON.stringify(reset.json)).toBe(200);
        const messages = reset.json.observation.messages as { role: string; content: string }[];
        expect(messages[0]!.role).toBe("system");
        expect(messages[0]!.content).toContain("<answer>answer here</answer>");
        // A wrong answer first: the finished episode's GET /state reports its answer and info.
        const play = async (episode: string, text: string) => {
          const step = await post(`/envs/${name}/step`, { episode_id: episode, action: { content: text } });
          expect(step.status, JSON.stringify(step.json)).toBe(200);
          expect(step.json.done).toBe(true);
          const state = (await (await fetch(`${server.url}/envs/${name}/state?episode_id=${episode}`)).json()) as { answer: string; info: { dataset: string; index: number } };
          const scored = await post(`/envs/${name}/score`, { items: [{ completion: text, info: state.info, args }] });
          expect(scored.status, JSON.stringify(scored.json)).toBe(200);
          expect(scored.json.results[0].reward).toBe(step.json.reward);
          return { reward: step.json.reward as number, state };
        };
        const wrong = await play(reset.json.episode_id as string, "<answer>no idea</answer>");
        expect(wrong.state.info).toEqual({ dataset: name.slice(3).replaceAll("-", "_"), index: seed });
        expect(wrong.reward).toBeLessThan(1);
        const again = await post(`/envs/${name}/reset`, { seed, args });
        expect(again.json.observation.messages).toEqual(messages);
        const gold = await play(again.json.episode_id as string, `Thinking it over.\n<answer>${wrong.state.answer}</answer>`);
        expect(gold.reward, `${name} seed ${seed}: the gold answer`).toBe(1);
      }
    }
  });

  it("refuses args the dataset's config refuses, and info naming another item, with a JSON error", async () => {
    const bad = await post("/envs/rg-basic-arithmetic/reset", { seed: 1, args: { min_terms: 5, max_terms: 2 } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe("VALIDATION_ERROR");
    const unknown = await post("/envs/rg-leg-counting/reset", { seed: 1, args: { seed: 3 } });
    expect(unknown.status).toBe(400);
    const forged = await post("/envs/rg-leg-counting/score", { items: [{ completion: "<answer>4</answer>", info: { dataset: "leg_counting", index: -1 } }] });
    expect(forged.status).toBe(200);
    expect(forged.json.results[0].reward).toBe(0);
    expect(JSON.stringify(forged.json.results[0])).toContain("index must be an integer");
  });

  it("draws a hash-dependent dataset's task as reasoning-gym does under PYTHONHASHSEED=0", async () => {
    const seed = 31;
    const reset = await post("/envs/rg-knight-swap/reset", { seed });
    const prompt = (reset.json.observation.messages as { role: string; content: string }[]).find((m) => m.role === "user")!.content;
    const code = `import json, random, reasoning_gym; ds = reasoning_gym.create_dataset("knight_swap", seed=0, size=2**31); random.seed("knight_swap:${seed}"); print(json.dumps(ds[${seed}]["question"]))`;
    const expected = JSON.parse(execFileSync(python, ["-c", code], { env: { ...process.env, PYTHONHASHSEED: "0" }, encoding: "utf8", timeout: 120_000 })) as string;
    expect(prompt).toBe(expected);
  });
});
