/**
 * The app's answers, exactly (found by mutation testing: `npm run mutate`): the listing and
 * metadata fields, every error a route gives with its status, message and headers, and the
 * WebSocket's closing and its per-socket backlog of large messages.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { environments } from "../envs/index.ts";
import { startServer, type RunningServer } from "../src/node.ts";
import { wsHandlers } from "../src/server/app.ts";
import type { WsSession } from "../src/server/ws-session.ts";
import { request, get, post } from "./helpers/http.ts";
import { OpenEnvWsClient } from "./helpers/ws-client.ts";

const MAX_WS = 4096;
let server: RunningServer;
const rt = () => `${server.url}/envs/reverse-text`;
const reverseText = environments.find((e) => e.name === "reverse-text")!;

beforeAll(async () => {
  server = await startServer([reverseText], { port: 0, maxWsMessageBytes: MAX_WS });
});
afterAll(async () => {
  await server?.close();
});

describe("answers", () => {
  it("lists each environment with its fields and URL", async () => {
    const r = await get(`${server.url}/envs`);
    expect(r.body).toEqual({
      envs: [
        {
          name: "reverse-text",
          description: reverseText.description,
          version: reverseText.version,
          max_turns: reverseText.maxTurns,
          splits: reverseText.splits,
          url: "/envs/reverse-text",
        },
      ],
    });
    expect((await get(`${rt()}/health`)).body).toEqual({ status: "healthy" });
    const meta = await get(`${rt()}/metadata`);
    expect(meta.body).toMatchObject({ name: "reverse-text", description: reverseText.description, version: reverseText.version });
    expect(Object.keys(meta.body).every((k) => ["name", "description", "version", "author", "documentation_url"].includes(k))).toBe(true);
  });

  it("gives each error its status, code and message", async () => {
    const cases: [string, Promise<{ status: number; body: any; headers: Headers }>, number, string, string | RegExp][] = [
      ["unknown env", get(`${server.url}/envs/nope/health`), 404, "UNKNOWN_ENV", 'unknown environment "nope"; GET /envs lists them'],
      ["unknown route", get(`${rt()}/dance`), 404, "NOT_FOUND", "no route GET /envs/reverse-text/dance"],
      ["unknown root route", get(`${server.url}/nope`), 404, "NOT_FOUND", "no route GET /nope"],
      ["wrong method", request("DELETE", `${rt()}/reset`), 405, "METHOD_NOT_ALLOWED", "/envs/reverse-text/reset accepts POST, not DELETE"],
      ["ws without upgrade", get(`${rt()}/ws`), 426, "VALIDATION_ERROR", "this route speaks WebSocket: send an Upgrade: websocket request"],
      ["state without id", get(`${rt()}/state`), 400, "VALIDATION_ERROR", "episode_id query parameter is required"],
      ["bad JSON", post(`${rt()}/step`, "{"), 400, "INVALID_JSON", "request body is not valid JSON"],
      ["empty step body", post(`${rt()}/step`, ""), 400, "INVALID_JSON", "request body is not valid JSON"],
      ["schema mismatch", post(`${rt()}/close`, { nope: 1 }), 400, "VALIDATION_ERROR", "request body does not match the schema"],
    ];
    for (const [name, pending, status, code, message] of cases) {
      const r = await pending;
      expect(r.status, name).toBe(status);
      expect(r.body.error.code, name).toBe(code);
      expect(r.body.error.message, name).toEqual(message);
    }
    const wrong = await request("GET", `${rt()}/step`);
    expect(wrong.headers.get("allow")).toBe("POST");
    const invalid = await post(`${rt()}/close`, { nope: 1 });
    expect(Array.isArray(invalid.body.error.details)).toBe(true);
  });

  it("closes an episode and says so", async () => {
    const r = await post(`${rt()}/reset`, {});
    expect((await post(`${rt()}/close`, { episode_id: r.body.episode_id })).body).toEqual({ episode_id: r.body.episode_id, closed: true });
    expect((await get(`${rt()}/state?episode_id=${r.body.episode_id}`)).status).toBe(404);
  });

  it("answers examples and score requests, an empty examples body as {}", async () => {
    const ex = await post(`${rt()}/examples`, "");
    expect(ex.status).toBe(200);
    expect(ex.body.examples.length).toBeGreaterThan(0);
    const sc = await post(`${rt()}/score`, { items: [{ completion: "<reversed_text>ab</reversed_text>", answer: "ab" }] });
    expect(sc.body.results[0].reward).toBe(1);
  });
});

describe("WebSocket sessions", () => {
  it("a close message closes the socket with 1000 and frees the episode", async () => {
    const ws = await OpenEnvWsClient.connect(rt());
    const r = await ws.reset({});
    ws.ws.send(JSON.stringify({ type: "close" }));
    const closed = await ws.closed;
    expect(closed.code).toBe(1000);
    expect((await get(`${rt()}/state?episode_id=${r.data.episode_id}`)).status).toBe(404);
  });

  it("a dropped connection frees its episode", async () => {
    const ws = await OpenEnvWsClient.connect(rt());
    const r = await ws.reset({});
    ws.ws.terminate();
    for (let i = 0; i < 50 && (await get(`${rt()}/state?episode_id=${r.data.episode_id}`)).status === 200; i++) await new Promise((res) => setTimeout(res, 20));
    expect((await get(`${rt()}/state?episode_id=${r.data.episode_id}`)).status).toBe(404);
  });

  it("keeps about two large messages waiting per socket; past that a message is answered OVERLOADED unparsed", async () => {
    const ws = new WebSocket(`${rt().replace(/^http/, "ws")}/ws`);
    await new Promise((res, rej) => {
      ws.once("open", res);
      ws.once("error", rej);
    });
    const replies: { type: string; data: any }[] = [];
    ws.on("message", (m) => replies.push(JSON.parse(String(m))));
    const big = JSON.stringify({ type: "reset", data: { seed: 1 } }).padEnd(MAX_WS - 10, " ");
    // Sent in one go: the first is being handled while the others wait.
    for (let i = 0; i < 4; i++) ws.send(big);
    for (let i = 0; i < 100 && replies.length < 4; i++) await new Promise((res) => setTimeout(res, 20));
    const overloaded = replies.filter((r) => r.type === "error");
    expect(overloaded.length).toBeGreaterThanOrEqual(1);
    expect(overloaded[0]!.data).toMatchObject({ code: "CAPACITY_REACHED", reason: "OVERLOADED", retry_after_s: 1 });
    expect(overloaded[0]!.data.message).toContain(`more than ${2 * MAX_WS} characters of messages waiting on this socket`);
    expect(replies.filter((r) => r.type === "observation").length).toBeGreaterThanOrEqual(2);
    ws.close();
  });
});

describe("WebSocket backpressure (wsHandlers)", () => {
  const fakeSocket = (raw: unknown) => ({ raw, readyState: 1, send: vi.fn(), close: vi.fn() });
  /** A session whose messages finish when the test says so. */
  const heldSession = () => {
    const finish: (() => void)[] = [];
    const handled: string[] = [];
    const session = {
      handle: (text: string) =>
        new Promise<{ reply?: { type: "state"; data: unknown } }>((ok) => {
          handled.push(text);
          finish.push(() => ok({ reply: { type: "state", data: text.length } }));
        }),
      dispose: async () => {},
    };
    return { session: session as unknown as WsSession, finish, handled };
  };
  const tick = () => new Promise((r) => setImmediate(r));

  it("stops reading a socket while its waiting messages reach the limit, and reads again once they drain", async () => {
    const raw = { pause: vi.fn(), resume: vi.fn() };
    const ws = fakeSocket(raw);
    const { session, finish, handled } = heldSession();
    const h = wsHandlers(session, undefined, 100);
    const msg = (n: number) => ({ data: "x".repeat(n) }) as MessageEvent;
    h.onMessage(msg(60), ws as never);
    expect(raw.pause).not.toHaveBeenCalled();
    h.onMessage(msg(40), ws as never); // 100 characters waiting: the limit
    expect(raw.pause).toHaveBeenCalledTimes(1);
    // A frame the transport had already read is answered at once, unparsed.
    h.onMessage(msg(10), ws as never);
    expect(ws.send).toHaveBeenCalledTimes(1);
    expect(JSON.parse(ws.send.mock.calls[0]![0] as string).data).toMatchObject({ reason: "OVERLOADED" });
    expect(raw.pause).toHaveBeenCalledTimes(1);
    await tick();
    // The first message left the queue: 40 characters wait, under the limit, so reading resumes.
    expect(handled).toHaveLength(1);
    expect(raw.resume).toHaveBeenCalledTimes(1);
    finish[0]!();
    await tick();
    finish[1]!();
    await tick();
    expect(handled.map((t) => t.length)).toEqual([60, 40]);
    expect(ws.send.mock.calls.slice(1).map((c) => JSON.parse(c[0] as string).data)).toEqual([60, 40]);
    expect(raw.resume).toHaveBeenCalledTimes(1);
  });

  it("a transport that cannot pause (a Durable Object's socket) gets OVERLOADED answers only", async () => {
    const ws = fakeSocket({});
    const { session, finish } = heldSession();
    const h = wsHandlers(session, undefined, 100);
    for (const n of [60, 40, 10]) h.onMessage({ data: "y".repeat(n) } as MessageEvent, ws as never);
    expect(ws.send).toHaveBeenCalledTimes(1);
    await tick();
    finish[0]!();
    await tick();
    finish[1]!();
    await tick();
    expect(ws.send).toHaveBeenCalledTimes(3);
  });
});
