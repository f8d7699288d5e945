/** `envworker eval` of a judged environment: judge usage in the report and in metadata.json, in process and with --url. */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importEnvironments } from "../../src/env/source.ts";
import { evalCommand } from "../../src/cli/eval.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { judgeSettingsFromEnv } from "../../src/server/config.ts";
import { lastUser, startFakeOpenAI, type ChatRequest, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { judgeEnv, startMockJudge, type MockJudge } from "../helpers/mock-judge.ts";

const [openQa] = (await importEnvironments(new URL("../../envs/open-qa/index.ts", import.meta.url).href));
const answers = new Map(openQa!.datasetFor({}, "train")!.map((e) => [e.prompt as string, e.answer!]));

let model: FakeOpenAI;
let judge: MockJudge;
let out: string;

beforeAll(async () => {
  // The model answers every other question right (the 1st, 3rd, ...), as BrowseComp's format asks.
  let n = 0;
  model = await startFakeOpenAI((req: ChatRequest) => ({ message: { content: `Explanation: x\nExact Answer: ${n++ % 2 === 0 ? answers.get(lastUser(req)) : "Nowhere"}\nConfidence: 50%` } }));
  judge = await startMockJudge();
  out = await mkdtemp(join(tmpdir(), "envworker-judge-eval-"));
});
afterAll(async () => {
  await model?.close();
  await judge?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

async function run(argv: string[], env: Record<string, string>) {
  let stdout = "";
  let stderr = "";
  const code = await evalCommand(["-b", model.baseURL, "-m", "m", "-c", "1", "--retry-base-ms", "1", ...argv], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s), isTTY: false },
    env,
  });
  return { code, stdout, stderr };
}

describe("envworker eval of open-qa", () => {
  it("in process: the judge named by ENVWORKER_JUDGE_* grades, and the report shows its usage", async () => {
    const before = judge.calls.length;
    const r = await run(["open-qa", "-n", "4", "-r", "1", "-s", "-o", out], judgeEnv(judge));
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^reward: avg - 0\.500/m);
    expect(r.stdout).toMatch(/^Judge: 4 calls, 0 cache hits, prompt \d+, completion \d+ tokens, \d+\.\d\d s \(per rollout: 1\.0 calls, \d+\.\d tokens\)$/m);
    // The costs are not listed as reward metrics.
    expect(r.stdout).not.toMatch(/^judge_calls:/m);
    expect(judge.calls.length).toBe(before + 4);
    const dir = /^Saved results to (.+)$/m.exec(r.stdout)![1]!;
    const meta = JSON.parse(await readFile(join(dir, "metadata.json"), "utf8"));
    expect(meta.judge_usage).toMatchObject({ calls: 4, cache_hits: 0 });
    expect(meta.judge_usage.prompt_tokens).toBeGreaterThan(0);
  });

  it("against a server (--url): the server's judge; the report shows its usage", async () => {
    let server: RunningServer | undefined;
    try {
      server = await startServer([openQa!], { port: 0, envThreads: 1, judge: judgeSettingsFromEnv(judgeEnv(judge)) });
      const r = await run(["open-qa", "-n", "2", "-r", "1", "--url", server.url], {});
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^Judge: \d+ calls, \d+ cache hits/m);
    } finally {
      await server?.close();
    }
  });

  it("without a judge the judged reward is an error in every rollout, reported, not a crash", async () => {
    const r = await run(["open-qa", "-n", "1", "-r", "1"], {});
    // Every rollout an error (its reward function failed): the run failed, as when every rollout does.
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^reward: avg - 0\.000/m);
    expect(r.stdout).toMatch(/^Errors: 1\/1 rollouts \(1 with a failed reward function, scored 0: correct 1x\)$/m);
    expect(r.stdout).toMatch(/^ {2}example 0, rollout 0: reward function "correct" failed \(scored 0\): JUDGE_UNCONFIGURED: /m);
    expect(r.stdout).not.toMatch(/^Judge:/m);
  });
});
