/**
 * Other clients and web pages against a live server (`envworker serve` in a child process), each
 * attack run while a probe keeps playing reverse-text (test/helpers/hostile.ts):
 *
 * - an episode belongs to the client that made it (its address; its token when several are
 *   configured): another client that knows its id can neither play, read, close nor attach to it,
 *   gets exactly the answers a made-up id gets, and choosing that id for itself tells it nothing;
 * - a web page cannot drive a token-less server on its visitor's machine: a body that is not JSON
 *   is refused 415, another origin 403 (HTTP and WebSocket), a Host that is not a loopback name 403
 *   (DNS rebinding); the server's own pages, listed origins and clients that send no Origin are served;
 * - twenty WebSockets of one address are one client for the sandbox: their stateless tool calls
 *   start the processes one client may have, not one each;
 * - `B/ws?session_id=S` (OpenEnv 0.10's MCPToolClient) plays S, the session its HTTP tool calls play.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childPids, expectServed, startLiveServer, underAttack, type LiveServer } from "../helpers/hostile.ts";
import { requestFrom } from "../helpers/http.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { reverseTextGold } from "../helpers/oracles.ts";
import { OpenEnvWsClient, upgradeStatus } from "../helpers/ws-client.ts";

const ALLOWED = "http://allowed.example:5173";
const SANDBOX_SLOTS = 2;

let open: LiveServer;
let tokens: LiveServer;

beforeAll(async () => {
  [open, tokens] = await Promise.all([
    // Two sandbox slots: at most three sandbox processes (one per slot and a spare) with client
    // affinity. At info, the server logs every sandbox host it replaces, and why.
    startLiveServer({ ENVWORKER_ALLOWED_ORIGINS: ALLOWED, ENVWORKER_SANDBOX_CONCURRENCY: String(SANDBOX_SLOTS), ENVWORKER_LOG: "info" }),
    startLiveServer({ ENVWORKER_TOKEN: "token-a,token-b" }),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.all([open?.stop(), tokens?.stop()]);
});

/** One client of a server: how it sends requests and opens sockets. */
interface Client {
  http(method: string, url: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any; headers: Record<string, string | string[] | undefined> }>;
  ws(base: string, query?: string): Promise<OpenEnvWsClient>;
  /** The upgrade's status: 101 when the socket opened. */
  upgrade(base: string, query?: string, headers?: Record<string, string>): Promise<number>;
}

/** A client known by its address (a token-less server). */
const byAddress = (address: string): Client => ({
  http: (method, url, body, headers = {}) => requestFrom(address, method, url, body, headers),
  ws: (base, query) => OpenEnvWsClient.connect(base, undefined, { localAddress: address, ...(query ? { query } : {}) }),
  upgrade: (base, query, headers = {}) => upgradeStatus(`${base}/ws${query ? `?${query}` : ""}`, headers, address),
});

