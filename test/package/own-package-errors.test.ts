/**
 * Failed rewards are errors wherever a run is reported, in a package made by `envworker init`
 * and from its directory: a judged environment of the user's with the judge down, with only the
 * judge's URL set (no model), and with no judge at all; and a reward that throws. `eval` counted
 * them as 0 errors (`Errors: 0/2 rollouts`), metadata.json too, the viewer showed ERRORS 0 and its
 * errors filter found nothing, and `validate` said PASS without saying what it had not checked.
 */
import { writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { makeOwnPackage, type LiveCommand, type OwnPackage } from "../helpers/own-package.ts";

const JUDGED = `import { defineEnvironment, defineJudge, yesNoVerdict } from "envworker";

const grader = defineJudge({
  prompt: "Question: {question}\\nReference: {answer}\\nResponse: {response}\\nEnd with correct: yes or correct: no.",
  parse: yesNoVerdict("correct"),
});

export default defineEnvironment({
  name: "capitals",
  description: "Capitals, judged.",
  version: "0.1.0",
  dataset: () => [
    { prompt: "What is the capital of France?", answer: "Paris" },
    { prompt: "What is the capital of Italy?", answer: "Rome" },
  ],
  maxTurns: 1,
  rubric: [
    { name: "correct", fn: (input) => grader.ask(input) },
    { name: "length", weight: 0, fn: ({ completion }) => (completion.at(-1)?.content ?? "").length },
  ],
});
`;

const THROWS = `import { defineEnvironment } from "envworker";

export default defineEnvironment({
  name: "throws",
  description: "A reward that throws.",
  version: "0.1.0",
  dataset: () => [{ prompt: "Say something.", answer: "x" }, { prompt: "Say more.", answer: "y" }],
  maxTurns: 1,
  rubric: [
    { name: "parse", fn: () => { throw new TypeError("cannot parse the reply"); } },
    { name: "one", fn: () => 1 },
  ],
});
`;

let pkg: OwnPackage;
let fake: FakeOpenAI;
let closedPort: number;
let view: LiveCommand | undefined;

/** A port nobody listens on: a judge that is down. */
function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

async function evalRun(spec: string, env: Record<string, string>) {
  const r = await pkg.run(["eval", spec, "-m", "fake/model", "-b", fake.baseURL, "-n", "2", "-r", "1", "-s"], { ENVWORKER_JUDGE_RETRIES: "0", ...env });
  const dir = /^Saved results to (.+)$/m.exec(r.stdout)?.[1];
  expect(dir, r.stdout + r.stderr).toBeDefined();
  const meta = JSON.parse(await readFile(join(resolve(pkg.dir, dir!), "metadata.json"), "utf8"));
  return { ...r, dir: resolve(pkg.dir, dir!), meta };
}

beforeAll(async () => {
  pkg = await makeOwnPackage("my-env");
  writeFileSync(join(pkg.dir, "src/judged.ts"), JUDGED);
  writeFileSync(join(pkg.dir, "src/throws.ts"), THROWS);
  fake = await startFakeOpenAI(() => ({ message: { content: "Paris" } }));
  closedPort = await freePort();
}, 60_000);

afterAll(async () => {
  await view?.stop();
  await fake?.close();
  pkg?.remove();
});

describe("failed rewards in eval, metadata.json and the viewer", { timeout: 120_000 }, () => {
  const runs: Record<string, Awaited<ReturnType<typeof evalRun>>> = {};

  it("the judge down: every rollout is an error, named with its reward function", async () => {
    const r = await evalRun("./src/judged.ts", { ENVWORKER_JUDGE_URL: `http://127.0.0.1:${closedPort}/v1`, ENVWORKER_JUDGE_MODEL: "judge" });
    runs.down = r;
    expect(r.stdout).toMatch(/^Errors: 2\/2 rollouts \(2 with a failed reward function, scored 0: correct 2x\)$/m);
    expect(r.stdout).toMatch(/^ {2}example 0, rollout 0: reward function "correct" failed \(scored 0\): JUDGE_FAILED: /m);
    expect(r.meta.errors).toBe(2);
    expect(r.meta.reward_errors).toEqual({ correct: 2 });
    expect(r.meta.avg_reward).toBe(0);
    // Every rollout an error: the run failed.
    expect(r.code).toBe(1);
  });

  it("only ENVWORKER_JUDGE_URL set: `no judge model` is an error too", async () => {
    const r = await evalRun("./src/judged.ts", { ENVWORKER_JUDGE_URL: fake.baseURL });
    runs.noModel = r;
    expect(r.stdout).toMatch(/^Errors: 2\/2 rollouts/m);
    expect(r.stdout).toMatch(/JUDGE_UNCONFIGURED: no judge model/);
    expect(r.meta.errors).toBe(2);
  });

  it("a reward function that throws", async () => {
    const r = await evalRun("./src/throws.ts", {});
    runs.throws = r;
    expect(r.stdout).toMatch(/^Errors: 2\/2 rollouts \(2 with a failed reward function, scored 0: parse 2x\)$/m);
    expect(r.stdout).toMatch(/reward function "parse" failed \(scored 0\): .*cannot parse the reply/);
    expect(r.meta.errors).toBe(2);
    // The other reward still counts: the reward is what the environment gave.
    expect(r.meta.avg_reward).toBe(1);
  });

  it("the viewer counts them as errors, and its errors filter finds them", async () => {
    view = pkg.spawn(["view", "--port", "0"]);
    const url = (await view.waitFor(/^(http:\/\/\S+)\/$/m))[1]!;
    for (const name of ["down", "noModel", "throws"]) {
      const id = runs[name]!.dir.split("/").slice(-2).join("/");
      const page = await (await fetch(`${url}/runs/${id}`)).text();
      expect(page).toMatch(/<div class="k">errors<\/div><div class="v"><span style="color:var\(--bad\)">2<\/span><\/div>/);
      const filtered = await (await fetch(`${url}/runs/${id}?errors=1`)).text();
      expect(filtered).toMatch(/data-testid="shown">2 of 2 examples, 2 of 2 rollouts/);
      expect(filtered.match(/class="chip err"/g)).toHaveLength(2);
    }
    const list = await (await fetch(url)).text();
    expect(list.match(/<span class="pill bad">2<\/span>/g)).toHaveLength(3);
    // One rollout's page says which reward failed.
    const id = runs.down!.dir.split("/").slice(-2).join("/");
    const rollout = await (await fetch(`${url}/runs/${id}/0/0`)).text();
    expect(rollout).toMatch(/data-testid="reward-errors"[^>]*><div>reward function <code>correct<\/code> failed \(scored 0\): JUDGE_FAILED/);
  });
});

describe("validate of a judged environment", { timeout: 120_000 }, () => {
  it("without a judge: says which reward function it did not check", async () => {
    const r = await pkg.run(["validate", "./src/judged.ts"]);
    expect(r.stdout).toMatch(/^PASS capitals \(not checked: reward function correct: no judge\)$/m);
    expect(r.stdout).toMatch(/^ {2}SKIP reward function correct: not checked, it needs a judge the server does not have \(JUDGE_UNCONFIGURED: /m);
  });

  it("with only the judge's URL: the same, naming the missing model", async () => {
    const r = await pkg.run(["validate", "./src/judged.ts"], { ENVWORKER_JUDGE_URL: fake.baseURL });
    expect(r.stdout).toMatch(/^PASS capitals \(not checked: reward function correct: no judge\)$/m);
    expect(r.stdout).toMatch(/SKIP reward function correct: .*no judge model/);
  });

  it("with the judge down: FAIL", async () => {
    const r = await pkg.run(["validate", "./src/judged.ts"], { ENVWORKER_JUDGE_URL: `http://127.0.0.1:${closedPort}/v1`, ENVWORKER_JUDGE_MODEL: "judge", ENVWORKER_JUDGE_RETRIES: "0" });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^FAIL capitals$/m);
    expect(r.stdout).toMatch(/reward function correct failed: JUDGE_FAILED/);
  });
});
