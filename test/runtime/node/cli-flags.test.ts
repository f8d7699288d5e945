/**
 * Every flag of `envworker serve`, `eval` and `validate`, observed in its effect: what reached the
 * model server (test/fixtures/fake-openai.ts records every request), the server it talked to,
 * the files written, the address listened on. The flags are read from each command's usage
 * text, and the last tests fail when a flag has no test here, so a new flag needs one.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../../../envs/index.ts";
import { EVAL_USAGE, evalCommand } from "../../../src/cli/eval.ts";
import { startServer, type RunningServer } from "../../../src/node/server.ts";
import { rightReverse, startFakeOpenAI, type ChatRequest, type FakeOpenAI, type FakeReply } from "../../fixtures/fake-openai.ts";
import { slow } from "../../fixtures/test-envs.ts";
import { freePort, spawnServe } from "../../helpers/serve-process.ts";

const ROOT = resolve(import.meta.dirname, "../../..");
const run = promisify(execFile);

/** Flags with a test, per command (filled while the tests are collected). */
const TESTED: Record<string, Set<string>> = { serve: new Set(), eval: new Set(), validate: new Set() };
function flag(command: string, flags: string[], title: string, fn: () => Promise<void>, timeout = 60_000) {
  for (const f of flags) TESTED[command]!.add(f);
  it(`${command} ${flags.join(" ")}: ${title}`, fn, timeout);
}

/** The long flags a usage text names. */
const flagsIn = (usage: string) => new Set([...usage.matchAll(/(?<![\w-])--([a-z][a-z-]*)/g)].map((m) => `--${m[1]}`));

async function cliUsage(command: string): Promise<string> {
  const r = await run(process.execPath, ["--no-node-snapshot", "bin/envworker.js", command, "--help"], { cwd: ROOT }).catch((e: { stdout: string; stderr: string }) => e);
  return r.stdout + r.stderr;
}

let fake: FakeOpenAI;
let out: string;
let server: RunningServer;

beforeAll(async () => {
  fake = await startFakeOpenAI(rightReverse);
  out = await mkdtemp(join(tmpdir(), "envworker-flags-"));
  server = await startServer(environments, { port: 0, token: "flags-token" });
});
afterAll(async () => {
  await fake?.close();
  await server?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

async function evalRun(argv: string[], env: Record<string, string> = {}) {
  let stdout = "";
  let stderr = "";
  const code = await evalCommand(["-b", fake.baseURL, "--retry-base-ms", "1", ...argv], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s), isTTY: false },
    env,
  });
  return { code, stdout, stderr };
}

const userText = (req: ChatRequest) => [...req.messages].reverse().find((m) => m.role === "user")!.content as string;

describe("envworker serve", () => {
  flag("serve", ["--host", "--port"], "listens on the host and port given", async () => {
    const port = await freePort("127.0.0.3");
    // The flags win over HOST and PORT.
    const s = await spawnServe(["--host", "127.0.0.3", "--port", String(port)], { HOST: "127.0.0.1", PORT: "1" });
    try {
      expect(s.url).toBe(`http://127.0.0.3:${port}`);
      expect((await fetch(`${s.url}/health`)).status).toBe(200);
    } finally {
      await s.stop();
    }
  });
});

describe("envworker validate", () => {
  flag("validate", ["--url"], "checks the server at the URL (here one serving only a test environment)", async () => {
    const other = await startServer([slow], { port: 0 });
    try {
      const r = await run(process.execPath, ["--no-node-snapshot", "bin/envworker.js", "validate", "--url", other.url], { cwd: ROOT });
      expect(r.stdout).toMatch(/^PASS slow$/m);
      expect(r.stdout).not.toContain("reverse-text");
    } finally {
      await other.close();
    }
  });

  flag("validate", ["--action"], "plays the episode with the given model turn", async () => {
    const r = await run(process.execPath, ["--no-node-snapshot", "bin/envworker.js", "validate", "reverse-text", "--action", "flag-test turn"], { cwd: ROOT });
    expect(r.stdout).toMatch(/^PASS reverse-text$/m);
    expect(r.stdout).toContain('an episode played with a scripted turn ("flag-test turn")');
  });

  flag("validate", ["--help"], "prints the usage", async () => {
    expect(await cliUsage("validate")).toContain("usage: envworker validate [--url URL]");
  });
});

