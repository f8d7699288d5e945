/**
 * OpenEnv's MCP clients on episodes (src/server/mcp-episode.ts): MCPToolClient's WebSocket step
 * data (`list_tools`, `call_tool`), its production mode (JSON-RPC `openenv/session/*` and
 * `tools/*` with `session_id` at `B/mcp`), the `submit` tool that ends an episode, and TextArena's
 * `{"message": ...}`. The same messages as OpenEnv's client sends (see
 * clients/python/tests/test_trainers_openenv.py for the real client).
 */
import { describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { createApp } from "../../src/server/app.ts";
import { inlineEngine } from "../../src/server/engine.ts";
import { StoreEpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { WsSession } from "../../src/server/ws-session.ts";

const env = (name: string) => environments.find((e) => e.name === name)!;
const mathTools = env("math-tools");

function server() {
  const host = new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({}));
  const app = createApp({ envs: environments, host });
  let n = 0;
  const rpc = async (name: string, method: string, params?: unknown) => {
    const res = await app.request(`/envs/${name}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: ++n, method, ...(params === undefined ? {} : { params }) }) });
    expect(res.status).toBe(200);
    return (await res.json()) as { result?: any; error?: { code: number; message: string; data?: any } };
  };
  const state = async (name: string, id: string) => (await (await app.request(`/envs/${name}/state?episode_id=${id}`)).json()) as any;
  return { host, app, rpc, state };
}

describe("production mode (POST B/mcp with sessions)", () => {
  it("creates an episode, lists and calls its tools as the episode's tool calls, submits, scores and closes", async () => {
    const { rpc, state } = server();
    const created = await rpc("math-tools", "openenv/session/create", { seed: 3 });
    const sid = created.result.session_id as string;
    expect(sid).toBe(created.result.episode_id);
    expect(created.result.observation.messages.at(-1).role).toBe("user");

    const listed = await rpc("math-tools", "tools/list", { session_id: sid });
    expect(listed.result.tools.map((t: any) => t.name)).toEqual(["calculator", "javascript", "submit"]);

    const called = await rpc("math-tools", "tools/call", { name: "calculator", arguments: { expression: "6*7" }, session_id: sid });
    expect(called.result.data).toBe("42");
    expect(called.result.content).toEqual([{ type: "text", text: "42" }]);
    expect(called.result.isError).toBe(false);
    const bad = await rpc("math-tools", "tools/call", { name: "calculator", arguments: { nope: 1 }, session_id: sid });
    expect(bad.result.isError).toBe(true);

    const s = await state("math-tools", sid);
    expect(s.step_count).toBe(2);
    const answer = (await state("math-tools", sid)).messages; // the answer is not shown before the end
    expect(answer.filter((m: any) => m.role === "tool")).toHaveLength(2);

    // The reference answer becomes known at the end; submit a wrong then compare with the server's record.
    const submitted = await rpc("math-tools", "tools/call", { name: "submit", arguments: { content: "\\boxed{-1.5}" }, session_id: sid });
    expect(submitted.result.data.done).toBe(true);
    const final = await state("math-tools", sid);
    expect(submitted.result.data.reward).toBe(final.reward);
    expect(submitted.result.data.metrics.num_tool_calls).toBe(2);
    expect(submitted.result.data.metrics.num_tool_errors).toBe(1);
    expect(submitted.result.content[0].text).toContain(`Reward: ${final.reward}`);

    const after = await rpc("math-tools", "tools/call", { name: "calculator", arguments: { expression: "1" }, session_id: sid });
    expect(after.error?.data?.code).toBe("EPISODE_DONE");
    expect((await rpc("math-tools", "openenv/session/close", { session_id: sid })).result).toEqual({ session_id: sid, closed: true });
    const gone = await rpc("math-tools", "tools/list", { session_id: sid });
    expect(gone.error?.code).toBe(-32602);
    expect(gone.error?.data?.code).toBe("UNKNOWN_EPISODE");
  });

  it("a correct submit earns the server's reward (the answer from a finished twin episode)", async () => {
    const { rpc, state } = server();
    const twin = (await rpc("math-tools", "openenv/session/create", { seed: 11 })).result.session_id;
    await rpc("math-tools", "tools/call", { name: "submit", arguments: { content: "no idea" }, session_id: twin });
    const { answer } = await state("math-tools", twin);
    const sid = (await rpc("math-tools", "openenv/session/create", { seed: 11 })).result.session_id;
    const done = await rpc("math-tools", "tools/call", { name: "submit", arguments: { content: `\\boxed{${answer}}` }, session_id: sid });
    expect(done.result.data.reward).toBe(1);
    expect((await state("math-tools", sid)).reward).toBe(1);
  });

  it("refuses bad params with JSON-RPC errors, and leaves stateless calls as they were", async () => {
    const { rpc } = server();
    expect((await rpc("math-tools", "openenv/session/create", { seed: -1 })).error?.code).toBe(-32602);
    expect((await rpc("math-tools", "openenv/session/close", {})).error?.code).toBe(-32602);
    expect((await rpc("math-tools", "openenv/session/close", { session_id: "nope" })).error?.data?.code).toBe("UNKNOWN_EPISODE");
    expect((await rpc("math-tools", "tools/call", { name: "calculator", session_id: 5 })).error?.code).toBe(-32602);
    const sid = (await rpc("math-tools", "openenv/session/create")).result.session_id;
    expect((await rpc("math-tools", "tools/call", { name: "submit", arguments: { answer: "x" }, session_id: sid })).error?.data?.code).toBe("VALIDATION_ERROR");
    // A tool the episode does not have: OpenEnv's "Tool not found", and the episode untouched.
    const unknown = await rpc("math-tools", "tools/call", { name: "nope", arguments: {}, session_id: sid });
    expect(unknown.error).toMatchObject({ code: -32602, message: "Tool not found: nope", data: { error_type: "tool_not_found" } });
    expect((await rpc("math-tools", "tools/call", { name: "nope", arguments: {}, session_id: "gone" })).error?.data?.code).toBe("UNKNOWN_EPISODE");
    // Without a session: the stateless tools, no submit.
    expect((await rpc("math-tools", "tools/list")).result.tools.map((t: any) => t.name)).toEqual(["calculator", "javascript"]);
    expect((await rpc("math-tools", "tools/call", { name: "calculator", arguments: { expression: "2+2" } })).result.content[0].text).toBe("4");
  });
});

describe("a standard MCP client given B/mcp?session_id=EPISODE", () => {
  it("lists and calls the episode's tools through the query's session; the handshake stays stateless", async () => {
    const { app, rpc, state } = server();
    const sid = (await rpc("math-tools", "openenv/session/create", { seed: 4 })).result.session_id as string;
    const post = async (body: unknown) => {
      const res = await app.request(`/envs/math-tools/mcp?session_id=${sid}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      return { status: res.status, json: res.status === 200 ? ((await res.json()) as any) : null };
    };
    expect((await post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18" } })).json.result.capabilities.tools).toBeDefined();
    expect((await post({ jsonrpc: "2.0", method: "notifications/initialized" })).status).toBe(202);
    expect((await post({ jsonrpc: "2.0", id: 2, method: "tools/list" })).json.result.tools.map((t: any) => t.name)).toContain("submit");
    expect((await post({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "calculator", arguments: { expression: "5*5" } } })).json.result.data).toBe("25");
    expect((await state("math-tools", sid)).step_count).toBe(1);
  });
});

