/**
 * Each client's share, in process: who a client is (client-id.ts), what a parsed request is
 * counted at (client-json.ts), large bodies parsed on turns of their own (turns.ts), and the app's
 * bound on a client's stateless requests in progress and its hold on their parsed bodies.
 */
import { describe, expect, it } from "vitest";
import type { Context } from "hono";
import { environments } from "../../envs/index.ts";
import { createApp, MAX_STATELESS_PER_CLIENT } from "../../src/server/app.ts";
import { configuredTokens } from "../../src/server/auth.ts";
import { clientIdentity } from "../../src/server/client-id.ts";
import { jsonHeapBytes } from "../../src/server/client-json.ts";
import { inlineEngine, type EnvEngine } from "../../src/server/engine.ts";
import { StoreEpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { MemoryBudget } from "../../src/server/memory.ts";
import { ownTurn } from "../../src/server/turns.ts";

const reverseText = environments.filter((e) => e.name === "reverse-text");

/** A context as client-id.ts sees one: a header, and an address. */
const ctx = (authorization: string | undefined, address: string | undefined) =>
  ({ req: { header: (n: string) => (n === "authorization" ? authorization : undefined), param: () => undefined, query: () => undefined }, env: { incoming: { socket: { remoteAddress: address } } } }) as unknown as Context;

describe("who a client is", () => {
  const address = (c: Context) => (c.env as { incoming: { socket: { remoteAddress?: string } } }).incoming.socket.remoteAddress;

  it("is the token it presents when several are configured, else its address", () => {
    const several = clientIdentity(" a , b,", address);
    expect(several(ctx("Bearer a", "127.0.0.1"))).toBe("token 1");
    expect(several(ctx("Bearer b", "127.0.0.1"))).toBe("token 2");
    expect(several(ctx(undefined, "10.0.0.7"))).toBe("address 10.0.0.7"); // an open route (GET /health)
    const one = clientIdentity("a", address);
    expect(one(ctx("Bearer a", "127.0.0.1"))).toBe("address 127.0.0.1");
    expect(one(ctx("Bearer a", "127.0.0.2"))).toBe("address 127.0.0.2");
    expect(clientIdentity(undefined, () => undefined)(ctx(undefined, undefined))).toBe("address unknown");
    expect(configuredTokens(" a , b,")).toEqual(["a", "b"]);
    expect(configuredTokens(undefined)).toEqual([]);
  });

  it("lets in any of several tokens, and no other", async () => {
    const app = createApp({ envs: reverseText, host: new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({})), token: "tok-a,tok-b" });
    const status = async (token: string) => (await app.request("/envs", { headers: { authorization: `Bearer ${token}` } })).status;
    expect([await status("tok-a"), await status("tok-b"), await status("tok-a,tok-b"), await status("tok")]).toEqual([200, 200, 401, 401]);
  });
});

describe("what a parsed request is counted at", () => {
  it("counts objects, arrays, strings and numbers at what V8 holds, not their text", () => {
    const empties = JSON.parse(`[${Array(1000).fill("{}").join(",")}]`);
    expect(jsonHeapBytes(empties)).toBeGreaterThanOrEqual(1000 * 64); // 3 characters each, 64 bytes at least
    expect(jsonHeapBytes("x".repeat(1000))).toBe(24 + 2000);
    expect(jsonHeapBytes([1, 2])).toBe(32 + 16 + 2 * 16);
    expect(jsonHeapBytes({ ab: null })).toBe(64 + 24 + 24 + 4);
    expect(jsonHeapBytes(true)).toBe(0);
  });
});

describe("large bodies parsed on turns of their own", () => {
  it("lets the loop run between two callers", async () => {
    const log: string[] = [];
    const a = ownTurn().then(() => log.push("a"));
    const b = ownTurn().then(() => log.push("b"));
    setImmediate(() => log.push("between"));
    await Promise.all([a, b]);
    expect(log).toEqual(["a", "between", "b"]);
  });
});

