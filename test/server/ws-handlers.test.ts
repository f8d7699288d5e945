/**
 * The Node WebSocket handler (sessionWebSocket in src/server/app.ts) at its exact limits, found by
 * mutation testing (`npm run mutate`). The episode host here holds a message in progress until the
 * test lets it go, and the memory budget shows what is queued, so "N messages waiting" is a fact
 * of the test rather than a race with the network: 64 waiting pass and the 65th cuts the client
 * off (1008), two messages of exactly twice the limit's worth of characters may wait and one more
 * character is OVERLOADED, and after a cutoff, a close message or a disconnect nothing the client
 * queued runs.
 */
import type { AddressInfo, Socket } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { createNodeWebSocket } from "@hono/node-ws";
import type { Hono } from "hono";
import { afterEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { environments } from "../../envs/index.ts";
import { createApp, sessionWebSocket } from "../../src/server/app.ts";
import { inlineEngine, type EnvEngine } from "../../src/server/engine.ts";
import { StoreEpisodeHost, type EpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { MemoryBudget } from "../../src/server/memory.ts";
import type { Sandbox } from "../../src/sandbox/types.ts";

const reverseText = environments.find((e) => e.name === "reverse-text")!;

/** A host that counts its calls and can hold `state` calls until released. */
class GatedHost implements EpisodeHost {
  private readonly inner = new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({}));
  calls = { reset: 0, step: 0, state: 0, close: 0 };
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;
  /** Resolves when a held call has started. */
  entered: Promise<void> = Promise.resolve();
  private onEnter: (() => void) | undefined;

  hold(): void {
    this.gate = new Promise((r) => (this.openGate = r));
    this.entered = new Promise((r) => (this.onEnter = r));
  }
  release(): void {
    this.gate = undefined;
    this.openGate?.();
  }
  reset: EpisodeHost["reset"] = (env, opts, client) => (this.calls.reset++, this.inner.reset(env, opts, client));
  step: EpisodeHost["step"] = (env, id, action, client) => (this.calls.step++, this.inner.step(env, id, action, client));
  close: EpisodeHost["close"] = (env, id, client) => (this.calls.close++, this.inner.close(env, id, client));
  exists: EpisodeHost["exists"] = (env, id, client) => this.inner.exists(env, id, client);
  state: EpisodeHost["state"] = async (env, id, client) => {
    this.calls.state++;
    const gate = this.gate;
    if (gate) {
      this.onEnter?.();
      await gate;
    }
    return this.inner.state(env, id, client);
  };
}

interface Served {
  url: string;
  clients: () => number;
  /** readyState of each of the server's sockets. */
  states: () => number[];
  close: () => Promise<void>;
}
const servers: Served[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  vi.restoreAllMocks();
});

/** A Node server whose WebSocket is sessionWebSocket, with exactly the options given (no transport limit). */
function serveWs(host: EpisodeHost, opts: Parameters<typeof sessionWebSocket>[2] = {}, env = reverseText): Promise<Served> {
  let app: Hono<any> | undefined;
  const ws = createNodeWebSocket({ app: { request: (...args: Parameters<Hono["request"]>) => app!.request(...args) } as Hono });
  app = createApp({ envs: [env], host, webSocket: sessionWebSocket(ws.upgradeWebSocket, host, opts) });
  return new Promise((resolve) => {
    const server: ServerType = serve({ fetch: app!.fetch, hostname: "127.0.0.1", port: 0 }, (info: AddressInfo) => {
      const served: Served = {
        url: `ws://127.0.0.1:${info.port}/envs/${env.name}/ws`,
        clients: () => ws.wss.clients.size,
        states: () => [...ws.wss.clients].map((c) => c.readyState),
        close: () =>
          new Promise((done) => {
            for (const c of ws.wss.clients) c.terminate();
            server.close(() => done());
          }),
      };
      servers.push(served);
      resolve(served);
    });
    ws.injectWebSocket(server);
  });
}

interface Client {
  ws: WebSocket;
  replies: { type: string; data: any }[];
  closed: Promise<{ code: number; reason: string }>;
  send(message: unknown): void;
  /** Wait for the n-th reply (1-based) in all. */
  reply(n: number): Promise<{ type: string; data: any }>;
}

async function connect(url: string): Promise<Client> {
  const ws = new WebSocket(url);
  await new Promise((res, rej) => {
    ws.once("open", res);
    ws.once("error", rej);
  });
  const replies: Client["replies"] = [];
  ws.on("message", (m) => replies.push(JSON.parse(String(m))));
  const closed = new Promise<{ code: number; reason: string }>((res) => ws.once("close", (code, reason) => res({ code, reason: String(reason) })));
  return {
    ws,
    replies,
    closed,
    send: (message) => ws.send(typeof message === "string" ? message : JSON.stringify(message)),
    reply: (n) => until(() => replies.length >= n, `${n} replies (got ${replies.length})`).then(() => replies[n - 1]!),
  };
}

