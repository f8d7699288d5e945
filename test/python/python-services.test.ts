/**
 * A Python environment's tools and rewards through a live server: tool schemas from type hints
 * (the observation's OpenAI tools, MCP's tools/list), tool calls over a step and over MCP (bad
 * arguments refused by the server's schema check, a failing tool reported), and `sandbox.run` from
 * Python (a tool running the model's code, a reward running its answer): the code runs in the
 * server's sandboxes (Python and JavaScript), not in the worker.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../helpers/http.ts";
import { WORKER_PYTHON } from "../helpers/python-workers.ts";
import { spawnServe, type ServeProcess } from "../helpers/serve-process.ts";

let server: ServeProcess;
beforeAll(async () => {
  server = await spawnServe(["./test/fixtures/python/tools_env.py", "--port", "0"], WORKER_PYTHON);
}, 180_000);
afterAll(async () => {
  await server?.stop();
});

const post = (path: string, body: unknown) => request("POST", `${server.url}/envs/py-tools${path}`, body);
const call = (id: string, name: string, args: unknown) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });

describe("a Python environment's tools and sandbox", () => {
  it("plays tool calls, runs the model's code in the server's sandboxes, and scores with them", async () => {
    const reset = await post("/reset", { seed: 1 });
    expect(reset.status).toBe(200);
    const tools = reset.body.observation.tools as { function: { name: string; parameters: any } }[];
    expect(tools.map((t) => t.function.name)).toEqual(["add", "run_code", "boom"]);
    expect(tools[0]!.function.parameters).toEqual({ type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, required: ["a", "b"], additionalProperties: false });
    expect(Object.keys(tools[1]!.function.parameters.properties)).toEqual(["code", "lang"]); // `sandbox` is not the model's
    const id = reset.body.episode_id;
    const step = await post("/step", {
      episode_id: id,
      action: {
        content: null,
        tool_calls: [
          call("c1", "add", { a: 2, b: 3 }),
          call("c2", "run_code", { code: "import sys\nprint(6 * 7, sys.platform)" }),
          call("c3", "run_code", { code: "console.log(1 + 1)", lang: "javascript" }),
          call("c4", "add", { a: "two", b: 3 }),
          call("c5", "boom", {}),
        ],
      },
    });
    expect(step.status).toBe(200);
    const replies = step.body.observation.messages as { tool_call_id: string; content: string }[];
    const by = Object.fromEntries(replies.map((m) => [m.tool_call_id, m.content]));
    expect(by.c1).toBe("5");
    expect(by.c2).toBe("42 wasi\n"); // ran in the Python sandbox (CPython for WASI), not the worker (linux)
    expect(by.c3).toBe("2\n"); // and in the JavaScript one
    expect(by.c4).toMatch(/error|invalid/i);
    expect(by.c5).toMatch(/the tool exploded/);
    const end = await post("/step", { episode_id: id, action: { content: "print(42)" } });
    expect(end.status).toBe(200);
    expect(end.body.done).toBe(true);
    expect(end.body.observation.metrics).toMatchObject({ sandboxed: 1, num_tool_calls: 5, num_tool_errors: 2 });
    expect(end.body.reward).toBe(1);
    const scored = await post("/score", { items: [{ completion: "print(41)" }, { completion: "print(6*7)" }] });
    expect(scored.body.results.map((r: { reward: number }) => r.reward)).toEqual([0, 1]);
  }, 120_000);

  it("serves the tools over MCP", async () => {
    const list = await post("/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(list.body.result.tools.map((t: { name: string }) => t.name)).toEqual(["add", "run_code", "boom"]);
    const ok = await post("/mcp", { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "add", arguments: { a: 1, b: 2 } } });
    expect(ok.body.result).toEqual({ content: [{ type: "text", text: "3" }], isError: false });
    const bad = await post("/mcp", { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "add", arguments: { a: 1 } } });
    expect(bad.body.result.isError).toBe(true);
    const failing = await post("/mcp", { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "boom", arguments: {} } });
    expect(failing.body.result.isError).toBe(true);
    expect(failing.body.result.content[0].text).toMatch(/the tool exploded/);
  }, 60_000);
});
