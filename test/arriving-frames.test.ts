/**
 * WebSocket frames on their way in are held against the memory budget only while a frame is
 * incomplete (src/node/ws-arriving.ts): a message that comes whole holds nothing afterwards, a
 * frame cut off mid-way holds what has arrived of it until it is whole.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";
import { holdArrivingFrames } from "../src/node/ws-arriving.ts";
import { MemoryBudget } from "../src/server/memory.ts";

let wss: WebSocketServer | undefined;
afterEach(async () => {
  await new Promise((done) => wss?.close(done) ?? done(undefined));
  wss = undefined;
});

/** A server whose sockets count frames against `budget`, every message it received, and a client. */
async function setup(budget: MemoryBudget) {
  wss = new WebSocketServer({ port: 0 });
  holdArrivingFrames(wss, budget);
  const received: string[] = [];
  wss.on("connection", (ws) => ws.on("message", (m) => received.push(String(m))));
  await new Promise((done) => wss!.once("listening", done));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  await new Promise((done) => client.once("open", done));
  return { client, received };
}

/** A masked text frame header (mask key 0, so the payload goes as is) declaring `length` bytes. */
function frameHeader(length: number): Buffer {
  const header = Buffer.alloc(8);
  header[0] = 0x81;
  header[1] = 0x80 | 126;
  header.writeUInt16BE(length, 2);
  return header;
}

describe("frames arriving, held against the budget", () => {
  it("whole messages hold nothing once used; a frame cut off holds what arrived until it is whole", async () => {
    const budget = new MemoryBudget(16 * 2 ** 20, () => 0);
    const { client, received } = await setup(budget);
    for (let i = 1; i <= 3; i++) {
      client.send("m".repeat(10_000));
      await expect.poll(() => received.length).toBe(i);
      await new Promise((done) => setImmediate(done));
      expect(budget.smallBodyBytes).toBe(0);
    }
    const socket = (client as unknown as { _socket: import("node:net").Socket })._socket;
    socket.write(Buffer.concat([frameHeader(30_000), Buffer.alloc(20_000, 0x61)]));
    await expect.poll(() => budget.smallBodyBytes).toBeGreaterThanOrEqual(20_000);
    expect(budget.smallBodyBytes).toBeLessThanOrEqual(20_008);
    socket.write(Buffer.alloc(10_000, 0x61));
    await expect.poll(() => received.length).toBe(4);
    expect(received[3]).toBe("a".repeat(30_000));
    await new Promise((done) => setImmediate(done));
    expect(budget.smallBodyBytes).toBe(0);
    // Cut off again, then gone: what it held is given back.
    socket.write(Buffer.concat([frameHeader(30_000), Buffer.alloc(5_000, 0x61)]));
    await expect.poll(() => budget.smallBodyBytes).toBeGreaterThanOrEqual(5_000);
    client.terminate();
    await expect.poll(() => budget.smallBodyBytes).toBe(0);
    expect(budget.bodyBytes).toBe(0);
  });
});
