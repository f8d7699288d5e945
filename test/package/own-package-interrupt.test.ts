/**
 * Ctrl-C during `envworker eval -s`, in a package made by `envworker init`, from its directory:
 * the command is started in a process group of its own, as a terminal starts it, and the group
 * gets SIGINT, as Ctrl-C sends it (to the bin shim and to the command it runs). It exited with no
 * message and no summary, metadata.json got no avg_reward and the viewer showed the run live
 * forever; now the finished rollouts are summarized and saved, marked interrupted.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createViewerApp } from "../../src/web/viewer/app.tsx";
import { startFakeOpenAI, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { makeOwnPackage, type OwnPackage } from "../helpers/own-package.ts";

const ECHO = `import { defineEnvironment } from "envworker";

export default defineEnvironment({
  name: "echo",
  description: "Say the word.",
  version: "0.1.0",
  dataset: () => ["alpha", "beta", "gamma", "delta"].map((w) => ({ prompt: "Say " + w, answer: w })),
  maxTurns: 1,
  rubric: [{ name: "said", fn: ({ completion, answer }) => (completion.at(-1)?.content ?? "").includes(answer) }],
});
`;

let pkg: OwnPackage;
let fake: FakeOpenAI;

beforeAll(async () => {
  pkg = await makeOwnPackage("my-env");
  writeFileSync(join(pkg.dir, "src/echo.ts"), ECHO);
  // Two answers, then a model that never answers: the run is stuck on its third rollout.
  fake = await startFakeOpenAI((req, ctx) => (ctx.call <= 2 ? { message: { content: String(req.messages.at(-1)!.content).replace("Say ", "") } } : { hang: true }));
}, 60_000);

afterAll(async () => {
  await fake?.close();
  pkg?.remove();
});

describe("Ctrl-C during eval -s", { timeout: 120_000 }, () => {
  it("prints the summary of the finished rollouts, saves them marked interrupted, exits 130", async () => {
    const run = pkg.spawn(["eval", "./src/echo.ts", "-m", "fake/model", "-b", fake.baseURL, "-n", "4", "-r", "1", "-c", "1", "-s"], {}, { group: true });
    await run.waitFor(/2\/4 rollouts/, "stderr");
    process.kill(-run.child.pid!, "SIGINT");
    expect(await run.exited).toBe("130");
    const out = run.stdout();
    expect(run.stderr()).toMatch(/envworker eval: SIGINT: stopping/);
    expect(out).toMatch(/^--- Interrupted: 2 of 4 rollouts finished; the numbers below are over those ---$/m);
    expect(out).toMatch(/^reward: avg - 1\.000, std - 0\.000$/m);
    expect(out).toMatch(/^r1: \[1\.0, 1\.0, None, None\]$/m);
    expect(out).toMatch(/^Errors: 0\/2 rollouts$/m);
    const dir = resolve(pkg.dir, /^Saved the finished rollouts \(interrupted\) to (.+)$/m.exec(out)![1]!);
    const meta = JSON.parse(readFileSync(join(dir, "metadata.json"), "utf8"));
    expect(meta).toMatchObject({ interrupted: true, completed_rollouts: 2, avg_reward: 1, num_examples: 4, errors: 0 });
    const rows = readFileSync(join(dir, "results.jsonl"), "utf8").trim().split("\n");
    expect(rows.map((l) => JSON.parse(l).example_id)).toEqual([0, 1]);

    // The viewer: not live, marked interrupted.
    const app = createViewerApp(join(pkg.dir, "outputs", "evals"));
    const id = dir.split("/").slice(-2).join("/");
    const page = await (await app.request(`/runs/${id}`)).text();
    expect(page).toMatch(/data-testid="interrupted">interrupted · 2 of 4 rollouts/);
    expect(page).not.toMatch(/data-testid="live"/);
    const list = await (await app.request("/")).text();
    expect(list).toMatch(/interrupted 2\/4/);
    expect(list).not.toMatch(/pill good live/);
  });

  it("a run whose eval was killed outright (no chance to save) is shown as stopped, not live forever", async () => {
    fake.setModel((req, ctx) => (ctx.call <= 1 ? { message: { content: String(req.messages.at(-1)!.content).replace("Say ", "") } } : { hang: true }));
    const run = pkg.spawn(["eval", "./src/echo.ts", "-m", "fake/killed", "-b", fake.baseURL, "-n", "4", "-r", "1", "-c", "1", "-s"], {}, { group: true });
    await run.waitFor(/1\/4 rollouts/, "stderr");
    // Once the finished rollout is on disk (the run is written as it goes).
    const group = join(pkg.dir, "outputs", "evals", "echo--fake--killed");
    const written = () => {
      try {
        return readdirSync(group).some((d) => readFileSync(join(group, d, "results.jsonl"), "utf8").trim() !== "");
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 200 && !written(); i++) await new Promise((r) => setTimeout(r, 50));
    process.kill(-run.child.pid!, "SIGKILL");
    await run.exited;
    const app = createViewerApp(join(pkg.dir, "outputs", "evals"));
    const id = `echo--fake--killed/${readdirSync(group)[0]}`;
    // The shim has exited; the eval process it ran may take a moment more to die on a busy machine
    // (SIGKILL is delivered, the exit is not instant): until then the run is rightly still live.
    let page = "";
    for (let i = 0; i < 100; i++) {
      page = await (await app.request(`/runs/${id}`)).text();
      if (!/data-testid="live"/.test(page)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const list = await (await app.request("/")).text();
    expect(page).toMatch(/data-testid="abandoned"[^>]*>stopped · 1 of 4 rollouts/);
    expect(page).not.toMatch(/data-testid="live"/);
    expect(list).toMatch(/stopped 1\/4/);
  });
});
