/**
 * math-tools and js-code over the wire (HTTP and WebSocket), with a real sandbox handed to tools
 * and reward functions: a scripted client plays math-tools with calculator and javascript calls,
 * and js-code with a correct, a partly correct and malicious solutions; the server keeps serving.
 *
 * The server is `startServer` (src/node/server.ts) with the sandbox backend under test passed in.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import jsCode from "../../envs/js-code/index.ts";
import { REFERENCE } from "../../envs/js-code/reference.ts";
import { TASKS } from "../../envs/js-code/tasks.ts";
import mathTools from "../../envs/math-tools/index.ts";
import type { Environment } from "../../src/env/environment.ts";
import type { Services } from "../../src/env/services.ts";
import { startServer } from "../../src/node/server.ts";
import { createSandbox } from "../../src/sandbox/index.ts";
import type { Sandbox } from "../../src/sandbox/types.ts";
import { get, post } from "../helpers/http.ts";
import { OpenEnvWsClient } from "../helpers/ws-client.ts";

interface TestServer {
  url: string;
  close(): Promise<void>;
}

/** The real Node server, with the backend under test as its sandbox. */
const serveWithSandbox = (envs: readonly Environment[], services: Services): Promise<TestServer> =>
  startServer(envs, { port: 0 }, { sandbox: services.sandbox! });

const call = (id: string, name: string, args: unknown) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });
const fence = (code: string) => "```javascript\n" + code + "\n```";
const FIZZ = TASKS.findIndex((t) => t.id === "fizzbuzz");
const GOLD = REFERENCE.fizzbuzz!.code;
const PARTIAL = GOLD.replace('i % 15 === 0 ? "FizzBuzz" : ', "");
const FLAGS = { load_error: 0, timed_out: 0, out_of_memory: 0, sandbox_error: 0 };

