import { describe, expect, it } from "vitest";
import { resetEpisode, stepEpisode } from "../../src/env/episode.ts";
import { ApiError } from "../../src/env/errors.ts";
import { faulty, guessNumber } from "../fixtures/test-envs.ts";

describe("episode engine", () => {
  it("is deterministic per seed and keeps state as plain JSON", async () => {
    const a = resetEpisode(guessNumber, "a", { seed: 42 });
    const b = resetEpisode(guessNumber, "b", { seed: 42 });
    expect(a.state.answer).toBe(b.state.answer);
    expect(a.result.observation.messages).toEqual([
      { role: "system", content: "Answer with a number only." },
      { role: "user", content: "Guess my number between 1 and 100." },
    ]);
    // Python: random.Random(42).randint(1, 100) == 82
    expect(a.state.answer).toBe("82");
    expect(JSON.parse(JSON.stringify(a.state))).toEqual(a.state);
  });

  it("plays a multi-turn game to a win, with metrics and weight-0 reporting", async () => {
    let { state } = resetEpisode(guessNumber, "g", { seed: 42 });
    let r = await stepEpisode(guessNumber, state, { content: "50" });
    expect(r.result).toMatchObject({ done: false, reward: null });
    expect(r.result.observation.messages).toEqual([{ role: "user", content: "Higher." }]);
    state = r.state;
    r = await stepEpisode(guessNumber, state, { content: "82" });
    expect(r.result.done).toBe(true);
    expect(r.result.observation.truncated).toBe(false);
    expect(r.result.reward).toBe(1);
    expect(r.result.observation.metrics).toEqual({ solved: 1, num_guesses: 2 });
    // The input state was not modified by the step.
    expect(state.turn).toBe(1);
    expect(r.state.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "user", "assistant", "user"]);
  });

  it("truncates at maxTurns", async () => {
    let { state } = resetEpisode(guessNumber, "t", { seed: 1 });
    let last;
    for (let i = 0; i < 4; i++) {
      last = await stepEpisode(guessNumber, state, { content: "0" });
      state = last.state;
    }
    expect(last!.result).toMatchObject({ done: true, reward: 0 });
    expect(last!.result.observation.truncated).toBe(true);
    await expect(stepEpisode(guessNumber, state, { content: "1" })).rejects.toMatchObject({ code: "EPISODE_DONE" });
  });

  it("validates args with defaults", () => {
    expect(resetEpisode(guessNumber, "x", { seed: 1, args: { max: 10 } }).state.args).toEqual({ max: 10 });
    expect(() => resetEpisode(guessNumber, "x", { args: { max: 1 } })).toThrow(ApiError);
    expect(() => resetEpisode(guessNumber, "x", { args: { other: 1 } })).toThrow(/invalid args/);
  });

  it("scores a throwing or non-finite reward function 0 and reports it; the episode survives", async () => {
    const { state } = resetEpisode(faulty, "f", { seed: 1 });
    const r = await stepEpisode(faulty, state, { content: "stop" });
    expect(r.result.done).toBe(true);
    expect(r.result.reward).toBe(0.5);
    expect(r.result.observation.metrics).toEqual({ good: 1, broken: 0, nan: 0 });
    const errors = r.result.observation.info!.reward_errors as Record<string, string>;
    expect(errors.broken).toBe("TypeError: reward exploded");
    expect(errors.nan).toMatch(/not a finite number/);
  });

  it("reports a throwing respond as EXECUTION_ERROR and keeps the episode where it was", async () => {
    const { state } = resetEpisode(faulty, "f", { seed: 1 });
    await expect(stepEpisode(faulty, state, { content: "boom" })).rejects.toMatchObject({ code: "EXECUTION_ERROR", status: 422 });
    expect(state.turn).toBe(0);
    expect(state.messages).toHaveLength(1);
    const ok = await stepEpisode(faulty, state, { content: "hello" });
    expect(ok.result.observation.messages).toEqual([{ role: "user", content: "go on" }]);
  });
});

describe("server cap on steps per episode", () => {
  it("truncates at the lower of maxTurns and the cap", async () => {
    let { state } = resetEpisode(guessNumber, "c", { seed: 1, maxSteps: 2 });
    expect(state.max_turns).toBe(2);
    let last;
    for (let i = 0; i < 2; i++) {
      last = await stepEpisode(guessNumber, state, { content: "0" });
      state = last.state;
    }
    expect(last!.result.done).toBe(true);
    expect(last!.result.observation.truncated).toBe(true);
    expect(resetEpisode(guessNumber, "d", { seed: 1, maxSteps: 100 }).state.max_turns).toBe(4);
  });
});

