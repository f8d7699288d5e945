/** `envworker eval`: the summary and the saved files, in process and against a running server. */
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { evalCommand, samplingArgs, type EvalIO } from "../../src/cli/eval.ts";
import { passAtK, passKs, pyList, round3, std } from "../../src/eval/report.ts";
import { Progress } from "../../src/eval/progress.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { alphabetSortGold } from "../helpers/oracles.ts";
import { rightReverse, startFakeOpenAI, wrongReverse, type ChatRequest, type FakeModel, type FakeOpenAI, type FakeReply } from "../fixtures/fake-openai.ts";

let fake: FakeOpenAI;
let server: RunningServer;
let out: string;
const VERSION = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")).version as string;

beforeAll(async () => {
  fake = await startFakeOpenAI(rightReverse);
  server = await startServer(environments, { port: 0 });
  out = await mkdtemp(join(tmpdir(), "envworker-eval-"));
});
afterAll(async () => {
  await fake?.close();
  await server?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(argv: string[], io: Partial<EvalIO> = {}): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await evalCommand(["-b", fake.baseURL, "--retry-base-ms", "1", ...argv], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s), isTTY: false },
    env: {},
    ...io,
  });
  return { code, stdout, stderr };
}

/**
 * The script of the main scenario, by example (in order of first appearance, so run with -c 1)
 * and by the how-many-th request for it: example 0 always right; example 1 right, wrong, right;
 * example 2 always wrong.
 */
function scripted(): FakeModel {
  const order: string[] = [];
  return (req: ChatRequest, ctx): FakeReply => {
    const key = JSON.stringify(req.messages);
    if (!order.includes(key)) order.push(key);
    const example = order.indexOf(key);
    const right = example === 0 || (example === 1 && ctx.attempt !== 2);
    return right ? rightReverse(req) : wrongReverse();
  };
}

/** The part of the summary that does not depend on timing or on where the environment ran. */
function rewardsBlock(stdout: string): string {
  return stdout.slice(stdout.indexOf("--- All ---"), stdout.indexOf("Timing:"));
}

const EXPECTED_REWARDS = `--- All ---
Rewards:
reward: avg - 0.556, std - 0.497
r1: [1.0, 1.0, 0.0]
r2: [1.0, 0.0, 0.0]
r3: [1.0, 1.0, 0.0]
lcs_reward_func: avg - 0.556, std - 0.497
r1: [1.0, 1.0, 0.0]
r2: [1.0, 0.0, 0.0]
r3: [1.0, 1.0, 0.0]
pass@k (correct = reward >= 1.0):
pass@1: 0.556
pass@2: 0.667
pass@3: 0.667
Errors: 0/9 rollouts
`;

async function savedRun(stdout: string) {
  const m = /^Saved results to (.+)$/m.exec(stdout);
  expect(m).not.toBeNull();
  const dir = m![1]!;
  const rows = (await readFile(join(dir, "results.jsonl"), "utf8"))
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  const meta = JSON.parse(await readFile(join(dir, "metadata.json"), "utf8"));
  return { dir, rows, meta };
}

