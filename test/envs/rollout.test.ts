/** Rollouts: retries, timeouts, the action built from the model's reply, both episode drivers. */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import type { Environment } from "../../src/env/environment.ts";
import type { StepResult } from "../../src/env/episode.ts";
import type { Action } from "../../src/env/messages.ts";
import { sequenceRatio } from "../../src/pycompat/difflib.ts";
import {
  backoffDelay,
  InProcessDriver,
  parseRetryAfter,
  planJobs,
  RemoteDriver,
  RetriesExhaustedError,
  runRollout,
  runRollouts,
  sleep,
  toAction,
  withRetry,
  type EpisodeDriver,
  type ResetParams,
  type RetryPolicy,
  type RolloutOptions,
} from "../../src/eval/rollout.ts";
import { lastUser, rightReverse, startFakeOpenAI, wrongReverse, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { guessNumber } from "../fixtures/test-envs.ts";
import { alphabetSortGold } from "../helpers/oracles.ts";

const FAST: RetryPolicy = { maxAttempts: 5, baseDelayMs: 1, maxDelayMs: 5 };
const env = (name: string): Environment => environments.find((e) => e.name === name)!;

let fake: FakeOpenAI;
let client: OpenAI;
let server: RunningServer;

beforeAll(async () => {
  fake = await startFakeOpenAI(rightReverse);
  client = new OpenAI({ baseURL: fake.baseURL, apiKey: "sk-test", maxRetries: 0 });
  server = await startServer(environments, { port: 0 });
});
afterAll(async () => {
  await fake?.close();
  await server?.close();
});

function opts(driver: EpisodeDriver, extra: Partial<RolloutOptions> = {}): RolloutOptions {
  return {
    model: { client, model: "fake-model", sampling: { temperature: 0 } },
    driver,
    reset: { seed: 0, index: 0 },
    example_id: 0,
    rollout: 0,
    retry: FAST,
    timeoutMs: 5000,
    ...extra,
  };
}

describe("retry helpers", () => {
  it("parses Retry-After as seconds, an HTTP date, or retry-after-ms", () => {
    const now = Date.parse("2025-01-01T00:00:00Z");
    expect(parseRetryAfter(new Headers({ "retry-after": "3" }), now)).toBe(3000);
    expect(parseRetryAfter(new Headers({ "retry-after": "0.25" }), now)).toBe(250);
    expect(parseRetryAfter(new Headers({ "retry-after": "Wed, 01 Jan 2025 00:00:07 GMT" }), now)).toBe(7000);
    expect(parseRetryAfter(new Headers({ "retry-after": "Tue, 31 Dec 2024 23:00:00 GMT" }), now)).toBe(0);
    expect(parseRetryAfter(new Headers({ "retry-after-ms": "120", "retry-after": "9" }), now)).toBe(120);
    expect(parseRetryAfter(new Headers({ "retry-after": "soon" }), now)).toBeUndefined();
    expect(parseRetryAfter(new Headers(), now)).toBeUndefined();
  });

  it("backs off exponentially with jitter in [0.5, 1) of the capped delay", () => {
    const p = (r: number): RetryPolicy => ({ maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000, random: () => r });
    expect([1, 2, 3, 4, 5].map((k) => backoffDelay(k, p(0)))).toEqual([50, 100, 200, 400, 500]);
    expect([1, 2, 3, 4, 5].map((k) => backoffDelay(k, p(0.999999)))).toEqual([1, 2, 3, 4, 5].map((k) => expect.closeTo(Math.min(1000, 100 * 2 ** (k - 1)), 0)));
  });

  it("retries retryable errors up to maxAttempts, then reports the last one", async () => {
    let calls = 0;
    const delays: number[] = [];
    const err = await withRetry(
      async () => {
        calls++;
        throw new Error(`boom ${calls}`);
      },
      { policy: { ...FAST, maxAttempts: 4, random: () => 0 }, classify: () => ({ retry: true }), onRetry: (_k, d) => delays.push(d) },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetriesExhaustedError);
    expect((err as Error).message).toBe("boom 4 (gave up after 4 attempts)");
    expect(calls).toBe(4);
    expect(delays).toEqual([0.5, 1, 2]);
  });

  it("does not retry what is not retryable, and honours the server's delay", async () => {
    let calls = 0;
    await expect(withRetry(async () => (calls++, Promise.reject(new Error("no"))), { policy: FAST, classify: () => ({ retry: false }) })).rejects.toThrow("no");
    expect(calls).toBe(1);
    const delays: number[] = [];
    let n = 0;
    const v = await withRetry(async () => (++n < 3 ? Promise.reject(new Error("busy")) : "ok"), {
      policy: FAST,
      classify: () => ({ retry: true, afterMs: 7 }),
      onRetry: (_k, d) => delays.push(d),
    });
    expect(v).toBe("ok");
    expect(delays).toEqual([7, 7]);
  });

  it("stops sleeping when the signal aborts", async () => {
    const ac = new AbortController();
    const t = performance.now();
    setTimeout(() => ac.abort(new Error("stop")), 20);
    await expect(sleep(10_000, ac.signal)).rejects.toThrow("stop");
    expect(performance.now() - t).toBeLessThan(1000);
  });
});

describe("toAction", () => {
  it("keeps content, tool calls and reasoning (reasoning_content or reasoning)", () => {
    expect(toAction({ content: "hi" })).toEqual({ content: "hi" });
    expect(toAction({ content: null, reasoning: "hmm" })).toEqual({ content: null, reasoning_content: "hmm" });
    expect(toAction({ content: "x", reasoning_content: "a", reasoning: "b" })).toEqual({ content: "x", reasoning_content: "a" });
    expect(
      toAction({
        content: "",
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "add", arguments: '{"a":1}' } },
          { function: { name: "mul", arguments: { a: 2 } } },
        ],
      }),
    ).toEqual({
      content: "",
      tool_calls: [
        { id: "call_a", type: "function", function: { name: "add", arguments: '{"a":1}' } },
        { id: "call_1", type: "function", function: { name: "mul", arguments: '{"a":2}' } },
      ],
    });
    expect(toAction({ content: "x", tool_calls: [] })).toEqual({ content: "x" });
  });

  it("refuses a tool call without a function name", () => {
    expect(() => toAction({ content: null, tool_calls: [{ id: "c", type: "function", function: { arguments: "{}" } }] })).toThrow(/malformed tool call #1/);
  });
});

