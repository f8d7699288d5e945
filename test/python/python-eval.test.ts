/**
 * `envworker eval` on a Python environment (reverse-text-py), as a user runs it: the command in its
 * own process against a scripted OpenAI-compatible model, rollouts played and scored through the
 * Python worker; right answers score 1, wrong ones less.
 */
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rightReverse, startFakeOpenAI, wrongReverse, type ChatRequest, type FakeOpenAI, type FakeReply } from "../fixtures/fake-openai.ts";
import { WORKER_PYTHON } from "../helpers/python-workers.ts";
import { SERVER_NODE_FLAGS } from "../helpers/serve-process.ts";

const ROOT = resolve(import.meta.dirname, "../..");
let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI(rightReverse);
});
afterAll(() => fake?.close());

async function evalPython(spec = "./envs/reverse-text/env.py", n = "3", r = "2"): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [...SERVER_NODE_FLAGS, "bin/envworker.js", "eval", spec, "-m", "fake", "-b", fake.baseURL, "-n", n, "-r", r], {
    cwd: ROOT,
    env: { ...process.env, ...WORKER_PYTHON },
    timeout: 240_000,
  });
  return stdout;
}

describe("envworker eval on a Python environment", () => {
  it("plays and scores rollouts through the worker", async () => {
    const right = await evalPython();
    expect(right).toMatch(/reward: avg - 1\.000/);
    expect(right).toMatch(/Errors: 0\/6 rollouts/);
    fake.setModel(wrongReverse);
    const wrong = await evalPython();
    expect(wrong).not.toMatch(/reward: avg - 1\.000/);
    expect(wrong).toMatch(/Errors: 0\/6 rollouts/);
  }, 300_000);
});

describe("envworker eval in process on a Python environment whose tool and reward call sandbox.run", () => {
  it("runs them in the Python sandbox, as a server does (issue 40: they scored a silent 0)", async () => {
    // The run_code tool once, then a program printing 42, which the reward runs.
    fake.setModel((req: ChatRequest): FakeReply => {
      if (!req.messages.some((m) => m.role === "tool")) {
        return { message: { content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "run_code", arguments: JSON.stringify({ code: "print(6 * 7)" }) } }] } };
      }
      return { message: { content: "print(42)" } };
    });
    const out = await evalPython("./test/fixtures/python/tools_env.py", "1", "1");
    expect(out).toMatch(/^completion: assistant: run_code\(\{"code":"print\(6 \* 7\)"\}\) \| tool: 42/m);
    expect(out).toMatch(/^reward: avg - 1\.000/m);
    expect(out).toMatch(/^Errors: 0\/1 rollouts$/m);
  }, 300_000);
});