describe.each(["isolated-vm", "quickjs"] as const)("code environments over the wire (%s sandbox)", (kind) => {
  let sandbox: Sandbox;
  let server: TestServer;
  beforeAll(async () => {
    sandbox = createSandbox(kind);
    server = await serveWithSandbox([mathTools, jsCode], { sandbox });
  });
  afterAll(async () => {
    await server?.close();
    await sandbox?.dispose();
  });
  const math = () => `${server.url}/envs/math-tools`;
  const js = () => `${server.url}/envs/js-code`;

  it("lists both environments", async () => {
    const r = await get(`${server.url}/envs`);
    expect(r.body.envs.map((e: { name: string; max_turns: number }) => [e.name, e.max_turns])).toEqual([
      ["math-tools", 8],
      ["js-code", 1],
    ]);
  });

  it("math-tools over HTTP: calculator and javascript calls, then the boxed answer → reward 1", async () => {
    const r = await post(`${math()}/reset`, { seed: 2, args: { difficulty: "easy" } });
    expect(r.status).toBe(200);
    expect(r.body.observation.messages[1].content).toBe("Compute 1600 + 1490 - 379.");
    expect(r.body.observation.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(["calculator", "javascript"]);
    const id = r.body.episode_id;
    const s1 = await post(`${math()}/step`, {
      episode_id: id,
      action: { content: null, tool_calls: [call("c1", "calculator", { expression: "1600 + 1490 - 379" }), call("c2", "calculator", { expression: "1 / 0" })] },
    });
    expect(s1.body.done).toBe(false);
    expect(s1.body.observation.messages).toEqual([
      { role: "tool", tool_call_id: "c1", content: "2711" },
      { role: "tool", tool_call_id: "c2", content: "Error: division by zero" },
    ]);
    const s2 = await post(`${math()}/step`, {
      episode_id: id,
      action: { content: "Let me double-check.", tool_calls: [call("j1", "javascript", { code: "const x: number = 1600 + 1490 - 379; x", typescript: true })] },
    });
    expect(s2.body.observation.messages).toEqual([{ role: "tool", tool_call_id: "j1", content: "result: 2711" }]);
    const s3 = await post(`${math()}/step`, { episode_id: id, action: { content: "\\boxed{2711}" } });
    expect(s3.body).toMatchObject({ done: true, reward: 1 });
    expect(s3.body.observation.metrics).toEqual({ correct_answer: 1, boxed_answer: 1, num_turns: 3, num_tool_calls: 3, num_tool_errors: 1 });
  });

  it("math-tools over WebSocket, including a guest error and MCP in the session", async () => {
    const ws = await OpenEnvWsClient.connect(math());
    try {
      const reset = await ws.reset({ seed: 0, args: { difficulty: "hard" } });
      expect(reset.data.observation.messages[1].content).toBe("What is the least common multiple of 209, 400, 227?");
      const t1 = await ws.step({ content: null, tool_calls: [call("j", "javascript", { code: "lcm(209, 400)" })] });
      expect(t1.data.observation.messages[0].content).toMatch(/^Error: ReferenceError: .*lcm/);
      const code = "const g = (a, b) => (b ? g(b, a % b) : a);\nconst l = (a, b) => (a / g(a, b)) * b;\nl(l(209, 400), 227)";
      const t2 = await ws.step({ content: null, tool_calls: [call("k", "javascript", { code })] });
      expect(t2.data.observation.messages).toEqual([{ role: "tool", tool_call_id: "k", content: "result: 18977200" }]);
      const m = await ws.send({ type: "mcp", data: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "javascript", arguments: { code: "6 * 7" } } } });
      expect(m.data.result).toEqual({ content: [{ type: "text", text: "result: 42" }], isError: false });
      const done = await ws.step({ content: "\\boxed{18977200}" });
      expect(done.data).toMatchObject({ done: true, reward: 1 });
      expect(done.data.observation.metrics).toEqual({ correct_answer: 1, boxed_answer: 1, num_turns: 3, num_tool_calls: 2, num_tool_errors: 1 });
    } finally {
      ws.close();
    }
  });

  it("math-tools tools/list and tools/call over POST /envs/math-tools/mcp", async () => {
    const list = await post(`${math()}/mcp`, { jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(list.body.result.tools.map((t: { name: string }) => t.name)).toEqual(["calculator", "javascript"]);
    expect(list.body.result.tools[1].inputSchema.required).toEqual(["code"]);
    const rpc = (id: number, name: string, args: unknown) => post(`${math()}/mcp`, { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
    expect((await rpc(2, "calculator", { expression: "2 ^ 10 - sqrt(576)" })).body.result).toEqual({ content: [{ type: "text", text: "1000" }], isError: false });
    expect((await rpc(3, "calculator", { expression: "10 % 0" })).body.result).toEqual({ content: [{ type: "text", text: "Error: modulo by zero" }], isError: true });
    expect((await rpc(4, "javascript", { code: "console.log([1, 2, 3].reduce((a, b) => a + b))" })).body.result).toEqual({
      content: [{ type: "text", text: "stdout:\n6" }],
      isError: false,
    });
    const loop = await rpc(5, "javascript", { code: "for (;;) {}" });
    expect(loop.body.result).toEqual({ content: [{ type: "text", text: "Error: TimeoutError: execution exceeded the time limit of 2000 ms" }], isError: true });
    const exit = await rpc(6, "javascript", { code: "process.exit(1)" });
    expect(exit.body.result.isError).toBe(true);
    expect(exit.body.result.content[0].text).toMatch(/^Error: ReferenceError: .*process/);
    expect((await get(`${server.url}/health`)).body).toEqual({ status: "healthy" });
  });

  it("js-code over HTTP: correct → 1, partly correct → a fraction, with metrics", async () => {
    const play = async (reply: string) => {
      const r = await post(`${js()}/reset`, { index: FIZZ });
      expect(r.body.observation.messages[1].content).toContain("Write a JavaScript function `fizzBuzz`.");
      return (await post(`${js()}/step`, { episode_id: r.body.episode_id, action: { content: reply } })).body;
    };
    const gold = await play(fence(GOLD));
    expect(gold).toMatchObject({ done: true, reward: 1 });
    expect(gold.observation.metrics).toEqual({ pass_rate: 1, all_passed: 1, ...FLAGS });
    const partial = await play(fence(PARTIAL));
    expect(partial).toMatchObject({ done: true, reward: 0.6 });
    expect(partial.observation.metrics).toEqual({ pass_rate: 0.6, all_passed: 0, ...FLAGS });
  });

  it("js-code: malicious solutions score 0 with an explanatory metric, and the server keeps serving", async () => {
    const attempts: [string, string, Record<string, number>][] = [
      ["infinite loop", "function fizzBuzz(n) { while (true) {} }", { timed_out: 1 }],
      ["process.exit()", "process.exit(0);\n" + GOLD, { load_error: 1 }],
      ["require('fs')", "const fs = require('fs');\nfs.writeFileSync('/tmp/pwned', 'x');\n" + GOLD, { load_error: 1 }],
      ["constructor escape", "const p = this.constructor.constructor('return process')();\np.exit(1);\n" + GOLD, { load_error: 1 }],
      ["forged summary", 'function fizzBuzz(n) { return []; }\n})(); "{\\"passed\\":5,\\"total\\":5}"; (function () {', { load_error: 1 }],
      ["overwritten built-ins", 'function fizzBuzz(n) { return ["x"]; }\nJSON.stringify = () => "[]"; Array.prototype.every = () => true; Reflect.apply = () => [];', {}],
    ];
    for (const [name, code, flags] of attempts) {
      const r = await post(`${js()}/reset`, { index: FIZZ, args: { timeout_ms: 1000 } });
      const s = await post(`${js()}/step`, { episode_id: r.body.episode_id, action: { content: fence(code) } });
      expect(s.status, name).toBe(200);
      expect(s.body.reward, name).toBe(0);
      expect(s.body.observation.metrics, name).toEqual({ pass_rate: 0, all_passed: 0, ...FLAGS, ...flags });
    }
    // Still serving: a normal episode after the malicious ones works.
    expect((await get(`${server.url}/health`)).body).toEqual({ status: "healthy" });
    const r = await post(`${js()}/reset`, { index: FIZZ });
    const s = await post(`${js()}/step`, { episode_id: r.body.episode_id, action: { content: fence(GOLD) } });
    expect(s.body).toMatchObject({ done: true, reward: 1 });
  });

  it("js-code over WebSocket, with the test report as feedback", async () => {
    const ws = await OpenEnvWsClient.connect(js());
    try {
      await ws.reset({ index: FIZZ, args: { feedback: true, timeout_ms: 1000 } });
      const hang = await ws.step({ content: fence(GOLD.replace("const out = [];", "const out = [];\n  if (n === 15) for (;;) {}")) });
      expect(hang.data).toMatchObject({ done: true, reward: 0.4 });
      expect(hang.data.observation.metrics).toEqual({ pass_rate: 0.4, all_passed: 0, ...FLAGS, timed_out: 1 });
      expect(hang.data.observation.messages[0].content).toBe("Hidden tests: 2/5 passed.\nTimeoutError: execution exceeded the time limit of 1000 ms");
      await ws.reset({ index: FIZZ, args: { feedback: true } });
      const partial = await ws.step({ content: fence(PARTIAL) });
      expect(partial.data.reward).toBe(0.6);
      expect(partial.data.observation.messages[0].content).toMatch(/^Hidden tests: 3\/5 passed\.\nTest 3 failed: input \[15\]/);
      await ws.reset({ index: FIZZ });
      const gold = await ws.step({ content: fence(GOLD) });
      expect(gold.data).toMatchObject({ done: true, reward: 1 });
    } finally {
      ws.close();
    }
  });

  it("js-code stateless scoring over POST /score", async () => {
    const r = await post(`${js()}/score`, {
      items: [
        { completion: fence(GOLD), answer: "fizzbuzz" },
        { completion: [{ role: "assistant", content: fence(PARTIAL) }], info: { task_id: "fizzbuzz" } },
        { completion: "no code here", answer: "fizzbuzz" },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.results.map((x: { reward: number }) => x.reward)).toEqual([1, 0.6, 0]);
    expect(r.body.results[2].metrics.load_error).toBe(1);
  });
});