describe("runRollout in process", () => {
  it("plays a single-turn episode: prompt, completion, answer, reward, usage, timing", async () => {
    fake.setModel(rightReverse);
    const r = await runRollout(opts(new InProcessDriver(env("reverse-text")), { reset: { seed: 3, index: 2 }, example_id: 2, rollout: 1 }));
    expect(r.error).toBeNull();
    expect(r).toMatchObject({ example_id: 2, rollout: 1, reset: { seed: 3, index: 2 }, reward: 1, metrics: { lcs_reward_func: 1 }, done: true, turns: 1, retries: 0 });
    expect(r.prompt.map((m) => m.role)).toEqual(["system", "user"]);
    const text = r.prompt[1]!.content!;
    expect(r.answer).toBe(Array.from(text).reverse().join(""));
    expect(r.info).toEqual({});
    expect(r.env_info).toMatchObject({ seed: 3, split: "train", index: 2, example_id: "train-2" });
    expect(r.completion).toEqual([{ role: "assistant", content: `<reversed_text>${r.answer}</reversed_text>` }]);
    expect(r.usage).toEqual({ prompt_tokens: 20, completion_tokens: 7, total_tokens: 27 });
    expect(r.timing.total_ms).toBeGreaterThanOrEqual(r.timing.generation_ms);
    expect(r.timing.env_ms).toBeGreaterThanOrEqual(r.timing.scoring_ms);
    // The request carried the conversation and the sampling args, without tools.
    expect(fake.requests).toHaveLength(1);
    const body = fake.requests[0]!.body;
    expect(body).toMatchObject({ model: "fake-model", temperature: 0, messages: r.prompt });
    expect(body.tools).toBeUndefined();
    expect(fake.requests[0]!.headers.get("authorization")).toBe("Bearer sk-test");
  });

  it("retries a 500 and then succeeds", async () => {
    fake.setModel((req, ctx) => (ctx.attempt === 1 ? { status: 500, error: "overloaded" } : rightReverse(req)));
    const r = await runRollout(opts(new InProcessDriver(env("reverse-text"))));
    expect(r).toMatchObject({ error: null, reward: 1, retries: 1 });
    expect(fake.requests).toHaveLength(2);
  });

  it("honours a 429's Retry-After (seconds) rather than its own tiny backoff", async () => {
    fake.setModel((req, ctx) => (ctx.attempt === 1 ? { status: 429, error: "slow down", headers: { "retry-after": "1" } } : rightReverse(req)));
    const t = performance.now();
    const r = await runRollout(opts(new InProcessDriver(env("reverse-text"))));
    expect(r).toMatchObject({ error: null, reward: 1, retries: 1 });
    expect(performance.now() - t).toBeGreaterThanOrEqual(950);
    expect(r.timing.generation_ms).toBeGreaterThanOrEqual(950);
  });

  it("gives up after maxAttempts on repeated 5xx, without retrying a 400", async () => {
    fake.setModel(() => ({ status: 503, error: "unavailable" }));
    const r = await runRollout(opts(new InProcessDriver(env("reverse-text")), { retry: { ...FAST, maxAttempts: 3 } }));
    expect(r.error).toBe("model: 503 unavailable (gave up after 3 attempts)");
    expect(r).toMatchObject({ reward: null, metrics: null, done: false, turns: 0, retries: 2 });
    expect(r.answer).not.toBeNull(); // the episode was reset: its example is known, and closed
    expect(fake.requests).toHaveLength(3);

    fake.setModel(() => ({ status: 400, error: "bad request" }));
    const bad = await runRollout(opts(new InProcessDriver(env("reverse-text"))));
    expect(bad.error).toBe("model: 400 bad request");
    expect(fake.requests).toHaveLength(1);
  });

  it("times out a reply that never comes, and closes the episode", async () => {
    fake.setModel(() => ({ hang: true }));
    const driver = new InProcessDriver(env("reverse-text"));
    const t = performance.now();
    const r = await runRollout(opts(driver, { timeoutMs: 200 }));
    expect(performance.now() - t).toBeLessThan(2000);
    expect(r.error).toBe("timed out: the rollout took longer than 200 ms");
    expect(r.reward).toBeNull();
    expect(driver.store.size).toBe(0);
  });

  it("records a response without choices as a model error", async () => {
    fake.setModel(() => ({ choices: [] }));
    const r = await runRollout(opts(new InProcessDriver(env("reverse-text"))));
    expect(r.error).toBe("model: the response has no choices");
  });

  it("plays a multi-turn episode, replaying the history and never sending reasoning back", async () => {
    fake.setModel((req) => ({ message: { content: alphabetSortGold(req.messages), reasoning: `thinking ${req.messages.length}` } }));
    const driver = new InProcessDriver(env("alphabet-sort"));
    const results = await Promise.all([0, 1, 2, 3, 4, 5].map((seed) => runRollout(opts(driver, { reset: { seed } }))));
    expect(results.every((r) => r.error === null && r.reward === 1)).toBe(true);
    const multi = results.find((r) => r.turns > 1)!;
    expect(multi).toBeDefined();
    const info = multi.info as { num_turns: number };
    expect(multi.turns).toBe(info.num_turns);
    // Completion: assistant, user, assistant, ... ending with the model's last answer.
    expect(multi.completion.map((m) => m.role)).toEqual(Array.from({ length: 2 * multi.turns - 1 }, (_, i) => (i % 2 === 0 ? "assistant" : "user")));
    const p = multi.prompt.length; // alphabet-sort has no system prompt: [user]
    expect(multi.completion[0]).toMatchObject({ role: "assistant", reasoning_content: `thinking ${p}` });
    for (const { body } of fake.requests) {
      for (const m of body.messages) expect(m).not.toHaveProperty("reasoning_content");
    }
    const last = fake.requests.filter((q) => q.body.messages[p - 1]!.content === multi.prompt[p - 1]!.content).at(-1)!;
    expect(last.body.messages).toHaveLength(p + 2 * (multi.turns - 1));
    const turns = results.reduce((s, r) => s + r.turns, 0);
    expect(fake.requests).toHaveLength(turns);
    // Usage is summed over the turns: 10 tokens per message sent, 7 per reply.
    expect(multi.usage.completion_tokens).toBe(7 * multi.turns);
    expect(multi.usage.prompt_tokens).toBe(Array.from({ length: multi.turns }, (_, t) => 10 * (p + 2 * t)).reduce((a, b) => a + b, 0));
  });

  it("ends a truncated episode and reports it", async () => {
    fake.setModel(() => ({ message: { content: "1" } }));
    const r = await runRollout(opts(new InProcessDriver(guessNumber), { reset: { seed: 1, args: { max: 1000 } } }));
    expect(r).toMatchObject({ error: null, done: true, truncated: true, turns: 4 });
    expect(r.metrics).toMatchObject({ num_guesses: 4 });
  });
});