describe("over the WebSocket (MCPToolClient's step data)", () => {
  const open = (name = "math-tools") => {
    const host = new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({}));
    const s = new WsSession(env(name), host, { maxMessageBytes: 1 << 20 });
    const send = async (m: unknown) => (await s.handle(JSON.stringify(m))).reply as { type: string; data: any };
    return { s, send, host };
  };

  it("lists tools, calls one as the episode's tool call (CallToolObservation fields), submits for the reward", async () => {
    const { send, s, host } = open();
    const listed = await send({ type: "step", data: { type: "list_tools" } });
    expect(listed.type).toBe("observation");
    expect(listed.data.observation.tools.map((t: any) => t.name)).toEqual(["calculator", "javascript", "submit"]);
    expect(listed.data.observation.tools[0].inputSchema.properties.expression).toBeDefined();

    expect((await send({ type: "step", data: { type: "call_tool", tool_name: "calculator", arguments: { expression: "1+1" } } })).data.reason).toBe("UNKNOWN_EPISODE");
    await send({ type: "reset", data: { seed: 5 } });
    const called = await send({ type: "step", data: { type: "call_tool", tool_name: "calculator", arguments: { expression: "2^10" } } });
    expect(called.data.observation).toMatchObject({ tool_name: "calculator", error: null, result: { data: "1024", isError: false } });
    expect(called.data.observation.messages[0]).toMatchObject({ role: "tool", content: "1024" });
    expect(called.data.done).toBe(false);
    const done = await send({ type: "step", data: { type: "call_tool", tool_name: "submit", arguments: { content: "\\boxed{0}" } } });
    expect(done.data.done).toBe(true);
    expect(done.data.observation.result.data.reward).toBe(done.data.reward);
    const st = await host.state(mathTools, s.currentEpisodeId!, undefined);
    expect(st.reward).toBe(done.data.reward);
    expect((st.metrics as any).num_tool_calls).toBe(1);
  });

  it("answers an unknown tool with OpenEnv's tool_not_found error, taking no turn; a failed tool with its error_type", async () => {
    const { send, s, host } = open();
    await send({ type: "reset", data: { seed: 5 } });
    const unknown = await send({ type: "step", data: { type: "call_tool", tool_name: "nope", arguments: {} } });
    expect(unknown.type).toBe("observation");
    expect(unknown.data.observation).toMatchObject({ tool_name: "nope", result: null, error: { error_type: "tool_not_found" }, messages: [] });
    expect(unknown.data.observation.error.message).toContain("calculator, javascript, submit");
    expect(unknown.data).toMatchObject({ reward: null, done: false });
    expect((await host.state(mathTools, s.currentEpisodeId!, undefined)).step_count).toBe(0);
    // A tool that failed took its turn, and says how it failed.
    const invalid = await send({ type: "step", data: { type: "call_tool", tool_name: "calculator", arguments: { nope: 1 } } });
    expect(invalid.data.observation.error.error_type).toBe("invalid_args");
    expect(invalid.data.observation.result.isError).toBe(true);
    const failed = await send({ type: "step", data: { type: "call_tool", tool_name: "calculator", arguments: { expression: "1/" } } });
    expect(failed.data.observation.error).toMatchObject({ error_type: "execution_error" });
    expect(failed.data.observation.error.message).not.toMatch(/^Error:/);
    const fine = await send({ type: "step", data: { type: "call_tool", tool_name: "calculator", arguments: { expression: "1+1" } } });
    expect(fine.data.observation.error).toBeNull();
    const st = await host.state(mathTools, s.currentEpisodeId!, undefined);
    expect(st.step_count).toBe(3);
  });

  it("refuses malformed MCP step data with VALIDATION_ERROR", async () => {
    const { send } = open();
    await send({ type: "reset" });
    expect((await send({ type: "step", data: { type: "call_tool", tool_name: "calculator", arguments: "1+1" } })).data.code).toBe("VALIDATION_ERROR");
    expect((await send({ type: "step", data: { type: "list_tools", extra: 1 } })).data.code).toBe("VALIDATION_ERROR");
    expect((await send({ type: "step", data: { type: "call_tool" } })).data.code).toBe("VALIDATION_ERROR");
  });

  it("takes TextArena's {message} as a plain reply", async () => {
    const { send } = open("reverse-text");
    const reset = await send({ type: "reset", data: { seed: 1 } });
    const text = reset.data.observation.messages.at(-1).content as string;
    const stepped = await send({ type: "step", data: { message: `<reversed_text>${[...text].reverse().join("")}</reversed_text>` } });
    expect(stepped.data.done).toBe(true);
    expect(stepped.data.reward).toBeGreaterThan(0.99);
    expect((await send({ type: "step", data: { message: 3 } })).data.code).toBe("VALIDATION_ERROR");
  });

  it("answers production-mode JSON-RPC in the WebSocket mcp message too", async () => {
    const { send } = open();
    const created = await send({ type: "mcp", data: { jsonrpc: "2.0", id: 1, method: "openenv/session/create", params: { seed: 2 } } });
    const sid = created.data.result.session_id;
    const called = await send({ type: "mcp", data: { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "calculator", arguments: { expression: "3*3" }, session_id: sid } } });
    expect(called.data.result.data).toBe("9");
  });
});

