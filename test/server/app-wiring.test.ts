/**
 * The app's answers, exactly (found by mutation testing: `npm run mutate`): the listing and
 * metadata fields, every error a route gives with its status, message and headers, and the
 * WebSocket's closing and its per-socket backlog of large messages.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { environments } from "../../envs/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import type { WsSession } from "../../src/server/ws-session.ts";
import { request, get, post } from "../helpers/http.ts";
import { OpenEnvWsClient } from "../helpers/ws-client.ts";
import { createApp, wsHandlers, type AppOptions } from "../../src/server/app.ts";
import { defineEnvironment } from "../../src/env/environment.ts";
import { ApiError } from "../../src/env/errors.ts";
import { inlineEngine, type EnvEngine } from "../../src/server/engine.ts";
import { StoreEpisodeHost, type EpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { OVERLOADED_RETRY_AFTER_S } from "../../src/server/memory.ts";
import { createLogger, logger, setLogger } from "../../src/server/log.ts";
import type { Sandbox } from "../../src/sandbox/types.ts";

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
      ["mistyped env", post(`${server.url}/envs/revers-text/reset`, {}), 404, "UNKNOWN_ENV", 'unknown environment "revers-text" (did you mean "reverse-text"?); GET /envs lists them'],
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

  it.each([
    ["a Durable Object's socket", {}],
    ["no socket at all", undefined],
    ["a socket that can pause but not resume", { pause: vi.fn() }],
  ])("a transport that cannot pause and resume (%s) gets OVERLOADED answers only", async (_what, raw) => {
    const ws = fakeSocket(raw);
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
    if (raw && "pause" in raw) expect(raw.pause).not.toHaveBeenCalled();
  });

  it("does not read again while the limit's worth still waits behind an empty message that left the queue", async () => {
    const raw = { pause: vi.fn(), resume: vi.fn() };
    const ws = fakeSocket(raw);
    const { session, finish, handled } = heldSession();
    const h = wsHandlers(session, undefined, 100);
    h.onMessage({ data: "" } as MessageEvent, ws as never);
    h.onMessage({ data: "z".repeat(100) } as MessageEvent, ws as never); // 100 characters waiting
    expect(raw.pause).toHaveBeenCalledTimes(1);
    await tick();
    expect(handled).toEqual([""]); // the empty one left the queue; 100 characters still wait
    expect(raw.resume).not.toHaveBeenCalled();
    finish[0]!();
    await tick();
    expect(handled).toHaveLength(2);
    expect(raw.resume).toHaveBeenCalledTimes(1);
    finish[1]!();
    await tick();
    expect(raw.resume).toHaveBeenCalledTimes(1);
  });
});

/**
 * An app built inside each test: a route's registration runs when the app is built, so these
 * tests (not only the shared server's beforeAll) hold each route's path and handler.
 */
