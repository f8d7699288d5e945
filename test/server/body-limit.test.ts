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
import { environments } from "../../envs/index.ts";
import { buildNodeApp, startServer, type RunningServer } from "../../src/node/server.ts";
import { createApp } from "../../src/server/app.ts";
import { StoreEpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { inlineEngine } from "../../src/server/engine.ts";
import { FREE_PIECES, readNodeBody } from "../../src/node/node-body.ts";
import { MemoryBudget, SMALL_ARRIVING_BYTES } from "../../src/server/memory.ts";
import { createLogger, logger, setLogger } from "../../src/server/log.ts";

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

const head = (length: number) => `POST /envs/reverse-text/reset HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

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
    const ok = await app.request("/envs/reverse-text/reset", { method: "POST", headers: { "content-type": "application/json" }, body: '{"seed":1}'.padEnd(MAX, " ") });
    expect(ok.status).toBe(200);
    const over = await app.request("/envs/reverse-text/reset", { method: "POST", headers: { "content-type": "application/json" }, body: '{"seed":1}'.padEnd(MAX + 1, " ") });
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
    app.request("/envs/reverse-text/reset", { method: "POST", body, headers: { "content-type": "application/json", ...headers }, ...(body instanceof ReadableStream ? { duplex: "half" } : {}) } as RequestInit);

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
    // The multi-byte characters are cut across pieces; a reset takes them as its episode id.
    const whole = new TextEncoder().encode('{"seed":1,"episode_id":"€ü-x"}');
    const cuts = [0, 25, 26, 28, whole.length]; // inside "€" twice, then inside "ü"
    const r = await send(new ReadableStream({ start: (ctl) => { for (let i = 1; i < cuts.length; i++) ctl.enqueue(whole.slice(cuts[i - 1], cuts[i])); ctl.close(); } }), {});
    expect(r.status).toBe(200);
    expect(((await r.json()) as { episode_id: string }).episode_id).toBe("€ü-x");
    const empty = await send(null);
    expect(empty.status).toBe(200);
    const step = await app.request("/envs/reverse-text/step", { method: "POST", headers: { "content-type": "application/json" }, body: stream([JSON.stringify({ episode_id: "x", action: { content: "é" } })]), duplex: "half" } as RequestInit);
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

describe("readNodeBody with a memory budget", () => {
  // A 400 kB limit: a 100 kB share for bodies arriving at once.
  const LIMIT = 400_000;
  const SHARE = LIMIT / 4;
  const BIG = 100_000; // counted (past 64 KiB) and alone exactly the share
  const request = (headers: Record<string, string> = {}) => {
    const incoming = Object.assign(new PassThrough(), { headers });
    const c = { env: { incoming } } as unknown as Context;
    const listeners = () => ["data", "end", "error"].reduce((n, e) => n + incoming.listenerCount(e), 0);
    /** Write a chunk and wait until the reader has seen it (its listener runs before this one). */
    const arrive = (chunk: Buffer) =>
      new Promise<void>((resolve) => {
        incoming.once("data", () => resolve());
        incoming.write(chunk);
      });
    return { incoming, c, listeners, arrive };
  };
  const bytes = (n: number, fill = "a") => Buffer.alloc(n, fill);

  it("holds a declared length from the start, not chunk by chunk, and gives it back when the body is read", async () => {
    const budget = new MemoryBudget(LIMIT, () => 0);
    const r = request({ "content-length": String(BIG) });
    const text = readNodeBody(r.c, 1_000_000, budget);
    expect(budget.bodyBytes).toBe(BIG);
    await r.arrive(bytes(20_000));
    expect(budget.bodyBytes).toBe(BIG); // still what it declared, not what has arrived
    r.incoming.end(bytes(BIG - 20_000, "b"));
    expect(await text).toBe("a".repeat(20_000) + "b".repeat(BIG - 20_000));
    expect(budget.bodyBytes).toBe(0);
    expect(r.listeners()).toBe(0);
  });

  it("holds a chunked body at the size of the one buffer it is copied into, doubling as it grows, and gives it back when the body is read", async () => {
    const budget = new MemoryBudget(LIMIT, () => 0);
    const r = request();
    const text = readNodeBody(r.c, 1_000_000, budget);
    await r.arrive(bytes(SMALL_ARRIVING_BYTES));
    expect(budget.bodyBytes).toBe(0); // up to 64 KiB is in the small share
    expect(budget.smallBodyBytes).toBe(SMALL_ARRIVING_BYTES);
    await r.arrive(bytes(10_000));
    expect(budget.bodyBytes).toBe(2 * SMALL_ARRIVING_BYTES); // the buffer it now takes
    expect(budget.smallBodyBytes).toBe(0);
    await r.arrive(bytes(10_000));
    expect(budget.bodyBytes).toBe(2 * SMALL_ARRIVING_BYTES); // still fits
    r.incoming.end();
    expect((await text).length).toBe(SMALL_ARRIVING_BYTES + 20_000);
    expect(budget.bodyBytes).toBe(0);
  });

  it("a chunked body in one-byte chunks is counted at its buffer, not per chunk, and read intact", async () => {
    const budget = new MemoryBudget(LIMIT, () => 0);
    const r = request();
    const text = readNodeBody(r.c, 1_000_000, budget);
    for (let i = 0; i < FREE_PIECES; i++) r.incoming.write(Buffer.from(String(i % 10)));
    await new Promise((done) => setImmediate(done));
    expect(budget.smallBodyBytes).toBe(4096); // its buffer, not 1,024 Buffers
    r.incoming.end();
    expect(await text).toBe(Array.from({ length: FREE_PIECES }, (_, i) => String(i % 10)).join(""));
    expect(budget.smallBodyBytes).toBe(0);
  });

  it("refuses a body in more pieces than FREE_PIECES and one per 256 bytes, asking to close the connection; larger pieces pass", async () => {
    const budget = new MemoryBudget(LIMIT, () => 0);
    const headers = new Map<string, string>();
    const r = request();
    (r.c.env as Record<string, unknown>).outgoing = { setHeader: (k: string, v: string) => headers.set(k, v) };
    const text = readNodeBody(r.c, 1_000_000, budget);
    for (let i = 0; i < FREE_PIECES + 10; i++) r.incoming.write(Buffer.from("x"));
    await expect(text).rejects.toMatchObject({ code: "VALIDATION_ERROR", status: 400 });
    expect(headers.get("connection")).toBe("close");
    expect(budget.smallBodyBytes + budget.bodyBytes).toBe(0);
    expect(r.listeners()).toBe(0);
    // 1,500 pieces of 200 bytes: within 1,024 + 300,000 / 256.
    const ok = request();
    const read = readNodeBody(ok.c, 1_000_000, budget);
    for (let i = 0; i < 1500; i++) ok.incoming.write(Buffer.alloc(200, "y"));
    ok.incoming.end();
    expect((await read).length).toBe(300_000);
  });

  it("refuses a declared body past the share OVERLOADED, drains it unread and keeps the other's hold", async () => {
    const budget = new MemoryBudget(LIMIT, () => 0);
    const first = request({ "content-length": String(BIG) });
    const held = readNodeBody(first.c, 1_000_000, budget);
    const second = request({ "content-length": String(SMALL_ARRIVING_BYTES + 1) });
    await expect(readNodeBody(second.c, 1_000_000, budget)).rejects.toMatchObject({
      code: "OVERLOADED",
      status: 503,
      details: { retry_after_s: 5 },
      message: expect.stringContaining("request bodies arriving at once have used up their share"),
    });
    expect(second.listeners()).toBe(0);
    expect(second.incoming.readableFlowing).toBe(true); // drained: what the client sends is thrown away
    expect(budget.bodyBytes).toBe(BIG);
    first.incoming.end(bytes(BIG));
    expect((await held).length).toBe(BIG);
    expect(budget.bodyBytes).toBe(0);
  });

  it("takes a small body while a large one holds more than the share", async () => {
    const budget = new MemoryBudget(LIMIT, () => 0);
    const large = request({ "content-length": String(2 * SHARE) });
    const held = readNodeBody(large.c, 1_000_000, budget);
    expect(budget.bodyBytes).toBe(2 * SHARE); // alone, so taken
    for (const small of [request({ "content-length": "2" }), request()]) {
      const text = readNodeBody(small.c, 1_000_000, budget);
      small.incoming.end("{}");
      expect(await text).toBe("{}");
    }
    large.incoming.end(bytes(2 * SHARE));
    await held;
    expect(budget.bodyBytes).toBe(0);
  });

  it("refuses a chunked body once it grows past the share, stops listening and drains it", async () => {
    const budget = new MemoryBudget(LIMIT, () => 0);
    const first = request({ "content-length": String(BIG) });
    const held = readNodeBody(first.c, 1_000_000, budget);
    const second = request();
    const refused = readNodeBody(second.c, 1_000_000, budget);
    let settled = false;
    void refused.catch(() => undefined).finally(() => (settled = true));
    await second.arrive(bytes(SMALL_ARRIVING_BYTES));
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false); // up to 64 KiB is not counted, so not refused
    second.incoming.write(bytes(1));
    await expect(refused).rejects.toMatchObject({ code: "OVERLOADED", status: 503 });
    expect(second.listeners()).toBe(0);
    expect(second.incoming.readableFlowing).toBe(true);
    expect(budget.bodyBytes).toBe(BIG); // the refused body kept nothing
    first.incoming.end(bytes(BIG));
    await held;
    expect(budget.bodyBytes).toBe(0);
  });

  it("a small declared body is held only once it comes in pieces, never up front or when it comes whole", async () => {
    const budget = new MemoryBudget(LIMIT, () => 0); // small share: 25 kB
    for (const length of [1000, SMALL_ARRIVING_BYTES]) {
      const r = request({ "content-length": String(length) });
      const text = readNodeBody(r.c, 1_000_000, budget);
      expect(budget.smallBodyBytes).toBe(0); // nothing before its bytes come
      await r.arrive(bytes(length / 2));
      expect(budget.smallBodyBytes).toBe(length); // in pieces: its declared length, in the small share
      expect(budget.bodyBytes).toBe(0);
      r.incoming.end(bytes(length / 2));
      expect((await text).length).toBe(length);
      expect(budget.smallBodyBytes).toBe(0);
    }
    // A chunked body is held from its first chunk on.
    const chunked = request();
    const text = readNodeBody(chunked.c, 1_000_000, budget);
    await chunked.arrive(bytes(10_000));
    expect(budget.smallBodyBytes).toBe(10_000);
    chunked.incoming.end();
    await text;
    expect(budget.smallBodyBytes).toBe(0);
  });

  it("a small body that comes whole is read while slow small bodies fill their share", async () => {
    const budget = new MemoryBudget(LIMIT, () => 0); // small share: 25 kB
    const slow = request({ "content-length": "40000" });
    const held = readNodeBody(slow.c, 1_000_000, budget);
    await slow.arrive(bytes(1000)); // in pieces: holds 40 kB, over the share alone
    expect(budget.smallBodyBytes).toBe(40_000);
    const another = request({ "content-length": "2000" });
    const refused = readNodeBody(another.c, 1_000_000, budget);
    another.incoming.write(bytes(1000)); // in pieces too: does not fit
    await expect(refused).rejects.toMatchObject({ code: "OVERLOADED", message: expect.stringContaining("small request bodies") });
    const whole = request({ "content-length": "2" });
    const text = readNodeBody(whole.c, 1_000_000, budget);
    whole.incoming.end("{}");
    expect(await text).toBe("{}");
    slow.incoming.end(bytes(39_000));
    await held;
    expect(budget.smallBodyBytes).toBe(0);
  });

  it("gives back what a body held when it is refused as too large or broken off", async () => {
    const budget = new MemoryBudget(LIMIT, () => 0);
    const tooLarge = request();
    const refused = readNodeBody(tooLarge.c, SMALL_ARRIVING_BYTES + 10, budget);
    await tooLarge.arrive(bytes(SMALL_ARRIVING_BYTES + 5));
    expect(budget.bodyBytes).toBe(SMALL_ARRIVING_BYTES + 5);
    tooLarge.incoming.write(bytes(10));
    await expect(refused).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(budget.bodyBytes).toBe(0);
    const broken = request({ "content-length": String(BIG) });
    const read = readNodeBody(broken.c, 1_000_000, budget);
    expect(budget.bodyBytes).toBe(BIG);
    broken.incoming.destroy(new Error("aborted"));
    await expect(read).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    expect(budget.bodyBytes).toBe(0);
  });
});
