/**
 * WebSocket frames on their way in, held against the memory budget's share for arriving bytes
 * (MemoryBudget.holdBody, the share request bodies use): `ws` buffers a frame until it is whole,
 * so many sockets each sending most of a large frame and then waiting would hold gigabytes outside
 * any limit (300 sockets × 1 MiB held +318 MB before this). A frame up to 64 KiB is counted in the
 * small share, and only when a read ends inside it (one that comes whole is never held), as with
 * request bodies; past the share the socket is closed with 1013 (try again later).
 *
 * A message in many fragments is counted at what its fragments hold, not only their bytes: ws
 * keeps each fragment as its own Buffer until the message is whole, a view that keeps the bytes
 * read with it alive. 1,000 sockets each holding a message of 16,000 one-byte fragments (7 bytes
 * each on the wire, ws's default allows 16,384) held +1.76 GB while 112 MB were counted.
 */
import type { Socket } from "node:net";
import type { WebSocket, WebSocketServer } from "ws";
import { Arriving, type MemoryBudget } from "../server/memory.ts";

/** The most a frame header (with its mask) adds to the bytes of a message. */
const FRAME_OVERHEAD = 14;

/**
 * What one fragment ws keeps costs beyond its bytes: its Buffer object and its place in ws's list
 * (measured: 200 sockets × 16,000 one-byte fragments held +340 MiB, ~110 bytes each beyond the
 * 7 read); and what a buffer read from the socket costs beyond its bytes (its ArrayBuffer and
 * backing store), for each read ws still holds.
 */
export const FRAGMENT_OVERHEAD = 128;
export const READ_BUFFER_OVERHEAD = 256;

/**
 * What ws's receiver holds of the message it is assembling: the reads not yet parsed into a
 * frame, and the fragments done. ws keeps them in private fields (8.x: `_buffers`, `_fragments`,
 * the latter replaced by a new array when a message is whole); no public API tells how many there
 * are. test/runtime/node/ws-arriving.test.ts pins that the installed ws has them.
 */
export function receiverOf(ws: WebSocket): { buffers: readonly Buffer[]; fragments: readonly Buffer[] } | undefined {
  const r = (ws as unknown as { _receiver?: { _buffers?: unknown; _fragments?: unknown } })._receiver;
  if (!r || !Array.isArray(r._buffers) || !Array.isArray(r._fragments)) return undefined;
  return { buffers: r._buffers as Buffer[], fragments: r._fragments as Buffer[] };
}

/**
 * What the fragments of one message hold beyond the bytes received, kept up to date as they
 * come (a message may have thousands; each is looked at once).
 */
class FragmentCost {
  private list: readonly Buffer[] | undefined;
  private seen = 0;
  private lastRead: ArrayBufferLike | undefined;
  bytes = 0;

  update(fragments: readonly Buffer[]): number {
    if (fragments !== this.list) {
      // A new message (ws starts a new list for each): nothing of the last one is held.
      this.list = fragments;
      this.seen = 0;
      this.lastRead = undefined;
      this.bytes = 0;
    }
    for (; this.seen < fragments.length; this.seen++) {
      const f = fragments[this.seen]!;
      this.bytes += FRAGMENT_OVERHEAD;
      // The rest of the buffer it was read with stays alive with it (its own bytes are counted as received).
      if (f.buffer !== this.lastRead) {
        this.lastRead = f.buffer;
        this.bytes += READ_BUFFER_OVERHEAD + f.buffer.byteLength - f.length;
      }
    }
    return this.bytes;
  }
}

/**
 * Fragments one message may come in (ws's default is 16,384), and reads of one frame ws may hold
 * before it is whole (default 262,144), past which ws closes the socket (1008 and 1009). Counted
 * as they are, these bound what ws holds before a read is counted here: ws parses a whole read
 * (up to 64 KiB, ~9,000 one-byte fragments) before this module sees it. A client that fragments
 * at all sends a few large pieces; a 2 MiB frame over a slow link arrives in ~1,500 reads.
 */
export const MAX_WS_FRAGMENTS = 1024;
export const MAX_WS_BUFFERED_READS = 4096;

export function holdArrivingFrames(wss: WebSocketServer, budget: MemoryBudget): void {
  Object.assign(wss.options, { maxFragments: MAX_WS_FRAGMENTS, maxBufferedChunks: MAX_WS_BUFFERED_READS });
  wss.on("connection", (ws: WebSocket, request: { socket: Socket }) => {
    const socket = request.socket;
    let received = 0;
    let consumed = 0;
    const arriving = new Arriving(budget);
    const fragments = new FragmentCost();
    /** What ws's objects for the bytes received add to them (see FRAGMENT_OVERHEAD). */
    const overhead = () => {
      const r = receiverOf(ws);
      if (!r) return 0;
      // Each read not yet parsed is a Buffer of its own; the first may keep bytes already used alive.
      const reads = r.buffers.length * READ_BUFFER_OVERHEAD + (r.buffers[0]?.byteOffset ?? 0);
      return reads + fragments.update(r.fragments);
    };
    /**
     * Holds the bytes received that no message has used yet: the frame being assembled. `consumed`
     * counts the largest frame header per message, so it may run a few bytes ahead of `received`;
     * the next read brings it back (a frame still arriving is undercounted by those few bytes).
     */
    const settle = () => {
      try {
        arriving.resize(Math.max(0, received - consumed) + overhead());
      } catch {
        socket.off("data", onData);
        ws.close(1013, "the server's memory for arriving messages is used up: try again later");
        // Read nothing more from it: ws would go on parsing (and keeping) whatever the client
        // still sends until its close came back (200 sockets refused this way still held +413 MiB
        // of fragments). Gone once the close frame is on its way.
        socket.pause();
        socket.write(Buffer.alloc(0), () => ws.terminate());
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
