/**
 * What docs/authoring.md promises an environment author: maxTurns from the args, state checked as
 * JSON, environment errors as 422 EXECUTION_ERROR and in the log with their stacks, the request
 * log, and envworker/testing. Everything through the public entry points.
 */
import { afterEach, describe, expect, it } from "vitest";
import { defineEnvironment, z } from "../../src/index.ts";
import { playEpisode, scoreCompletion, startEpisode } from "../../src/testing.ts";
import { buildNodeApp } from "../../src/node/server.ts";
import { createLogger, logger, redactPath, setLogger } from "../../src/server/log.ts";
import { findNonJson } from "../../src/env/json-check.ts";

const base = { description: "t", version: "0.1.0", generate: () => ({ prompt: "go", answer: "a" }) };

const countdown = defineEnvironment({
  ...base,
  name: "turns-from-args",
  args: z.object({ turns: z.number().int().min(0).default(3) }).strict(),
  maxTurns: (a) => a.turns,
  respond: () => ({ messages: "again" }),
  rubric: [{ name: "turns", weight: 0, fn: ({ completion }) => completion.filter((m) => m.role === "assistant").length }],
});

const badState = defineEnvironment({
  ...base,
  name: "bad-state",
  maxTurns: 3,
  initialState: () => ({ n: 0 }),
  respond: ({ state, lastText }) => {
    if (lastText === "map") (state as Record<string, unknown>).seen = new Map();
    if (lastText === "nan") state.n = NaN;
    return { messages: "ok" };
  },
  rubric: [{ name: "one", fn: () => 1 }],
});

const dated = defineEnvironment({ ...base, name: "dated", maxTurns: 1, initialState: () => ({ started: new Date(0) }) as never, rubric: [{ name: "one", fn: () => 1 }] });

const faulty = defineEnvironment({
  ...base,
  name: "faulty",
  maxTurns: 2,
  respond: ({ lastText }) => {
    if (lastText === "boom") throw new RangeError("respond blew up");
    return { messages: "fine", done: true };
  },
  rubric: [
    { name: "ok", fn: () => 1 },
    {
      name: "flaky",
      fn: () => {
        throw new Error("reward blew up");
      },
    },
  ],
});

const previous = logger();
afterEach(() => setLogger(previous));

function captureLog(level: "info" | "warn" | "error" = "warn"): string[] {
  const lines: string[] = [];
  setLogger(createLogger(level, (l) => lines.push(l)));
  return lines;
}

describe("maxTurns as a function of the args", () => {
  it("truncates at the args' limit; GET /envs lists the default args' limit (null when there are no defaults)", async () => {
    expect((await playEpisode(countdown, { args: { turns: 2 }, actions: ["a", "b"] })).truncated).toBe(true);
    expect((await playEpisode(countdown, { args: { turns: 5 }, actions: ["a", "b", "c", "d", "e"] })).turns).toBe(5);
    const { app } = buildNodeApp([countdown]);
    expect((await (await app.request("/envs")).json()).envs[0].max_turns).toBe(3);
    const required = defineEnvironment({ ...base, name: "turns-required", args: z.object({ turns: z.number().int() }).strict(), maxTurns: (a) => a.turns, rubric: [{ name: "one", fn: () => 1 }] });
    expect((await (await buildNodeApp([required]).app.request("/envs")).json()).envs[0].max_turns).toBeNull();
    // A limit that is no positive integer is the environment's fault: 422, named.
    const r = await app.request("/envs/turns-from-args/reset", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ args: { turns: 0 } }) });
    expect(r.status).toBe(422);
    expect((await r.json()).error.message).toBe("turns-from-args: maxTurns failed: maxTurns(args) returned 0, not a positive integer");
  });
});