/** A client known by its token (ENVWORKER_TOKEN names several), from the same address as the others. */
const byToken = (token: string): Client => {
  const auth = { authorization: `Bearer ${token}` };
  return {
    http: (method, url, body, headers = {}) => requestFrom("127.0.0.1", method, url, body, { ...auth, ...headers }),
    // OpenEnv's WebSocket client sends no headers: the token in the path, as the README says.
    ws: (base, query) => OpenEnvWsClient.connect(base.replace(/\/envs\//, `/t/${token}/envs/`), undefined, query ? { query } : {}),
    upgrade: (base, query, headers = {}) => upgradeStatus(`${base}/ws${query ? `?${query}` : ""}`, { ...auth, ...headers }),
  };
};

const rpc = (method: string, params?: Record<string, unknown>) => ({ jsonrpc: "2.0", id: 1, method, ...(params ? { params } : {}) });
const q = encodeURIComponent;

/**
 * Client B tries every route that acts on an episode with the given ids (an HTTP reverse-text
 * episode, an MCP session of math-tools, a WebSocket's reverse-text episode): what it gets back.
 */
async function tryEpisodes(origin: string, b: Client, ids: { rt: string; mt: string; ws: string }) {
  const rt = `${origin}/envs/reverse-text`;
  const mt = `${origin}/envs/math-tools`;
  const out: Record<string, unknown> = {};
  for (const [label, id] of [["http", ids.rt], ["ws", ids.ws]] as const) {
    out[`${label} step`] = await b.http("POST", `${rt}/step`, { episode_id: id, action: { content: "stolen" } });
    out[`${label} state`] = await b.http("GET", `${rt}/state?episode_id=${q(id)}`);
    out[`${label} close`] = await b.http("POST", `${rt}/close`, { episode_id: id });
    out[`${label} attach`] = await b.upgrade(rt, `session_id=${q(id)}`);
  }
  out["mcp tools/call"] = await b.http("POST", `${mt}/mcp`, rpc("tools/call", { session_id: ids.mt, name: "calculator", arguments: { expression: "6*7" } }));
  out["mcp tools/list"] = await b.http("POST", `${mt}/mcp`, rpc("tools/list", { session_id: ids.mt }));
  out["mcp?session_id= tools/call"] = await b.http("POST", `${mt}/mcp?session_id=${q(ids.mt)}`, rpc("tools/call", { name: "submit", arguments: { content: "\\boxed{0}" } }));
  out["mcp session/close"] = await b.http("POST", `${mt}/mcp`, rpc("openenv/session/close", { session_id: ids.mt }));
  out["mcp attach"] = await b.upgrade(mt, `session_id=${q(ids.mt)}`);
  const ws = await b.ws(mt);
  try {
    out["ws mcp tools/call"] = (await ws.send({ type: "mcp", data: rpc("tools/call", { session_id: ids.mt, name: "submit", arguments: { content: "\\boxed{0}" } }) })).data;
    out["ws mcp session/close"] = (await ws.send({ type: "mcp", data: rpc("openenv/session/close", { session_id: ids.mt }) })).data;
  } finally {
    ws.close();
  }
  // The answers, without the ids they name (those differ by construction).
  return JSON.parse(JSON.stringify(out, (k, v) => (k === "headers" ? undefined : v)).replaceAll(ids.rt, "<id>").replaceAll(ids.mt, "<id>").replaceAll(ids.ws, "<id>"));
}

/** A's episodes; B tries them, then plays an episode of its own under A's id; A's are untouched. */
async function ownershipAttack(origin: string, a: Client, b: Client) {
  const rt = `${origin}/envs/reverse-text`;
  const mt = `${origin}/envs/math-tools`;
  const reset = await a.http("POST", `${rt}/reset`, { seed: 3 });
  expect(reset.status).toBe(200);
  const session = await a.http("POST", `${mt}/mcp`, rpc("openenv/session/create", { seed: 1 }));
  const sid = session.body.result.session_id as string;
  const wsA = await a.ws(rt);
  try {
    const wsReset = await wsA.reset({ seed: 4 });
    const ids = { rt: reset.body.episode_id as string, mt: sid, ws: wsReset.data.episode_id as string };

    const taken = await tryEpisodes(origin, b, ids);
    const madeUp = await tryEpisodes(origin, b, { rt: "made-up-episode-id-1", mt: "made-up-session-id-2", ws: "made-up-episode-id-3" });

    // B chooses A's ids for episodes of its own: made and played like any other.
    const ownReset = await b.http("POST", `${rt}/reset`, { seed: 9, episode_id: ids.rt });
    const ownWsId = await b.http("POST", `${rt}/reset`, { seed: 9, episode_id: ids.ws });
    const ownStep = await b.http("POST", `${rt}/step`, { episode_id: ids.rt, action: { content: reverseTextGold(ownReset.body.observation.messages) } });

    // A's episodes are as A left them, and play on.
    const stateA = await a.http("GET", `${rt}/state?episode_id=${q(ids.rt)}`);
    const stepA = await a.http("POST", `${rt}/step`, { episode_id: ids.rt, action: { content: reverseTextGold(reset.body.observation.messages) } });
    const callA = await a.http("POST", `${mt}/mcp`, rpc("tools/call", { session_id: sid, name: "calculator", arguments: { expression: "6*7" } }));
    const wsStateA = await wsA.send({ type: "state" });
    const wsStepA = await wsA.step({ content: reverseTextGold(wsReset.data.observation.messages) });
    return { ids, taken, madeUp, ownReset, ownWsId, ownStep, stateA, stepA, callA, wsStateA, wsStepA };
  } finally {
    wsA.close();
  }
}

function expectOwned(r: Awaited<ReturnType<typeof ownershipAttack>>) {
  // Every answer to A's ids is the answer to ids nobody has.
  expect(r.taken).toEqual(r.madeUp);
  for (const label of ["http", "ws"]) {
    for (const route of ["step", "state", "close"]) {
      expect(r.taken[`${label} ${route}`], `${label} ${route}`).toMatchObject({ status: 404, body: { error: { code: "UNKNOWN_EPISODE" } } });
    }
    expect(r.taken[`${label} attach`], `${label} attach`).toBe(404);
  }
  for (const call of ["mcp tools/call", "mcp tools/list", "mcp?session_id= tools/call", "mcp session/close"]) {
    expect(r.taken[call], call).toMatchObject({ status: 200, body: { error: { code: -32602, data: { code: "UNKNOWN_EPISODE" } } } });
  }
  expect(r.taken["mcp attach"]).toBe(404);
  expect(r.taken["ws mcp tools/call"]).toMatchObject({ error: { code: -32602, data: { code: "UNKNOWN_EPISODE" } } });
  expect(r.taken["ws mcp session/close"]).toMatchObject({ error: { code: -32602, data: { code: "UNKNOWN_EPISODE" } } });
  // B's own episodes under A's ids.
  expect(r.ownReset).toMatchObject({ status: 200, body: { episode_id: r.ids.rt, done: false } });
  expect(r.ownWsId).toMatchObject({ status: 200, body: { episode_id: r.ids.ws } });
  expect(r.ownStep).toMatchObject({ status: 200, body: { reward: 1, done: true } });
  // A's: untouched by all of it.
  expect(r.stateA).toMatchObject({ status: 200, body: { episode_id: r.ids.rt, step_count: 0, done: false } });
  expect(r.stepA).toMatchObject({ status: 200, body: { reward: 1, done: true } });
  expect(r.callA).toMatchObject({ status: 200, body: { result: { content: [{ type: "text", text: "42" }] } } });
  expect(r.wsStateA).toMatchObject({ type: "state", data: { episode_id: r.ids.ws, step_count: 0, done: false } });
  expect(r.wsStepA).toMatchObject({ type: "observation", data: { reward: 1, done: true } });
}

describe("an episode belongs to its client", () => {
  it("another address can neither play, read, close nor attach to it, learns nothing from its id, and gets its own episode under that id", async () => {
    const outcome = await underAttack(open, () => ownershipAttack(open.url, byAddress("127.0.0.1"), byAddress("127.0.0.2")));
    expectServed("another address's episodes", outcome);
    expectOwned(outcome.result);
  });

  it("with several tokens, another token from the same address is another client", async () => {
    const asA = { ...tokens, headers: { authorization: "Bearer token-a" } };
    const outcome = await underAttack(asA, () => ownershipAttack(tokens.url, byToken("token-a"), byToken("token-b")));
    expectServed("another token's episodes", outcome);
    expectOwned(outcome.result);
  });
});

describe("OpenEnv 0.10: B/ws?session_id=S plays the HTTP session S", () => {
  it("a socket attached to S resets and plays S (its id kept), HTTP tool calls on S land in the same episode, and closing the socket leaves S to its owner", async () => {
    const mt = `${open.url}/envs/math-tools`;
    const me = byAddress("127.0.0.1");
    const outcome = await underAttack(open, async () => {
      // MCPToolClient: session/create over HTTP, then the socket with that session's id.
      const created = await me.http("POST", `${mt}/mcp`, rpc("openenv/session/create"));
      const sid = created.body.result.session_id as string;
      const ws = await me.ws(mt, `session_id=${q(sid)}`);
      const reset = await ws.reset({ seed: 5 });
      const call = await me.http("POST", `${mt}/mcp`, rpc("tools/call", { session_id: sid, name: "calculator", arguments: { expression: "2^10" } }));
      const afterCall = await ws.send({ type: "state" });
      const again = await ws.reset({ seed: 6 });
      const afterReset = await me.http("GET", `${mt}/state?episode_id=${q(sid)}`);
      const wsCall = await ws.step({ type: "call_tool", tool_name: "calculator", arguments: { expression: "1+1" } });
      const httpState = await me.http("GET", `${mt}/state?episode_id=${q(sid)}`);
      ws.ws.send(JSON.stringify({ type: "close" }));
      const closedCode = (await ws.closed).code;
      const afterSocket = await me.http("GET", `${mt}/state?episode_id=${q(sid)}`);
      const closed = await me.http("POST", `${mt}/mcp`, rpc("openenv/session/close", { session_id: sid }));
      const gone = await me.upgrade(mt, `session_id=${q(sid)}`);
      return { sid, reset, call, afterCall, again, afterReset, wsCall, httpState, closedCode, afterSocket, closed, gone };
    });
    expectServed("a socket attached to a session", outcome);
    const r = outcome.result;
    expect(r.reset).toMatchObject({ type: "observation", data: { episode_id: r.sid, done: false } });
    expect(r.reset.data.observation.info.seed).toBe(5);
    expect(r.call).toMatchObject({ status: 200, body: { result: { content: [{ type: "text", text: "1024" }], _meta: { episode_id: r.sid } } } });
    expect(r.afterCall).toMatchObject({ type: "state", data: { episode_id: r.sid, step_count: 1 } });
    // A second reset over the socket starts S over, under the same id.
    expect(r.again).toMatchObject({ type: "observation", data: { episode_id: r.sid } });
    expect(r.afterReset).toMatchObject({ status: 200, body: { episode_id: r.sid, seed: 6, step_count: 0 } });
    expect(r.wsCall).toMatchObject({ type: "observation", data: { episode_id: r.sid, observation: { tool_name: "calculator" } } });
    expect(r.httpState).toMatchObject({ status: 200, body: { step_count: 1 } });
    expect(r.closedCode).toBe(1000);
    expect(r.afterSocket).toMatchObject({ status: 200, body: { episode_id: r.sid } });
    expect(r.closed).toMatchObject({ status: 200, body: { result: { session_id: r.sid, closed: true } } });
    expect(r.gone).toBe(404);
  });
});

describe("a web page cannot drive the server through its visitor's browser", () => {
  it("refuses bodies that are not JSON (415), other origins (403, HTTP and WebSocket) and Host names that are not loopback ones (403); serves its own pages, listed origins and clients without an Origin", async () => {
    const rt = `${open.url}/envs/reverse-text`;
    const port = new URL(open.url).port;
    const me = byAddress("127.0.0.1");
    const raw = (headers: Record<string, string>, body?: string, path = `${new URL(rt).pathname}/reset`) =>
      rawRequest(open.url, { method: body === undefined ? "GET" : "POST", path, headers, ...(body === undefined ? {} : { body: [body] }) }).then((r) => ({
        status: r.status,
        body: JSON.parse(r.body || "null"),
        headers: r.headers,
      }));
    const outcome = await underAttack(open, async () => ({
      // CORS "simple" requests: a page sends these without asking first.
      textPlain: await me.http("POST", `${rt}/reset`, "{}", { "content-type": "text/plain;charset=UTF-8" }),
      form: await me.http("POST", `${rt}/reset`, "seed=1", { "content-type": "application/x-www-form-urlencoded" }),
      multipart: await me.http("POST", `${rt}/score`, "--x--", { "content-type": "multipart/form-data; boundary=x" }),
      noType: await raw({}, '{"seed":1}'),
      mcpText: await me.http("POST", `${open.url}/envs/math-tools/mcp`, JSON.stringify(rpc("tools/list")), { "content-type": "text/plain" }),
      // Another origin.
      evilPost: await me.http("POST", `${rt}/reset`, {}, { origin: "http://evil.example" }),
      evilGet: await me.http("GET", `${open.url}/envs`, undefined, { origin: "http://evil.example" }),
      nullOrigin: await me.http("POST", `${rt}/reset`, {}, { origin: "null" }),
      evilUpgrade: await me.upgrade(rt, undefined, { origin: "http://evil.example" }),
      otherPort: await me.http("POST", `${rt}/reset`, {}, { origin: "http://127.0.0.1:1" }),
      // DNS rebinding: the page's own name, resolved to 127.0.0.1; its Origin matches its Host.
      rebound: await raw({ host: `evil.example:${port}`, origin: `http://evil.example:${port}`, "content-type": "application/json" }, "{}"),
      reboundGet: await raw({ host: `evil.example:${port}` }, undefined, "/envs"),
      reboundUpgrade: await me.upgrade(rt, undefined, { host: `evil.example:${port}` }),
      // Served: the server's own pages, a listed origin (with CORS), clients with no Origin.
      own: await me.http("POST", `${rt}/reset`, {}, { origin: open.url }),
      ownByName: await raw({ host: `localhost:${port}`, origin: `http://localhost:${port}`, "content-type": "application/json" }, "{}"),
      ownUpgrade: await me.upgrade(rt, undefined, { origin: open.url }),
      listed: await me.http("POST", `${rt}/reset`, {}, { origin: ALLOWED }),
      preflight: await me.http("OPTIONS", `${rt}/reset`, undefined, { origin: ALLOWED, "access-control-request-method": "POST", "access-control-request-headers": "content-type" }),
      listedUpgrade: await me.upgrade(rt, undefined, { origin: ALLOWED }),
      noOrigin: await me.http("POST", `${rt}/reset`, {}),
      emptyBody: await raw({}, ""),
      jsonCharset: await me.http("POST", `${rt}/reset`, "{}", { "content-type": "application/json; charset=utf-8" }),
    }));
    expectServed("browser guards", outcome);
    const r = outcome.result;
    for (const name of ["textPlain", "form", "multipart", "noType", "mcpText"] as const) {
      expect(r[name], name).toMatchObject({ status: 415, body: { error: { code: "UNSUPPORTED_MEDIA_TYPE" } } });
      expect(typeof r[name].body.error.message).toBe("string");
    }
    for (const name of ["evilPost", "evilGet", "nullOrigin", "otherPort", "rebound", "reboundGet"] as const) {
      expect(r[name], name).toMatchObject({ status: 403, body: { error: { code: "FORBIDDEN" } } });
    }
    expect(r.evilUpgrade).toBe(403);
    expect(r.reboundUpgrade).toBe(403);
    for (const name of ["own", "ownByName", "listed", "noOrigin", "emptyBody", "jsonCharset"] as const) {
      expect(r[name], name).toMatchObject({ status: 200, body: { done: false } });
    }
    expect(r.ownUpgrade).toBe(101);
    expect(r.listedUpgrade).toBe(101);
    expect(r.listed.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(r.own.headers["access-control-allow-origin"]).toBeUndefined();
    expect(r.preflight.status).toBe(204);
    expect(r.preflight.headers).toMatchObject({ "access-control-allow-origin": ALLOWED, "access-control-allow-methods": expect.stringContaining("POST"), "access-control-allow-headers": expect.stringContaining("content-type") });
  });
});

/**
 * The server's child processes that are sandbox hosts. Not esbuild's service, nor the one-shot that
 * prepares QuickJS's compiled module, nor a child caught between its fork and its exec: it still
 * shows the server's own command line then (a 5 ms sampler saw one, and counted it as a host). Nor
 * a child that has exited and is not yet reaped: a zombie's command line is empty (the sampler
 * counted the prepare one-shot's, which is how 4 and 5 "hosts" were seen at load).
 */
function sandboxProcesses(pid: number): string[] {
  const server = readFileSync(`/proc/${pid}/cmdline`, "utf8");
  return childPids(pid).filter((c) => {
    try {
      const cmdline = readFileSync(`/proc/${c}/cmdline`, "utf8");
      return cmdline !== "" && cmdline !== server && !cmdline.includes("esbuild") && !/qjs_(engine|snapshot)\.py\0prepare\0/.test(cmdline);
    } catch {
      return false; // gone meanwhile
    }
  });
}

describe("a WebSocket is its address's client", () => {
  it("twenty sockets of one address calling a sandboxed tool statelessly start the sandbox processes of one client, not one each", async () => {
    const mt = `${open.url}/envs/math-tools`;
    const me = byAddress("127.0.0.1");
    const before = new Set(sandboxProcesses(open.pid));
    const logged = open.stderr().length;
    const seen = new Set<string>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const p of sandboxProcesses(open.pid)) if (!before.has(p)) seen.add(p);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const outcome = await underAttack(open, async () => {
      const sockets = await Promise.all(Array.from({ length: 20 }, () => me.ws(mt)));
      try {
        const call = (i: number) => ({ type: "mcp", data: { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "javascript", arguments: { code: `${i} * 2` } } } });
        return await Promise.all(sockets.map((ws, i) => ws.send(call(i))));
      } finally {
        for (const ws of sockets) ws.close();
      }
    });
    sampling = false;
    await sampler;
    expectServed("twenty sockets of one address", outcome);
    outcome.result.forEach((reply, i) => expect(reply.data.result, `socket ${i}`).toMatchObject({ isError: false, content: [{ text: `result: ${i * 2}` }] }));
    // Hosts the pool replaced meanwhile (one that spun or grew while idle, or died: at load ~20, 1
    // or 2 of them) each started another. Hosts stopped to make room for another client are not
    // replacements: a socket each would be a client each, and start 18-20.
    const replaced = open.stderr().slice(logged).split("\n").filter((l) => l.includes("sandbox: a QuickJS process was replaced"));
    console.log(`[hostile] twenty sockets of one address: ${seen.size} sandbox processes started, ${replaced.length} replaced${replaced.length ? `:\n${replaced.join("\n")}` : ""}`);
    // One client's: a process per sandbox slot and the spare, and one for each replaced.
    expect(seen.size).toBeLessThanOrEqual(SANDBOX_SLOTS + 1 + replaced.length);
  });
});
