/**
 * The playground (/web) in a real browser, on the Node server: play reverse-text to reward 1,
 * call math-tools' calculator through the generated form, environment args from the schema,
 * resume an episode by id, and the token rules (the page's own calls carry the token).
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { launchBrowser, openPage, PHONE, playCalculator, playReverseText, screenshot } from "../helpers/browser.ts";

const TOKEN = "play-s3cret";
let open: RunningServer;
let locked: RunningServer;
let browser: Browser;

beforeAll(async () => {
  open = await startServer(environments, { port: 0 });
  locked = await startServer(environments, { port: 0, token: TOKEN });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await open?.close();
  await locked?.close();
});

describe("playground on Node", () => {
  it("redirects / to /web, which lists every environment with its description", async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${open.url}/`);
    expect(new URL(page.url()).pathname).toBe("/web");
    for (const env of environments) {
      const card = page.locator(`[data-env="${env.name}"]`);
      expect(await card.textContent()).toContain(env.description);
    }
    await page.getByRole("link", { name: "reverse-text" }).first().click();
    await page.waitForURL(/\/web\/reverse-text$/);
    // Without a token configured, a ?token= is ignored, not redirected to routes that do not exist.
    await page.goto(`${open.url}/web?token=whatever`);
    expect(new URL(page.url()).pathname).toBe("/web");
    // Where OpenEnv has a playground, {base}/web, leads to the same page.
    await page.goto(`${open.url}/envs/math-tools/web`);
    expect(new URL(page.url()).pathname).toBe("/web/math-tools");
    // An environment's page says what tools it gives the model, as its card does.
    expect(await page.locator("p.lede .pill.accent").textContent()).toMatch(/^tools: calculator\b/);
    await screenshot(page, "playground-list", false);
    expect(problems).toEqual([]);
  });

  it("plays reverse-text to reward 1 by typing the reversed text", async () => {
    const { page, problems } = await openPage(browser);
    const played = await playReverseText(page, `${open.url}/web/reverse-text`);
    expect(played.reward).toBe("1");
    expect(await page.locator('[data-metric="lcs_reward_func"]').textContent()).toContain("1");
    // The wire panel shows the step exchange, the reward in its response.
    const step = page.getByTestId("exchange").first();
    expect(await step.locator("summary").textContent()).toContain("POST/envs/reverse-text/step200");
    const response = JSON.parse((await step.locator("pre.json").last().textContent()) ?? "{}");
    expect(response).toMatchObject({ reward: 1, done: true, episode_id: played.episodeId });
    // The episode id is in the URL: a reload resumes it (GET B/state).
    expect(new URL(page.url()).searchParams.get("episode_id")).toBe(played.episodeId);
    await page.reload();
    await page.getByTestId("reward").waitFor();
    expect(await page.getByTestId("reward").textContent()).toBe("1");
    expect(await page.locator('.msg[data-role="assistant"] .content').textContent()).toBe(`<reversed_text>${Array.from(played.prompt).reverse().join("")}</reversed_text>`);
    expect(await page.getByTestId("exchange").locator("summary").allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining(`GET/envs/reverse-text/state?episode_id=${played.episodeId}200`)]),
    );
    await screenshot(page, "playground-reverse-text");
    expect(problems).toEqual([]);
  });

  it("plays a math-tools calculator call through the tool form, then answers", async () => {
    const { page, problems } = await openPage(browser);
    const result = await playCalculator(page, `${open.url}/web/math-tools`, "6 * 7");
    expect(result).toBe("42");
    const step = JSON.parse((await page.getByTestId("exchange").first().locator("pre.json").first().textContent()) ?? "{}");
    expect(step.action).toEqual({ content: null, tool_calls: [{ id: "call_1_1", type: "function", function: { name: "calculator", arguments: '{"expression":"6 * 7"}' } }] });
    expect(await page.locator(".toolcall .name").textContent()).toBe("calculator");
    // A second turn without a tool call ends the episode with its metrics.
    await page.getByLabel("Your reply as the assistant").fill("\\boxed{42}");
    await page.getByLabel("Your reply as the assistant").press("Control+Enter");
    await page.getByTestId("reward").waitFor();
    expect(await page.locator('[data-metric="num_tool_calls"] td.num').textContent()).toBe("1");
    await screenshot(page, "playground-math-tools");
    expect(problems).toEqual([]);
  });

  it("fills the args form from B/schema and sends only what changed", async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${open.url}/web/reverse-text`);
    await page.locator("summary", { hasText: "Arguments" }).click();
    const minWords = page.getByLabel("min_words");
    expect(await minWords.inputValue()).toBe("0");
    expect(await page.getByLabel("system_prompt", { exact: true }).inputValue()).toBe("Reverse the text character-by-character. Put your answer in <reversed_text> tags.");
    await page.getByLabel("max_words").fill("6");
    await page.getByRole("button", { name: "Reset" }).click();
    await page.getByLabel("Your reply as the assistant").waitFor();
    // Newest first: the reset, then (args of its own may change the turn limit) its state.
    const resetExchange = page.getByTestId("exchange").filter({ has: page.locator("summary", { hasText: "/reset" }) });
    const reset = JSON.parse((await resetExchange.first().locator("pre.json").first().textContent()) ?? "{}");
    expect(reset).toEqual({ args: { max_words: 6 } });
    expect(await page.locator(".episode-bar .pill").first().textContent()).toBe("turn 0 / 1");
    const prompt = (await page.locator('.msg[data-role="user"] .content').textContent()) ?? "";
    expect(prompt.split(/\s+/).length).toBeLessThanOrEqual(6);
    // The schema's bounds are the inputs' bounds: the browser refuses 0 before sending anything.
    const sent = await page.getByTestId("exchange").count();
    await page.getByLabel("max_words").fill("0");
    await page.getByRole("button", { name: "Reset" }).click();
    expect(await page.getByLabel("max_words").evaluate((el: HTMLInputElement) => el.validity.rangeUnderflow)).toBe(true);
    expect(await page.getByTestId("exchange").count()).toBe(sent);
    expect(problems).toEqual([]);
  });

  it("resumes an episode by id with the resume form", async () => {
    const { page } = await openPage(browser);
    await page.goto(`${open.url}/web/alphabet-sort`);
    await page.getByRole("button", { name: "Reset" }).click();
    const id = (await page.getByTestId("episode-id").textContent())!;
    const prompt = await page.locator('.msg[data-role="user"] .content').first().textContent();
    const other = await openPage(browser);
    await other.page.goto(`${open.url}/web/alphabet-sort`);
    await other.page.getByLabel("Resume episode").fill(id);
    await other.page.getByRole("button", { name: "Resume" }).click();
    await other.page.getByTestId("episode-id").waitFor();
    expect(await other.page.getByTestId("episode-id").textContent()).toBe(id);
    expect(await other.page.locator('.msg[data-role="user"] .content').first().textContent()).toBe(prompt);
    await other.page.getByLabel("Resume episode").fill("no-such-episode");
    await other.page.getByRole("button", { name: "Resume" }).click();
    await expect(other.page.getByRole("alert").textContent()).resolves.toContain("404 UNKNOWN_EPISODE");
  });

  it("is usable from the keyboard alone", async () => {
    const { page } = await openPage(browser);
    await page.goto(`${open.url}/web/reverse-text`);
    await page.getByLabel("seed").waitFor();
    await page.getByLabel("seed").focus();
    await page.keyboard.type("3");
    await page.keyboard.press("Enter"); // submits the reset form
    const reply = page.getByLabel("Your reply as the assistant");
    await reply.waitFor();
    // The reply box has the focus after a reset.
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe("reply");
    await page.keyboard.type("<reversed_text>x</reversed_text>");
    await page.keyboard.press("Tab");
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe("Step");
    // Focus is visible: the outline of :focus-visible is drawn.
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe("solid");
    await page.keyboard.press("Enter");
    await page.getByTestId("reward").waitFor();
    expect(Number(await page.getByTestId("reward").textContent())).toBeLessThan(1);
  });

  it("fits a narrow screen", async () => {
    const { page, problems } = await openPage(browser, PHONE);
    const played = await playReverseText(page, `${open.url}/web/reverse-text`, 11);
    expect(played.reward).toBe("1");
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await screenshot(page, "playground-phone");
    expect(problems).toEqual([]);
  });
});

describe("playground behind ENVWORKER_TOKEN", () => {
  it("refuses the page without the token", async () => {
    for (const path of ["/", "/web", "/web/reverse-text", "/web/assets/playground.js"]) {
      const res = await fetch(`${locked.url}${path}`, { redirect: "manual" });
      expect(res.status, path).toBe(401);
    }
    expect((await fetch(`${locked.url}/t/wrong/web`)).status).toBe(401);
    expect((await fetch(`${locked.url}/web?token=wrong`)).status).toBe(401);
  });

  it("plays under /t/{token}/, every call of the page carrying the token in its path", async () => {
    const { page, problems } = await openPage(browser);
    const requests: string[] = [];
    page.on("request", (r) => requests.push(new URL(r.url()).pathname));
    const played = await playReverseText(page, `${locked.url}/t/${TOKEN}/web/reverse-text`);
    expect(played.reward).toBe("1");
    expect(requests.length).toBeGreaterThan(4);
    for (const p of requests) expect(p.startsWith(`/t/${TOKEN}/`), p).toBe(true);
    // The token is not shown on the page.
    expect(await page.locator("body").textContent()).not.toContain(TOKEN);
    expect(problems).toEqual([]);
  });

  it("moves a ?token= visit to the /t/{token}/ form", async () => {
    const { page } = await openPage(browser);
    await page.goto(`${locked.url}/?token=${TOKEN}`);
    expect(new URL(page.url()).pathname).toBe(`/t/${TOKEN}/web`);
    await page.goto(`${locked.url}/t/${TOKEN}/envs/wordle/web`);
    expect(new URL(page.url()).pathname).toBe(`/t/${TOKEN}/web/wordle`);
    await page.getByRole("link", { name: "math-tools" }).first().click();
    expect(await playCalculator(page, page.url(), "2 ^ 10")).toBe("1024");
  });
});
