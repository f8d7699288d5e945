/**
 * Answers on their way out held against the memory budget's share for them (MemoryBudget's
 * holdAnswer, src/node/node-answers.ts for HTTP on Node, the app's `state` route), and the state
 * answer the episode host keeps made (the same state asked again is not made again; a step makes
 * a new one).
 */
import { EventEmitter } from "node:events";
import type { Context } from "hono";
import { describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { ApiError } from "../../src/env/errors.ts";
import { nodeAnswers } from "../../src/node/node-answers.ts";
import { createApp, type AnswerHolder } from "../../src/server/app.ts";
import { inlineEngine } from "../../src/server/engine.ts";
import { episodeKey, StoreEpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { MemoryBudget, OVERLOADED_RETRY_AFTER_S, SMALL_ARRIVING_BYTES } from "../../src/server/memory.ts";
import { WsSession, wsReplyText } from "../../src/server/ws-session.ts";

const reverseText = environments.find((e) => e.name === "reverse-text")!;

describe("the budget's share for answers", () => {
  it("is a quarter of the limit beside what is kept; one answer alone always fits; answerRoom asks without holding", () => {
    const budget = new MemoryBudget(400, () => 400); // the kept part is full: answers are beside it
    budget.holdAnswer(60);
    budget.answerRoom(40); // would fit exactly
    budget.holdAnswer(40);
    expect(budget.answerBytes).toBe(100);
    try {
      budget.answerRoom(1);
      expect.unreachable();
    } catch (err) {
      expect(err).toMatchObject({ code: "OVERLOADED", details: { retry_after_s: OVERLOADED_RETRY_AFTER_S } });
      expect((err as Error).message).toContain("answers not yet read by their clients have used up their share");
    }
    expect(() => budget.holdAnswer(1)).toThrow(/answers not yet read/);
    expect(budget.answerBytes).toBe(100);
    budget.releaseAnswer(100);
    budget.holdAnswer(1000); // alone
    expect(budget.answerBytes).toBe(1000);
  });
});

describe("HTTP answers on Node", () => {
  const context = (outgoing?: EventEmitter) => ({ env: outgoing ? { outgoing } : {} }) as unknown as Context;

  it("holds a large answer until its response closes, not a small one; refuses one that does not fit", () => {
    const budget = new MemoryBudget(16 * SMALL_ARRIVING_BYTES, () => 0); // answers' share: 4 × 64 KiB
    const answers = nodeAnswers(budget);
    const first = new EventEmitter();
    answers.hold(context(first), SMALL_ARRIVING_BYTES);
    expect(budget.answerBytes).toBe(0);
    answers.hold(context(first), 3 * SMALL_ARRIVING_BYTES);
    expect(budget.answerBytes).toBe(3 * SMALL_ARRIVING_BYTES);
    answers.room(context(), SMALL_ARRIVING_BYTES); // fits exactly
    expect(() => answers.room(context(), SMALL_ARRIVING_BYTES + 1)).toThrow(/answers not yet read/);
    expect(() => answers.hold(context(new EventEmitter()), SMALL_ARRIVING_BYTES + 2)).toThrow(/answers not yet read/);
    first.emit("close");
    expect(budget.answerBytes).toBe(0);
    answers.hold(context(), 10 * SMALL_ARRIVING_BYTES); // no Node response (app.request): not held
    expect(budget.answerBytes).toBe(0);
  });
});

describe("the state route and the state answer kept made", () => {
  const recording = (refuse = false) => {
    const calls: { room: number[]; hold: number[] } = { room: [], hold: [] };
    const answers: AnswerHolder = {
      room(_c, bytes) {
        calls.room.push(bytes);
        if (refuse) throw new ApiError("OVERLOADED", "answers are full", { retry_after_s: OVERLOADED_RETRY_AFTER_S });
      },
      hold: (_c, bytes) => void calls.hold.push(bytes),
    };
    return { calls, answers };
  };
  const post = (app: ReturnType<typeof createApp>, path: string, body: unknown) =>
    Promise.resolve(app.request(path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } })).then((r) => r.json() as Promise<any>);

  it("asks for room for the episode's size before making its state, holds what it sends, and answers the state as it is now", async () => {
    const store = new MemoryEpisodeStore();
    const host = new StoreEpisodeHost(store, inlineEngine({}));
    const { calls, answers } = recording();
    const app = createApp({ envs: [reverseText], host, answers, clientOf: () => "one client" });
    const { episode_id } = await post(app, "/envs/reverse-text/reset", { seed: 3 });
    const stateOf = async () => {
      const r = await app.request(`/envs/reverse-text/state?episode_id=${episode_id}`);
      return { status: r.status, text: await r.text() };
    };
    const before = await stateOf();
    expect(before.status).toBe(200);
    expect(JSON.parse(before.text)).toMatchObject({ episode_id, step_count: 0, done: false });
    const key = episodeKey("one client", episode_id);
    expect(calls.room).toEqual([store.bytesOf(key)]);
    expect(calls.hold.at(-1)).toBe(2 * before.text.length);
    expect((await stateOf()).text).toBe(before.text); // asked again: the same answer
    await post(app, "/envs/reverse-text/step", { episode_id, action: { content: "x".repeat(5000) } });
    const after = await stateOf();
    expect(JSON.parse(after.text)).toMatchObject({ episode_id, step_count: 1, done: true });
    expect(after.text).toContain("x".repeat(5000));
    expect(calls.room.at(-1)).toBe(store.bytesOf(key));
    expect(store.bytesOf(key)).toBeGreaterThan(10_000);
    // The WebSocket session (of the same client) answers the same state, from the same kept answer.
    const session = new WsSession(reverseText, host, { maxMessageBytes: 1 << 20, client: "one client" });
    await session.handle(JSON.stringify({ type: "reset", data: { episode_id: "ws-episode", seed: 3 } }));
    const ws = (await session.handle(JSON.stringify({ type: "state" }))).reply!;
    const http = await app.request("/envs/reverse-text/state?episode_id=ws-episode");
    expect(JSON.parse(wsReplyText(ws))).toEqual({ type: "state", data: JSON.parse(await http.text()) });
  });

  it("answers are JSON by their content type; a host that cannot tell a state's size asks for room for 0 bytes", async () => {
    const inner = new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({}));
    // A host with only the EpisodeHost basics (no stateBytes, no stateJson), as a platform may have.
    const host = { reset: inner.reset.bind(inner), step: inner.step.bind(inner), state: inner.state.bind(inner), close: inner.close.bind(inner), exists: inner.exists.bind(inner) };
    const { calls, answers } = recording();
    const app = createApp({ envs: [reverseText], host, answers });
    const reset = await app.request("/envs/reverse-text/reset", { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect(reset.headers.get("content-type")).toMatch(/^application\/json/);
    const { episode_id } = (await reset.json()) as { episode_id: string };
    const state = await app.request(`/envs/reverse-text/state?episode_id=${episode_id}`);
    expect(state.status).toBe(200);
    expect(state.headers.get("content-type")).toMatch(/^application\/json/);
    expect(((await state.json()) as any).episode_id).toBe(episode_id);
    expect(calls.room).toEqual([0]);
  });

  it("a state refused for room is 503 OVERLOADED with Retry-After, and nothing is made or held", async () => {
    const host = new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({}));
    const { calls, answers } = recording(true);
    const app = createApp({ envs: [reverseText], host, answers });
    const { episode_id } = await post(app, "/envs/reverse-text/reset", {});
    const holdsBefore = calls.hold.length;
    const r = await app.request(`/envs/reverse-text/state?episode_id=${episode_id}`);
    expect(r.status).toBe(503);
    expect(r.headers.get("retry-after")).toBe(String(OVERLOADED_RETRY_AFTER_S));
    expect(((await r.json()) as any).error.code).toBe("OVERLOADED");
    expect(calls.hold.length).toBe(holdsBefore);
  });
});
