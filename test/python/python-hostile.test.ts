/**
 * Python environments that misbehave, against a live server while other clients are served: a
 * respond, a reward or a generator that never returns (the worker's deadline: that call fails with a
 * coded error, the episode is kept; a generator's worker is replaced, a respond's or a reward's own
 * process is killed), a call's process that dies, a worker that cannot start again, one that floods its
 * output, replies over the message limit (refused by the worker, or cut off by the server). Meanwhile
 * a TypeScript and another Python environment are played without a failure and without waiting.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpuSlowdown } from "../helpers/slowdown.ts";
import { request } from "../helpers/http.ts";
import { pythonWorkers, WORKER_PYTHON } from "../helpers/python-workers.ts";
import { spawnServe, type ServeProcess } from "../helpers/serve-process.ts";

let server: ServeProcess;

beforeAll(async () => {
  server = await spawnServe(["reverse-text", "./envs/reverse-text/env.py", "./test/fixtures/python/hostile_env.py", "--port", "0"], {
    ...WORKER_PYTHON,
    ENVWORKER_PYTHON_TIMEOUT_S: "2",
    // The Python call's deadline is what these tests check. It is on the run clock (it stretches
    // while the worker waits for a CPU); the environment call's own deadline no longer counts the
    // thread's wait for the worker (test/python/python-deadlines.test.ts), and is kept out of the way.
    ENVWORKER_ENV_TIMEOUT_S: "120",
    ENVWORKER_PYTHON_MAX_MESSAGE_MB: "4",
  });
  // Every thread's workers started and the data read: the probes below measure serving, not start-up.
  for (let i = 0; i < 8; i++) {
    for (const env of ["reverse-text", "reverse-text-py", "py-hostile"]) {
      const r = await post(`/envs/${env}/reset`, {});
      await post(`/envs/${env}/step`, { episode_id: r.body.episode_id, action: { content: "done" } });
    }
  }
}, 180_000);
afterAll(async () => {
  await server?.stop();
});

async function waitFor(done: () => boolean, timeoutMs = 10_000): Promise<void> {
  for (const end = performance.now() + timeoutMs; !done(); await new Promise((r) => setTimeout(r, 20))) {
    if (performance.now() > end) throw new Error("waited too long");
  }
}

/** POST to the live server (test/helpers/http.ts). */
const post = (path: string, body: unknown) => request("POST", `${server.url}${path}`, body);

async function reset(): Promise<string> {
  const r = await post("/envs/py-hostile/reset", { seed: 1 });
  expect(r.status).toBe(200);
  return r.body.episode_id as string;
}
const step = (episode_id: string, content: string) => post("/envs/py-hostile/step", { episode_id, action: { content } });

/** Other clients' episodes, played in a loop while `during` runs: every one must succeed, promptly. */
async function whileServing<T>(during: () => Promise<T>): Promise<{ value: T; played: number; slowestMs: number; failures: string[] }> {
  let stop = false;
  let played = 0;
  let slowestMs = 0;
  const failures: string[] = [];
  const play = async (env: string) => {
    while (!stop) {
      const t0 = performance.now();
      const r = await post(`/envs/${env}/reset`, {});
      const s = r.status === 200 ? await post(`/envs/${env}/step`, { episode_id: r.body.episode_id, action: { content: "<reversed_text>x</reversed_text>" } }) : r;
      slowestMs = Math.max(slowestMs, performance.now() - t0);
      if (s.status !== 200) failures.push(`${env}: ${s.status} ${JSON.stringify(s.body).slice(0, 200)}`);
      played++;
      await new Promise((res) => setTimeout(res, 20));
    }
  };
  const loops = [play("reverse-text"), play("reverse-text-py")];
  try {
    return { value: await during(), played, slowestMs, failures };
  } finally {
    stop = true;
    await Promise.all(loops);
  }
}

