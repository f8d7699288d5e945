/**
 * WebSocket frames on their way in, held against the memory budget's share for arriving bytes
 * (src/node/ws-arriving.ts), in process so mutation testing (`npm run mutate`) sees it: a real `ws`
 * server on port 0 and raw TCP clients writing masked frames by hand, so a test decides exactly
 * which bytes have arrived (a frame cut short, a message finished by its last byte, a ping). Every
 * step waits until the server's socket has seen the bytes written, never for a time.
 */
import { once } from "node:events";
import { connect, type AddressInfo, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { FRAGMENT_OVERHEAD, holdArrivingFrames, MAX_WS_FRAGMENTS, READ_BUFFER_OVERHEAD, receiverOf } from "../../../src/node/ws-arriving.ts";
import { MemoryBudget, SMALL_ARRIVING_BYTES } from "../../../src/server/memory.ts";

const TEXT = 1;
const BINARY = 2;
const CONTINUATION = 0;
const PING = 9;
const PONG = 10;

/** A client frame (masked, as a client must), whole; cut it short with subarray. */
function frame(opcode: number, payload: Buffer, fin = true): Buffer {
  const len = payload.length;
  const first = (fin ? 0x80 : 0) | opcode;
  let head: Buffer;
  if (len < 126) head = Buffer.from([first, 0x80 | len]);
  else if (len < 65_536) {
    head = Buffer.from([first, 0x80 | 126, 0, 0]);
    head.writeUInt16BE(len, 2);
  } else {
    head = Buffer.alloc(10);
    head[0] = first;
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  const mask = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
  return Buffer.concat([head, mask, masked]);
}

/** The header of a frame of 65,536 bytes or more: 10 bytes and the 4-byte mask. */
const LONG_HEADER = 14;

/** The server's side of one connection, seen after holdArrivingFrames's own listeners. */
interface ServerSide {
  ws: WebSocket;
  socket: Socket;
  /** holdArrivingFrames's listener on the socket's data. */
  counter: (...args: unknown[]) => void;
  /** Bytes the socket has delivered since the handshake. */
  received: number;
  closed: Promise<void>;
}

interface Client {
  socket: Socket;
  server: ServerSide;
  /** Write bytes and wait until the server's socket has delivered all of them. */
  write(bytes: Buffer): Promise<void>;
  /** The close frame the server sent. */
  closeFrame(): Promise<{ code: number; reason: string }>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serveFrames(limitBytes: number, opts: { binaryType?: "fragments" } = {}) {
  const budget = new MemoryBudget(limitBytes, () => 0);
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await once(wss, "listening");
  let before: Function[] = [];
  // Registered before holdArrivingFrames: the socket's data listeners as ws left them.
  wss.on("connection", (_ws: WebSocket, request: { socket: Socket }) => {
    before = request.socket.listeners("data");
  });
  holdArrivingFrames(wss, budget);
  const sides: ServerSide[] = [];
  wss.on("connection", (ws: WebSocket, request: { socket: Socket }) => {
    const socket = request.socket;
    const added = socket.listeners("data").filter((l) => !before.includes(l));
    expect(added).toHaveLength(1);
    if (opts.binaryType) ws.binaryType = opts.binaryType;
    ws.on("error", () => {}); // as @hono/node-ws does: ws closes the socket itself (1008, 1009)
    const side: ServerSide = { ws, socket, counter: added[0] as ServerSide["counter"], received: 0, closed: new Promise<void>((done) => ws.once("close", () => done())) };
    socket.on("data", (chunk: Buffer) => (side.received += chunk.length));
    sides.push(side);
  });
  const { port } = wss.address() as AddressInfo;
  cleanups.push(async () => {
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(r));
  });

  async function client(): Promise<Client> {
    const socket = connect(port, "127.0.0.1");
    cleanups.push(async () => void socket.destroy());
    await once(socket, "connect");
    socket.write(
      "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    let got = Buffer.alloc(0);
    const onData = (d: Buffer) => (got = Buffer.concat([got, d]));
    socket.on("data", onData);
    await until(() => got.includes("\r\n\r\n"), "the server's answer to the upgrade");
    const end = got.indexOf("\r\n\r\n") + 4;
    expect(got.subarray(0, end).toString()).toMatch(/^HTTP\/1\.1 101 /);
    got = got.subarray(end); // frames from the server from here on
    // The server emits "connection" before its 101 reaches us.
    const server = sides.at(-1)!;
    return {
      socket,
      server,
      async write(bytes) {
        const target = server.received + bytes.length;
        socket.write(bytes);
        await until(() => server.received >= target, `the server to receive ${target} bytes`);
        expect(server.received).toBe(target);
      },
      async closeFrame() {
        await until(() => got.length >= 2 && got.length >= 2 + (got[1]! & 0x7f), "the server's close frame");
        expect(got[0]).toBe(0x88); // FIN + close
        const payload = got.subarray(2, 2 + (got[1]! & 0x7f));
        return { code: payload.readUInt16BE(0), reason: payload.subarray(2).toString() };
      },
    };
  }
  return { budget, client };
}

/** Wait on a condition of the test's own making: on events, polled, failing rather than hanging. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`never happened: ${what}`);
}

const bytes = (n: number) => Buffer.alloc(n, "a");
/**
 * What ws's reads held add to the bytes of a frame arriving (how many reads the kernel made of a
 * write is its own business): their objects, and what the first keeps alive of bytes already used.
 */
const readsHeld = (side: ServerSide) => {
  const { buffers } = receiverOf(side.ws)!;
  return buffers.length * READ_BUFFER_OVERHEAD + (buffers[0]?.byteOffset ?? 0);
};
/** A text frame of 200 kB that never finishes: what a test sends of it is what arrives. */
const LARGE = frame(TEXT, bytes(200_000));

describe("frames arriving on a WebSocket", () => {
  it("counts a frame cut short in the small share up to 64 KiB and in the bodies' share past it, all of what has arrived, and gives it back when the socket closes", async () => {
    const { budget, client } = await serveFrames(4 * 2 ** 20);
    const c = await client();
    await c.write(LARGE.subarray(0, 60_000));
    expect([budget.smallBodyBytes, budget.bodyBytes]).toEqual([60_000 + readsHeld(c.server), 0]);
    await c.write(LARGE.subarray(60_000, 100_000));
    expect([budget.smallBodyBytes, budget.bodyBytes]).toEqual([0, 100_000 + readsHeld(c.server)]);
    c.socket.destroy();
    await c.server.closed;
    expect(budget.bodyBytes).toBe(0);
    expect(c.server.socket.listeners("data")).not.toContain(c.server.counter);
  });

  // ws reports a message while the socket's data event that finished it is still being delivered,
  // before this module sees those bytes arrive: nothing stays counted after a message, and the
  // next frame arriving is counted whole.
  const finished: [string, Buffer[], "message" | "ping" | "pong", "fragments"?][] = [
    ["a text message", [frame(TEXT, bytes(100))], "message"],
    ["a ping", [frame(PING, bytes(100))], "ping"],
    ["a pong", [frame(PONG, bytes(100))], "pong"],
    ["a binary message in two frames, read as fragments", [frame(BINARY, bytes(50), false), frame(CONTINUATION, bytes(50))], "message", "fragments"],
  ];
  it.each(finished)("after %s, counts the next frame arriving and not the finished one", async (_what, frames, event, binaryType) => {
    const { budget, client } = await serveFrames(4 * 2 ** 20, binaryType ? { binaryType } : {});
    const c = await client();
    const message = Buffer.concat(frames);
    let events = 0;
    c.server.ws.on(event, () => events++);
    await c.write(message.subarray(0, message.length - 1));
    expect(events).toBe(0);
    await c.write(message.subarray(message.length - 1));
    expect(events).toBe(1);
    const arriving = LONG_HEADER + 80_000;
    expect(budget.smallBodyBytes + budget.bodyBytes).toBe(0);
    await c.write(LARGE.subarray(0, arriving));
    expect(budget.bodyBytes).toBe(arriving + readsHeld(c.server));
  });

  it("whole messages hold nothing once used, each arriving in one read; a frame cut off holds what arrived until it is whole", async () => {
    const { budget, client } = await serveFrames(16 * 2 ** 20);
    const c = await client();
    let messages = 0;
    c.server.ws.on("message", () => messages++);
    for (let i = 1; i <= 3; i++) {
      await c.write(frame(TEXT, bytes(10_000)));
      expect(messages).toBe(i);
      expect(budget.smallBodyBytes).toBe(0);
    }
    const cut = frame(TEXT, bytes(30_000));
    await c.write(cut.subarray(0, 20_008)); // its 8-byte header and mask, and 20,000 bytes
    expect(budget.smallBodyBytes).toBe(20_008 + readsHeld(c.server));
    await c.write(cut.subarray(20_008));
    expect(messages).toBe(4);
    expect(budget.smallBodyBytes).toBe(0);
    await c.write(cut.subarray(0, 5_008));
    expect(budget.smallBodyBytes).toBe(5_008 + readsHeld(c.server));
    c.socket.destroy();
    await c.server.closed;
    expect([budget.smallBodyBytes, budget.bodyBytes]).toEqual([0, 0]);
  });

  it("closes a socket whose frame does not fit the share with 1013, reads nothing more from it and keeps the others'", async () => {
    const { budget, client } = await serveFrames(4 * 150_000); // a 150 kB share
    const a = await client();
    await a.write(LARGE.subarray(0, 100_000));
    const aHeld = 100_000 + readsHeld(a.server);
    expect(budget.bodyBytes).toBe(aHeld);
    const b = await client();
    b.socket.write(LARGE.subarray(0, 100_000)); // 200 kB with a's: over the share
    expect(await b.closeFrame()).toEqual({ code: 1013, reason: "the server's memory for arriving messages is used up: try again later" });
    expect(budget.bodyBytes).toBe(aHeld); // a's; b kept nothing
    expect(b.server.socket.listeners("data")).not.toContain(b.server.counter);
    // ws would otherwise go on parsing (and keeping) what b still sends until its close came back.
    await b.server.closed;
    expect(b.server.socket.destroyed).toBe(true);
    expect(b.server.received).toBeLessThan(100_000);
    a.socket.destroy();
    await a.server.closed;
    expect(budget.bodyBytes).toBe(0);
  });

  it("ws keeps its reads and fragments where this module looks for them (private fields of ws 8.x)", async () => {
    const { client } = await serveFrames(4 * 2 ** 20);
    const c = await client();
    await c.write(frame(TEXT, bytes(10), false));
    await c.write(frame(CONTINUATION, bytes(10), false).subarray(0, 8));
    const r = receiverOf(c.server.ws)!;
    expect(r.fragments.map((f) => f.length)).toEqual([10]);
    expect(r.buffers.map((b) => b.length)).toEqual([2]); // the mask of the second, still arriving
  });

  it("counts each fragment of a message at what ws keeps for it, and closes 1008 past MAX_WS_FRAGMENTS", async () => {
    const { budget, client } = await serveFrames(64 * 2 ** 20);
    const c = await client();
    const one = (i: number) => frame(i === 0 ? TEXT : CONTINUATION, bytes(1), false); // 7 bytes on the wire
    await c.write(Buffer.concat(Array.from({ length: 500 }, (_, i) => one(i))));
    const held = budget.smallBodyBytes + budget.bodyBytes;
    // Before, 3,500 bytes: a twentieth of what those 500 Buffers take.
    expect(held).toBeGreaterThanOrEqual(500 * (7 + FRAGMENT_OVERHEAD));
    expect(held).toBeLessThan(500 * (7 + FRAGMENT_OVERHEAD) + 2 * 3_500 + 2 * READ_BUFFER_OVERHEAD);
    await c.write(Buffer.concat(Array.from({ length: MAX_WS_FRAGMENTS - 500 + 1 }, (_, i) => one(500 + i))));
    expect((await c.closeFrame()).code).toBe(1008);
    await c.server.closed;
    expect(budget.smallBodyBytes + budget.bodyBytes).toBe(0);
  });
});
