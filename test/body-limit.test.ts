/**
 * Request bodies at the limit on both readers (found by mutation testing: `npm run mutate`): the
 * Node reader (src/node/node-body.ts) answers a declared Content-Length over the limit before any
 * body arrives and survives a client that goes away mid-body; the web-streams reader
 * (src/server/body.ts, what Workers and app.request use) holds the same limits.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../envs/index.ts";
import { buildNodeApp, startServer, type RunningServer } from "../src/node.ts";
import { createApp } from "../src/server/app.ts";
import { StoreEpisodeHost } from "../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../src/server/episode-store.ts";
import { inlineEngine } from "../src/server/engine.ts";
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

  it("keeps serving after a client goes away mid-body, and does not log the client's leaving as its own failure", async () => {
    const lines: string[] = [];
    const previous = logger();
    setLogger(createLogger("warn", (l) => lines.push(l)));
    try {
      expect(await raw(head(500) + '{"seed"', { destroyAfterMs: 50 })).toBe("");
      await new Promise((r) => setTimeout(r, 50));
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
      expect(lines).toEqual([]);
    } finally {
      setLogger(previous);
    }
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