describe("envworker eval, in process", () => {
  it("prints the vf-eval summary and saves results.jsonl and metadata.json", async () => {
    fake.setModel(scripted());
    const dir = join(out, "a");
    const r = await run(
      [
        "reverse-text",
        "-m",
        "fake/model-1",
        "-n",
        "3",
        "-r",
        "3",
        "-c",
        "1",
        "-t",
        "64",
        "-T",
        "0.5",
        "-S",
        '{"temperature":0.2,"top_p":0.9,"extra_body":{"min_p":0.1}}',
        "-s",
        "-o",
        dir,
      ],
      { env: { OPENAI_API_KEY: "sk-from-env" } },
    );
    expect(r.stderr).toBe(r.stderr.replace("is not set", "")); // the key was set: no note
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`--- Evaluation ---
Environment: reverse-text
Model: fake/model-1
Provider: ${fake.baseURL}
Examples: 3
Rollouts per example: 3
--- Example ---
prompt: The kettle clicked off just as the rain began to tap against the kitchen window.
completion: assistant: <reversed_text>.wodniw nehctik eht tsniaga pat ot nageb niar eht sa tsuj ffo dekcilc elttek ehT</reversed_text>
reward: 1.0
`);
    expect(rewardsBlock(r.stdout)).toBe(EXPECTED_REWARDS);
    expect(r.stdout).toMatch(/^Timing: \d+\.\d\d s total, \d+\.\d\d rollouts\/s$/m);
    // 9 requests of [system, user]: 20 prompt tokens and 7 completion tokens each.
    expect(r.stdout).toContain("Usage: prompt 180, completion 63, total 243 tokens (per rollout: prompt 20.0, completion 7.0, total 27.0)\n");

    // Every request: the key from OPENAI_API_KEY, -t/-T under -S, extra_body flattened.
    expect(fake.requests).toHaveLength(9);
    for (const { body, headers } of fake.requests) {
      expect(headers.get("authorization")).toBe("Bearer sk-from-env");
      expect(body).toMatchObject({ model: "fake/model-1", max_tokens: 64, temperature: 0.2, top_p: 0.9, min_p: 0.1 });
      expect(body).not.toHaveProperty("extra_body");
    }

    const { dir: saved, rows, meta } = await savedRun(r.stdout);
    expect(saved.startsWith(join(dir, "evals", "reverse-text--fake--model-1") + "/")).toBe(true);
    const runId = saved.slice(saved.lastIndexOf("/") + 1);
    expect(runId).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
    expect(await readdir(saved)).toEqual(["metadata.json", "results.jsonl"]);

    expect(rows).toHaveLength(9);
    expect(rows.map((row) => [row.example_id, row.rollout, row.reward])).toEqual([
      [0, 0, 1],
      [0, 1, 1],
      [0, 2, 1],
      [1, 0, 1],
      [1, 1, 0],
      [1, 2, 1],
      [2, 0, 0],
      [2, 1, 0],
      [2, 2, 0],
    ]);
    const train = JSON.parse(await readFile(new URL("../../envs/reverse-text/data/train.json", import.meta.url), "utf8")) as string[];
    for (const row of rows) {
      const text = train[row.example_id]!;
      const gold = Array.from(text).reverse().join("");
      expect(Object.keys(row)).toEqual([
        "example_id",
        "rollout",
        "reset",
        "episode_id",
        "prompt",
        "completion",
        "answer",
        "info",
        "env_info",
        "reward",
        "metrics",
        "done",
        "truncated",
        "turns",
        "error",
        "retries",
        "timing",
        "usage",
      ]);
      expect(row).toMatchObject({
        reset: { seed: row.example_id, index: row.example_id },
        prompt: [
          { role: "system", content: "Reverse the text character-by-character. Put your answer in <reversed_text> tags." },
          { role: "user", content: text },
        ],
        completion: [{ role: "assistant", content: row.reward === 1 ? `<reversed_text>${gold}</reversed_text>` : "<reversed_text></reversed_text>" }],
        answer: gold,
        info: {},
        env_info: { seed: row.example_id, split: "train", index: row.example_id, example_id: `train-${row.example_id}` },
        metrics: { lcs_reward_func: row.reward },
        done: true,
        truncated: false,
        turns: 1,
        error: null,
        retries: 0,
        usage: { prompt_tokens: 20, completion_tokens: 7, total_tokens: 27 },
      });
      expect(typeof row.episode_id).toBe("string");
      expect(Object.keys(row.timing)).toEqual(["generation_ms", "scoring_ms", "env_ms", "total_ms"]);
      expect(row.timing.total_ms).toBeGreaterThanOrEqual(row.timing.generation_ms);
    }

    const { time_ms, date, time, started_at, pass_at_k, ...rest } = meta;
    expect(Object.keys(pass_at_k)).toEqual(["1", "2", "3"]);
    expect(pass_at_k["1"]).toBeCloseTo(5 / 9, 12);
    expect(pass_at_k["2"]).toBeCloseTo(2 / 3, 12);
    expect(pass_at_k["3"]).toBeCloseTo(2 / 3, 12);
    expect(time_ms).toBeGreaterThan(0);
    expect(started_at).toBe(`${date}T${time}${started_at.slice(19)}`);
    expect(rest).toEqual({
      env: "reverse-text",
      env_version: "0.1.0",
      env_args: {},
      model: "fake/model-1",
      base_url: fake.baseURL,
      envworker_url: null,
      num_examples: 3,
      rollouts_per_example: 3,
      max_concurrent: 1,
      seed: 0,
      split: "train",
      sampling_args: { max_tokens: 64, temperature: 0.2, top_p: 0.9, min_p: 0.1 },
      run_id: runId,
      avg_reward: 5 / 9,
      std_reward: Math.sqrt(20) / 9,
      avg_metrics: { lcs_reward_func: 5 / 9 },
      pass_threshold: 1,
      errors: 0,
      usage: { prompt_tokens: 180, completion_tokens: 63, total_tokens: 243 },
      envworker_version: VERSION,
    });
  });

  it("prints plain progress lines when stderr is not a terminal", async () => {
    fake.setModel(rightReverse);
    const r = await run(["reverse-text", "-n", "4", "-r", "5", "-c", "3"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("note: OPENAI_API_KEY is not set; sending a placeholder API key");
    const lines = r.stderr.split("\n").filter((l) => l.startsWith("reverse-text "));
    expect(lines).toHaveLength(10); // one every 10% of 20 rollouts
    expect(lines.at(-1)).toMatch(/^reverse-text 20\/20 rollouts \(100%\) \| reward 1\.000 \| \d+\.\d\d rollouts\/s \| \d+\.\ds$/);
    expect(r.stderr).not.toContain("\r");
    expect(fake.requests[0]!.headers.get("authorization")).toBe("Bearer EMPTY");
    expect(r.stdout).not.toContain("pass@k (correct = reward >= 1.0):\npass@1: 0.9");
    expect(r.stdout).toContain("pass@1: 1.000\npass@2: 1.000\npass@4: 1.000\npass@5: 1.000\n");
  });

  it("reads the key from the variable -k names", async () => {
    fake.setModel(rightReverse);
    const r = await run(["reverse-text", "-n", "1", "-r", "1", "-k", "MY_KEY"], { env: { MY_KEY: "sk-mine", OPENAI_API_KEY: "sk-other" } });
    expect(r.code).toBe(0);
    expect(fake.requests[0]!.headers.get("authorization")).toBe("Bearer sk-mine");
    // r = 1: no pass@k block.
    expect(r.stdout).not.toContain("pass@");
  });

  it("records failures per rollout and goes on: retried 500s, exhausted retries, a timeout", async () => {
    const order: string[] = [];
    fake.setModel((req, ctx) => {
      const key = JSON.stringify(req.messages);
      if (!order.includes(key)) order.push(key);
      const example = order.indexOf(key);
      if (example === 0) return ctx.attempt === 1 ? { status: 500, error: "try again" } : rightReverse(req);
      if (example === 1) return { status: 502, error: "bad gateway" };
      return ctx.attempt === 1 ? { hang: true } : rightReverse(req);
    });
    const t = performance.now();
    const r = await run(["reverse-text", "-n", "3", "-r", "2", "-c", "1", "--max-attempts", "3", "--timeout", "0.3", "-s", "-o", join(out, "b")]);
    expect(performance.now() - t).toBeLessThan(5000);
    expect(r.code).toBe(0);
    expect(rewardsBlock(r.stdout)).toBe(`--- All ---
Rewards:
reward: avg - 0.500, std - 0.500
r1: [1.0, 0.0, 0.0]
r2: [1.0, 0.0, 1.0]
lcs_reward_func: avg - 0.500, std - 0.500
r1: [1.0, 0.0, 0.0]
r2: [1.0, 0.0, 1.0]
pass@k (correct = reward >= 1.0):
pass@1: 0.500
pass@2: 0.667
Errors: 3/6 rollouts (counted as reward 0)
  example 1, rollout 0: model: 502 bad gateway (gave up after 3 attempts)
  example 1, rollout 1: model: 502 bad gateway (gave up after 3 attempts)
  example 2, rollout 0: timed out: the rollout took longer than 300 ms
`);
    const { rows, meta } = await savedRun(r.stdout);
    expect(rows.map((row) => [row.reward, row.metrics, row.error === null, row.retries])).toEqual([
      [1, { lcs_reward_func: 1 }, true, 1],
      [1, { lcs_reward_func: 1 }, true, 0],
      [null, null, false, 2],
      [null, null, false, 2],
      [null, null, false, 0],
      [1, { lcs_reward_func: 1 }, true, 0],
    ]);
    // Failed rollouts still know their example (the episode was reset) but used no tokens.
    expect(rows[2]).toMatchObject({ turns: 0, completion: [], done: false, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } });
    expect(rows[2].answer).toBe(rows[3].answer);
    expect(meta).toMatchObject({ errors: 3, avg_reward: 0.5, pass_at_k: { "1": 0.5, "2": 2 / 3 } });
  });

  it("exits 1 when every rollout failed (a refused key is not retried)", async () => {
    fake.setModel(() => ({ status: 401, error: "Incorrect API key provided" }));
    const r = await run(["reverse-text", "-n", "2", "-r", "2"]);
    expect(r.code).toBe(1);
    expect(fake.requests).toHaveLength(4);
    expect(r.stdout).toContain("Errors: 4/4 rollouts (counted as reward 0)\n  example 0, rollout 0: model: 401 Incorrect API key provided\n");
  });

  it("plays multi-turn alphabet-sort with env args", async () => {
    fake.setModel((req) => ({ message: { content: alphabetSortGold(req.messages) }, usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }));
    const r = await run(["alphabet-sort", "-n", "4", "-r", "1", "-a", '{"min_turns":2,"max_turns":2}', "-s", "-o", join(out, "c"), "--seed", "100"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("reward: avg - 1.000, std - 0.000\nr1: [1.0, 1.0, 1.0, 1.0]\nweighted_reward: avg - 1.000");
    expect(r.stdout).toContain("Usage: prompt 8, completion 16, total 24 tokens");
    const { rows, meta } = await savedRun(r.stdout);
    expect(rows.map((row) => [row.reset, row.turns])).toEqual([0, 1, 2, 3].map((i) => [{ seed: 100 + i, index: i, args: { min_turns: 2, max_turns: 2 } }, 2]));
    expect(meta).toMatchObject({ env: "alphabet-sort", env_args: { min_turns: 2, max_turns: 2 }, seed: 100, split: "train" });
  });

  it("uses the whole split with -n -1 and clamps -n to the dataset", async () => {
    fake.setModel(rightReverse);
    const r = await run(["reverse-text", "-n", "-1", "-r", "1", "--split", "eval", "-a", '{"min_words":25}']);
    expect(r.code).toBe(0);
    const n = Number(/^Examples: (\d+)$/m.exec(r.stdout)![1]);
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(40);
    const clamped = await run(["reverse-text", "-n", "1000", "-r", "1", "--split", "eval", "-a", '{"min_words":25}']);
    expect(clamped.stderr).toContain(`note: the eval split of reverse-text has ${n} examples; evaluating all ${n}`);
    expect(clamped.stdout).toContain(`Examples: ${n}\n`);
  });

  it("reports results it cannot save, after the summary", async () => {
    fake.setModel(rightReverse);
    const blocker = join(out, "not-a-dir");
    await writeFile(blocker, "");
    const r = await run(["reverse-text", "-n", "1", "-r", "1", "-s", "-o", blocker]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("reward: avg - 1.000");
    expect(r.stderr).toContain(`envworker eval: could not save the results to ${join(blocker, "evals")}`);
  });

  it("answers usage errors with exit code 2", async () => {
    for (const argv of [
      [],
      ["nope"],
      ["reverse-text", "alphabet-sort"],
      ["reverse-text", "-S", "{bad"],
      ["reverse-text", "-a", "[1]"],
      ["reverse-text", "-a", '{"min_words":-3}'],
      ["reverse-text", "-n", "0"],
      ["reverse-text", "-r", "two"],
      ["reverse-text", "--split", "test"],
      ["reverse-text", "--bogus"],
      ["alphabet-sort", "-n", "-1"],
      ["reverse-text", "--url", "localhost:8000"],
    ]) {
      const r = await run(argv);
      expect(r.code, argv.join(" ")).toBe(2);
      expect(r.stderr).toMatch(/^envworker eval: .+\n\nusage: envworker eval ENV/);
    }
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("-k, --api-key-var VAR");
  });
});

describe("envworker eval: a model server it cannot use", () => {
  const bare = async (argv: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> => {
    let stdout = "";
    let stderr = "";
    const code = await evalCommand(argv, { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s), isTTY: false }, env });
    return { code, stdout, stderr };
  };

  it("without -b or OPENAI_BASE_URL: a usage error saying how to give one, before anything is sent", async () => {
    const r = await bare(["reverse-text", "-n", "1", "-r", "1"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^envworker eval: which model server\? give its chat-completions base URL with -b \(e\.g\. -b http:\/\/127\.0\.0\.1:8001\/v1 .*-b https:\/\/api\.openai\.com\/v1 for OpenAI\) or set OPENAI_BASE_URL/);
    // OPENAI_BASE_URL is an explicit choice too.
    const viaEnv = await bare(["reverse-text", "-n", "1", "-r", "1", "--retry-base-ms", "1"], { OPENAI_BASE_URL: fake.baseURL });
    expect(viaEnv.code).toBe(0);
  });

  it("nothing listening at -b: one line naming the URL and the cause, exit 1, no rollout tried", async () => {
    const closed = "http://127.0.0.1:1/v1";
    const r = await bare(["reverse-text", "-n", "2", "-r", "2", "-b", closed]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`envworker eval: cannot reach the model server ${closed}: connection refused by 127.0.0.1:1 (nothing listening there?) (-b sets it)`);
    expect(r.stdout).toBe("");
  });

  it("a connection lost during a run names the URL and the cause in the rollout's error", async () => {
    const { APIConnectionError } = await import("openai");
    const { explainConnectionError } = await import("../../src/sched/retry.ts");
    const refused = Object.assign(new Error("connect ECONNREFUSED 10.0.0.9:8001"), { code: "ECONNREFUSED" });
    const err = new APIConnectionError({ cause: new TypeError("fetch failed", { cause: refused }) });
    const explained = explainConnectionError(err, "http://10.0.0.9:8001/v1/chat/completions");
    expect(explained).toBe(err); // still an APIConnectionError: still retried
    expect((explained as Error).message).toBe("cannot reach http://10.0.0.9:8001/v1/chat/completions: connect ECONNREFUSED 10.0.0.9:8001");
  });
});

describe("envworker eval --url", () => {
  it("-n -1 evaluates as many examples as the server's /examples counts", async () => {
    const total = (await (await fetch(`${server.url}/envs/reverse-text/examples`, { method: "POST", headers: { "content-type": "application/json" }, body: "{\"count\":0}" })).json()).total as number;
    const r = await run(["reverse-text", "-n", "-1", "-r", "1", "-c", "8", "--url", server.url]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`${total} examples x 1 rollouts`);
  }, 120_000);

  it("gives the same numbers against a running envworker, and saves the answers and info", async () => {
    fake.setModel(scripted());
    const r = await run(["reverse-text", "-m", "fake/model-1", "-n", "3", "-r", "3", "-c", "1", "--url", server.url, "-s", "-o", join(out, "d")]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Environment: reverse-text (${server.url})\n`);
    expect(rewardsBlock(r.stdout)).toBe(EXPECTED_REWARDS);
    const { rows, meta } = await savedRun(r.stdout);
    expect(rows.map((row) => row.reward)).toEqual([1, 1, 1, 1, 0, 1, 0, 0, 0]);
    for (const row of rows) {
      expect(row).toMatchObject({ env_info: { split: "train", example_id: `train-${row.example_id}` } });
      // Remote runs keep what the viewer shows beside the completion (issue 40).
      expect(row.answer).toEqual(expect.any(String));
      expect((row.answer as string).length).toBeGreaterThan(0);
      expect(row.info).toEqual(expect.any(Object));
    }
    expect(meta).toMatchObject({ envworker_url: server.url, env_version: "0.1.0", split: "train", avg_reward: 5 / 9 });
    expect(server.store.size).toBe(0);
  });

  it("takes ENV from the server when it serves one, or from a URL that names it; a server of several is asked which, by name", async () => {
    const one = await startServer(environments.filter((e) => e.name === "reverse-text"), { port: 0 });
    try {
      fake.setModel(rightReverse);
      const r = await run(["-n", "2", "-r", "1", "--url", one.url]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`Environment: reverse-text (${one.url})\n`);
      expect(r.stdout).toContain("reward: avg - 1.000");
    } finally {
      await one.close();
    }
    const named = await run(["-n", "1", "-r", "1", "--url", `${server.url}/envs/reverse-text`]);
    expect(named.code, named.stderr).toBe(0);
    expect(named.stdout).toContain("Environment: reverse-text (");
    const several = await run(["-n", "1", "--url", server.url]);
    expect(several.code).toBe(2);
    expect(several.stderr).toContain("which environment of the server? give ENV: it serves");
    expect(several.stderr).toContain("reverse-text");
  });

  it("runs concurrently against the server", async () => {
    fake.setModel(rightReverse);
    const r = await run(["reverse-text", "-n", "5", "-r", "4", "-c", "8", "--url", `${server.url}/envs/reverse-text/`]);
    expect(r.stdout).toContain(`Environment: reverse-text (${server.url})\n`);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("reward: avg - 1.000, std - 0.000\nr1: [1.0, 1.0, 1.0, 1.0, 1.0]\n");
    expect(r.stdout).toContain("Errors: 0/20 rollouts\n");
  });

  it("sends the server's bearer token from ENVWORKER_TOKEN (or --url-token-var), and masks a path token", async () => {
    const TOKEN = "eval-test-token-1234";
    const locked = await startServer(environments, { port: 0, token: TOKEN });
    try {
      fake.setModel(rightReverse);
      const refused = await run(["reverse-text", "-n", "1", "-r", "1", "--url", locked.url]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`cannot use reverse-text at ${locked.url}: metadata: UNAUTHORIZED`);

      const viaEnv = await run(["reverse-text", "-n", "2", "-r", "1", "--url", locked.url], { env: { ENVWORKER_TOKEN: TOKEN } });
      expect(viaEnv.code).toBe(0);
      expect(viaEnv.stdout).toContain("reward: avg - 1.000");
      const viaFlag = await run(["reverse-text", "-n", "1", "-r", "1", "--url", locked.url, "--url-token-var", "MY_TOKEN"], { env: { MY_TOKEN: TOKEN } });
      expect(viaFlag.code).toBe(0);
      const unset = await run(["reverse-text", "--url", locked.url, "--url-token-var", "MY_TOKEN"]);
      expect(unset.code).toBe(2);
      expect(unset.stderr).toContain("--url-token-var: MY_TOKEN is not set");

      const viaPath = await run(["reverse-text", "-n", "1", "-r", "1", "--url", `${locked.url}/t/${TOKEN}/envs/reverse-text`, "-s", "-o", join(out, "e")]);
      expect(viaPath.code).toBe(0);
      expect(viaPath.stdout).toContain(`Environment: reverse-text (${locked.url}/t/***)\n`);
      const { meta } = await savedRun(viaPath.stdout);
      expect(meta.envworker_url).toBe(`${locked.url}/t/***`);
      expect(viaPath.stdout + viaPath.stderr + JSON.stringify(meta)).not.toContain(TOKEN);
    } finally {
      await locked.close();
    }
  });

  it("fails fast on an unknown environment or an unreachable server", async () => {
    const unknown = await run(["nope", "--url", server.url]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`envworker eval: cannot use nope at ${server.url}: metadata: UNKNOWN_ENV`);
    const down = await run(["reverse-text", "--url", "http://127.0.0.1:1"]);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain("metadata: NETWORK_ERROR");
  });
});

describe("report helpers", () => {
  it("computes the unbiased pass@k", () => {
    expect(passAtK(3, 0, 1)).toBe(0);
    expect(passAtK(3, 3, 2)).toBe(1);
    expect(passAtK(3, 1, 1)).toBeCloseTo(1 / 3, 12);
    expect(passAtK(4, 1, 2)).toBeCloseTo(1 - 3 / 6, 12); // 1 - C(3,2)/C(4,2)
    expect(passAtK(10, 3, 5)).toBeCloseTo(1 - 21 / 252, 12); // 1 - C(7,5)/C(10,5)
    expect(passKs(1)).toEqual([]);
    expect(passKs(3)).toEqual([1, 2, 3]);
    expect(passKs(8)).toEqual([1, 2, 4, 8]);
    expect(passKs(10)).toEqual([1, 2, 4, 8, 10]);
  });

  it("prints lists as Python prints round(x, 3)", () => {
    expect(pyList([1, 0, 2 / 3, 0.0625, 0.1875, 0.0005, -0.0625, 1e-7, 12])).toBe("[1.0, 0.0, 0.667, 0.062, 0.188, 0.001, -0.062, 0.0, 12.0]");
    expect(round3(0.9995)).toBe(1);
    expect(std([1, 1, 1, 1, 1, 0, 0, 0, 0])).toBeCloseTo(Math.sqrt(20) / 9, 12);
  });

  it("merges sampling args: -S wins, extra_body is flattened", () => {
    expect(samplingArgs(10, 0.7, undefined)).toEqual({ max_tokens: 10, temperature: 0.7 });
    expect(samplingArgs(10, 0.7, { max_tokens: 5, extra_body: { top_k: 20 } })).toEqual({ max_tokens: 5, temperature: 0.7, top_k: 20 });
  });

  it("redraws one line on a terminal", () => {
    let s = "";
    let t = 0;
    const p = new Progress({ total: 4, stream: { write: (x: string) => (s += x), isTTY: true }, label: "env", now: () => t, redrawMs: 0 });
    t = 1000;
    p.tick(1, false);
    p.tick(null, true);
    p.finish();
    const frames = s.split("\r\x1b[2K").filter(Boolean);
    expect(frames[0]).toBe("[------------------------] env 0/4 rollouts (0%) | reward - | 0.00 rollouts/s | 0.0s");
    expect(frames[2]).toBe("[############------------] env 2/4 rollouts (50%) | reward 0.500 | 2.00 rollouts/s | errors 1 | 1.0s");
    expect(s.endsWith("\n")).toBe(true);
    expect(s.split("\n")).toHaveLength(2);
  });
});
