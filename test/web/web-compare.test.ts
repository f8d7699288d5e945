/**
 * The viewer's comparison for any reward range, in Chromium (issue 40): wordle's rewards go to 3.2,
 * a user's game to 1.5, others below 0; the scatter's axes and the histogram's bins come from the
 * data, and a difference that is float noise (1.3500000000000003 against 1.35) is no difference.
 * And a rollout scored while a sandbox failed is shown as an error, with the reason.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startViewer } from "../../src/cli/view.ts";
import { atShownPrecision, compareRuns, histogram, rewardAxis, runStats } from "../../src/web/viewer/stats.ts";
import { launchBrowser, openPage, screenshot } from "../helpers/browser.ts";

let root: string;
let browser: Browser;
let viewer: Awaited<ReturnType<typeof startViewer>>;

/** A saved run as `envworker eval -s` writes it: one rollout per example, with these rewards. */
async function writeRun(env: string, model: string, startedAt: string, rewards: number[], envInfo: (i: number) => Record<string, unknown> = () => ({})): Promise<string> {
  const name = `${startedAt.replace(/\D/g, "").slice(0, 14)}-abcdef`;
  const dir = join(root, `${env}--${model}`, name);
  await mkdir(dir, { recursive: true });
  const rows = rewards.map((reward, i) => ({
    example_id: i,
    rollout: 0,
    prompt: [{ role: "user", content: `example ${i}` }],
    completion: [{ role: "assistant", content: "guess" }],
    answer: "crane",
    info: {},
    env_info: { split: "train", ...envInfo(i) },
    reward,
    metrics: { score: reward },
    done: true,
    truncated: false,
    turns: 1,
    error: null,
    retries: 0,
    timing: { total_ms: 1 },
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  }));
  await writeFile(join(dir, "results.jsonl"), rows.map((r) => `${JSON.stringify(r)}\n`).join(""));
  await writeFile(join(dir, "metadata.json"), JSON.stringify({ env, model, started_at: startedAt, num_examples: rewards.length, rollouts_per_example: 1, errors: 0 }));
  return `${env}--${model}/${name}`;
}

// wordle-like: rewards from 0 to 3.2. game: 0 to 1.5, with float noise on example 0 (the same score
// computed in another order) and examples that did not change.
const WORDLE_A = [0, 1.2, 3.2, 2, 0.5, 2.6];
const WORDLE_B = [1.4, 3.2, 2.8, 0, 0.5, 3.2];
const GAME_A = [1.35, 0.5, 1.5, 0, 1.2, 0.75];
const GAME_B = [1.3500000000000003, 1.5, 1.5, 0.25, 0.9, 0.75];
const ids: Record<string, string> = {};

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "envworker-compare-"));
  ids.wordleA = await writeRun("wordle", "model-a", "2026-01-01T10:00:00.000Z", WORDLE_A);
  ids.wordleB = await writeRun("wordle", "model-b", "2026-01-02T10:00:00.000Z", WORDLE_B);
  ids.gameA = await writeRun("my-game", "model-a", "2026-01-01T10:00:00.000Z", GAME_A);
  ids.gameB = await writeRun("my-game", "model-b", "2026-01-02T10:00:00.000Z", GAME_B);
  // py-code in process with a Python sandbox that could not start: scored 0, and an error.
  ids.broken = await writeRun("py-code", "model-a", "2026-01-03T10:00:00.000Z", [0, 1], (i) => (i === 0 ? { service_errors: ["python sandbox: could not start a Python grading process"] } : {}));
  viewer = await startViewer(root, { port: 0 });
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await viewer?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** What Chart.js drew on the page's first canvas (the scatter): each point's pixel, the plot area, the axes. */
async function scatterDrawn(page: Page) {
  const canvas = page.locator("canvas").first();
  await canvas.waitFor();
  return canvas.evaluate((el) => {
    const chart = (globalThis as any).Chart.getChart(el);
    const area = chart.chartArea;
    return {
      data: chart.data.datasets[0].data as { x: number; y: number }[],
      pixels: chart.getDatasetMeta(0).data.map((p: { x: number; y: number }) => ({ x: p.x, y: p.y })) as { x: number; y: number }[],
      area: { left: area.left, right: area.right, top: area.top, bottom: area.bottom },
      x: [chart.scales.x.min, chart.scales.x.max],
      y: [chart.scales.y.min, chart.scales.y.max],
    };
  });
}

async function histogramDrawn(page: Page) {
  return page.locator("canvas").nth(1).evaluate((el) => {
    const chart = (globalThis as any).Chart.getChart(el);
    return { labels: chart.data.labels as string[], counts: chart.data.datasets[0].data as number[] };
  });
}

const stat = async (page: Page, k: string) => Number(await page.locator(".stat", { has: page.locator(".k", { hasText: new RegExp(`^${k}$`) }) }).locator(".v").textContent());