describe("a freshly built app", () => {
  const withMeta = defineEnvironment({
    name: "with-meta",
    description: "An environment with an author and a documentation URL.",
    version: "1.2.3",
    author: "Ada",
    documentationUrl: "https://example.com/docs",
    maxTurns: 1,
    dataset: () => [{ prompt: "p", answer: "a" }],
    respond: () => ({ messages: "ok", done: true }),
    rubric: [{ name: "done", fn: () => 1 }],
  });
  /** An engine that runs inline and records the scope of every stateless call. */
  const recordingEngine = () => {
    const inline = inlineEngine({});
    const scopes: { route: string; key: string; signal: unknown }[] = [];
    const engine: EnvEngine = {
      ...inline,
      score: (env, items, scope) => (scopes.push({ route: "score", key: scope.key, signal: scope.signal }), inline.score(env, items, scope)),
      examples: (env, req, scope) => (scopes.push({ route: "examples", key: scope.key, signal: scope.signal }), inline.examples(env, req, scope)),
      mcp: (env, body, scope) => (scopes.push({ route: "mcp", key: scope.key, signal: scope.signal }), inline.mcp(env, body, scope)),
    };
    return { engine, scopes };
  };
  const build = (opts: Partial<AppOptions> = {}) =>
    createApp({ envs: [reverseText, withMeta], host: new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({})), ...opts });
  const json = async (r: Response | Promise<Response>) => {
    const res = await r;
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  };
  const postJson = (app: ReturnType<typeof build>, path: string, body: unknown, headers: Record<string, string> = {}) =>
    app.request(path, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), headers: { "content-type": "application/json", ...headers } });

  it("serves every read-only route at its path", async () => {
    const app = build();
    expect(await json(app.request("/health"))).toMatchObject({ status: 200, body: { status: "healthy" } });
    expect((await json(app.request("/envs"))).body.envs.map((e: { url: string }) => e.url)).toEqual(["/envs/reverse-text", "/envs/with-meta"]);
    expect(await json(app.request("/envs/reverse-text/health"))).toMatchObject({ status: 200, body: { status: "healthy" } });
    expect((await json(app.request("/envs/with-meta/metadata"))).body).toEqual({
      name: "with-meta",
      description: "An environment with an author and a documentation URL.",
      version: "1.2.3",
      author: "Ada",
      documentation_url: "https://example.com/docs",
    });
    const schema = await json(app.request("/envs/reverse-text/schema"));
    expect(schema.status).toBe(200);
    expect(Object.keys(schema.body).length).toBeGreaterThan(0);
    const openapi = await json(app.request("/envs/reverse-text/openapi.json"));
    expect(openapi.status).toBe(200);
    expect(openapi.body.openapi).toMatch(/^3\./);
    const unknown = await json(app.request("/nope"));
    expect(unknown).toMatchObject({ status: 404, body: { error: { code: "NOT_FOUND", message: "no route GET /nope" } } });
    expect(unknown.headers.get("retry-after")).toBeNull();
    const wrong = await json(app.request("/envs/reverse-text/score"));
    expect(wrong).toMatchObject({ status: 405, body: { error: { code: "METHOD_NOT_ALLOWED", message: "/envs/reverse-text/score accepts POST, not GET" } } });
  });

  it("passes each stateless call the caller's key and abort signal", async () => {
    const { engine, scopes } = recordingEngine();
    const app = build({ engine, clientOf: (c) => c.req.header("x-who") ?? "nobody" });
    const sc = await json(postJson(app, "/envs/reverse-text/score", { items: [{ completion: "<reversed_text>ba</reversed_text>", answer: "ba" }] }, { "x-who": "alice" }));
    expect(sc).toMatchObject({ status: 200, body: { results: [{ reward: 1 }] } });
    expect((await json(postJson(app, "/envs/reverse-text/examples", "", { "x-who": "bob" }))).body.examples.length).toBeGreaterThan(0);
    expect((await json(postJson(app, "/envs/reverse-text/mcp", { jsonrpc: "2.0", id: 1, method: "ping" }, { "x-who": "carol" }))).body).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    expect(scopes.map((s) => [s.route, s.key])).toEqual([
      ["score", "alice"],
      ["examples", "bob"],
      ["mcp", "carol"],
    ]);
    for (const s of scopes) expect(s.signal).toBeInstanceOf(AbortSignal);
    const parse = await json(postJson(app, "/envs/reverse-text/mcp", "{nope"));
    expect(parse.body).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error: body is not valid JSON" } });
    expect(scopes).toHaveLength(3); // a body that is not JSON never reaches the engine
  });

  it("runs stateless environment code with the services it is given when no engine is", async () => {
    const runs: string[] = [];
    const sandbox = { kind: "quickjs", run: async (code: string) => (runs.push(code), { ok: true, result: 2, stdout: "", stderr: "", elapsedMs: 0 }), dispose: async () => undefined } as unknown as Sandbox;
    const mathTools = environments.find((e) => e.name === "math-tools")!;
    const app = createApp({ envs: [mathTools], host: new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({})), services: { sandbox } });
    const call = await json(postJson(app, "/envs/math-tools/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "javascript", arguments: { code: "1 + 1" } } }));
    expect(call.status).toBe(200);
    expect(call.body.error).toBeUndefined();
    expect(runs).toEqual(["1 + 1"]);
  });

  it("reads bodies with the platform's reader, and a blank body as {} where the schema allows it", async () => {
    const refusing = build({ readBody: async () => Promise.reject(new ApiError("PAYLOAD_TOO_LARGE", "the platform's reader said no")) });
    expect((await json(postJson(refusing, "/envs/reverse-text/reset", {}))).body.error.message).toBe("the platform's reader said no");
    const app = build();
    const blank = await json(postJson(app, "/envs/reverse-text/reset", " \n\t "));
    expect(blank.status).toBe(200);
    expect(blank.body.done).toBe(false);
    expect((await json(postJson(app, "/envs/reverse-text/step", " "))).body.error.code).toBe("INVALID_JSON");
  });

  it("answers a WebSocket upgrade with 404 when the platform has no WebSocket", async () => {
    const r = await json(build().request("/envs/reverse-text/ws", { headers: { upgrade: "websocket" } }));
    expect(r).toMatchObject({ status: 404, body: { error: { code: "NOT_FOUND", message: "WebSocket is not available on this server" } } });
  });

  it("requires the token on every route but /health, at the root and under /t/{token}/", async () => {
    const app = build({ token: "sesame" });
    expect((await app.request("/health")).status).toBe(200);
    expect((await app.request("/envs")).status).toBe(401);
    expect((await app.request("/envs", { headers: { authorization: "Bearer sesame" } })).status).toBe(200);
    expect((await app.request("/t/sesame/envs")).status).toBe(200);
    expect((await app.request("/t/wrong/envs")).status).toBe(401);
  });

  it("answers OVERLOADED with Retry-After, and logs its own failures (not the client's) with the stack", async () => {
    const lines: string[] = [];
    const previous = logger();
    setLogger(createLogger("warn", (l) => lines.push(l)));
    try {
      const failing: EpisodeHost = {
        reset: async () => {
          throw new ApiError("OVERLOADED", "too busy");
        },
        step: async () => {
          throw new Error("the host broke");
        },
        state: async () => {
          throw new ApiError("UNKNOWN_EPISODE", "no such episode");
        },
        close: async () => true,
        exists: async () => false,
      };
      const app = build({ host: failing });
      const busy = await json(postJson(app, "/envs/reverse-text/reset", {}));
      expect(busy.status).toBe(503);
      expect(busy.headers.get("retry-after")).toBe(String(OVERLOADED_RETRY_AFTER_S));
      expect((await json(app.request("/envs/reverse-text/state?episode_id=x"))).status).toBe(404);
      expect(lines).toEqual([]);
      const broken = await json(postJson(app, "/envs/reverse-text/step", { episode_id: "x", action: { content: "hi" } }));
      expect(broken).toMatchObject({ status: 500, body: { error: { code: "INTERNAL_ERROR", message: "the host broke" } } });
      expect(broken.headers.get("retry-after")).toBeNull();
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(" error POST /envs/reverse-text/step failed: the host broke\n");
      expect(lines[0]).toMatch(/\n {4}Error: the host broke\n {4}\s*at /);
    } finally {
      setLogger(previous);
    }
  });

  it("logs one line per request at info (method, redacted path and query, status, time); none at warn", async () => {
    const lines: string[] = [];
    const previous = logger();
    try {
      setLogger(createLogger("warn", (l) => lines.push(l)));
      const app = build({ token: "sesame" });
      await app.request("/t/sesame/envs/reverse-text/health");
      expect(lines).toEqual([]);
      setLogger(createLogger("info", (l) => lines.push(l)));
      // A host that takes a known minimum time, so the logged duration can be checked both ways.
      const base = new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({}));
      const slow: EpisodeHost = {
        reset: (env, opts, client) => base.reset(env, opts, client),
        step: (env, id, action, client) => base.step(env, id, action, client),
        close: (env, id, client) => base.close(env, id, client),
        exists: (env, id, client) => base.exists(env, id, client),
        state: async () => {
          await new Promise((r) => setTimeout(r, 60));
          return { ok: true };
        },
      };
      const timed = build({ token: "sesame", host: slow });
      const started = performance.now();
      expect((await timed.request("/t/sesame/envs/reverse-text/state?episode_id=e1&token=sesame")).status).toBe(200);
      const elapsed = performance.now() - started;
      expect(lines).toHaveLength(1);
      const m = /^\S+ info GET \/t\/\*\*\*\/envs\/reverse-text\/state\?episode_id=e1&token=\*\*\* 200 ms=([\d.]+)$/.exec(lines[0]!);
      expect(m, lines[0]).not.toBeNull();
      const ms = Number(m![1]);
      expect(ms).toBeGreaterThanOrEqual(50); // the host slept 60 ms (timers may fire a little early)
      expect(ms).toBeLessThanOrEqual(elapsed + 0.1);
    } finally {
      setLogger(previous);
    }
  });
});
