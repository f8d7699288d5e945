/**
 * The `python` tool end to end: math-tools-python served by a real server (its environment code in
 * the environment threads, the Python sandbox in the main thread), a tool call over an episode
 * step and over MCP, a failing call counted as a tool error.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importEnvironments } from "../../src/env/source.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { post } from "../helpers/http.ts";

let server: RunningServer;
const base = () => `${server.url}/envs/math-tools-python`;
const call = (id: string, code: string) => ({ id, type: "function", function: { name: "python", arguments: JSON.stringify({ code }) } });

beforeAll(async () => {
  const envs = await importEnvironments(new URL("../../envs/index.ts", import.meta.url).href);
  server = await startServer(envs.filter((e) => e.name === "math-tools-python"), { port: 0 });
}, 60_000);
afterAll(() => server?.close());

describe("the python tool (math-tools-python)", () => {
  it("offers python, runs a call in the sandbox, counts a failing one as a tool error", async () => {
    const reset = await post(`${base()}/reset`, { seed: 5 });
    expect(reset.status).toBe(200);
    expect(reset.body.observation.tools.map((t: { function: { name: string } }) => t.function.name)).toContain("python");
    const id = reset.body.episode_id;

    const ok = await post(`${base()}/step`, { episode_id: id, action: { content: null, tool_calls: [call("p1", "x = 6 * 7\nprint(x)\nx + 1")] } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const okReply = ok.body.observation.messages[0];
    expect(okReply).toMatchObject({ role: "tool", tool_call_id: "p1" });
    expect(okReply.content).toContain("42");
    expect(okReply.content).toContain("43");
    expect(okReply.content).not.toMatch(/^Error:/);

    const bad = await post(`${base()}/step`, { episode_id: id, action: { content: null, tool_calls: [call("p2", "1 / 0")] } });
    expect(bad.body.observation.messages[0].content).toMatch(/^Error:.*ZeroDivisionError/s);

    const end = await post(`${base()}/step`, { episode_id: id, action: { content: "\\boxed{-1}" } });
    expect(end.body.done).toBe(true);
    expect(end.body.observation.metrics).toMatchObject({ num_tool_calls: 2, num_tool_errors: 1 });
  }, 120_000);

  it("answers tools/call over MCP from the same sandbox, and no run sees another's state", async () => {
    const rpc = (id: number, code: string) =>
      post(`${base()}/mcp`, { jsonrpc: "2.0", id, method: "tools/call", params: { name: "python", arguments: { code } } });
    const first = await rpc(1, "leaked = 'secret'\nimport math\nmath.comb(10, 3)");
    expect(first.body.result).toMatchObject({ isError: false });
    expect(first.body.result.content[0].text).toContain("120");
    const second = await rpc(2, "'leaked' in globals()");
    expect(second.body.result.content[0].text).toBe("result: false");
  }, 120_000);
});
