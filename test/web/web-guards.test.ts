/**
 * Web pages in a real browser (Chromium) against a token-less Node server on 127.0.0.1, as a
 * visitor's browser would carry them out (src/server/browser-guards.ts):
 *
 * - a page of another origin posts to the server the ways a page can without asking first (a
 *   text/plain or Blob fetch in no-cors mode, a text/plain form that spells JSON) and opens a
 *   WebSocket: no episode is made, the socket does not open;
 * - a page whose own name resolves to 127.0.0.1 (DNS rebinding, here by Chromium's host resolver
 *   rules) is same-origin with the server as far as the browser knows: the server refuses its Host.
 *
 * The playground (the server's own origin) keeps working: test/web/web-playground.test.ts.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { CHROMIUM } from "../helpers/browser.ts";

let server: RunningServer;
let attacker: Server;
let attackerUrl: string;
let browser: Browser;

/** The attacker's page: every way it has to make the server reset an episode, results in window.done. */
const attackPage = (target: string) => `<!doctype html><meta charset="utf-8"><title>a page elsewhere</title>
<iframe name="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="${target}/envs/reverse-text/reset"><input name='{"seed": 1, "x": "' value='"}'></form>
<script>
window.done = (async () => {
  const out = {};
  const reset = "${target}/envs/reverse-text/reset";
  out.textPlain = await fetch(reset, { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body: "{}" }).then(() => "sent", (e) => String(e));
  out.blob = await fetch(reset, { method: "POST", mode: "no-cors", body: new Blob(["{}"]) }).then(() => "sent", (e) => String(e));
  out.json = await fetch(reset, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).then((r) => r.status, (e) => "refused by the browser");
  document.getElementById("f").submit();
  await new Promise((r) => setTimeout(r, 500));
  out.ws = await new Promise((resolve) => {
    const ws = new WebSocket("${target.replace("http", "ws")}/envs/reverse-text/ws");
    ws.onopen = () => { ws.send(JSON.stringify({ type: "reset", data: {} })); ws.onmessage = (m) => resolve("open: " + String(m.data).slice(0, 40)); };
    ws.onerror = () => resolve("error");
  });
  return out;
})();
</script>`;

beforeAll(async () => {
  server = await startServer(environments.filter((e) => e.name === "reverse-text"), { port: 0 });
  attacker = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(attackPage(server.url));
  });
  await new Promise<void>((r) => attacker.listen(0, "127.0.0.1", r));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // rebind.test resolves to 127.0.0.1 in this browser: a DNS-rebinding attacker's name, after the rebind.
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--host-resolver-rules=MAP rebind.test 127.0.0.1"],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => attacker?.close(r));
  await server?.close();
});

describe("a web page in a real browser", () => {
  it("of another origin makes no episode by fetch, form or WebSocket", async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(attackerUrl);
    const results = await page.evaluate(() => (window as unknown as { done: Promise<Record<string, unknown>> }).done);
    // The browser sent the no-cors requests (it cannot tell the page what came back).
    expect(results).toMatchObject({ textPlain: "sent", blob: "sent", ws: "error" });
    // A JSON fetch asks first (a preflight): refused, 403, so the browser never sends it.
    expect(results.json).toBe("refused by the browser");
    expect(server.store.size).toBe(0);
    // The server's own page, in the same browser, plays.
    const own = await (await browser.newContext()).newPage();
    await own.goto(`${server.url}/web/reverse-text`);
    await own.getByRole("button", { name: "Reset" }).click();
    await own.getByLabel("Your reply as the assistant").waitFor();
    expect(server.store.size).toBe(1);
  });

  it("whose name was made to resolve to 127.0.0.1 (DNS rebinding) is refused: its pages, its fetches, its WebSocket", async () => {
    const before = server.store.size;
    const page = await (await browser.newContext()).newPage();
    const port = new URL(server.url).port;
    const loaded = await page.goto(`http://rebind.test:${port}/web/reverse-text`);
    expect(loaded?.status()).toBe(403);
    const tried = await page.evaluate(async () => {
      const reset = await fetch("/envs/reverse-text/reset", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      const ws = await new Promise((resolve) => {
        const s = new WebSocket(`ws://${location.host}/envs/reverse-text/ws`);
        s.onopen = () => resolve("open");
        s.onerror = () => resolve("error");
      });
      return { reset: reset.status, body: await reset.json(), ws };
    });
    expect(tried).toMatchObject({ reset: 403, body: { error: { code: "FORBIDDEN" } }, ws: "error" });
    expect(server.store.size).toBe(before);
  });
});