/** Poll a condition of the test's own making; fail (not hang) when it never comes. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never happened: ${what}`);
}

const STATE = JSON.stringify({ type: "state" });

/**
 * A socket on its own server whose episode was reset (reply 1), then a `state` message the host
 * holds until `host.release()`: what waits behind it is what a test counts.
 */
async function socketWithOneInProgress(maxWsMessageBytes: number) {
  const host = new GatedHost();
  const budget = new MemoryBudget(1 << 30, () => 0);
  const served = await serveWs(host, { budget, maxWsMessageBytes });
  const c = await connect(served.url);
  c.send({ type: "reset", data: { seed: 1 } });
  expect((await c.reply(1)).type).toBe("observation");
  host.hold();
  c.send(STATE);
  await host.entered;
  return { host, budget, served, c };
}

describe("messages waiting on one socket", () => {
  it("lets exactly 64 wait behind the one in progress and answers them all", async () => {
    const { host, budget, c } = await socketWithOneInProgress(1024);
    for (let i = 0; i < 64; i++) c.send(STATE);
    await until(() => budget.usedBytes === 64 * 2 * STATE.length + 2 * STATE.length, "64 messages held");
    host.release();
    await c.reply(66);
    expect(c.replies.slice(1).every((r) => r.type === "state")).toBe(true);
    expect(host.calls.state).toBe(65);
    // Every held byte is given back once its message is answered.
    await until(() => budget.usedBytes === 0, "budget released");
    c.send({ type: "close" });
    expect(await c.closed).toEqual({ code: 1000, reason: "closed by client" });
  });

  it("cuts the client off at the 65th (1008), runs none of what it queued and frees its episode", async () => {
    const { host, budget, served, c } = await socketWithOneInProgress(1024);
    for (let i = 0; i < 65; i++) c.send(STATE);
    let allQueued = false;
    const queued = until(() => budget.usedBytes >= 66 * 2 * STATE.length, "65 messages held").then(() => (allQueued = true), () => undefined);
    const closed = await Promise.race([c.closed, queued.then(() => ({ code: -1, reason: "all 65 were queued" }))]);
    expect(allQueued).toBe(false);
    expect(closed.code).toBe(1008);
    expect(closed.reason).toBe("more than 64 messages waiting: send one at a time");
    await until(() => served.clients() === 0, "server saw the close");
    host.release();
    await until(() => host.calls.close === 1, "episode freed");
    await until(() => budget.usedBytes === 0, "budget released");
    expect(host.calls.state).toBe(1);
  });

  it("after the cutoff runs none of what was queued and frees the episode, even while the client leaves the close unanswered", async () => {
    const { host, budget, served, c } = await socketWithOneInProgress(1024);
    for (let i = 0; i < 65; i++) c.send(STATE);
    // The client stops reading: the server's close frame stays unread and unanswered, so the
    // server's socket stays open (ws would wait 30 s) and no close event ends the session for it.
    (c.ws as unknown as { _socket: Socket })._socket.pause();
    await until(() => served.states().includes(WebSocket.CLOSING), "the server sent its close (1008)");
    expect(budget.usedBytes).toBe(65 * 2 * STATE.length); // the one in progress and 64 queued
    host.release();
    await until(() => host.calls.close === 1, "episode freed by the cutoff itself");
    expect(host.calls.state).toBe(1);
    expect(served.states()).toEqual([WebSocket.CLOSING]); // the close handshake has not happened
    expect(budget.usedBytes).toBe(0);
    (c.ws as unknown as { _socket: Socket })._socket.resume();
    expect(await c.closed).toEqual({ code: 1008, reason: "more than 64 messages waiting: send one at a time" });
  });

  it("lets messages of twice the limit's characters wait, then reads no more from the socket until they drain", async () => {
    const { host, budget, c } = await socketWithOneInProgress(100);
    const hundred = STATE.padEnd(100, " ");
    c.send(hundred);
    c.send(hundred);
    await until(() => budget.usedBytes === 2 * STATE.length + 2 * 2 * 100, "two messages of 100 characters held");
    // 200 characters wait: the limit. The next message stays unread (backpressure), so it is
    // neither held nor refused while the others wait.
    c.send("{}");
    await new Promise((r) => setTimeout(r, 200));
    expect(c.replies).toHaveLength(1);
    expect(budget.usedBytes).toBe(2 * STATE.length + 2 * 2 * 100);
    host.release();
    await c.reply(5);
    expect(c.replies.slice(1).map((r) => r.type)).toEqual(["state", "state", "state", "error"]);
    expect(c.replies[4]!.data).toMatchObject({ code: "UNKNOWN_TYPE" }); // "{}" answered in its turn, parsed
  });

  it("forgets the characters of answered messages", async () => {
    const host = new GatedHost();
    const served = await serveWs(host, { budget: new MemoryBudget(1 << 30, () => 0), maxWsMessageBytes: 100 });
    const c = await connect(served.url);
    c.send({ type: "reset", data: { seed: 1 } });
    await c.reply(1);
    // Answered one at a time: far more than 200 characters in all, never more than one waiting.
    for (let i = 2; i <= 21; i++) {
      c.send(STATE.padEnd(60, " "));
      expect((await c.reply(i)).type).toBe("state");
    }
    host.hold();
    c.send(STATE);
    await host.entered;
    c.send(STATE);
    c.send(STATE.padEnd(100, " "));
    host.release();
    await c.reply(24);
    expect(c.replies.slice(21).map((r) => r.type)).toEqual(["state", "state", "state"]);
  });

  it("runs nothing a client queued before its close message, once it is closed", async () => {
    const { host, served, c } = await socketWithOneInProgress(1024);
    c.send({ type: "close" });
    c.send({ type: "reset", data: { seed: 2, episode_id: "ghost" } });
    host.release();
    expect(await c.closed).toEqual({ code: 1000, reason: "closed by client" });
    await until(() => served.clients() === 0, "server saw the close");
    expect(host.calls.reset).toBe(1);
    expect(host.calls.close).toBe(1);
  });

  it("runs nothing a client queued before it went away, and frees its episode", async () => {
    const { host, served, c } = await socketWithOneInProgress(1024);
    for (let i = 0; i < 3; i++) c.send(STATE);
    c.ws.terminate();
    await until(() => served.clients() === 0, "server saw the disconnect");
    host.release();
    await until(() => host.calls.close === 1, "episode freed");
    expect(host.calls.state).toBe(1);
  });
});