describe("sessions are episodes of the client that creates them", () => {
  it("count in that client's share of the episodes, over HTTP and the WebSocket; another client is served", async () => {
    // Two episodes per client: a third session of the same client is refused, as a third reset is.
    const host = new StoreEpisodeHost(new MemoryEpisodeStore({ maxEpisodes: 10, maxEpisodesPerClient: 2 }), inlineEngine({}));
    const app = createApp({ envs: environments, host, clientOf: (c) => c.req.header("x-who") ?? "?" });
    const create = async (who: string) => {
      const res = await app.request("/envs/math-tools/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", "x-who": who },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "openenv/session/create", params: { seed: 1 } }),
      });
      return ((await res.json()) as { result?: unknown; error?: { data?: { code?: string } } });
    };
    expect((await create("a")).result).toBeDefined();
    expect((await create("a")).result).toBeDefined();
    expect((await create("a")).error?.data?.code).toBe("CAPACITY_REACHED");
    expect((await create("b")).result).toBeDefined();
    // Over the WebSocket the session is the socket's client's too.
    const ws = new WsSession(mathTools, host, { maxMessageBytes: 1 << 20, client: "b" });
    const reply = (await ws.handle(JSON.stringify({ type: "mcp", data: { jsonrpc: "2.0", id: 2, method: "openenv/session/create", params: {} } }))).reply as { data: { result?: unknown } };
    expect(reply.data.result).toBeDefined();
    const third = (await ws.handle(JSON.stringify({ type: "mcp", data: { jsonrpc: "2.0", id: 3, method: "openenv/session/create", params: {} } }))).reply as { data: { error?: { data?: { code?: string } } } };
    expect(third.data.error?.data?.code).toBe("CAPACITY_REACHED");
  });
});
