/**
 * One WebSocket session (src/server/ws-session.ts) without a socket, found by mutation testing
 * (`npm run mutate`): every error reply exactly (message, OpenEnv's code, our reason, which details
 * travel along), the fairness key of its MCP calls, and that it frees only an episode it has.
 */
import { describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { ApiError } from "../../src/env/errors.ts";
import { inlineEngine, type EnvEngine } from "../../src/server/engine.ts";
import { StoreEpisodeHost, type EpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { WS_TYPES } from "../../src/server/protocol.ts";
import type { Sandbox } from "../../src/sandbox/types.ts";
import { WsSession, wsError } from "../../src/server/ws-session.ts";

const reverseText = environments.find((e) => e.name === "reverse-text")!;

/** The store's host, with every close it is asked for written down. */
function recordingHost() {
  const inner = new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({}));
  const closes: unknown[] = [];
  const host: EpisodeHost = {
    reset: (env, opts, client) => inner.reset(env, opts, client),
    step: (env, id, action, client) => inner.step(env, id, action, client),
    state: (env, id, client) => inner.state(env, id, client),
    close: (env, id, client) => (closes.push(id), inner.close(env, id, client)),
    exists: (env, id, client) => inner.exists(env, id, client),
  };
  return { host, closes };
}

const session = (host: EpisodeHost = recordingHost().host, engine?: Pick<EnvEngine, "mcp">) => new WsSession(reverseText, host, { maxMessageBytes: 1000, ...(engine ? { engine } : {}) });
const reply = async (s: WsSession, message: unknown) => (await s.handle(typeof message === "string" ? message : JSON.stringify(message))).reply as { type: string; data: any } | undefined;

describe("wsError", () => {
  it("sends a validation error's issues as `errors`, and nothing else's details", () => {
    expect(wsError(new ApiError("VALIDATION_ERROR", "bad", [{ path: ["seed"], message: "no" }])).data).toEqual({
      message: "bad",
      code: "VALIDATION_ERROR",
      reason: "VALIDATION_ERROR",
      errors: [{ path: ["seed"], message: "no" }],
    });
    expect(Object.keys(wsError(new ApiError("VALIDATION_ERROR", "bad")).data as object)).toEqual(["message", "code", "reason"]);
    expect(Object.keys(wsError(new ApiError("EXECUTION_ERROR", "slow", { reason: "TIMEOUT", limit_ms: 5 })).data as object)).toEqual(["message", "code", "reason"]);
    expect(wsError(new ApiError("EXECUTION_ERROR", "slow", { reason: "TIMEOUT" })).data).toEqual({ message: "slow", code: "EXECUTION_ERROR", reason: "TIMEOUT" });
    expect(wsError(new ApiError("INTERNAL_ERROR", "oops")).data).toEqual({ message: "oops", code: "EXECUTION_ERROR", reason: "INTERNAL_ERROR" });
  });

  it("spreads the counts of a capacity or overload refusal into the reply, and only an object's", () => {
    expect(wsError(new ApiError("CAPACITY_REACHED", "full", { active_sessions: 2, max_sessions: 2 })).data).toEqual({
      message: "full",
      code: "CAPACITY_REACHED",
      reason: "CAPACITY_REACHED",
      active_sessions: 2,
      max_sessions: 2,
    });
    expect(wsError(new ApiError("OVERLOADED", "busy", { retry_after_s: 5 })).data).toEqual({ message: "busy", code: "CAPACITY_REACHED", reason: "OVERLOADED", retry_after_s: 5 });
    expect(Object.keys(wsError(new ApiError("OVERLOADED", "busy", "ab")).data as object)).toEqual(["message", "code", "reason"]);
    expect(Object.keys(wsError(new ApiError("CAPACITY_REACHED", "full")).data as object)).toEqual(["message", "code", "reason"]);
  });
});

describe("WsSession", () => {
  it("answers each bad message with its exact message", async () => {
    const s = session();
    expect((await reply(s, "{nope"))?.data).toEqual({ code: "INVALID_JSON", reason: "INVALID_JSON", message: "message is not valid JSON" });
    for (const raw of ["null", "5", '"reset"', "[]", '{"type":7}']) {
      const type = raw === "[]" || raw === "null" || raw === "5" || raw === '"reset"' ? undefined : 7;
      expect((await reply(s, raw))?.data, raw).toEqual({
        code: "UNKNOWN_TYPE",
        reason: "UNKNOWN_TYPE",
        message: `unknown message type ${JSON.stringify(type)}; expected one of ${WS_TYPES.join(", ")}`,
      });
    }
    expect((await reply(s, { type: "dance" }))?.data.message).toBe(`unknown message type "dance"; expected one of reset, step, state, close, mcp`);
    const extra = (await reply(s, { type: "state", data: 1 }))?.data;
    expect(extra).toMatchObject({ code: "VALIDATION_ERROR", message: "invalid state message" });
    expect(Array.isArray(extra.errors)).toBe(true);
    expect((await reply(s, { type: "reset", data: { seed: "x" } }))?.data).toMatchObject({ code: "VALIDATION_ERROR", message: "invalid reset data" });
    expect((await reply(s, { type: "step", data: { content: 5 } }))?.data).toMatchObject({ code: "VALIDATION_ERROR", message: "invalid action" });
    for (const m of [{ type: "step", data: { content: "hi" } }, { type: "state" }]) {
      expect((await reply(s, m))?.data).toEqual({ code: "SESSION_ERROR", reason: "UNKNOWN_EPISODE", message: "no episode on this connection: send a reset first" });
    }
  });

  it("knows its episode, and frees only an episode it has", async () => {
    const { host, closes } = recordingHost();
    const s = session(host);
    expect(s.currentEpisodeId).toBeUndefined();
    await s.dispose();
    expect(closes).toEqual([]);
    const r = await reply(s, { type: "reset", data: { seed: 1 } });
    expect(s.currentEpisodeId).toBe(r?.data.episode_id);
    expect(await s.handle(JSON.stringify({ type: "close" }))).toEqual({ close: true });
    expect(closes).toEqual([r?.data.episode_id]);
    expect(s.currentEpisodeId).toBeUndefined();
    await s.dispose();
    expect(closes).toHaveLength(1);
  });

  it("runs stateless MCP as its client's (key and client), whichever socket and episode; a connection without a client is its own", async () => {
    const inline = inlineEngine({});
    const scopes: { key: string; client?: string | undefined }[] = [];
    const engine: Pick<EnvEngine, "mcp"> = { mcp: (env, body, scope) => (scopes.push({ key: scope.key, client: scope.client }), inline.mcp(env, body, scope)) };
    const host = recordingHost().host;
    const ofClient = () => new WsSession(reverseText, host, { maxMessageBytes: 1000, engine, client: "address 10.0.0.1" });
    const [a, b] = [ofClient(), ofClient()];
    const ping = { type: "mcp", data: { jsonrpc: "2.0", id: 1, method: "ping" } };
    expect(await reply(a, ping)).toEqual({ type: "mcp", data: { jsonrpc: "2.0", id: 1, result: {} } });
    await reply(b, ping);
    await reply(a, { type: "reset", data: { seed: 1 } });
    await reply(a, ping);
    // Two sockets of one address, before and after a reset: one client, one fairness key.
    expect(scopes).toEqual(Array(3).fill({ key: "address 10.0.0.1", client: "address 10.0.0.1" }));

    scopes.length = 0;
    const [c, d] = [session(undefined, engine), session(undefined, engine)];
    await reply(c, ping);
    await reply(d, ping);
    await reply(c, { type: "reset", data: { seed: 1 } });
    await reply(c, ping);
    expect(scopes.map((x) => x.client)).toEqual([undefined, undefined, undefined]);
    expect(scopes[0]!.key).toMatch(/^ws:./);
    expect(scopes[1]!.key).toMatch(/^ws:./);
    expect(scopes[0]!.key).not.toBe(scopes[1]!.key);
    expect(scopes[2]!.key).toBe(scopes[0]!.key);
  });

  it("attached to a session: plays it from the first message, resets it in place, and leaves it open when closed", async () => {
    const { host, closes } = recordingHost();
    const made = await host.reset(reverseText, { seed: 1 }, "c");
    const s = new WsSession(reverseText, host, { maxMessageBytes: 1000, client: "c", attached: made.episode_id });
    expect(s.currentEpisodeId).toBe(made.episode_id);
    expect((await reply(s, { type: "state" }))?.data).toMatchObject({ episode_id: made.episode_id, seed: 1 });
    const r = await reply(s, { type: "reset", data: { seed: 2, episode_id: "ignored" } });
    expect(r?.data.episode_id).toBe(made.episode_id);
    expect(await host.state(reverseText, made.episode_id, "c")).toMatchObject({ seed: 2, step_count: 0 });
    expect(await host.exists(reverseText, "ignored", "c")).toBe(false);
    expect(await s.handle(JSON.stringify({ type: "close" }))).toEqual({ close: true });
    await s.dispose();
    expect(closes).toEqual([]);
    expect(await host.exists(reverseText, made.episode_id, "c")).toBe(true);
    // Another client's socket finds nothing under that id.
    const other = new WsSession(reverseText, host, { maxMessageBytes: 1000, client: "d" });
    expect((await reply(other, { type: "mcp", data: { jsonrpc: "2.0", id: 1, method: "tools/list", params: { session_id: made.episode_id } } }))?.data.error.data).toEqual({ code: "UNKNOWN_EPISODE" });
  });

  it("runs MCP with the services it is given when no engine is", async () => {
    const runs: string[] = [];
    const sandbox = { kind: "quickjs", run: async (code: string) => (runs.push(code), { ok: true, result: 2, stdout: "", stderr: "", elapsedMs: 0 }), dispose: async () => undefined } as unknown as Sandbox;
    const mathTools = environments.find((e) => e.name === "math-tools")!;
    const s = new WsSession(mathTools, recordingHost().host, { maxMessageBytes: 1000, services: { sandbox } });
    const r = await reply(s, { type: "mcp", data: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "javascript", arguments: { code: "1 + 1" } } } });
    expect(r?.type).toBe("mcp");
    expect(r?.data.error).toBeUndefined();
    expect(runs).toEqual(["1 + 1"]);
  });
});