describe("hostile Python environments", () => {
  it("a respond that never returns costs that call a TIMEOUT (504); the episode goes on", async () => {
    const id = await reset();
    const { value: r, played, slowestMs, failures } = await whileServing(() => step(id, "hang"));
    expect(r.status).toBe(504); // EXECUTION_ERROR with reason TIMEOUT, as a TypeScript environment's deadline
    expect(r.body.error.code).toBe("EXECUTION_ERROR");
    expect(r.body.error.details?.reason).toBe("TIMEOUT");
    const next = await step(id, "hello");
    expect(next.status).toBe(200);
    // The state is the one before the failed call: the hung turn never happened.
    expect(next.body.observation.messages).toEqual([{ role: "user", content: "seen 1" }]);
    expect(failures).toEqual([]);
    expect(played).toBeGreaterThan(2);
    const slowdown = cpuSlowdown();
    expect(slowestMs, `load factor ${slowdown.toFixed(2)}`).toBeLessThan(1500 * slowdown);
  }, 120_000);

  it("a generator that never returns: the reset fails with TIMEOUT (504), the next one works", async () => {
    const { value: r, failures } = await whileServing(() => post("/envs/py-hostile/reset", { args: { hang: true } }));
    expect(r.status).toBe(504);
    expect(r.body.error.details?.reason).toBe("TIMEOUT");
    expect(failures).toEqual([]);
    expect((await post("/envs/py-hostile/reset", {})).status).toBe(200);
  }, 120_000);

  it("a reward that never returns scores 0 with its error; the episode ends", async () => {
    const id = await reset();
    const r = await step(id, "done spin");
    // The reply's "done" is false for "done spin": the turn limit is not reached, so play to the end.
    expect(r.status).toBe(200);
    const end = await step(id, "done");
    expect(end.status).toBe(200);
    expect(end.body.done).toBe(true);
    const scored = await post("/envs/py-hostile/score", { items: [{ completion: [{ role: "assistant", content: "spin" }] }] });
    expect(scored.status).toBe(200);
    expect(scored.body.results[0].reward).toBe(0);
    expect(JSON.stringify(scored.body.results[0])).toMatch(/TIMEOUT|longer than/);
  }, 120_000);

  it("a call whose process dies costs that call a coded error (CRASHED); the episode goes on", async () => {
    const id = await reset();
    const { value: r, failures } = await whileServing(() => step(id, "crash"));
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(422);
    expect(r.body.error.details?.reason).toBe("CRASHED");
    const again = await step(id, "again");
    expect(again.status, JSON.stringify(again.body).slice(0, 500)).toBe(200);
    expect(failures).toEqual([]);
  }, 120_000);

  it("a worker that cannot start again costs the call a coded error (START) with its reason; once it can, the episode goes on", async () => {
    const id = await reset();
    // A call's own crash no longer costs its worker (it ran in a child of its own), so the workers
    // are killed from outside; while the marker exists the fixture exits at import, so the worker
    // that replaces them (the call's second attempt too) dies before it is ready.
    const workers = pythonWorkers(server.pid, "hostile_env.py");
    expect(workers.length).toBeGreaterThan(0);
    const marker = new URL("../fixtures/python/exit-at-import", import.meta.url);
    writeFileSync(marker, "");
    let r: Awaited<ReturnType<typeof step>>;
    try {
      for (const pid of workers) process.kill(pid, "SIGKILL");
      await waitFor(() => workers.every((pid) => !existsSync(`/proc/${pid}/stat`) || readFileSync(`/proc/${pid}/stat`, "latin1").split(") ")[1]!.startsWith("Z")));
      r = await step(id, "hello");
    } finally {
      rmSync(marker, { force: true });
    }
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(422);
    expect(r.body.error.details?.reason).toBe("START");
    expect(r.body.error.message).toMatch(/stopped before it was ready \(exit code 5/);
    const again = await step(id, "again");
    expect(again.status, JSON.stringify(again.body).slice(0, 500)).toBe(200);
    expect(again.body.observation.messages).toEqual([{ role: "user", content: "seen 1" }]);
  }, 120_000);

  it("a flood of output is dropped, not held; the step is answered", async () => {
    const id = await reset();
    const { value: r, failures, slowestMs } = await whileServing(() => step(id, "flood"));
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    expect(failures).toEqual([]);
    const slowdown = cpuSlowdown();
    expect(slowestMs, `load factor ${slowdown.toFixed(2)}`).toBeLessThan(1500 * slowdown);
    // 4 MB written by the environment; the server's log gets its 32 KiB a minute and a count.
    expect(server.stderr().length + server.stdout().length).toBeLessThan(256 * 1024);
  }, 120_000);

  it("replies over the message limit fail as TOO_LARGE or CRASHED, never held whole", async () => {
    const id = await reset();
    const { value: huge, failures } = await whileServing(() => step(id, "huge"));
    expect(huge.status, JSON.stringify(huge.body).slice(0, 500)).toBe(422);
    expect(huge.body.error.details?.reason).toBe("TOO_LARGE");
    const raw = await step(id, "raw");
    expect(raw.status, JSON.stringify(raw.body).slice(0, 500)).toBe(422);
    expect(["TOO_LARGE", "CRASHED"], JSON.stringify(raw.body).slice(0, 500)).toContain(raw.body.error.details?.reason);
    expect((await step(id, "fine")).status).toBe(200);
    expect(failures).toEqual([]);
  }, 120_000);
});
