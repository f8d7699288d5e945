/**
 * Promises of the README's wire protocol that had no test of their own (found by planting bugs):
 * the WebSocket's limits (message size at exactly the limit, the 64-waiting-messages cutoff with
 * 1008), its error replies (`data.code` from OpenEnv's set, our finer `data.reason`), a reset that
 * honours `episode_id`, MCP's initialize / ping / notifications (202, no body), and the body limit
 * at exactly the maximum. In process (the server's own code, so mutation testing sees it).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { environments } from "../../envs/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { faulty } from "../fixtures/test-envs.ts";
import { post, request } from "../helpers/http.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { OpenEnvWsClient } from "../helpers/ws-client.ts";

const MAX_BODY = 2048;
const MAX_WS = 1024;
let server: RunningServer;
const rt = () => `${server.url}/envs/reverse-text`;

beforeAll(async () => {
  server = await startServer([...environments.filter((e) => e.name === "reverse-text" || e.name === "math-tools"), faulty], {
    port: 0,
    maxBodyBytes: MAX_BODY,
    maxWsMessageBytes: MAX_WS,
  });
});
afterAll(async () => {
  await server?.close();
});

const padded = (json: unknown, n: number) => JSON.stringify(json).padEnd(n, " ");

describe("HTTP body limit", () => {
  it("accepts a body of exactly the maximum and refuses one byte more, declared or chunked", async () => {
    expect((await post(`${rt()}/reset`, padded({ seed: 1 }, MAX_BODY))).status).toBe(200);
    const over = await post(`${rt()}/reset`, padded({ seed: 1 }, MAX_BODY + 1));
    expect(over.status).toBe(413);
    expect(over.body.error).toEqual({ code: "PAYLOAD_TOO_LARGE", message: `request body exceeds ${MAX_BODY} bytes` });
    const chunked = (n: number, pieces: number) => {
      const text = padded({ seed: 1 }, n);
      const size = Math.ceil(n / pieces);
      return rawRequest(server.url, {
        method: "POST",
        path: "/envs/reverse-text/reset",
        headers: { "content-type": "application/json" },
        chunked: true,
        body: Array.from({ length: pieces }, (_, i) => text.slice(i * size, (i + 1) * size)),
      });
    };
    expect((await chunked(MAX_BODY, 3)).status).toBe(200);
    expect((await chunked(MAX_BODY + 1, 3)).status).toBe(413);
    // Multi-byte characters count as bytes, not characters.
    const euros = JSON.stringify({ seed: 1, x: "€".repeat(700) });
    expect(euros.length).toBeLessThan(MAX_BODY);
    expect((await post(`${rt()}/reset`, euros)).status).toBe(413);
    expect((await rawRequest(server.url, { method: "POST", path: "/envs/reverse-text/reset", chunked: true, body: [euros] })).status).toBe(413);
  });

  it("reads an empty body as {} where the schema allows it", async () => {
    const r = await request("POST", `${rt()}/reset`, "");
    expect(r.status).toBe(200);
    expect(r.body.done).toBe(false);
  });
});

describe("WebSocket", () => {
  it("serves a message of exactly the maximum; one character more is a VALIDATION_ERROR reply (reason PAYLOAD_TOO_LARGE)", async () => {
    const ws = await OpenEnvWsClient.connect(rt());
    const ok = await ws.sendRaw(padded({ type: "reset", data: { seed: 1 } }, MAX_WS));
    expect(ok.type).toBe("observation");
    const over = await ws.sendRaw(padded({ type: "reset", data: { seed: 1 } }, MAX_WS + 1));
    expect(over).toEqual({ type: "error", data: { code: "VALIDATION_ERROR", reason: "PAYLOAD_TOO_LARGE", message: `message exceeds ${MAX_WS} bytes` } });
    expect((await ws.send({ type: "state" })).data.episode_id).toBe(ok.data.episode_id);
    ws.close();
  });

  it("answers each kind of bad message with OpenEnv's code and our reason", async () => {
    const ws = await OpenEnvWsClient.connect(rt());
    expect((await ws.sendRaw("{nope")).data).toMatchObject({ code: "INVALID_JSON", reason: "INVALID_JSON" });
    expect((await ws.send({ type: "dance" })).data).toMatchObject({ code: "UNKNOWN_TYPE", reason: "UNKNOWN_TYPE" });
    const invalid = await ws.send({ type: "reset", data: { seed: "x" } });
    expect(invalid.data).toMatchObject({ code: "VALIDATION_ERROR", reason: "VALIDATION_ERROR" });
    expect(Array.isArray(invalid.data.errors)).toBe(true);
    expect((await ws.send({ type: "step", data: { content: "hi" } })).data).toMatchObject({ code: "SESSION_ERROR", reason: "UNKNOWN_EPISODE" });
    expect((await ws.send({ type: "state" })).data).toMatchObject({ code: "SESSION_ERROR", reason: "UNKNOWN_EPISODE" });
    ws.close();
  });

  it("reports a failing environment as EXECUTION_ERROR and keeps the episode", async () => {
    const ws = await OpenEnvWsClient.connect(`${server.url}/envs/faulty`);
    const reset = await ws.reset({});
    expect(reset.type).toBe("observation");
    const boom = await ws.step({ content: "boom" });
    expect(boom).toMatchObject({ type: "error", data: { code: "EXECUTION_ERROR", reason: "EXECUTION_ERROR" } });
    expect(boom.data.message).toContain("respond exploded");
    const state = await ws.send({ type: "state" });
    expect(state.data).toMatchObject({ episode_id: reset.data.episode_id, step_count: 0 });
    ws.close();
  });

  it("resets with the episode_id the client gives, over WebSocket and HTTP", async () => {
    const ws = await OpenEnvWsClient.connect(rt());
    const r = await ws.reset({ episode_id: "my-own-episode-id" });
    expect(r.data.episode_id).toBe("my-own-episode-id");
    expect((await ws.send({ type: "state" })).data.episode_id).toBe("my-own-episode-id");
    ws.close();
    const h = await post(`${rt()}/reset`, { episode_id: "http-episode-id" });
    expect(h.body.episode_id).toBe("http-episode-id");
    expect((await request("GET", `${rt()}/state?episode_id=http-episode-id`)).status).toBe(200);
  });

  it("cuts off a client with more than 64 messages waiting (1008) and frees its episode", async () => {
    const ws = new WebSocket(`${rt().replace(/^http/, "ws")}/ws`);
    await new Promise((res, rej) => {
      ws.once("open", res);
      ws.once("error", rej);
    });
    const closed = new Promise<{ code: number; reason: string }>((res) => ws.once("close", (code, reason) => res({ code, reason: String(reason) })));
    const replies: { type: string; data: any }[] = [];
    ws.on("message", (m) => replies.push(JSON.parse(String(m))));
    // One reset, then a flood sent in one go: all arrive before the first is answered. One write
    // (the socket corked around the sends): sent one write each, on a busy machine this process
    // could be paused between writes while the server answered each as it came, and never had 64
    // waiting (seen: the close never came, at load ~15).
    const flood = [JSON.stringify({ type: "reset", data: { seed: 1, episode_id: "flooder" } })];
    for (let i = 0; i < 100; i++) flood.push(JSON.stringify({ type: "state" }));
    const socket = (ws as unknown as { _socket: import("node:net").Socket })._socket;
    socket.cork();
    for (const m of flood) ws.send(m);
    socket.uncork();
    const c = await closed;
    expect(c.code).toBe(1008);
    expect(c.reason).toContain("more than 64 messages waiting");
    expect(replies.length).toBeLessThanOrEqual(65);
    // The connection's episode is gone with it.
    await new Promise((r) => setTimeout(r, 100));
    expect((await request("GET", `${rt()}/state?episode_id=flooder`)).status).toBe(404);
  });

  it("lets a polite client send 64 messages back to back", async () => {
    const ws = await OpenEnvWsClient.connect(rt());
    await ws.reset({ seed: 1 });
    for (let i = 0; i < 64; i++) ws.ws.send(JSON.stringify({ type: "state" }));
    for (let i = 0; i < 64; i++) expect((await ws.next()).type).toBe("state");
    ws.close();
    expect((await ws.closed).code).toBe(1005);
  });
});

describe("MCP", () => {
  const rpc = (body: unknown) => post(`${server.url}/envs/math-tools/mcp`, body);
  it("answers initialize with its capabilities and echoes the client's protocol version", async () => {
    const init = await rpc({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26" } });
    expect(init.status).toBe(200);
    expect(init.body).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { protocolVersion: "2025-03-26", capabilities: { tools: { listChanged: false } }, serverInfo: { name: "envworker/math-tools", version: expect.any(String) } },
    });
    expect((await rpc({ jsonrpc: "2.0", id: "a", method: "initialize" })).body.result.protocolVersion).toBe("2025-06-18");
  });

  it("answers ping with an empty result and a notification with 202 and no body", async () => {
    expect((await rpc({ jsonrpc: "2.0", id: 7, method: "ping" })).body).toEqual({ jsonrpc: "2.0", id: 7, result: {} });
    const note = await fetch(`${server.url}/envs/math-tools/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
    expect(note.status).toBe(202);
    expect(await note.text()).toBe("");
  });

  it("answers bad JSON-RPC with its error codes (HTTP 200)", async () => {
    const parse = await post(`${server.url}/envs/math-tools/mcp`, "{nope");
    expect(parse.status).toBe(200);
    expect(parse.body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    expect((await rpc({ jsonrpc: "2.0", id: 2, method: "dance" })).body.error.code).toBe(-32601);
    expect((await rpc({ jsonrpc: "1.0", id: 3, method: "ping" })).body.error.code).toBe(-32600);
    expect((await rpc({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "nope" } })).body.error.code).toBe(-32602);
  });

  it("speaks the same over WebSocket, where a notification gets no reply", async () => {
    const ws = await OpenEnvWsClient.connect(`${server.url}/envs/math-tools`);
    ws.ws.send(JSON.stringify({ type: "mcp", data: { jsonrpc: "2.0", method: "notifications/initialized" } }));
    const pong = await ws.send({ type: "mcp", data: { jsonrpc: "2.0", id: 9, method: "ping" } });
    expect(pong).toEqual({ type: "mcp", data: { jsonrpc: "2.0", id: 9, result: {} } });
    ws.close();
  });
});