async function compare(page: Page, a: string, b: string) {
  await page.goto(`${viewer.url}/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
}

describe("the compare page for rewards outside [0, 1]", () => {
  it("draws every point of a wordle-like run (rewards to 3.2) inside the plot", async () => {
    const { page, problems } = await openPage(browser);
    await compare(page, ids.wordleA!, ids.wordleB!);
    const drawn = await scatterDrawn(page);
    expect(drawn.data).toEqual(WORDLE_A.map((x, i) => ({ x, y: WORDLE_B[i] })));
    expect(drawn.x[0]).toBeLessThanOrEqual(0);
    expect(drawn.x[1]).toBeGreaterThanOrEqual(3.2);
    expect(drawn.y).toEqual(drawn.x);
    for (const p of drawn.pixels) {
      expect(p.x).toBeGreaterThanOrEqual(drawn.area.left - 0.5);
      expect(p.x).toBeLessThanOrEqual(drawn.area.right + 0.5);
      expect(p.y).toBeGreaterThanOrEqual(drawn.area.top - 0.5);
      expect(p.y).toBeLessThanOrEqual(drawn.area.bottom + 0.5);
    }
    // Differences up to ±2.6: every one in a bin, the bins symmetric around 0.
    const h = await histogramDrawn(page);
    expect(h.counts.reduce((s, c) => s + c, 0)).toBe(6);
    expect(h.labels[0]).toBe(`\u2212${h.labels.at(-1)!.split(" – ")[1]} – ${h.labels[0]!.split(" – ")[1]}`);
    await screenshot(page, "viewer-compare-wordle");
    expect(problems).toEqual([]);
  });

  it("a 0–1.5 run: points drawn, float noise is 'same', in the table, the counts and the bins", async () => {
    const { page, problems } = await openPage(browser);
    await compare(page, ids.gameA!, ids.gameB!);
    const drawn = await scatterDrawn(page);
    expect(drawn.x).toEqual([0, 1.5]);
    for (const p of drawn.pixels) {
      expect(p.x).toBeGreaterThanOrEqual(drawn.area.left - 0.5);
      expect(p.x).toBeLessThanOrEqual(drawn.area.right + 0.5);
      expect(p.y).toBeGreaterThanOrEqual(drawn.area.top - 0.5);
      expect(p.y).toBeLessThanOrEqual(drawn.area.bottom + 0.5);
    }
    const cells = await page.locator("[data-testid=compare] [data-testid=diff]").allTextContents();
    expect(cells.map((c) => c.trim())).not.toContain("-0.000");
    expect(await page.locator('[data-testid=compare] tr[data-example="0"] [data-testid=diff]').textContent()).toBe("0.000");
    // Examples 0, 2 and 5 did not change; 1 and 3 got better, 4 worse.
    expect([await stat(page, "B better"), await stat(page, "B worse"), await stat(page, "same")]).toEqual([2, 1, 3]);
    const h = await histogramDrawn(page);
    const zeroBin = h.labels.findIndex((l) => l.startsWith("0 – "));
    expect(h.counts[zeroBin]).toBe(3); // the three unchanged, float noise included (it was in −0.2 – 0)
    await screenshot(page, "viewer-compare-1.5");
    expect(problems).toEqual([]);
  });
});

describe("axes and bins from the data", () => {
  it("rewardAxis: [0, 1] for rewards in it, else widened to a step that reads well", () => {
    expect(rewardAxis([0, 0.4, 1])).toEqual([0, 1]);
    expect(rewardAxis([0, 1.5])).toEqual([0, 1.5]);
    expect(rewardAxis([3.2, 0])).toEqual([0, 4]);
    expect(rewardAxis([-0.3, 0.8])).toEqual([-0.5, 1]);
    expect(rewardAxis([2, 2, 2])).toEqual([0, 2]);
    expect(rewardAxis([])).toEqual([0, 1]);
  });

  it("histogram: bins of a width that reads well, widened to rewards above 1 and below 0", () => {
    const wordle = histogram([0, 3.2]);
    expect(wordle.edges.at(-1)).toEqual([3, 3.5]);
    expect(wordle.counts).toEqual([1, 0, 0, 0, 0, 0, 1]);
    const negative = histogram([-0.5, 0.2]);
    expect(negative.edges[0]).toEqual([-0.6, -0.4]);
    expect(negative.counts.reduce((s, c) => s + c, 0)).toBe(2);
    const same = histogram([1.2, 1.2, 1.2]);
    expect(same.counts.reduce((s, c) => s + c, 0)).toBe(3);
  });

  it("differences at the precision shown: float noise is 0, never −0", () => {
    expect(atShownPrecision(1.3500000000000003 - 1.35)).toBe(0);
    expect(Object.is(atShownPrecision(1.35 - 1.3500000000000003), 0)).toBe(true);
    expect(atShownPrecision(0.3333333)).toBe(0.333);
    const row = (reward: number) => ({ example_id: 0, rollout: 0, reward, metrics: null, error: null, rewardErrors: null, serviceErrors: null, turns: 1, done: true, truncated: false, total_ms: null, tokens: 0, prompt: "p", offset: 0, length: 0 });
    const run = (reward: number) => ({ rows: [row(reward)], meta: { rollouts_per_example: 1, num_examples: 1 } }) as unknown as Parameters<typeof runStats>[0];
    expect(compareRuns(runStats(run(1.35)), runStats(run(1.3500000000000003)))[0]!.diff).toBe(0);
  });
});

describe("a rollout scored while a sandbox failed", () => {
  it("is an error on the run page and says why on the rollout's page", async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${viewer.url}/runs/${ids.broken}`);
    expect(await stat(page, "errors")).toBe(1);
    const chip = page.locator('a.chip[href$="/0/0"]');
    expect(await chip.getAttribute("class")).toContain("err");
    expect(await chip.textContent()).toBe("0.00 !");
    await page.goto(`${viewer.url}/runs/${ids.broken}/0/0`);
    expect(await page.getByTestId("service-errors").textContent()).toBe("scored while python sandbox: could not start a Python grading process");
    await page.goto(`${viewer.url}/runs/${ids.broken}/1/0`);
    expect(await page.getByTestId("service-errors").count()).toBe(0);
    expect(problems).toEqual([]);
  });
});
