/**
 * The playground and the results viewer of a package made by `envworker init` (and the playground
 * of one made by `envworker init --python`) outside the checkout, each started from the package's own directory as its user starts them
 * (`npx envworker serve`, `npx envworker eval -s`, `npx envworker view`), in a real browser.
 * Both answered 500 there ("React is not defined"): the JSX settings came from the tsconfig of
 * the directory the command ran in.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { launchBrowser, openPage, screenshot } from "../helpers/browser.ts";
import { makeOwnPackage, type LiveCommand, type OwnPackage } from "../helpers/own-package.ts";
import { WORKER_PYTHON } from "../helpers/python-workers.ts";

let pkg: OwnPackage;
let pythonPkg: OwnPackage;
let browser: Browser;
let fake: FakeOpenAI;
const running: LiveCommand[] = [];

beforeAll(async () => {
  pkg = await makeOwnPackage("my-env");
  pythonPkg = await makeOwnPackage("my-py", { python: true });
  browser = await launchBrowser();
  fake = await startFakeOpenAI(() => ({ message: { content: "<guess>50</guess>" } }));
}, 120_000);

afterAll(async () => {
  await Promise.all(running.map((c) => c.stop()));
  await browser?.close();
  await fake?.close();
  pkg?.remove();
  pythonPkg?.remove();
});

// Generous: at load ~15 (two copies of the suite at once) the Python package's first reset, which
// starts its environment threads' Python workers, took more than 30 s in both copies.
/**
 * `serve` in a package (both templates are the number game): the playground lists environment
 * `name`, and seed 7's secret, 42, wins in one guess: solved 1 + efficiency 0.5. Returns the page.
 */
async function playGuessGame(serve: LiveCommand, name: string, shot: string) {
  running.push(serve);
  const url = (await serve.waitFor(/serving \d+ environment\(s\) on (http:\/\/\S+)/))[1]!;
  const { page, problems } = await openPage(browser);
  const list = await page.goto(`${url}/web`);
  expect(list?.status()).toBe(200);
  await page.getByRole("link", { name }).click();
  await page.waitForURL(new RegExp(`/web/${name}$`));
  await page.getByLabel("seed").fill("7");
  await page.getByRole("button", { name: "Reset" }).click();
  const reply = page.getByLabel("Your reply as the assistant");
  // The reply box, or the page's alert saying why the reset failed (then its text is the failure).
  await reply
    .or(page.getByRole("alert"))
    .first()
    .waitFor({ timeout: 120_000 })
    .catch((err: Error) => expect.fail(`${err.message.split("\n")[0]}; server: ${serve.stderr().slice(-2000)}`));
  if (await page.getByRole("alert").isVisible()) expect.fail(`the reset failed: ${await page.getByRole("alert").textContent()}; server: ${serve.stderr().slice(-2000)}`);
  await reply.fill("<guess>42</guess>");
  await page.getByRole("button", { name: "Step" }).click();
  await expect.poll(() => page.getByTestId("reward").textContent()).toMatch(/^1\.5/);
  await screenshot(page, shot);
  expect(problems).toEqual([]);
  expect(serve.stderr()).not.toMatch(/error/i);
  return page;
}

/**
 * Asks bin/envworker.js for the sources (src/ through tsx), which it runs when the checkout's dist/
 * is older than them: where the JSX settings went wrong. Otherwise it runs dist/, compiled by tsc.
 */
const FROM_SOURCES = { NODE_OPTIONS: "--conditions=envworker-source" };

describe("a package made by envworker init, commands run from its directory", { timeout: 300_000 }, () => {
  it("serve (from the sources): the playground lists the package's environment and plays an episode", async () => {
    const page = await playGuessGame(pkg.spawn(["serve", "--port", "0"], FROM_SOURCES), "my-env", "own-package-playground");
    expect(await page.locator('.msg[data-role="user"] .content').last().textContent()).toBe("Correct!");
  });

  it("serve in a package made by init --python: the playground lists its Python environment and plays an episode", async () => {
    // No argument: the package.json init wrote names the package ("environments": ["."]).
    // Python's random.Random(7).randint(1, 100) is 42, as the TypeScript game's.
    await playGuessGame(pythonPkg.spawn(["serve", "--port", "0"], WORKER_PYTHON), "my-py", "own-package-python-playground");
  });

  it("eval -s then view (from the sources): the viewer shows the saved run", async () => {
    const evaluated = await pkg.run(["eval", "-m", "fake/model", "-b", fake.baseURL, "-n", "2", "-r", "1", "-s"]);
    expect(evaluated.code, evaluated.stderr).toBe(0);
    const runDir = /^Saved results to (.+)$/m.exec(evaluated.stdout)![1]!;
    expect(existsSync(join(resolve(pkg.dir, runDir), "metadata.json"))).toBe(true);

    const view = pkg.spawn(["view", "--port", "0"], FROM_SOURCES);
    running.push(view);
    const url = (await view.waitFor(/^(http:\/\/\S+)\/$/m))[1]!;
    const { page, problems } = await openPage(browser);
    const runs = await page.goto(url);
    expect(runs?.status()).toBe(200);
    const row = page.locator("[data-testid=runs] tbody tr");
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.textContent()).toContain("fake/model");
    await row.getByRole("link").first().click();
    await page.waitForURL(/\/runs\//);
    await page.locator("#charts-region canvas").first().waitFor();
    expect(await page.locator("[data-testid=examples] .chip").count()).toBe(2);
    await screenshot(page, "own-package-viewer");
    expect(problems).toEqual([]);
    expect(view.stderr()).toBe("");
  });
});