describe("sessionWebSocket's options", () => {
  it("works without a memory budget, answers binary frames, and logs no handler failure", async () => {
    const failures = vi.spyOn(console, "error");
    const served = await serveWs(new GatedHost());
    const c = await connect(served.url);
    c.ws.send(Buffer.from(JSON.stringify({ type: "reset", data: { seed: 1 } })));
    expect((await c.reply(1)).type).toBe("observation");
    c.send(STATE);
    expect((await c.reply(2)).type).toBe("state");
    c.send({ type: "close" });
    await c.closed;
    await until(() => served.clients() === 0, "server saw the close");
    expect(failures.mock.calls.filter((args) => String(args[0]).includes("WebSocket handler failed"))).toEqual([]);
  });

  it("refuses a message over the limit it is given (default 1 MiB) as too large, never as OVERLOADED", async () => {
    const small = await serveWs(new GatedHost(), { maxWsMessageBytes: 100 });
    const c = await connect(small.url);
    c.send(STATE.padEnd(101, " "));
    expect((await c.reply(1)).data).toMatchObject({ code: "VALIDATION_ERROR", reason: "PAYLOAD_TOO_LARGE", message: "message exceeds 100 bytes" });
    // Alone on its socket, even a message past twice the limit is too large rather than too many.
    c.send(STATE.padEnd(250, " "));
    expect((await c.reply(2)).data).toMatchObject({ code: "VALIDATION_ERROR", reason: "PAYLOAD_TOO_LARGE" });
    const dflt = await serveWs(new GatedHost());
    const d = await connect(dflt.url);
    d.send(JSON.stringify({ type: "reset", data: { seed: 1 } }).padEnd(1 << 20, " "));
    expect((await d.reply(1)).type).toBe("observation");
    d.send(STATE.padEnd((1 << 20) + 1, " "));
    expect((await d.reply(2)).data).toMatchObject({ reason: "PAYLOAD_TOO_LARGE", message: `message exceeds ${1 << 20} bytes` });
  });

  it("runs MCP calls on the engine it is given", async () => {
    const inline = inlineEngine({});
    const keys: string[] = [];
    const engine: EnvEngine = { ...inline, mcp: (env, body, scope) => (keys.push(scope.key), inline.mcp(env, body, scope)) };
    const served = await serveWs(new GatedHost(), { engine });
    const c = await connect(served.url);
    c.send({ type: "mcp", data: { jsonrpc: "2.0", id: 1, method: "ping" } });
    expect(await c.reply(1)).toEqual({ type: "mcp", data: { jsonrpc: "2.0", id: 1, result: {} } });
    expect(keys).toHaveLength(1);
  });

  it("runs MCP calls with the services it is given when no engine is", async () => {
    const runs: string[] = [];
    const sandbox = { kind: "quickjs", run: async (code: string) => (runs.push(code), { ok: true, result: 2, stdout: "", stderr: "", elapsedMs: 0 }), dispose: async () => undefined } as unknown as Sandbox;
    const served = await serveWs(new GatedHost(), { services: { sandbox } }, environments.find((e) => e.name === "math-tools")!);
    const c = await connect(served.url);
    c.send({ type: "mcp", data: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "javascript", arguments: { code: "1 + 1" } } } });
    const r = await c.reply(1);
    expect(r.type).toBe("mcp");
    expect(r.data.error).toBeUndefined();
    expect(runs).toEqual(["1 + 1"]);
  });
});
