/**
 * A real browser for the web tests: playwright-core driving Debian's Chromium (/usr/bin/chromium;
 * .ci/run installs it). Screenshots go to outputs/screenshots/ (gitignored) as test artifacts.
 */
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { reverseTextGold } from "./oracles.ts";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const SCREENSHOTS = resolve(import.meta.dirname, "../../outputs/screenshots");

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
}

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/**
 * A page that fails the test on a console error or an uncaught exception (a broken script must
 * not pass unnoticed); `problems` collects them.
 */
export async function openPage(browser: Browser, viewport = DESKTOP): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`pageerror: ${err.message}`));
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console: ${msg.text()}`);
  });
  return { page, problems };
}

export async function screenshot(page: Page, name: string, fullPage = true): Promise<string> {
  await mkdir(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage });
  return path;
}

/**
 * Plays reverse-text in the playground at `origin` (which may carry a /t/{token} prefix): Reset,
 * type the exact reversal of the prompt, Step. Returns the reward shown and the episode id.
 */
export async function playReverseText(page: Page, url: string, seed = 7): Promise<{ reward: string; episodeId: string; prompt: string }> {
  await page.goto(url);
  await page.getByLabel("seed").fill(String(seed));
  await page.getByRole("button", { name: "Reset" }).click();
  const reply = page.getByLabel("Your reply as the assistant");
  await reply.waitFor();
  const prompt = (await page.locator('.msg[data-role="user"] .content').textContent()) ?? "";
  await reply.fill(reverseTextGold([{ role: "user", content: prompt }]));
  await page.getByRole("button", { name: "Step" }).click();
  const reward = (await page.getByTestId("reward").textContent()) ?? "";
  return { reward, episodeId: (await page.getByTestId("episode-id").textContent()) ?? "", prompt };
}

/** Calls math-tools' calculator through the tool-call form; returns the tool message shown. */
export async function playCalculator(page: Page, url: string, expression: string): Promise<string> {
  await page.goto(url);
  await page.getByLabel("seed").fill("1");
  await page.getByRole("button", { name: "Reset" }).click();
  await page.getByRole("button", { name: "Add tool call" }).click();
  const call = page.getByTestId("tool-call");
  await call.getByLabel("tool").selectOption("calculator");
  await call.getByLabel("expression").fill(expression);
  await page.getByRole("button", { name: "Step" }).click();
  return (await page.locator('.msg[data-role="tool"] .content').textContent()) ?? "";
}
