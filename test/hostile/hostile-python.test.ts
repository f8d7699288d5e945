/**
 * Hostile Python against a live server, through every route that runs it (py-code's /score with
 * a client's own tests, an episode's answer, the `python` tool over MCP and in a step): the lockdown
 * escape that reached Pyodide's JavaScript (there is no JavaScript now: it finds nothing), raw
 * writes to fd 1 far past the output cap, and files (there is no file system: they fail). Each
 * must cost its own run and nothing else: the server stays up, a probe playing reverse-text is
 * served throughout, and other clients' rewards are what their answers earn.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectServed, startLiveServer, underAttack, type LiveServer } from "../helpers/hostile.ts";

const TOKEN = "hostile-python-secret-token";

let server: LiveServer;
beforeAll(async () => {
  server = await startLiveServer({ ENVWORKER_TOKEN: TOKEN });
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...server.headers }, body: JSON.stringify(body) }).then(
    async (r) => ({ status: r.status, body: (await r.json()) as any }),
  );
const python = (code: string) => post("/envs/math-tools-python/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "python", arguments: { code } } });
const block = (code: string) => "```python\n" + code + "\n```";

/**
 * The escape of issue 22, aimed at the grading: with the real _imp.create_builtin a guest reached
 * the worker's JavaScript (`process`, the inspector) and could make every later answer pass.
 */
const ESCAPE = [
  "import _imp",
  "real = [c.cell_contents for c in (_imp.create_builtin.__closure__ or ()) if getattr(c.cell_contents, '__name__', '') == 'create_builtin']",
  "class S: name = '_pyodide_core'",
  "core = real[0](S())",
  "js = core.to_js([0]).constructor.constructor",
  "print(js('return process.env.ENVWORKER_TOKEN')())",
  "def f(x):\n    return x * 2",
].join("\n");
const TTY_FLOOD = "import os\nfor _ in range(400): os.write(1, b'x' * (1 << 20))";
const FILE_FLOOD = "f = open('/tmp/big', 'wb')\nfor _ in range(25): f.write(b'x' * (16 << 20))";
const TESTS = ["assert f(2) == 4", "assert f(-3) == -6"];
/** Start the interpreters first (~150 MiB each): their start is not the attack's growth. */
const warmInterpreters = () => Promise.all([python("1"), python("2")]);

describe("hostile Python against a live server", () => {
  it("the lockdown escape reaches nothing: no secret in any answer, no forged reward for anyone", async () => {
    const outcome = await underAttack(server, async () => {
      const score = await post("/envs/py-code/score", { items: [{ completion: block(ESCAPE), info: { tests: TESTS } }] });
      const tool = await python(ESCAPE);
      // Another client's wrong answer after the attack: still wrong.
      const wrong = await post("/envs/py-code/score", { items: [{ completion: block("def f(x):\n    return x + 1"), info: { tests: TESTS } }] });
      const right = await post("/envs/py-code/score", { items: [{ completion: block("def f(x):\n    return 2 * x"), info: { tests: TESTS } }] });
      return { score, tool, wrong, right };
    }, { warmUp: warmInterpreters });
    expectServed("python escape", outcome, { maxRssGrowthMiB: 300 });
    const { score, tool, wrong, right } = outcome.result;
    expect(score.status).toBe(200);
    expect(score.body.results[0].reward).toBe(0);
    expect(JSON.stringify(score.body)).not.toContain(TOKEN);
    expect(tool.status).toBe(200);
    expect(tool.body.result.isError).toBe(true);
    // _imp.create_builtin is the real built-in here (nothing wraps it): it has no closure to read.
    expect(tool.body.result.content[0].text).toMatch(/AttributeError|IndexError/);
    expect(JSON.stringify(tool.body)).not.toContain(TOKEN);
    expect(wrong.body.results[0].reward).toBe(0);
    expect(right.body.results[0].reward).toBe(1);
  }, 120_000);

  it("raw output floods and file floods cost their own run: tool, step and /score", async () => {
    const outcome = await underAttack(server, async () => {
      const results = [];
      for (const code of [TTY_FLOOD, FILE_FLOOD]) {
        results.push((await python(code)).body.result);
        const score = await post("/envs/py-code/score", { items: [{ completion: block(code + "\ndef f(x):\n    return x * 2"), info: { tests: TESTS, timeout_ms: 5000 } }] });
        results.push(score.body.results[0]);
        const reset = await post("/envs/math-tools-python/reset", { seed: 3 });
        const step = await post("/envs/math-tools-python/step", {
          episode_id: reset.body.episode_id,
          action: { content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "python", arguments: JSON.stringify({ code }) } }] },
        });
        results.push(step.body.observation.messages[0]);
      }
      return results;
    }, { warmUp: warmInterpreters });
    // 400 MiB written per run to fd 1: the child keeps maxOutputBytes of it (Pyodide's /dev/tty once
    // kept every byte on the JavaScript heap until V8 aborted the server). Files: there are none.
    expectServed("python tty and file floods", outcome, { maxRssGrowthMiB: 600 });
    const [ttyTool, ttyScore, ttyStep, fileTool, fileScore, fileStep] = outcome.result as any[];
    expect(ttyTool.content[0].text.length).toBeLessThan(100_000);
    expect(ttyScore.reward).toBe(1);
    expect(ttyStep.content.length).toBeLessThan(100_000);
    expect(fileTool.isError).toBe(true);
    expect(fileTool.content[0].text).toMatch(/FileNotFoundError/);
    expect(fileScore.reward).toBe(0);
    expect(fileStep.content).toMatch(/FileNotFoundError/);
    expect((await python("1 + 1")).body.result).toMatchObject({ isError: false });
  }, 120_000);
});
