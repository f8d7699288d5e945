/**
 * `envworker eval` on a Python environment (reverse-text-py), as a user runs it: the command in its
 * own process against a scripted OpenAI-compatible model, rollouts played and scored through the
 * Python worker; right answers score 1, wrong ones less.
 */
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rightReverse, startFakeOpenAI, wrongReverse, type FakeOpenAI } from "./fixtures/fake-openai.ts";
import { WORKER_PYTHON } from "./helpers/python-workers.ts";
import { SERVER_NODE_FLAGS } from "./helpers/serve-process.ts";

const ROOT = resolve(import.meta.dirname, "..");
let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI(rightReverse);
});
afterAll(() => fake?.close());

async function evalPython(): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [...SERVER_NODE_FLAGS, "bin/envworker.js", "eval", "./envs/reverse-text/env.py", "-m", "fake", "-b", fake.baseURL, "-n", "3", "-r", "2"], {
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
