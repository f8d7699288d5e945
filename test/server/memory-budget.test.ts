/**
 * The memory budget (ENVWORKER_MAX_MEMORY_MB): stored episodes and queued WebSocket messages count
 * against it; past it new resets and growing steps get 503 OVERLOADED with Retry-After, and what
 * exists keeps working.
 */
import { afterEach, describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { MemoryBudget } from "../../src/server/memory.ts";
import { get, post, postFrom } from "../helpers/http.ts";
import { OpenEnvWsClient } from "../helpers/ws-client.ts";

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("memory budget", () => {
  it("counts every stored field: a reset past the budget is 503 OVERLOADED with Retry-After, existing episodes keep working", async () => {
    // 1 MiB: a handful of word-groups episodes with long reasoning fill it.
    // The whole budget for one client here (its share has tests of its own below).
    server = await startServer(environments, { port: 0, maxMemoryBytes: 2 ** 20, clientShare: 1 });
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
    server = await startServer(environments, { port: 0, maxMemoryBytes: 64 * 1024, clientShare: 1 });
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

describe("each client's share (ENVWORKER_CLIENT_SHARE)", () => {
  it("one client filling its share of the budget is refused; another client's resets and steps are served", async () => {
    // 8 MiB, a quarter each: a step of 600,000 characters (1.2 MB counted) fits once per client.
    server = await startServer(environments, { port: 0, maxMemoryBytes: 8 * 2 ** 20, clientShare: 0.25 });
    const base = `${server.url}/envs/reverse-text`;
    const big = { content: "y".repeat(600_000) };
    const a = await postFrom("127.0.0.1", `${base}/reset`, { seed: 1 });
    const a2 = await postFrom("127.0.0.1", `${base}/reset`, { seed: 2 });
    expect((await postFrom("127.0.0.1", `${base}/step`, { episode_id: a.body.episode_id, action: big })).status).toBe(200);
    expect((await postFrom("127.0.0.1", `${base}/reset`, { seed: 4 })).status).toBe(200); // small: still in its share
    const refused = await postFrom("127.0.0.1", `${base}/step`, { episode_id: a2.body.episode_id, action: big });
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({ code: "OVERLOADED", message: expect.stringMatching(/this client's share/) });
    // The budget as a whole has room: another address is another client.
    const b = await postFrom("127.0.0.2", `${base}/reset`, { seed: 3 });
    expect(b.status).toBe(200);
    expect((await postFrom("127.0.0.2", `${base}/step`, { episode_id: b.body.episode_id, action: big })).status).toBe(200);
    // Closing gives the first client's share back.
    expect((await postFrom("127.0.0.1", `${base}/close`, { episode_id: a.body.episode_id })).status).toBe(200);
    expect((await postFrom("127.0.0.1", `${base}/step`, { episode_id: a2.body.episode_id, action: big })).status).toBe(200);
  });

  it("with several tokens each is a client of its own: its share of the episodes, whatever its address", async () => {
    server = await startServer(environments, { port: 0, maxEpisodes: 4, clientShare: 0.5, token: "tok-a, tok-b" });
    const base = `${server.url}/envs/reverse-text`;
    const as = (token: string) => ({ authorization: `Bearer ${token}` });
    const statuses = async (token: string, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await postFrom("127.0.0.1", `${base}/reset`, {}, as(token))).status);
      return out;
    };
    expect(await statuses("tok-a", 3)).toEqual([200, 200, 429]);
    expect(await statuses("tok-b", 3)).toEqual([200, 200, 429]);
    expect((await postFrom("127.0.0.1", `${base}/reset`, {}, as("tok-c"))).status).toBe(401);
  });
});

describe("MemoryBudget per client", () => {
  it("refuses a client past its share while others are admitted; a client keeping nothing always gets one in", () => {
    const stored = new Map<string, number>();
    const budget = new MemoryBudget(1000, () => [...stored.values()].reduce((a, b) => a + b, 0), { clientShare: 0.25, storedBy: (c) => stored.get(c) ?? 0 });
    expect(budget.clientLimitBytes).toBe(250);
    expect(() => budget.admit(400, "a")).not.toThrow(); // its first: one alone always fits
    stored.set("a", 200);
    expect(() => budget.admit(50, "a")).not.toThrow();
    expect(() => budget.admit(51, "a")).toThrow(/this client's share/);
    budget.hold(50, "a");
    expect(budget.usedBy("a")).toBe(250);
    expect(() => budget.admit(0, "a")).toThrow(/this client's share/);
    expect(() => budget.admit(250, "b")).not.toThrow();
    expect(() => budget.admit(0)).not.toThrow(); // no client: only the limit
    budget.release(50, "a");
    expect(budget.usedBy("a")).toBe(200);
    expect(() => budget.admit(0, "a")).not.toThrow();
  });

  it("holds a client's parsed requests in their share, a client's part of it each", () => {
    const budget = new MemoryBudget(4000, () => 0, { clientShare: 0.5 }); // requests' share 1000, 500 a client
    budget.holdRequest(400, "a");
    expect(() => budget.holdRequest(200, "a")).toThrow(/this client's requests/);
    budget.holdRequest(500, "b");
    expect(() => budget.holdRequest(200, "c")).toThrow(/parsed requests/); // the share as a whole
    budget.releaseRequest(400, "a");
    budget.holdRequest(200, "c");
    expect(budget.requestBytes).toBe(700);
  });
});
