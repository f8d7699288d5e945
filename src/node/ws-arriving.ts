/**
 * WebSocket frames on their way in, held against the memory budget's share for arriving bytes
 * (MemoryBudget.holdBody, the share request bodies use): `ws` buffers a frame until it is whole,
 * so many sockets each sending most of a large frame and then waiting would hold gigabytes outside
 * any limit (300 sockets × 1 MiB held +318 MB before this). Frames up to 64 KiB are not counted,
 * as with request bodies; past the share the socket is closed with 1013 (try again later).
 */
import type { Socket } from "node:net";
import type { WebSocket, WebSocketServer } from "ws";
import { Arriving, type MemoryBudget } from "../server/memory.ts";

/** The most a frame header (with its mask) adds to the bytes of a message. */
const FRAME_OVERHEAD = 14;

export function holdArrivingFrames(wss: WebSocketServer, budget: MemoryBudget): void {
  wss.on("connection", (ws: WebSocket, request: { socket: Socket }) => {
    const socket = request.socket;
    let received = 0;
    let consumed = 0;
    const arriving = new Arriving(budget);
    /** Bytes received that no message has used yet: the frame being assembled (roughly, never less). */
    const partial = () => {
      if (consumed > received) consumed = received;
      return received - consumed;
    };
    const settle = () => {
      try {
        arriving.resize(partial());
      } catch {
        socket.off("data", onData);
        ws.close(1013, "the server's memory for arriving messages is used up: try again later");
      }
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      settle();
    };
    const onMessage = (data: Buffer | ArrayBuffer | Buffer[]) => {
      consumed += (Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : data.byteLength) + FRAME_OVERHEAD;
      settle();
    };
    const onControl = (data: Buffer) => {
      consumed += data.length + FRAME_OVERHEAD;
      settle();
    };
    socket.on("data", onData);
    ws.on("message", onMessage);
    ws.on("ping", onControl);
    ws.on("pong", onControl);
    ws.once("close", () => {
      socket.off("data", onData);
      arriving.release();
    });
  });
}