describe("a client's stateless requests", () => {
  /** An engine whose score calls wait until released. */
  function heldEngine() {
    const waiting: (() => void)[] = [];
    const engine: EnvEngine = { ...inlineEngine({}), score: () => new Promise((done) => waiting.push(() => done([]))) };
    return { engine, release: () => waiting.splice(0).forEach((go) => go()), waiting };
  }

  it(`at most ${MAX_STATELESS_PER_CLIENT} in progress: the next is 503 with Connection: close, another client is served`, async () => {
    const { engine, release, waiting } = heldEngine();
    const app = createApp({ envs: reverseText, host: new StoreEpisodeHost(new MemoryEpisodeStore(), engine), engine, clientOf: (c) => c.req.header("x-who") ?? "?" });
    const score = (who: string) => app.request("/envs/reverse-text/score", { method: "POST", headers: { "x-who": who, "content-type": "application/json" }, body: JSON.stringify({ items: [{ completion: "x" }] }) });
    const running = Array.from({ length: MAX_STATELESS_PER_CLIENT }, () => score("a"));
    await expect.poll(() => waiting.length).toBe(MAX_STATELESS_PER_CLIENT);
    const refused = await score("a");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("connection")).toBe("close");
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("OVERLOADED");
    const other = score("b");
    await expect.poll(() => waiting.length).toBe(MAX_STATELESS_PER_CLIENT + 1);
    release();
    expect((await Promise.all([...running, other])).map((r) => r.status)).toEqual(Array(MAX_STATELESS_PER_CLIENT + 1).fill(200));
    const again = score("a");
    await expect.poll(() => waiting.length).toBe(1);
    release();
    expect((await again).status).toBe(200);
  });

  it("holds a large parsed request in the client's part of the requests' share until it is answered", async () => {
    const { engine, release, waiting } = heldEngine();
    const budget = new MemoryBudget(64 * 2 ** 20, () => 0, { clientShare: 0.25 }); // requests: 16 MiB, 4 MiB a client
    const app = createApp({ envs: reverseText, host: new StoreEpisodeHost(new MemoryEpisodeStore(), engine), engine, budget, clientOf: (c) => c.req.header("x-who") ?? "?" });
    const body = JSON.stringify({ items: Array.from({ length: 200 }, () => ({ completion: "y".repeat(1000) })) }); // ~200 kB
    const score = (who: string) => app.request("/envs/reverse-text/score", { method: "POST", headers: { "x-who": who, "content-type": "application/json" }, body });
    const first = score("a");
    await expect.poll(() => waiting.length).toBe(1);
    expect(budget.requestBytes).toBeGreaterThanOrEqual(200 * 2000);
    const small = app.request("/envs/reverse-text/score", { method: "POST", headers: { "x-who": "a", "content-type": "application/json" }, body: JSON.stringify({ items: [{ completion: "x" }] }) });
    await expect.poll(() => waiting.length).toBe(2); // a small one is not held
    release();
    expect((await first).status).toBe(200);
    expect((await small).status).toBe(200);
    expect(budget.requestBytes).toBe(0);
  });
});

describe("a client at its share over a WebSocket", () => {
  it("still has its small messages (a step, a close) handled; a large one is refused in its share", async () => {
    const { wsHandlers } = await import("../../src/server/app.ts");
    const budget = new MemoryBudget(1000 * 1024, () => 300 * 1024, { clientShare: 0.25, storedBy: (c) => (c === "a" ? 300 * 1024 : 0) }); // "a" is past its 250 KiB
    const handled: string[] = [];
    const session = { handle: async (text: string) => (handled.push(text), { reply: { type: "observation" as const, data: {} } }), dispose: async () => undefined };
    const sent: string[] = [];
    const ws = { readyState: 1, send: (t: string) => sent.push(t), close: () => undefined, raw: undefined };
    const on = wsHandlers(session as never, budget, 2 << 20, "a");
    on.onMessage(new MessageEvent("message", { data: JSON.stringify({ type: "close" }) }), ws as never);
    on.onMessage(new MessageEvent("message", { data: JSON.stringify({ type: "step", data: { content: "x".repeat(70_000) } }) }), ws as never);
    await expect.poll(() => sent.length).toBe(2);
    expect(handled).toEqual([JSON.stringify({ type: "close" })]);
    expect(JSON.parse(sent[0]!)).toMatchObject({ type: "error", data: { reason: "OVERLOADED", message: expect.stringMatching(/this client's share/) } });
    expect(budget.usedBytes).toBe(300 * 1024);
  });
});
