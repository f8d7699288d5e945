/**
 * The playground from the deployable Worker bundle (`wrangler deploy --dry-run`, run in workerd
 * through Miniflare), in a real browser: its pages and script are in the bundle, and its calls
 * reach the Durable Object episodes.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorkerBundle, startWorkerd, type WorkerdServer } from "../../helpers/workerd.ts";
import { launchBrowser, openPage, playCalculator, playReverseText, screenshot } from "../../helpers/browser.ts";

const TOKEN = "workerd-s3cret";
let tmp: string;
let server: WorkerdServer;
let browser: Browser;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "envworker-web-workerd-"));
  const bundle = await buildWorkerBundle(join(tmp, "dist"));
  server = await startWorkerd(bundle, join(tmp, "do"), { ENVWORKER_TOKEN: TOKEN });
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe("playground on workerd", () => {
  it("keeps the token rule: no page without it", async () => {
    expect((await fetch(`${server.url}/web`)).status).toBe(401);
  });

  it("plays reverse-text to reward 1, and resumes the episode from its Durable Object", async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${server.url}/?token=${TOKEN}`);
    expect(new URL(page.url()).pathname).toBe(`/t/${TOKEN}/web`);
    const played = await playReverseText(page, `${server.url}/t/${TOKEN}/web/reverse-text`, 5);
    expect(played.reward).toBe("1");
    await page.reload();
    await page.getByTestId("reward").waitFor();
    expect(await page.getByTestId("episode-id").textContent()).toBe(played.episodeId);
    expect(await page.getByTestId("reward").textContent()).toBe("1");
    await screenshot(page, "playground-workerd");
    expect(problems).toEqual([]);
  });

  it("calls math-tools' calculator through the tool form", async () => {
    const { page, problems } = await openPage(browser);
    expect(await playCalculator(page, `${server.url}/t/${TOKEN}/web/math-tools`, "(3.5 + 2) * 4")).toBe("22");
    expect(problems).toEqual([]);
  });
});
