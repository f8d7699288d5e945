/**
 * Red team 5 against reasoning-gym (issue 39): answers that make sympy multiply 120 exact
 * 40,000-digit integers (`9999**9999*…`, 1.3 KB, past the answer guard) in rg-countdown's scorer,
 * as steps and as one 64-item `/score`, from one client, while another client plays
 * rg-leg-counting: each stalling call runs in a process of its own, up to its deadline, two of its
 * client's at a time, so the other client's steps are served within the load-scaled bound.
 *
 * Needs reasoning-gym in ENVWORKER_PYTHON's interpreter (the trainers venv has it); skipped, saying so, where it is not.
 */
import { execFileSync } from "node:child_process";
import { serverPython } from "../helpers/python-workers.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../helpers/http.ts";
import { spawnServe, type ServeProcess } from "../helpers/serve-process.ts";
import { cpuSlowdown, loadDuring, median } from "../helpers/slowdown.ts";

// The interpreter the server will run its workers on: a python3 they cannot read is passed over.
const python = serverPython() ?? "python3";
const available = (() => {
  try {
    execFileSync(python, ["-c", "import reasoning_gym"], { stdio: "ignore", timeout: 120_000 });
    return true;
  } catch {
    return false;
  }
})();
if (!available) console.warn(`test/python/python-reasoning-gym-stall.test.ts: skipped: ${python} cannot import reasoning_gym (pip install reasoning-gym there, or set ENVWORKER_PYTHON)`);

const VICTIM = { authorization: "Bearer rg-victim" };
const ATTACKER = { authorization: "Bearer rg-attacker" };
const STALL = `<answer>${Array.from({ length: 120 }, () => "9999**9999").join("*")}*1</answer>`;
let server: ServeProcess;

const post = (path: string, body: unknown, who: Record<string, string>) => request("POST", `${server.url}${path}`, body, who);

describe.skipIf(!available)("reasoning-gym answers that stall their scorer", { timeout: 300_000 }, () => {
  beforeAll(async () => {
    server = await spawnServe(["--port", "0", "reasoning-gym:leg_counting,countdown"], { ENVWORKER_TOKEN: "rg-victim,rg-attacker", ENVWORKER_PYTHON_TIMEOUT_S: "4", ENVWORKER_ENV_TIMEOUT_S: "120" });
    for (let i = 0; i < 4; i++) await play();
  }, 300_000);
  afterAll(async () => {
    await server?.stop();
  });

  /** One rg-leg-counting episode of the victim's: its step's milliseconds. */
  async function play(): Promise<number> {
    const r = await post("/envs/rg-leg-counting/reset", {}, VICTIM);
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    const t0 = performance.now();
    const s = await post("/envs/rg-leg-counting/step", { episode_id: r.body.episode_id, action: { content: "<answer>4</answer>" } }, VICTIM);
    expect(s.status, JSON.stringify(s.body).slice(0, 300)).toBe(200);
    expect(s.body.done).toBe(true);
    return performance.now() - t0;
  }

  it("another client's steps are served promptly while a client's answers stall their scorer, as steps and as a 64-item /score", async () => {
    const attack = async () => {
      const r = await post("/envs/rg-countdown/reset", {}, ATTACKER);
      return post("/envs/rg-countdown/step", { episode_id: r.body.episode_id, action: { content: STALL } }, ATTACKER);
    };
    // The /score's 64 stalling items would take 64 x 4 s / 2: its client gives up once the victim has played.
    const leaving = new AbortController();
    const score = fetch(`${server.url}/envs/rg-countdown/score`, {
      method: "POST",
      headers: { "content-type": "application/json", ...ATTACKER },
      body: JSON.stringify({ items: Array.from({ length: 64 }, (_, i) => ({ completion: STALL, info: { dataset: "countdown", index: i } })) }),
      signal: leaving.signal,
    }).catch(() => undefined);
    const stalled = Promise.all([attack(), attack()]);
    // The load while the attack runs (its own stalling processes included): read after it, the
    // machine may be quiet again and the bound too tight for what the steps met.
    const load = loadDuring({ everyMs: 1000 });
    const steps: number[] = [];
    const end = performance.now() + 10_000;
    while (performance.now() < end) steps.push(await play());
    const reads = load.stop();
    leaving.abort();
    await score;
    // The stalling steps end at their deadline: 0 for a reward that timed out (its error reported).
    for (const s of await stalled) expect(s.status === 200 ? s.body.reward : s.body.error?.details?.reason, JSON.stringify(s.body).slice(0, 300)).toBeOneOf([0, "TIMEOUT"]);
    const slowdown = Math.max(cpuSlowdown(), reads.length ? median(reads) : 1);
    const shown = `steps (ms): ${steps.map((ms) => ms.toFixed(0)).join(" ")}; load factor ${slowdown.toFixed(2)}`;
    console.log(`[rg-stall] ${shown}`);
    expect(steps.length, `${steps.length} steps in 10 s at load factor ${slowdown.toFixed(2)}`).toBeGreaterThan(10 / slowdown);
    expect(Math.max(...steps), shown).toBeLessThan(1500 * slowdown);
  });
});
