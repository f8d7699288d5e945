/**
 * WebSocket frames on their way in, held against the memory budget's share for arriving bytes
 * (MemoryBudget.holdBody, the share request bodies use): `ws` buffers a frame until it is whole,
 * so many sockets each sending most of a large frame and then waiting would hold gigabytes outside
 * any limit (300 sockets × 1 MiB held +318 MB before this). A frame up to 64 KiB is counted in the
 * small share, and only when a read ends inside it (one that comes whole is never held), as with
 * request bodies; past the share the socket is closed with 1013 (try again later).
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
    /**
     * Holds the bytes received that no message has used yet: the frame being assembled. `consumed`
     * counts the largest frame header per message, so it may run a few bytes ahead of `received`;
     * the next read brings it back (a frame still arriving is undercounted by those few bytes).
     */
    const settle = () => {
      try {
        arriving.resize(Math.max(0, received - consumed));
      } catch {
        socket.off("data", onData);
        ws.close(1013, "the server's memory for arriving messages is used up: try again later");
      }
    };
    // Runs after ws's own listener has parsed the chunk (it was added first) and emitted the
    // messages it completed: what is left is a frame still arriving.
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (consumed > received) consumed = received;
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
