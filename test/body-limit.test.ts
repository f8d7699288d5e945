/**
 * Request bodies at the limit on both readers (found by mutation testing: `npm run mutate`): the
 * Node reader (src/node/node-body.ts) answers a declared Content-Length over the limit before any
 * body arrives and survives a client that goes away mid-body; the web-streams reader
 * (src/server/body.ts, what Workers and app.request use) holds the same limits.
 */
import { connect } from "node:net";
import { PassThrough } from "node:stream";
import type { Context } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../envs/index.ts";
import { buildNodeApp, startServer, type RunningServer } from "../src/node.ts";
import { createApp } from "../src/server/app.ts";
import { StoreEpisodeHost } from "../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../src/server/episode-store.ts";
import { inlineEngine } from "../src/server/engine.ts";
import { readNodeBody } from "../src/node/node-body.ts";
import { createLogger, logger, setLogger } from "../src/server/log.ts";

const MAX = 1000;
const reverseText = environments.find((e) => e.name === "reverse-text")!;
let server: RunningServer;

beforeAll(async () => {
  server = await startServer([reverseText], { port: 0, maxBodyBytes: MAX });
});
afterAll(async () => {
  await server?.close();
});

/** Send raw bytes; resolve with what came back once the server answers or closes. */
function raw(text: string, opts: { destroyAfterMs?: number } = {}): Promise<string> {
  const { port } = new URL(server.url);
  return new Promise((resolve) => {
    const sock = connect(Number(port), "127.0.0.1");
    let got = "";
    sock.on("data", (d) => {
      got += d.toString();
      if (/\r\n\r\n/.test(got)) sock.destroy();
    });
    sock.on("close", () => resolve(got));
    sock.on("error", () => undefined);
    sock.write(text);
    if (opts.destroyAfterMs !== undefined) setTimeout(() => sock.destroy(), opts.destroyAfterMs);
  });
}

const head = (length: number) => `POST /envs/reverse-text/reset HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

describe("Node body reader", () => {
  it("refuses a declared length over the limit at once, before any body is sent", async () => {
    expect(await raw(head(MAX + 1))).toMatch(/^HTTP\/1\.1 413 /);
  });

  it("keeps serving after a client goes away mid-body, and does not log it as a server error", async () => {
    const lines: string[] = [];
    const previous = logger();
    setLogger(createLogger("warn", (line) => lines.push(line)));
    try {
      for (let i = 0; i < 3; i++) expect(await raw(head(500) + '{"seed"', { destroyAfterMs: 50 })).toBe("");
      await new Promise((r) => setTimeout(r, 100));
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
    } finally {
      setLogger(previous);
    }
    // A client's disconnect is no error of the server's: a hostile client could fill the log with them.
    expect(lines).toEqual([]);
  });

  it("reads the body through app.request too (no Node request behind it)", async () => {
    const { app } = buildNodeApp([reverseText], { maxBodyBytes: MAX });
    const ok = await app.request("/envs/reverse-text/reset", { method: "POST", body: '{"seed":1}'.padEnd(MAX, " ") });
    expect(ok.status).toBe(200);
    const over = await app.request("/envs/reverse-text/reset", { method: "POST", body: '{"seed":1}'.padEnd(MAX + 1, " ") });
    expect(over.status).toBe(413);
  });
});

describe("web-streams body reader (Workers)", () => {
  const app = createApp({ envs: [reverseText], host: new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({})), maxBodyBytes: MAX });
  const stream = (parts: string[]) =>
    new ReadableStream<Uint8Array>({
      start(ctl) {
        for (const p of parts) ctl.enqueue(new TextEncoder().encode(p));
        ctl.close();
      },
    });
  const send = (body: BodyInit | null, headers: Record<string, string> = {}) =>
    app.request("/envs/reverse-text/reset", { method: "POST", body, headers, ...(body instanceof ReadableStream ? { duplex: "half" } : {}) } as RequestInit);

  it("takes exactly the limit and refuses one byte more, streamed in pieces", async () => {
    const text = (n: number) => '{"seed":1}'.padEnd(n, " ");
    expect((await send(stream([text(MAX).slice(0, 400), text(MAX).slice(400)]))).status).toBe(200);
    const over = await send(stream([text(MAX + 1).slice(0, 400), text(MAX + 1).slice(400)]));
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: { message: string } }).error.message).toBe(`request body exceeds ${MAX} bytes`);
  });

  it("checks a declared Content-Length before reading", async () => {
    const text = '{"seed":1}'.padEnd(MAX, " ");
    expect((await send(text, { "content-length": String(MAX) })).status).toBe(200);
    expect((await send(text, { "content-length": String(MAX + 1) })).status).toBe(413);
  });

  it("reads multi-byte text whole and an absent body as empty", async () => {
    const r = await send(stream(['{"seed":1,', '"x":"', "€", "ü", '"}']));
    expect(r.status).toBe(200);
    const empty = await send(null);
    expect(empty.status).toBe(200);
    const step = await app.request("/envs/reverse-text/step", { method: "POST", body: stream([JSON.stringify({ episode_id: "x", action: { content: "é" } })]), duplex: "half" } as RequestInit);
    expect(step.status).toBe(404); // parsed whole: the id is unknown, not the JSON invalid
  });
});

describe("readNodeBody on a request stream", () => {
  /** A request stream as @hono/node-server hands it over, behind a minimal context. */
  const request = (headers: Record<string, string> = {}) => {
    const incoming = Object.assign(new PassThrough(), { headers });
    const c = { env: { incoming } } as unknown as Context;
    const listeners = () => ["data", "end", "error"].reduce((n, e) => n + incoming.listenerCount(e), 0);
    return { incoming, c, listeners };
  };

  it("reads multi-byte text split across chunks whole, and stops listening once done", async () => {
    const { incoming, c, listeners } = request();
    const text = readNodeBody(c, 10);
    const euro = Buffer.from("€x");
    incoming.write(euro.subarray(0, 1));
    incoming.write(euro.subarray(1));
    incoming.end();
    expect(await text).toBe("€x");
    expect(listeners()).toBe(0);
  });

  it("refuses a declared length over the limit without reading, and exactly the limit once read", async () => {
    const over = request({ "content-length": "11" });
    await expect(readNodeBody(over.c, 10)).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE", message: "request body exceeds 10 bytes" });
    expect(over.listeners()).toBe(0);
    const exact = request({ "content-length": "10" });
    const text = readNodeBody(exact.c, 10);
    exact.incoming.end("0123456789");
    expect(await text).toBe("0123456789");
  });

  it("refuses a streamed body one byte over the limit and stops listening", async () => {
    const { incoming, c, listeners } = request();
    const text = readNodeBody(c, 10);
    incoming.write("01234");
    incoming.write("567890");
    await expect(text).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(listeners()).toBe(0);
    incoming.end("more");
  });

  it("refuses a body the client broke off as the client's doing, and stops listening", async () => {
    const { incoming, c, listeners } = request();
    const text = readNodeBody(c, 10);
    incoming.write("01");
    incoming.destroy(new Error("aborted"));
    await expect(text).rejects.toMatchObject({ code: "VALIDATION_ERROR", status: 400, message: "request body could not be read: aborted" });
    expect(listeners()).toBe(0);
  });
});