describe("episode state must be JSON", () => {
  it("names the path and the type, after initialState and after respond, and keeps the episode", async () => {
    captureLog();
    await expect(startEpisode(dated)).rejects.toMatchObject({ code: "EXECUTION_ERROR", message: expect.stringMatching(/^dated: after its initialState, state.started: Date is not JSON \(episode state must be plain JSON/) });
    const e = await startEpisode(badState);
    await expect(e.step("map")).rejects.toMatchObject({ code: "EXECUTION_ERROR", status: 422, message: expect.stringContaining("after its respond, state.seen: Map is not JSON") });
    await expect(e.step("nan")).rejects.toMatchObject({ message: expect.stringContaining("state.n: NaN is not JSON") });
    expect(e.episode.turn).toBe(0);
    expect((await e.step("fine")).observation.messages).toEqual([{ role: "user", content: "ok" }]);
  });

  it("findNonJson walks objects and arrays and stops at cycles", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(findNonJson({ a: [1, "x", null, { b: true, c: undefined }] }, "state")).toBeUndefined();
    expect(findNonJson({ a: [1, { "odd key": () => 1 }] }, "state")).toBe('state.a[1]["odd key"]: a function is not JSON');
    expect(findNonJson({ big: 1n }, "state")).toBe("state.big: a bigint is not JSON");
    expect(findNonJson(cyclic, "state")).toBe("state.self: a cycle is not JSON");
    expect(findNonJson({ s: new Set() }, "state")).toBe("state.s: Set is not JSON");
    expect(findNonJson({ a: [undefined] }, "state")).toBe("state.a[0]: undefined is not JSON");
  });
});

describe("environment errors: 422 EXECUTION_ERROR for the client, the stack in the log", () => {
  it("a throwing respond keeps the episode, a throwing reward scores 0; both are logged with env, episode and stack", async () => {
    const lines = captureLog();
    const { app } = buildNodeApp([faulty]);
    const post = (path: string, body: unknown) => app.request(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const reset = await (await post("/envs/faulty/reset", { seed: 1 })).json();
    const id = reset.episode_id as string;
    const bad = await post("/envs/faulty/step", { episode_id: id, action: { content: "boom" } });
    expect(bad.status).toBe(422);
    expect(await bad.json()).toEqual({ error: { code: "EXECUTION_ERROR", message: "faulty: respond failed: respond blew up" } });
    expect(lines.join("\n")).toMatch(new RegExp(`error step failed: faulty: respond failed: respond blew up env=faulty episode=${id}\\n\\s+RangeError: respond blew up\\n\\s+at `));

    const done = await (await post("/envs/faulty/step", { episode_id: id, action: { content: "fine" } })).json();
    expect(done).toMatchObject({ done: true, reward: 1, observation: { metrics: { ok: 1, flaky: 0 }, info: { reward_errors: { flaky: "Error: reward blew up" } } } });
    expect(lines.join("\n")).toMatch(new RegExp(`error reward flaky failed: reward blew up env=faulty episode=${id}\\n\\s+Error: reward blew up\\n\\s+at `));

    // POST /score: one line per request however many items fail.
    const before = lines.length;
    await post("/envs/faulty/score", { items: [{ completion: "a" }, { completion: "b" }] });
    expect(lines.slice(before)).toHaveLength(1);
    expect(lines.at(-1)).toMatch(/error score items\[0\]: reward flaky \(and 1 more\) failed: reward blew up env=faulty\n/);
  });

  it("ENVWORKER_LOG=info: one line per request, tokens masked; warn: none", async () => {
    const lines = captureLog("info");
    const { app } = buildNodeApp([faulty], { token: "s3cret" });
    await app.request("/t/s3cret/envs/faulty/health");
    await app.request("/envs/faulty/metadata?token=s3cret");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/ info GET \/t\/\*\*\*\/envs\/faulty\/health 200 ms=[\d.]+$/);
    expect(lines[1]).toMatch(/ info GET \/envs\/faulty\/metadata\?token=\*\*\* 200 ms=/);
    expect(lines.join("")).not.toContain("s3cret");
    expect(redactPath("/t/abc/envs/x/reset?a=1&token=abc")).toBe("/t/***/envs/x/reset?a=1&token=***");
    const quiet = captureLog("warn");
    await app.request("/t/s3cret/envs/faulty/health");
    expect(quiet).toEqual([]);
  });
});

