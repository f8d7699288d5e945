/**
 * Judged rewards on workerd (the deployable bundle in Miniflare): the judge is named by the
 * Worker's vars (as wrangler.toml's [vars] or `wrangler secret put` would), asked through fetch
 * from the Durable Object of an episode and from the Worker for `POST /score`.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { get, post } from "../../helpers/http.ts";
import { judgeEnv, startMockJudge, type MockJudge } from "../../helpers/mock-judge.ts";
import { buildWorkerBundle, startWorkerd, type WorkerdServer } from "../../helpers/workerd.ts";

let tmp: string;
let server: WorkerdServer;
let mock: MockJudge;
let attacker: MockJudge;

const reply = (exact: string) => `Explanation: I know this.\nExact Answer: ${exact}\nConfidence: 90%`;
const base = () => `${server.url}/envs/open-qa`;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "envworker-judge-workerd-"));
  mock = await startMockJudge();
  attacker = await startMockJudge();
  const bundle = await buildWorkerBundle(join(tmp, "dist"));
  server = await startWorkerd(bundle, join(tmp, "do"), judgeEnv(mock, { ENVWORKER_JUDGE_TIMEOUT_S: "2", ENVWORKER_JUDGE_RETRIES: "1" }));
}, 180_000);

afterAll(async () => {
  await server?.dispose();
  await mock?.close();
  await attacker?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

async function play(index: number, text: string) {
  const r = await post(`${base()}/reset`, { index, split: "train" });
  expect(r.status).toBe(200);
  return post(`${base()}/step`, { episode_id: r.body.episode_id, action: { content: text } });
}

describe("open-qa on workerd with a judge", () => {
  it("an episode (in its Durable Object) is judged: verdict, reasoning in info, cost in metrics", async () => {
    const right = await play(2, reply("Canberra"));
    expect(right.status).toBe(200);
    expect(right.body.reward).toBe(1);
    expect(right.body.observation.metrics).toMatchObject({ correct: 1, judge_calls: 1, judge_cache_hits: 0 });
    expect(right.body.observation.metrics.judge_prompt_tokens).toBeGreaterThan(0);
    // The verdict and the judge's reasoning line; never its reply.
    expect(right.body.observation.info.judge.correct).toEqual({ verdict: true, reason: expect.stringContaining("matches") });
    const wrong = await play(2, reply("Sydney"));
    expect(wrong.body.reward).toBe(0);
    expect(mock.calls.at(-1)!.headers.authorization).toBe("Bearer sk-operator");
  });

  it("the same judge input is answered from the isolate's cache", async () => {
    const calls = mock.calls.length;
    const again = await play(2, reply("Canberra"));
    expect(again.body.reward).toBe(1);
    expect(again.body.observation.metrics).toMatchObject({ judge_calls: 0, judge_cache_hits: 1 });
    expect(mock.calls.length).toBe(calls);
  });

  it("POST /score takes groups; no client-controlled URL, model or key reaches the judge", async () => {
    const evil = { ENVWORKER_JUDGE_URL: attacker.url, judge_url: attacker.url, base_url: attacker.url, model: "evil", api_key: "sk-evil" };
    const headers = { "x-envworker-judge-url": attacker.url, "openai-base-url": attacker.url, authorization: "Bearer sk-evil" };
    // open-qa's row q19 (Canada, Ottawa): the judge grades the server's question and answer.
    const item = (a: string) => ({ completion: reply(a), info: { ...evil, id: "q19" } });
    const res = await post(`${base()}/score`, { groups: [[item("Ottawa"), item("Toronto"), item("Ottawa")]] }, headers);
    expect(res.status).toBe(200);
    expect(res.body.groups[0].map((s: { reward: number }) => s.reward)).toEqual([1, 0, 1]);
    expect(res.body.groups[0].map((s: { metrics: Record<string, number> }) => s.metrics.group_agreement)).toEqual([2 / 3, 1 / 3, 2 / 3]);
    const reset = await post(`${base()}/reset`, { args: evil }, headers);
    expect(reset.status).toBe(400);
    expect(attacker.calls).toHaveLength(0);
    for (const call of mock.calls) {
      expect(call.body.model).toBe("mock-judge");
      expect(call.headers.authorization).toBe("Bearer sk-operator");
    }
  });

  it("a failing judge is a coded reward error; a judge outage costs only that reward", async () => {
    mock.failNext(2, 500);
    const failed = await play(5, reply("Jupiter"));
    expect(failed.status).toBe(200);
    expect(failed.body.observation.info.reward_errors.correct).toMatch(/^JUDGE_FAILED: the judge failed \(2 attempts\): HTTP 500/);
    expect(failed.body.observation.metrics.has_exact_answer).toBe(1);
    await mock.close();
    const out = await post(`${base()}/score`, { items: [{ completion: reply("Jupiter"), info: { id: "q05" } }] });
    expect(out.status).toBe(200);
    expect(out.body.results[0].errors.correct).toMatch(/^JUDGE_FAILED: /);
    expect((await get(`${server.url}/health`)).status).toBe(200);
    const rt = await post(`${server.url}/envs/reverse-text/reset`, { seed: 1 });
    expect(rt.status).toBe(200);
  });
});