describe("envworker eval", () => {
  flag("eval", ["--model", "--max-tokens", "--temperature", "--api-base-url"], "reach the model server as given, without -S", async () => {
    fake.setModel(rightReverse);
    const r = await evalRun(["reverse-text", "-m", "my/model", "-t", "77", "-T", "0.3", "-n", "1", "-r", "1"]);
    expect(r.code).toBe(0);
    expect(fake.requests.length).toBe(1);
    expect(fake.requests[0]!.body).toMatchObject({ model: "my/model", max_tokens: 77, temperature: 0.3 });
  });

  flag("eval", ["--sampling-args"], "merged into every request, winning over -T", async () => {
    fake.setModel(rightReverse);
    const r = await evalRun(["reverse-text", "-T", "0.3", "-S", '{"temperature":0.9,"top_p":0.5}', "-n", "1", "-r", "1"]);
    expect(r.code).toBe(0);
    expect(fake.requests[0]!.body).toMatchObject({ temperature: 0.9, top_p: 0.5 });
  });

  flag("eval", ["--api-key-var"], "sends the key from the variable it names", async () => {
    fake.setModel(rightReverse);
    await evalRun(["reverse-text", "-k", "FLAG_KEY", "-n", "1", "-r", "1"], { FLAG_KEY: "sk-flag", OPENAI_API_KEY: "sk-other" });
    expect(fake.requests[0]!.headers.get("authorization")).toBe("Bearer sk-flag");
  });

  flag("eval", ["--num-examples", "--rollouts-per-example", "--max-concurrent"], "n examples × r rollouts, never more than c model calls at once", async () => {
    for (const c of [1, 3]) {
      let inFlight = 0;
      let most = 0;
      fake.setModel(async (req): Promise<FakeReply> => {
        most = Math.max(most, ++inFlight);
        await new Promise((res) => setTimeout(res, 80));
        inFlight--;
        return rightReverse(req);
      });
      const r = await evalRun(["reverse-text", "-n", "2", "-r", "3", "-c", String(c)]);
      expect(r.code).toBe(0);
      expect(fake.requests.length).toBe(6);
      expect(new Set(fake.requests.map((q) => userText(q.body))).size).toBe(2);
      expect(most, `-c ${c}`).toBe(c);
    }
  });

  flag("eval", ["--env-args", "--seed", "--split", "--save-results", "--output-dir"], "shape the resets and the saved files", async () => {
    fake.setModel(rightReverse);
    const dir = join(out, "saved");
    const r = await evalRun(["reverse-text", "-n", "2", "-r", "1", "-a", '{"min_words":25}', "--seed", "40", "--split", "eval", "-s", "-o", dir]);
    expect(r.code).toBe(0);
    for (const q of fake.requests) expect(userText(q.body).split(/\s+/).length).toBeGreaterThanOrEqual(25);
    const saved = /^Saved results to (.+)$/m.exec(r.stdout)![1]!;
    expect(saved.startsWith(join(dir, "evals", "reverse-text--gpt-4.1-mini"))).toBe(true);
    const rows = (await readFile(join(saved, "results.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l));
    expect(rows.map((row) => row.reset)).toMatchObject([
      { seed: 40, index: 0, split: "eval" },
      { seed: 41, index: 1, split: "eval" },
    ]);
    expect(JSON.parse(await readFile(join(saved, "metadata.json"), "utf8")).env_args).toEqual({ min_words: 25 });
  });

  flag("eval", ["--pass-threshold"], "decides which rollouts count as correct for pass@k", async () => {
    fake.setModel(() => ({ message: { content: "<reversed_text>nope</reversed_text>" } }));
    const strict = await evalRun(["reverse-text", "-n", "1", "-r", "2", "--seed", "1"]);
    const lenient = await evalRun(["reverse-text", "-n", "1", "-r", "2", "--seed", "1", "--pass-threshold", "0"]);
    expect(strict.stdout).toContain("pass@1: 0.000");
    expect(lenient.stdout).toContain("(correct = reward >= 0.0)");
    expect(lenient.stdout).toContain("pass@1: 1.000");
  });

  flag("eval", ["--max-attempts", "--retry-base-ms"], "a failing model call is tried exactly that many times", async () => {
    fake.setModel(() => ({ status: 500 }));
    const r = await evalRun(["reverse-text", "-n", "1", "-r", "1", "--max-attempts", "3"]);
    expect(r.code).toBe(1);
    expect(fake.requests.length).toBe(3);
  });

  flag("eval", ["--timeout"], "a rollout past it fails with a timeout", async () => {
    fake.setModel(() => ({ hang: true }));
    const r = await evalRun(["reverse-text", "-n", "1", "-r", "1", "--timeout", "1"]);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/time/i);
  });

  flag("eval", ["--url", "--url-token-var"], "plays the episodes on the server at the URL, with its token from the variable named", async () => {
    fake.setModel(rightReverse);
    const refused = await evalRun(["reverse-text", "-n", "1", "-r", "1", "--url", server.url]);
    expect(refused.stderr).toContain("UNAUTHORIZED");
    const r = await evalRun(["reverse-text", "-n", "1", "-r", "1", "--url", server.url, "--url-token-var", "FLAG_TOKEN"], { FLAG_TOKEN: "flags-token" });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Environment: reverse-text (${server.url})`);
  });

  flag("eval", ["--help"], "prints the usage", async () => {
    const r = await evalRun(["--help"]);
    expect(r.stdout + r.stderr).toContain("usage: envworker eval ENV");
  });
});

/**
 * Flags observed by a test in another file (named here, and that file must exercise the flag):
 * `serve --watch` restarts a server when its module changes, which test/runtime/node/cli.test.ts plays out.
 */
const TESTED_ELSEWHERE: Record<string, { command: string; file: string }> = { "--watch": { command: "serve", file: "test/runtime/node/cli.test.ts" } };
for (const [f, where] of Object.entries(TESTED_ELSEWHERE)) {
  it(`${where.command} ${f} is tested in ${where.file}`, () => {
    expect(readFileSync(resolve(ROOT, where.file), "utf8")).toContain(f);
    TESTED[where.command]!.add(f);
  });
}

describe("every flag in the usage texts has a test here", () => {
  it("eval", () => {
    expect([...flagsIn(EVAL_USAGE)].filter((f) => !TESTED.eval!.has(f))).toEqual([]);
  });
  it("serve and validate", async () => {
    const main = await cliUsage("nope");
    const serveLine = main.split("\n").find((l) => l.trim().startsWith("serve "))!;
    expect([...flagsIn(serveLine)].filter((f) => !TESTED.serve!.has(f))).toEqual([]);
    expect([...flagsIn(await cliUsage("validate"))].filter((f) => !TESTED.validate!.has(f))).toEqual([]);
  });
});
