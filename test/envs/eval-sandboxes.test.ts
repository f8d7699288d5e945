/**
 * In-process `envworker eval` has every sandbox a server has (src/sandbox/local.ts): py-code and
 * math-tools-python score as they do served (issue 40: in process they scored a silent 0 with
 * `Errors: 0/1`), and a sandbox that fails makes the rollout an error, with the reason.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { REFERENCE } from "../../envs/py-code/reference.ts";
import { evalCommand } from "../../src/cli/eval.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { startFakeOpenAI, lastUser, type ChatRequest, type FakeModel, type FakeOpenAI, type FakeReply } from "../fixtures/fake-openai.ts";
import { SERVER_NODE_FLAGS } from "../helpers/serve-process.ts";

const ROOT = resolve(import.meta.dirname, "../..");
let fake: FakeOpenAI;
let server: RunningServer;
let out: string;

/** py-code's reference solution of the function the prompt asks for. */
const solvePyCode: FakeModel = (req: ChatRequest): FakeReply => {
  const name = /Write a Python function `(\w+)`/.exec(lastUser(req))?.[1];
  const code = Object.values(REFERENCE).find((c) => name !== undefined && c.includes(`def ${name}(`));
  return { message: { content: code ? "```python\n" + code + "\n```" : "no idea" } };
};

/** math-tools-python: one python tool call, then the tool's answer boxed. */
const usePythonTool: FakeModel = (req: ChatRequest): FakeReply => {
  const tool = req.messages.findLast((m) => m.role === "tool");
  if (!tool) return { message: { content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "python", arguments: JSON.stringify({ code: "6 * 7" }) } }] } };
  return { message: { content: `\\boxed{${String(tool.content).replace(/^result: /, "")}}` } };
};

beforeAll(async () => {
  fake = await startFakeOpenAI(solvePyCode);
  server = await startServer(environments, { port: 0 });
  out = await mkdtemp(join(tmpdir(), "envworker-eval-sandboxes-"));
});
afterAll(async () => {
  await fake?.close();
  await server?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

async function run(argv: string[]): Promise<{ code: number; stdout: string }> {
  let stdout = "";
  const code = await evalCommand(["-b", fake.baseURL, "-m", "fake", "--retry-base-ms", "1", ...argv], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: () => true, isTTY: false },
    env: {},
    environments,
  });
  return { code, stdout };
}

/** The summary's numbers (not timing, not where the environment ran). */
const rewardsBlock = (stdout: string) => stdout.slice(stdout.indexOf("--- All ---"), stdout.indexOf("Timing:"));

async function savedRows(stdout: string): Promise<Record<string, any>[]> {
  const dir = /^Saved results to (.+)$/m.exec(stdout)![1]!;
  return (await readFile(join(dir, "results.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l));
}

describe("in-process eval has the Python sandbox", () => {
  it("py-code scores in process as it does served", async () => {
    fake.setModel(solvePyCode);
    const local = await run(["py-code", "-n", "3", "-r", "1"]);
    const served = await run(["py-code", "-n", "3", "-r", "1", "--url", server.url]);
    expect(local.stdout).toMatch(/^reward: avg - 1\.000/m);
    expect(local.stdout).toMatch(/^sandbox_error: avg - 0\.000/m);
    expect(local.stdout).toMatch(/^Errors: 0\/3 rollouts$/m);
    expect(rewardsBlock(local.stdout)).toBe(rewardsBlock(served.stdout));
    expect([local.code, served.code]).toEqual([0, 0]);
  }, 180_000);

  it("math-tools-python's python tool answers in process as it does served", async () => {
    fake.setModel(usePythonTool);
    const local = await run(["math-tools-python", "-n", "1", "-r", "1", "-s", "-o", join(out, "local")]);
    const served = await run(["math-tools-python", "-n", "1", "-r", "1", "-s", "-o", join(out, "served"), "--url", server.url]);
    const [l] = await savedRows(local.stdout);
    const [s] = await savedRows(served.stdout);
    const toolAnswer = (row: Record<string, any> | undefined) => row?.completion.find((m: { role: string }) => m.role === "tool")?.content;
    expect(toolAnswer(l)).toBe("result: 42");
    expect(toolAnswer(s)).toBe("result: 42");
    expect(l!.completion).toEqual(s!.completion);
    expect(local.stdout).toMatch(/^Errors: 0\/1 rollouts$/m);
    expect(rewardsBlock(local.stdout)).toBe(rewardsBlock(served.stdout));
  }, 180_000);
});

describe("a sandbox that fails", () => {
  it("makes the rollout an error, with the reason, in the summary and the saved results", async () => {
    fake.setModel(solvePyCode);
    const dir = join(out, "broken");
    // A Python sandbox that cannot start: py-code catches the failure and scores 0 (its
    // `sandbox_error` metric); that 0 is no verdict on the answer, so the rollout is an error.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [...SERVER_NODE_FLAGS, "bin/envworker.js", "eval", "py-code", "-m", "fake", "-b", fake.baseURL, "-n", "1", "-r", "1", "-s", "-o", dir],
      { cwd: ROOT, env: { ...process.env, ENVWORKER_SANDBOX_PYTHON: "/nonexistent/python3" }, timeout: 120_000 },
    ).catch((err: { stdout: string; code: number }) => {
      expect(err.code).toBe(1); // every rollout an error
      return { stdout: err.stdout };
    });
    expect(stdout).toMatch(/^sandbox_error: avg - 1\.000/m);
    expect(stdout).toMatch(/^Errors: 1\/1 rollouts \(1 scored while a sandbox or the judge failed\)$/m);
    expect(stdout).toMatch(/^ {2}example 0, rollout 0: scored while python sandbox: could not start a Python grading process: /m);
    const runDir = join(dir, "evals", "py-code--fake", (await readdir(join(dir, "evals", "py-code--fake")))[0]!);
    const [row] = (await readFile(join(runDir, "results.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l));
    expect(row.env_info.service_errors).toEqual([expect.stringMatching(/^python sandbox: /)]);
    expect(JSON.parse(await readFile(join(runDir, "metadata.json"), "utf8"))).toMatchObject({ errors: 1, service_errors: 1 });
  }, 180_000);
});
