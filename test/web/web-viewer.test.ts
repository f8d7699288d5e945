/**
 * `envworker view` in a real browser: runs saved by `envworker eval -s` against the fake
 * OpenAI-compatible model, then the run list, a run's histogram and filters, a transcript, a
 * comparison, and a run that updates while it is written.
 */
import { spawn } from "node:child_process";
import { appendFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { evalCommand } from "../../src/cli/eval.ts";
import { startViewer } from "../../src/cli/view.ts";
import { lastUser, rightReverse, startFakeOpenAI, type ChatRequest, type FakeContext, type FakeOpenAI, type FakeReply } from "../fixtures/fake-openai.ts";
import { launchBrowser, openPage, PHONE, screenshot } from "../helpers/browser.ts";
import { rawRequest } from "../helpers/raw-http.ts";

let fake: FakeOpenAI;
let out: string;
let browser: Browser;
let viewer: Awaited<ReturnType<typeof startViewer>>;
const saved: Record<string, { dir: string; stdout: string; rows: any[]; meta: any }> = {};

/** Half the reversal: a reward strictly between 0 and 1. */
const halfReverse = (req: ChatRequest): FakeReply => {
  const rev = Array.from(lastUser(req)).reverse();
  return { message: { content: `<reversed_text>${rev.slice(0, Math.ceil(rev.length / 2)).join("")}</reversed_text>` } };
};

/** A stable number per prompt, to vary the script by example. */
const promptHash = (req: ChatRequest) => Array.from(lastUser(req)).reduce((h, ch) => (h * 31 + ch.codePointAt(0)!) >>> 0, 7);

const modelA = (req: ChatRequest, ctx: FakeContext): FakeReply => (promptHash(req) % 3 === 0 || ctx.attempt === 2 ? halfReverse(req) : rightReverse(req));
const modelB = (req: ChatRequest, ctx: FakeContext): FakeReply => {
  const h = promptHash(req);
  if (ctx.call % 7 === 0) return { status: 400, error: "context length exceeded" };
  return h % 5 === 0 ? halfReverse(req) : rightReverse(req);
};
/** math-tools: reason, call the calculator, then answer from its result. */
const toolModel = (req: ChatRequest): FakeReply => {
  const last = req.messages[req.messages.length - 1]!;
  if (last.role === "tool") return { message: { content: `The calculator says ${last.content}. \\boxed{${last.content}}` } };
  return {
    message: {
      content: null,
      reasoning_content: "Let me compute this with the calculator first.",
      tool_calls: [{ id: "call_1", type: "function", function: { name: "calculator", arguments: JSON.stringify({ expression: "6 * 7" }) } }],
    },
  };
};

async function evalRun(name: string, model: (req: ChatRequest, ctx: FakeContext) => FakeReply, argv: string[]) {
  fake.setModel(model);
  let stdout = "";
  const code = await evalCommand([...argv, "-b", fake.baseURL, "--retry-base-ms", "1", "--max-attempts", "1", "-c", "1", "-s", "-o", out], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: () => true, isTTY: false },
    env: {},
  });
  expect(code).toBe(0);
  const dir = /^Saved results to (.+)$/m.exec(stdout)![1]!;
  const rows = (await readFile(join(dir, "results.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l));
  const meta = JSON.parse(await readFile(join(dir, "metadata.json"), "utf8"));
  saved[name] = { dir, stdout, rows, meta };
}

const id = (name: string) => {
  const dir = saved[name]!.dir;
  return dir.split("/").slice(-2).join("/");
};
const f3 = (x: number) => x.toFixed(3);

beforeAll(async () => {
  fake = await startFakeOpenAI(rightReverse);
  out = await mkdtemp(join(tmpdir(), "envworker-view-"));
  await evalRun("a", modelA, ["reverse-text", "-m", "fake/model-a", "-n", "8", "-r", "3"]);
  await evalRun("b", modelB, ["reverse-text", "-m", "fake/model-b", "-n", "8", "-r", "3"]);
  await evalRun("tools", toolModel, ["math-tools", "-m", "fake/tool-user", "-n", "3", "-r", "2"]);
  viewer = await startViewer(join(out, "evals"), { port: 0 });
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await viewer?.close();
  await fake?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

describe("envworker eval -s", () => {
  it("ends by printing the envworker view command for its run", () => {
    expect(saved.a!.stdout).toContain(`See them in a browser: npx envworker view ${saved.a!.dir}\n`);
  });
});

describe("envworker view", () => {
  it("lists the runs with their numbers, and sorts them", async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(viewer.url);
    const rows = page.locator("[data-testid=runs] tbody tr");
    await expect.poll(() => rows.count()).toBe(3);
    for (const name of ["a", "b", "tools"]) {
      const row = page.locator(`tr[data-run="${id(name)}"]`);
      const meta = saved[name]!.meta;
      await expect.poll(() => row.locator("[data-testid=run-reward]").textContent()).toBe(`${f3(meta.avg_reward)} ± ${f3(meta.std_reward)}`);
      expect(await row.textContent()).toContain(meta.model);
      expect(await row.textContent()).toContain(`${meta.num_examples} × ${meta.rollouts_per_example}`);
    }
    // Sorting by reward (highest first, then lowest first) with the column's link.
    await page.getByRole("link", { name: "Reward" }).click();
    const rewards = async () => (await page.locator("[data-testid=run-reward]").allTextContents()).map((t) => Number(t.split(" ")[0]));
    const desc = await rewards();
    expect(desc).toEqual([...desc].sort((x, y) => y - x));
    await page.getByRole("link", { name: /Reward/ }).click();
    const asc = await rewards();
    expect(asc).toEqual([...desc].reverse());
    await screenshot(page, "viewer-runs");
    expect(problems).toEqual([]);
  });

  it("shows a run: stats, a reward histogram drawn from its rollouts, per-metric charts", async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${viewer.url}/runs/${id("b")}`);
    const meta = saved.b!.meta;
    await expect(page.locator("[data-testid=stat-reward] .v").textContent()).resolves.toBe(`${f3(meta.avg_reward)} ± ${f3(meta.std_reward)}`);
    // The histogram is a Chart.js chart whose bars count every rollout.
    const canvas = page.locator("#charts-region canvas").first();
    await canvas.waitFor();
    const bars = await canvas.evaluate((el) => (globalThis as any).Chart.getChart(el)?.data.datasets[0].data as number[]);
    expect(bars).toHaveLength(10);
    expect(bars.reduce((s, x) => s + x, 0)).toBe(24);
    const ones = saved.b!.rows.filter((r) => r.reward === 1).length;
    expect(bars[9]).toBe(ones);
    expect(await canvas.evaluate((el: HTMLCanvasElement) => el.width)).toBeGreaterThan(100);
    expect(await page.locator('[data-metric="lcs_reward_func"] canvas').count()).toBe(1);
    const errors = saved.b!.rows.filter((r) => r.error !== null).length;
    expect(errors).toBeGreaterThan(0);
    expect(await page.locator(".stat", { hasText: "errors" }).textContent()).toContain(String(errors));
    await screenshot(page, "viewer-run");
    const phone = await openPage(browser, PHONE);
    await phone.page.goto(`${viewer.url}/runs/${id("b")}`);
    await phone.page.locator("#charts-region canvas").first().waitFor();
    const scrollWidth = await phone.page.evaluate(() => document.documentElement.scrollWidth);
    expect(scrollWidth).toBeLessThanOrEqual(PHONE.width);
    await screenshot(phone.page, "viewer-run-phone");
    expect([...problems, ...phone.problems]).toEqual([]);
  });

  it("filters rollouts by reward, errors and turns", async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${viewer.url}/runs/${id("b")}`);
    const rows = saved.b!.rows;
    const chips = page.locator("[data-testid=examples] .chip");
    expect(await chips.count()).toBe(24);

    await page.getByLabel("reward ≤").fill("0.99");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/max=0.99/);
    const low = rows.filter((r) => r.error !== null || r.reward <= 0.99);
    expect(await chips.count()).toBe(low.length);
    expect(await page.getByTestId("shown").textContent()).toContain(`${low.length} of 24 rollouts`);

    await page.getByLabel("reward ≤").fill("");
    await page.getByLabel("errors only").check();
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/errors=1/);
    const errs = rows.filter((r) => r.error !== null);
    expect(await chips.count()).toBe(errs.length);
    expect(await chips.allTextContents()).toEqual(errs.map(() => "error"));

    await page.getByRole("link", { name: "Clear" }).click();
    await page.getByLabel("turns ≥").fill("2");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/tmin=2/);
    expect(await chips.count()).toBe(0);
    await expect(page.locator("[data-testid=examples]").textContent()).resolves.toContain("No rollout matches the filter.");
    expect(problems).toEqual([]);
  });

  it("lists a histogram bar's rollouts when the bar is clicked", async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${viewer.url}/runs/${id("a")}`);
    const canvas = page.locator("#charts-region canvas").first();
    await canvas.waitFor();
    // Where Chart.js drew the last bar (0.9–1), in the canvas's CSS pixels.
    const bar = await canvas.evaluate((el) => {
      const meta = (globalThis as any).Chart.getChart(el).getDatasetMeta(0).data[9];
      return { x: meta.x, y: (meta.y + meta.base) / 2 };
    });
    await canvas.click({ position: bar });
    await page.waitForURL(/min=0\.9&max=1#examples$/);
    const top = saved.a!.rows.filter((r) => r.error === null && r.reward >= 0.9);
    expect(top.length).toBeGreaterThan(0);
    expect(await page.locator("[data-testid=examples] .chip").count()).toBe(top.length);
    expect(problems).toEqual([]);
  });

  it("pages through a run with many examples", async () => {
    const { page, problems } = await openPage(browser);
    const dir = join(out, "evals", "reverse-text--fake--many", "20000101-000000-000000");
    await mkdir(dir, { recursive: true });
    const row = saved.a!.rows[0];
    await writeFile(join(dir, "results.jsonl"), Array.from({ length: 60 }, (_, i) => `${JSON.stringify({ ...row, example_id: i, rollout: 0 })}\n`).join(""));
    await writeFile(join(dir, "metadata.json"), JSON.stringify({ ...saved.a!.meta, model: "fake/many", num_examples: 60, rollouts_per_example: 1, started_at: "2000-01-01T00:00:00.000Z" }));
    await page.goto(`${viewer.url}/runs/reverse-text--fake--many/20000101-000000-000000`);
    const rows = page.locator("[data-testid=examples] tbody tr");
    expect(await rows.count()).toBe(50);
    await page.getByRole("link", { name: "next →" }).click();
    await page.waitForURL(/page=2/);
    expect(await rows.count()).toBe(10);
    expect(await rows.first().getAttribute("data-example")).toBe("50");
    await rm(join(out, "evals", "reverse-text--fake--many"), { recursive: true });
    expect(problems).toEqual([]);
  });

  it("shows a rollout's transcript: messages, tool calls and results, folded reasoning, metrics, timing and tokens", async () => {
    const { page, problems } = await openPage(browser);
    // From the run page, follow a rollout chip.
    await page.goto(`${viewer.url}/runs/${id("tools")}`);
    await page.getByRole("link", { name: "example 1 rollout 1: reward 0.000" }).or(page.getByRole("link", { name: /example 1 rollout 1:/ })).first().click();
    await page.waitForURL(/\/1\/1$/);
    const row = saved.tools!.rows.find((r) => r.example_id === 1 && r.rollout === 1);
    const t = page.getByTestId("transcript");
    expect(await t.locator('.msg[data-role="user"] .content').first().textContent()).toBe(row.prompt.at(-1).content);
    expect(await t.locator(".toolcall .name").textContent()).toBe("calculator");
    expect(await t.locator('.msg[data-role="tool"] .content').textContent()).toBe("42");
    const reasoning = t.locator("details.reasoning");
    expect(await reasoning.getAttribute("open")).toBeNull();
    await reasoning.locator("summary").click();
    await expect(reasoning.locator("pre").textContent()).resolves.toBe("Let me compute this with the calculator first.");
    expect(await t.locator(".turn-sep").count()).toBe(2);
    expect(await page.getByTestId("rollout-reward").textContent()).toBe(f3(row.reward));
    const side = await page.locator("aside").textContent();
    for (const name of Object.keys(row.metrics)) expect(side).toContain(name);
    expect(side).toContain(`${row.usage.prompt_tokens} prompt + ${row.usage.completion_tokens} completion = ${row.usage.total_tokens}`);
    expect(side).toContain("generation");
    await screenshot(page, "viewer-rollout");

    // A failed rollout shows its error.
    const failed = saved.b!.rows.find((r) => r.error !== null);
    await page.goto(`${viewer.url}/runs/${id("b")}/${failed.example_id}/${failed.rollout}`);
    await expect(page.getByRole("alert").textContent()).resolves.toContain(failed.error);
    expect(problems).toEqual([]);
  });

  it("compares two runs of the same environment, and refuses two different ones", async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(viewer.url);
    await page.locator(`input[value="${id("a")}"]`).check();
    await page.locator(`input[value="${id("b")}"]`).check();
    await page.getByRole("button", { name: "Compare two selected runs" }).click();
    await page.waitForURL(/\/compare\?/);
    const scatter = page.locator("canvas").first();
    await scatter.waitFor();
    const points = await scatter.evaluate((el) => (globalThis as any).Chart.getChart(el)?.data.datasets[0].data as { x: number; y: number }[]);
    expect(points).toHaveLength(8);
    // Per-example mean reward of each run, failed rollouts as 0, from the saved files.
    const means = (rows: any[]) => Array.from({ length: 8 }, (_, i) => rows.filter((r) => r.example_id === i).reduce((s, r) => s + (r.error ? 0 : r.reward), 0) / 3);
    const [ma, mb] = [means(saved.a!.rows), means(saved.b!.rows)];
    for (let i = 0; i < 8; i++) {
      expect(points[i]!.x).toBeCloseTo(ma[i]!, 9);
      expect(points[i]!.y).toBeCloseTo(mb[i]!, 9);
      const cell = await page.locator(`[data-testid=compare] tr[data-example="${i}"] [data-testid=diff]`).textContent();
      expect(Number(cell)).toBeCloseTo(mb[i]! - ma[i]!, 3);
    }
    const meanDiff = mb.reduce((s, x) => s + x, 0) / 8 - ma.reduce((s, x) => s + x, 0) / 8;
    expect(Number(await page.getByTestId("mean-diff").locator(".v").textContent())).toBeCloseTo(meanDiff, 3);
    await screenshot(page, "viewer-compare");

    await page.goto(viewer.url);
    await page.locator(`input[value="${id("a")}"]`).check();
    await page.locator(`input[value="${id("tools")}"]`).check();
    await page.getByRole("button", { name: "Compare two selected runs" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toContain("Compare runs of the same environment");
    expect(problems).toEqual([]);
  });

  it("updates a run that is still being written, as its results arrive", async () => {
    const { page, problems } = await openPage(browser);
    const source = saved.a!;
    const dir = join(out, "evals", "reverse-text--fake--live", "20990101-000000-abcdef");
    await mkdir(dir, { recursive: true });
    const settings = { env: "reverse-text", model: "fake/live", num_examples: 8, rollouts_per_example: 3, started_at: "2099-01-01T00:00:00.000Z", run_id: "20990101-000000-abcdef" };
    await writeFile(join(dir, "metadata.json"), JSON.stringify(settings));
    const line = (r: unknown) => `${JSON.stringify(r)}\n`;
    await writeFile(join(dir, "results.jsonl"), source.rows.slice(0, 2).map(line).join("") + line(source.rows[2]).slice(0, 20));
    await page.goto(`${viewer.url}/runs/reverse-text--fake--live/20990101-000000-abcdef`);
    // The half-written third line is not a row yet.
    expect(await page.getByTestId("live").textContent()).toContain("2 of 24 rollouts");
    await writeFile(join(dir, "results.jsonl"), source.rows.slice(0, 12).map(line).join(""));
    await expect.poll(() => page.getByTestId("live").textContent(), { timeout: 10_000 }).toContain("12 of 24 rollouts");
    const bars = () => page.locator("#charts-region canvas").first().evaluate((el) => ((globalThis as any).Chart.getChart(el)?.data.datasets[0].data as number[]).reduce((s, x) => s + x, 0));
    expect(await bars()).toBe(12);
    await appendFile(join(dir, "results.jsonl"), source.rows.slice(12).map(line).join(""));
    await writeFile(join(dir, "metadata.json"), JSON.stringify({ ...source.meta, ...settings }));
    await expect.poll(() => page.locator("#head-region").textContent(), { timeout: 10_000 }).toContain("finished");
    expect(await bars()).toBe(24);
    expect(await page.locator("[data-testid=stat-reward] .v").textContent()).toBe(`${f3(source.meta.avg_reward)} ± ${f3(source.meta.std_reward)}`);
    expect(problems).toEqual([]);
  });

  it("shows new runs in the list as they appear, keeping the runs picked for comparison", async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(viewer.url);
    const before = await page.locator("[data-testid=runs] tbody tr").count();
    await page.locator(`input[value="${id("a")}"]`).check();
    const dir = join(out, "evals", "reverse-text--fake--newcomer", "20990202-000000-123456");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "metadata.json"), JSON.stringify({ env: "reverse-text", model: "fake/newcomer", num_examples: 8, rollouts_per_example: 3, started_at: "2099-02-02T00:00:00.000Z" }));
    await writeFile(join(dir, "results.jsonl"), `${JSON.stringify(saved.a!.rows[0])}\n`);
    await expect.poll(() => page.locator("[data-testid=runs] tbody tr").count(), { timeout: 10_000 }).toBe(before + 1);
    expect(await page.locator('tr[data-run="reverse-text--fake--newcomer/20990202-000000-123456"]').textContent()).toContain("1/24");
    expect(await page.locator(`input[value="${id("a")}"]`).isChecked()).toBe(true);
    expect(problems).toEqual([]);
  });

  it("is a command: `envworker view DIR --port 0` prints the URL of the run it was given", async () => {
    const child = spawn(process.execPath, [resolve("bin/envworker.js"), "view", saved.a!.dir, "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
    try {
      let text = "";
      const url = await new Promise<string>((ok, fail) => {
        child.stdout.on("data", (d) => {
          text += d;
          const m = /^(http:\/\/127\.0\.0\.1:\d+\/runs\/\S+)$/m.exec(text);
          if (m) ok(m[1]!);
        });
        child.on("exit", (code) => fail(new Error(`envworker view exited with ${code}: ${text}`)));
      });
      expect(url.endsWith(`/runs/${id("a")}`)).toBe(true);
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain("fake/model-a");
    } finally {
      child.kill("SIGTERM");
    }
  }, 60_000);

  it("on a loopback address, refuses a Host that is not a loopback name (a DNS-rebound page reading the runs) and pages of other origins", async () => {
    const port = new URL(viewer.url).port;
    const rebound = await rawRequest(viewer.url, { method: "GET", path: "/", headers: { host: `rebind.test:${port}` } });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error.code).toBe("FORBIDDEN");
    expect((await fetch(viewer.url, { headers: { origin: "http://evil.example" } })).status).toBe(403);
    expect((await rawRequest(viewer.url, { method: "GET", path: "/", headers: { host: `localhost:${port}` } })).status).toBe(200);
    expect((await fetch(viewer.url, { headers: { origin: viewer.url } })).status).toBe(200);
  });
});