describe("episode ids chosen by the client", () => {
  it("a step still running when its episode is closed and reset with the same id cannot overwrite the new episode", async () => {
    const { StoreEpisodeHost } = await import("../../src/server/episode-host.ts");
    const { MemoryEpisodeStore } = await import("../../src/server/episode-store.ts");
    const { inlineEngine } = await import("../../src/server/engine.ts");
    const { slow } = await import("../fixtures/test-envs.ts");
    const host = new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine());
    const client = "a client";
    await host.reset(slow, { episode_id: "rollout-17", seed: 1, args: { delay_ms: 200 } }, client);
    const oldStep = host.step(slow, "rollout-17", { content: "ok" }, client);
    await new Promise((r) => setTimeout(r, 20));
    const closed = host.close(slow, "rollout-17", client);
    const fresh = host.reset(slow, { episode_id: "rollout-17", seed: 7, args: { delay_ms: 0 } }, client);
    expect((await oldStep).done).toBe(true);
    await closed;
    await fresh;
    expect(await host.state(slow, "rollout-17", client)).toMatchObject({ seed: 7, step_count: 0, done: false });
  });
});

describe("episodes belong to their client (StoreEpisodeHost)", () => {
  const host = async () => {
    const { StoreEpisodeHost } = await import("../../src/server/episode-host.ts");
    const { MemoryEpisodeStore } = await import("../../src/server/episode-store.ts");
    const { inlineEngine } = await import("../../src/server/engine.ts");
    const store = new MemoryEpisodeStore();
    return { store, host: new StoreEpisodeHost(store, inlineEngine()) };
  };

  it("another client finds none of them, whatever the route, and two clients' episodes of one chosen id are two episodes", async () => {
    const { host: h, store } = await host();
    const a = await h.reset(guessNumber, { seed: 1 }, "client a");
    const id = a.episode_id;
    const unknown = { code: "UNKNOWN_EPISODE", message: `no open episode ${id} in guess-number` };
    await expect(h.step(guessNumber, id, { content: "50" }, "client b")).rejects.toMatchObject(unknown);
    await expect(h.state(guessNumber, id, "client b")).rejects.toMatchObject(unknown);
    await expect(h.stateJson(guessNumber, id, "client b")).rejects.toMatchObject(unknown);
    await expect(h.close(guessNumber, id, "client b")).rejects.toMatchObject(unknown);
    await expect(h.step(guessNumber, id, { content: "50" }, undefined)).rejects.toMatchObject(unknown);
    expect(await h.exists(guessNumber, id, "client b")).toBe(false);
    expect(h.stateBytes(id, "client b")).toBe(0);
    expect(await h.exists(guessNumber, id, "client a")).toBe(true);
    expect(h.stateBytes(id, "client a")).toBeGreaterThan(0);
    // B's own episode under A's id: its own seed, its own steps.
    const b = await h.reset(guessNumber, { seed: 2, episode_id: id }, "client b");
    expect(b.episode_id).toBe(id);
    await h.step(guessNumber, id, { content: "1" }, "client b");
    expect(await h.state(guessNumber, id, "client a")).toMatchObject({ seed: 1, step_count: 0 });
    expect(await h.state(guessNumber, id, "client b")).toMatchObject({ seed: 2, step_count: 1 });
    expect(store.size).toBe(2);
    // Its own id again is taken (its own only: EPISODE_EXISTS says nothing about others).
    await expect(h.reset(guessNumber, { seed: 3, episode_id: id }, "client b")).rejects.toMatchObject({ code: "EPISODE_EXISTS" });
    expect(await h.close(guessNumber, id, "client a")).toBe(true);
    expect(await h.state(guessNumber, id, "client b")).toMatchObject({ seed: 2 });
  });

  it("replace: a reset in place keeps the id; one that fails leaves the episode as it was", async () => {
    const { host: h, store } = await host();
    await h.reset(guessNumber, { seed: 1, episode_id: "session" }, "c");
    await h.step(guessNumber, "session", { content: "7" }, "c");
    const again = await h.reset(guessNumber, { seed: 4, episode_id: "session", replace: true }, "c");
    expect(again.episode_id).toBe("session");
    expect(await h.state(guessNumber, "session", "c")).toMatchObject({ seed: 4, step_count: 0 });
    await expect(h.reset(guessNumber, { seed: 5, episode_id: "session", replace: true, args: { max: 1 } }, "c")).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    expect(await h.state(guessNumber, "session", "c")).toMatchObject({ seed: 4 });
    expect(store.size).toBe(1);
    // Another environment's episode of that id is not replaced: the id is taken.
    await expect(h.reset(faulty, { episode_id: "session", replace: true }, "c")).rejects.toMatchObject({ code: "EPISODE_EXISTS" });
  });
});

describe("episode size cap", () => {
  it("refuses a prompt or a turn that would overflow the conversation, keeping the episode", async () => {
    expect(() => resetEpisode(guessNumber, "big", { seed: 1, maxChars: 10 })).toThrow(expect.objectContaining({ code: "PAYLOAD_TOO_LARGE", status: 413 }));
    const { state } = resetEpisode(guessNumber, "s", { seed: 42, maxChars: 200 });
    await expect(stepEpisode(guessNumber, state, { content: "9".repeat(500) })).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(state.turn).toBe(0);
    const ok = await stepEpisode(guessNumber, state, { content: "82" });
    expect(ok.result.reward).toBe(1);
  });
});
