/**
 * A Python environment's calls under the server's deadline per environment call
 * (ENVWORKER_ENV_TIMEOUT_S), which counts the call's own computing in its thread: the wait for the
 * thread's Python worker has deadlines of its own (ENVWORKER_PYTHON_START_TIMEOUT_S, and
 * ENVWORKER_PYTHON_TIMEOUT_S on the run clock) and does not count there, as a sandbox run's or a
 * judge's does not. Before, it did: on a loaded machine (two copies of the suite) the environment
 * call's wall-clock deadline came before the worker's own, and calls failed 504.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../helpers/http.ts";
import { WORKER_PYTHON } from "../helpers/python-workers.ts";
import { spawnServe, type ServeProcess } from "../helpers/serve-process.ts";

let server: ServeProcess;
beforeAll(async () => {
  // respond waits 3 s: past the environment call's 2 s, within the worker's 10 s.
  server = await spawnServe(["./test/fixtures/python/slow_env.py", "--port", "0"], { ...WORKER_PYTHON, ENVWORKER_ENV_TIMEOUT_S: "2", ENVWORKER_PYTHON_TIMEOUT_S: "10" });
}, 180_000);
afterAll(async () => {
  await server?.stop();
});

const post = (path: string, body: unknown) => request("POST", `${server.url}/envs/py-slow${path}`, body);

describe("the deadline of an environment call, for a Python environment", () => {
  it("does not count the wait for the thread's Python worker: a respond and a generate of 3 s each are answered under a deadline of 2", async () => {
    const reset = await post("/reset", { seed: 1 });
    expect(reset.status, JSON.stringify(reset.body).slice(0, 300)).toBe(200);
    const step = await post("/step", { episode_id: reset.body.episode_id, action: { content: "done" } });
    expect(step.status, JSON.stringify(step.body).slice(0, 300)).toBe(200);
    expect(step.body).toMatchObject({ done: true, reward: 1, observation: { messages: [{ role: "user", content: "fine" }] } });
    // generate, asked synchronously while the reset's code runs: 3 s for seed 7.
    const slowReset = await post("/reset", { seed: 7 });
    expect(slowReset.status, JSON.stringify(slowReset.body).slice(0, 300)).toBe(200);
  }, 120_000);
});