/** A driver stub: an in-process episode whose observations also advertise tools. */
class ToolsDriver implements EpisodeDriver {
  readonly location = "stub";
  readonly actions: Action[] = [];
  constructor(private readonly inner: InProcessDriver) {}
  get env() {
    return this.inner.env;
  }
  async reset(p: ResetParams): Promise<StepResult> {
    const r = await this.inner.reset(p);
    return { ...r, observation: { ...r.observation, tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }] } as StepResult["observation"] };
  }
  step(id: string, action: Action) {
    this.actions.push(action);
    return this.inner.step(id, action);
  }
  close(id: string) {
    return this.inner.close(id);
  }
  example(id: string) {
    return this.inner.example(id);
  }
}

describe("tools", () => {
  it("passes the observation's tools and turns tool calls into the action", async () => {
    fake.setModel(() => ({ message: { content: null, tool_calls: [{ id: "call_9", type: "function", function: { name: "lookup", arguments: "not json" } }] } }));
    const driver = new ToolsDriver(new InProcessDriver(env("reverse-text")));
    const r = await runRollout(opts(driver));
    expect(fake.requests[0]!.body.tools).toEqual([{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }]);
    // Arguments that are not JSON are the model's problem: passed on, scored by the environment.
    expect(driver.actions).toEqual([{ content: null, tool_calls: [{ id: "call_9", type: "function", function: { name: "lookup", arguments: "not json" } }] }]);
    expect(r).toMatchObject({ error: null, reward: 0 });
  });

  it("records a malformed tool call as the rollout's error", async () => {
    fake.setModel(() => ({ message: { content: null, tool_calls: [{ type: "function", function: { arguments: "{}" } }] } }));
    const driver = new ToolsDriver(new InProcessDriver(env("reverse-text")));
    const r = await runRollout(opts(driver));
    expect(r.error).toMatch(/^model: malformed tool call #1 \(no function name\)/);
    expect(driver.actions).toEqual([]);
  });
});

describe("runRollout against a remote envworker", () => {
  it("plays the same episode over HTTP, with the answer and info of the finished episode", async () => {
    fake.setModel(rightReverse);
    const remote = new RemoteDriver(server.url, "reverse-text", { retry: FAST });
    const local = await runRollout(opts(new InProcessDriver(env("reverse-text")), { reset: { seed: 5, index: 4 } }));
    const r = await runRollout(opts(remote, { reset: { seed: 5, index: 4 } }));
    expect(r.error).toBeNull();
    expect(r).toMatchObject({ reward: 1, turns: 1 });
    expect(local.answer).toEqual(expect.any(String));
    expect(r.answer).toBe(local.answer);
    expect(r.info).toEqual(local.info);
    expect(r.prompt).toEqual(local.prompt);
    expect(r.completion).toEqual(local.completion);
    expect(r.env_info).toEqual(local.env_info);
    expect(server.store.size).toBe(0); // closed after the episode
  });

  it("reports environment errors (an index out of range) as the rollout's error", async () => {
    const r = await runRollout(opts(new RemoteDriver(server.url, "reverse-text", { retry: FAST }), { reset: { seed: 0, index: 100_000 } }));
    expect(r.error).toMatch(/^environment: reset: VALIDATION_ERROR: index 100000 is out of range/);
    const local = await runRollout(opts(new InProcessDriver(env("reverse-text")), { reset: { seed: 0, index: 100_000 } }));
    expect(local.error).toBe(r.error);
  });

  it("rejects a malformed action the same way in both modes", async () => {
    fake.setModel(() => ({ message: { content: "x", tool_calls: [{ id: "c".repeat(300), type: "function", function: { name: "f", arguments: "{}" } }] } }));
    const remote = await runRollout(opts(new RemoteDriver(server.url, "reverse-text", { retry: FAST })));
    const local = await runRollout(opts(new InProcessDriver(env("reverse-text"))));
    expect(remote.error).toMatch(/^environment: step: VALIDATION_ERROR/);
    expect(local.error).toMatch(/^environment: step: VALIDATION_ERROR/);
  });

  it("retries a reset refused with 429 (honouring Retry-After), never a step", async () => {
    fake.setModel(rightReverse);
    const seen: string[] = [];
    let refused = 0;
    const flaky: typeof fetch = async (input, init) => {
      const url = String(input);
      seen.push(url.slice(url.lastIndexOf("/") + 1));
      if (url.endsWith("/reset") && refused++ === 0) {
        return new Response(JSON.stringify({ error: { code: "CAPACITY_REACHED", message: "full" } }), { status: 429, headers: { "retry-after": "0" } });
      }
      if (url.endsWith("/step")) return new Response(JSON.stringify({ error: { code: "INTERNAL_ERROR", message: "flaky" } }), { status: 503 });
      return fetch(input, init);
    };
    const r = await runRollout(opts(new RemoteDriver(server.url, "reverse-text", { retry: FAST, fetch: flaky })));
    expect(seen).toEqual(["reset", "reset", "step", "close"]);
    expect(r.error).toBe("environment: step: INTERNAL_ERROR: flaky");
  });

  it("reports an unreachable server", async () => {
    const r = await runRollout(opts(new RemoteDriver("http://127.0.0.1:1", "reverse-text", { retry: { ...FAST, maxAttempts: 2 } })));
    expect(r.error).toMatch(/^environment: reset: NETWORK_ERROR: POST http:\/\/127\.0\.0\.1:1\/envs\/reverse-text\/reset: .*\(gave up after 2 attempts\)$/);
  });
});

describe("runRollouts", () => {
  it("runs example-major jobs with bounded concurrency; a failure stays in its rollout", async () => {
    let inFlight = 0;
    let peak = 0;
    let calls = 0;
    let releaseFirst!: () => void;
    const firstFive = new Promise<void>((resolve) => (releaseFirst = resolve));
    fake.setModel(async (req) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      // The first five requests wait for each other: all five workers are then in flight at once.
      if (++calls <= 5) {
        if (calls === 5) releaseFirst();
        await Promise.race([firstFive, sleep(3000)]);
      } else await sleep(5);
      inFlight--;
      return lastUser(req).startsWith("Please") ? { status: 400, error: "nope" } : rightReverse(req);
    });
    const jobs = planJobs(4, 3, { seed: 10 });
    expect(jobs.slice(0, 4).map((j) => [j.example_id, j.rollout, j.reset])).toEqual([
      [0, 0, { seed: 10, index: 0 }],
      [0, 1, { seed: 10, index: 0 }],
      [0, 2, { seed: 10, index: 0 }],
      [1, 0, { seed: 11, index: 1 }],
    ]);
    const done: number[] = [];
    const results = await runRollouts({ ...opts(new InProcessDriver(env("reverse-text"))), jobs, concurrency: 5, onResult: (r) => done.push(r.example_id) });
    expect(peak).toBe(5);
    expect(done).toHaveLength(12);
    expect(results.map((r) => [r.example_id, r.rollout])).toEqual(jobs.map((j) => [j.example_id, j.rollout]));
    // Train row 1 starts with "Please": its three rollouts fail, the rest score 1.
    expect(results.map((r) => r.reward)).toEqual([1, 1, 1, null, null, null, 1, 1, 1, 1, 1, 1]);
    expect(results.filter((r) => r.error !== null).map((r) => r.error)).toEqual(Array(3).fill("model: 400 nope"));
  });
});

describe("wrong answers", () => {
  it("scores an empty answer 0 and a half answer by difflib ratio", async () => {
    fake.setModel(wrongReverse);
    const r = await runRollout(opts(new InProcessDriver(env("reverse-text"))));
    expect(r).toMatchObject({ error: null, reward: 0, metrics: { lcs_reward_func: 0 } });

    fake.setModel((req) => {
      const gold = Array.from(lastUser(req)).reverse().join("");
      return { message: { content: `<reversed_text>${gold.slice(0, 20).trim()}</reversed_text>` } };
    });
    const half = await runRollout(opts(new InProcessDriver(env("reverse-text"))));
    expect(half.reward).toBe(sequenceRatio(half.answer!.slice(0, 20).trim(), half.answer!));
    expect(half.reward).toBeGreaterThan(0.3);
    expect(half.reward).toBeLessThan(0.5);
  });
});
