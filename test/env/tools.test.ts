/** The tool loop in the episode engine, tool errors as messages, tool metrics, MCP. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resetEpisode, stepEpisode } from "../../src/env/episode.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { post } from "../helpers/http.ts";
import { OpenEnvWsClient } from "../helpers/ws-client.ts";
import { toolbox } from "../fixtures/test-envs.ts";

const call = (id: string, name: string, args: string) => ({ id, type: "function" as const, function: { name, arguments: args } });

describe("tool loop", () => {
  it("shows the OpenAI tool schemas on reset", () => {
    const { result } = resetEpisode(toolbox, "t", { seed: 1 });
    expect(result.observation.tools).toEqual([
      {
        type: "function",
        function: {
          name: "add",
          description: "Add two numbers.",
          parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"], additionalProperties: false },
        },
      },
      expect.objectContaining({ function: expect.objectContaining({ name: "boom" }) }),
      expect.objectContaining({ function: expect.objectContaining({ name: "sleepy" }) }),
    ]);
  });

  it("answers each call with a tool message, turns every failure into a message, and goes on", async () => {
    let { state } = resetEpisode(toolbox, "t", { seed: 1 });
    const r1 = await stepEpisode(toolbox, state, {
      content: null,
      tool_calls: [
        call("c1", "add", '{"a": 2, "b": 3}'),
        call("c2", "add", "{not json"),
        call("c3", "add", '{"a": "two"}'),
        call("c4", "nope", "{}"),
        call("c5", "boom", "{}"),
        call("c6", "sleepy", ""),
      ],
    });
    expect(r1.result.done).toBe(false);
    const msgs = r1.result.observation.messages;
    expect(msgs.map((m) => (m as { tool_call_id: string }).tool_call_id)).toEqual(["c1", "c2", "c3", "c4", "c5", "c6"]);
    expect(msgs[0]).toEqual({ role: "tool", tool_call_id: "c1", content: "5" });
    expect(msgs[1]!.content).toMatch(/^Error: the arguments of add are not valid JSON/);
    expect(msgs[2]!.content).toMatch(/^Error: invalid arguments for add: a: .*expected number/i);
    expect(msgs[3]!.content).toBe('Error: unknown tool "nope"; available tools: add, boom, sleepy');
    expect(msgs[4]!.content).toBe("Error: the tool exploded");
    expect(msgs[5]!.content).toBe("Error: sleepy timed out after 50 ms");
    state = r1.state;

    const r2 = await stepEpisode(toolbox, state, { content: "5" });
    expect(r2.result.done).toBe(true);
    expect(r2.result.reward).toBe(1);
    expect(r2.result.observation.metrics).toEqual({ correct: 1, num_turns: 2, num_tool_calls: 6, num_tool_errors: 5 });
  });

  it("truncates a model that keeps calling tools at maxTurns", async () => {
    let { state } = resetEpisode(toolbox, "t", { seed: 1 });
    let last;
    for (let i = 0; i < 4; i++) {
      last = await stepEpisode(toolbox, state, { content: null, tool_calls: [call(`c${i}`, "add", '{"a":1,"b":1}')] });
      state = last.state;
    }
    expect(last!.result).toMatchObject({ done: true, reward: 0 });
    expect(last!.result.observation.truncated).toBe(true);
    expect(last!.result.observation.metrics).toMatchObject({ num_turns: 4, num_tool_calls: 4, num_tool_errors: 0 });
  });
});

describe("tools over the wire", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer([toolbox], { port: 0 });
  });
  afterAll(() => server?.close());

  it("lists and calls tools over POST mcp, with JSON-RPC errors for bad requests", async () => {
    const base = `${server.url}/envs/toolbox`;
    const list = await post(`${base}/mcp`, { jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(list.body.result.tools.map((t: { name: string }) => t.name)).toEqual(["add", "boom", "sleepy"]);
    expect(list.body.result.tools[0].inputSchema.required).toEqual(["a", "b"]);
    const ok = await post(`${base}/mcp`, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "add", arguments: { a: 1, b: 2 } } });
    expect(ok.body).toEqual({ jsonrpc: "2.0", id: 2, result: { content: [{ type: "text", text: "3" }], isError: false } });
    const failing = await post(`${base}/mcp`, { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "boom", arguments: {} } });
    expect(failing.body.result).toEqual({ content: [{ type: "text", text: "Error: the tool exploded" }], isError: true });
    const badArgs = await post(`${base}/mcp`, { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "add", arguments: { a: 1 } } });
    expect(badArgs.body.result.isError).toBe(true);
    const unknown = await post(`${base}/mcp`, { jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "nope" } });
    expect(unknown.body.error.code).toBe(-32602);
    const noParams = await post(`${base}/mcp`, { jsonrpc: "2.0", id: 6, method: "tools/call" });
    expect(noParams.body.error.code).toBe(-32602);
  });

  it("speaks the MCP handshake: initialize, ping, and notifications that get no response", async () => {
    const base = `${server.url}/envs/toolbox`;
    const init = await post(`${base}/mcp`, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    expect(init.body).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { protocolVersion: "2025-03-26", capabilities: { tools: { listChanged: false } }, serverInfo: { name: "envworker/toolbox", version: "0.0.1" } },
    });
    const note = await post(`${base}/mcp`, { jsonrpc: "2.0", method: "notifications/initialized" });
    expect(note.status).toBe(202);
    expect(note.body).toBeUndefined();
    expect((await post(`${base}/mcp`, { jsonrpc: "2.0", id: "p", method: "ping" })).body).toEqual({ jsonrpc: "2.0", id: "p", result: {} });
  });

  it("plays a tool episode over HTTP and WebSocket", async () => {
    const base = `${server.url}/envs/toolbox`;
    const r = await post(`${base}/reset`, {});
    expect(r.body.observation.tools).toHaveLength(3);
    const s1 = await post(`${base}/step`, { episode_id: r.body.episode_id, action: { content: "", tool_calls: [call("x", "add", '{"a":2,"b":3}')] } });
    expect(s1.body.observation.messages).toEqual([{ role: "tool", tool_call_id: "x", content: "5" }]);
    const s2 = await post(`${base}/step`, { episode_id: r.body.episode_id, action: { content: "5" } });
    expect(s2.body).toMatchObject({ done: true, reward: 1 });

    const ws = await OpenEnvWsClient.connect(base);
    try {
      await ws.reset({});
      const t = await ws.step({ content: null, tool_calls: [call("y", "add", '{"a":2,"b":3}')] });
      expect(t.data.observation.messages[0].content).toBe("5");
      const m = await ws.send({ type: "mcp", data: { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "add", arguments: { a: 5, b: 5 } } } });
      expect(m.data.result.content[0].text).toBe("10");
      const done = await ws.step({ content: "5" });
      expect(done.data.reward).toBe(1);
    } finally {
      ws.close();
    }
  });
});
