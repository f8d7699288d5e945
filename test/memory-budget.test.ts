/**
 * The memory budget (ENVWORKER_MAX_MEMORY_MB): stored episodes and queued WebSocket messages count
 * against it; past it new resets and growing steps get 503 OVERLOADED with Retry-After, and what
 * exists keeps working.
 */
import { afterEach, describe, expect, it } from "vitest";
import { environments } from "../envs/index.ts";
import { startServer, type RunningServer } from "../src/node.ts";
import { MemoryBudget } from "../src/server/memory.ts";
import { get, post } from "./helpers/http.ts";
import { OpenEnvWsClient } from "./helpers/ws-client.ts";

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("memory budget", () => {
  it("counts every stored field: a reset past the budget is 503 OVERLOADED with Retry-After, existing episodes keep working", async () => {
    // 1 MiB: a handful of word-groups episodes with long reasoning fill it.
    server = await startServer(environments, { port: 0, maxMemoryBytes: 2 ** 20 });
    const base = `${server.url}/envs/word-groups`;
    const first = await post(`${base}/reset`, { seed: 1 });
    expect(first.status).toBe(200);
    const id = first.body.episode_id;
    // reasoning_content is stored with the turn, so it is counted: 300k characters = 600 KB.
    const thinking = "x".repeat(300_000);
    const grown = await post(`${base}/step`, { episode_id: id, action: { content: "<guess>A, B, C, D</guess>", reasoning_content: thinking } });
    expect(grown.status).toBe(200);
    expect(server.store.bytes).toBeGreaterThan(600_000);

    const more = await post(`${base}/step`, { episode_id: id, action: { content: "<guess>A, B, C, D</guess>", reasoning_content: thinking } });
    expect(more.status).toBe(503);
    expect(more.headers.get("retry-after")).toBe("5");
    expect(more.body.error).toMatchObject({ code: "OVERLOADED", details: { retry_after_s: 5 } });

    // Nothing was lost: the episode is as it was after its first step, and can be read and closed.
    const state = await get(`${base}/state?episode_id=${id}`);
    expect(state.body.step_count).toBe(1);
    const small = await post(`${base}/step`, { episode_id: id, action: { content: "<guess>A, B, C, D</guess>" } });
    expect(small.status).toBe(200);
    expect(small.body.observation.turn).toBe(2);

    // Closing frees the budget: new episodes are accepted again.
    await post(`${base}/close`, { episode_id: id });
    expect(server.store.bytes).toBe(0);
    expect((await post(`${base}/reset`, { seed: 2 })).status).toBe(200);
  });

  it("refuses a new reset once the budget is used up, over HTTP and the WebSocket", async () => {
    server = await startServer(environments, { port: 0, maxMemoryBytes: 64 * 1024 });
    const base = `${server.url}/envs/reverse-text`;
    let refused: Awaited<ReturnType<typeof post>> | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const r = await post(`${base}/reset`, { seed: i });
      if (r.status !== 200) refused = r;
    }
    expect(refused?.status).toBe(503);
    expect(refused?.body.error.code).toBe("OVERLOADED");
    const ws = await OpenEnvWsClient.connect(base);
    const wsRefused = await ws.reset({});
    expect(wsRefused.type).toBe("error");
    expect(wsRefused.data).toMatchObject({ code: "CAPACITY_REACHED", reason: "OVERLOADED", retry_after_s: 5 });
    ws.close();
  });

  it("holds queued WebSocket messages against the budget: one that does not fit is answered OVERLOADED", async () => {
    server = await startServer(environments, { port: 0, maxMemoryBytes: 2 ** 20 });
    const ws = await OpenEnvWsClient.connect(`${server.url}/envs/reverse-text`);
    // 600k characters count 1.2 MB: more than the whole budget.
    const big = await ws.send({ type: "reset", data: { seed: 1, pad: "y".repeat(600_000) } });
    expect(big.type).toBe("error");
    expect(big.data).toMatchObject({ code: "CAPACITY_REACHED", reason: "OVERLOADED" });
    // The socket is still served, and nothing stays held once a message is done.
    const ok = await ws.reset({ seed: 1 });
    expect(ok.type).toBe("observation");
    ws.close();
  });
});

describe("MemoryBudget", () => {
  it("admits up to the limit exactly, and held bytes count until released", () => {
    let stored = 0;
    const budget = new MemoryBudget(100, () => stored);
    expect(() => budget.admit(100)).not.toThrow();
    expect(() => budget.admit(101)).toThrow(/memory budget/);
    budget.hold(60);
    expect(budget.usedBytes).toBe(60);
    expect(() => budget.hold(41)).toThrow();
    stored = 40;
    expect(() => budget.admit(0)).toThrow(); // full: no new episodes
    budget.release(60);
    expect(budget.usedBytes).toBe(40);
    expect(() => budget.admit(60)).not.toThrow();
  });
});