describe("envworker/testing", () => {
  it("plays scripted actions or a player, and says what went wrong", async () => {
    const played = await playEpisode(countdown, { seed: 3, player: ({ turn }) => `turn ${turn}` });
    expect(played.completion.filter((m) => m.role === "assistant").map((m) => m.content)).toEqual(["turn 1", "turn 2", "turn 3"]);
    expect(played.metrics).toEqual({ turns: 3 });
    await expect(playEpisode(countdown, { actions: ["only one"] })).rejects.toThrow(/not done after the 1 scripted action/);
    await expect(playEpisode(faulty, { actions: ["fine", "extra"] })).rejects.toThrow(/ended after 1 of the 2 scripted actions/);
    const err = await playEpisode(faulty, { actions: ["fine"] }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe("faulty: reward function(s) failed: flaky: Error: reward blew up");
    expect(((err as Error).cause as Error).message).toBe("reward blew up");
    expect((await playEpisode(faulty, { actions: ["fine"], allowRewardErrors: true })).rewardErrors).toEqual({ flaky: "Error: reward blew up" });
    await expect(playEpisode(faulty, { actions: ["boom"] })).rejects.toMatchObject({ code: "EXECUTION_ERROR", cause: expect.any(RangeError) });
  });

  it("a turn that is not one (step(undefined), a player that returns nothing) is a TypeError naming it, not a crash in the engine", async () => {
    const e = await startEpisode(countdown, { seed: 1 });
    await expect(e.step(undefined as never)).rejects.toThrow(new TypeError("turns-from-args: step() got undefined: a turn is the model's text (a string) or an action { content: string | null, tool_calls?: [...] } (Invalid input: expected object, received undefined)"));
    await expect(e.step({ text: "hi" } as never)).rejects.toThrow(/step\(\) got \{"text":"hi"\}: a turn is the model's text .*content/);
    expect(e.episode.turn).toBe(0);
    await e.step({ content: "fine" });
    expect(e.episode.turn).toBe(1);
    await e.close();
    await expect(playEpisode(countdown, { player: () => undefined as never })).rejects.toThrow(/turns-from-args: the player's turn 1 got undefined: a turn is/);
  });

  it("respond, reward functions and tools always get a sandbox (typed so); without one given, its runs say so", async () => {
    const runs = defineEnvironment({
      ...base,
      name: "runs-code",
      maxTurns: 1,
      // The documented form: no `sandbox!`, no check (this file is type-checked by npm run typecheck).
      respond: async ({ sandbox, lastText }) => ({ messages: JSON.stringify((await sandbox.run(lastText)).result), done: true }),
      rubric: [{ name: "ran", fn: async ({ sandbox }) => (await sandbox.run("1 + 1")).result === 2 }],
    });
    const played = await playEpisode(runs, { actions: ["6 * 7"] });
    expect(played.completion[1]!.content).toBe("42");
    expect(played.metrics.ran).toBe(1);
    // The engine called with no services (code of one's own): a run rejects, naming why.
    const { resetEpisode, stepEpisode } = await import("../../src/env/episode.ts");
    const { state } = resetEpisode(runs, "no-sandbox", { seed: 0 });
    await expect(stepEpisode(runs, state, { content: "1" })).rejects.toMatchObject({ code: "EXECUTION_ERROR", cause: expect.objectContaining({ message: expect.stringMatching(/^no code sandbox was given to this environment/) }) });
  });

  it("scores a completion as POST /score does", async () => {
    const score = await scoreCompletion(countdown, { completion: [{ role: "assistant", content: "x" }, { role: "user", content: "again" }, { role: "assistant", content: "y" }] });
    expect(score).toEqual({ reward: 0, metrics: { turns: 2 } });
  });
});
