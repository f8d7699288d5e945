/**
 * The wire between the server and a confined host process: the host's stdin carries requests, its
 * stdout replies, each message a frame of a 4-byte big-endian length and that many bytes of JSON.
 *
 * Why not Node's IPC channel: it needs NODE_CHANNEL_FD in the child's environment (which is meant
 * to be empty), and it buffers a message of any size the child announces before the parent sees
 * it, so a host under a guest's control could make the server hold gigabytes. Here the reader
 * refuses a frame longer than its bound as soon as the length is read (the pool then kills the
 * host), and the JSON is parsed only once the frame is whole.
 */
import type { Readable, Writable } from "node:stream";
import type { HostPort, HostReply, HostRequest } from "./host-protocol.ts";

const HEADER = 4;

export function encodeFrame(message: unknown): Buffer {
  const text = JSON.stringify(message);
  const length = Buffer.byteLength(text, "utf8");
  const frame = Buffer.allocUnsafe(HEADER + length);
  frame.writeUInt32BE(length, 0);
  frame.write(text, HEADER, "utf8");
  return frame;
}

/**
 * Splits a byte stream into frames. `maxBytes()` is read for every frame (the bound depends on the
 * run in flight); a longer frame, or a frame that is not JSON, is reported once through `onError`
 * and the reader stops.
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private failed = false;

  constructor(
    private readonly maxBytes: () => number,
    private readonly onFrame: (message: unknown) => void,
    private readonly onError: (why: string) => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.failed) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (!this.failed && this.buffered >= HEADER) {
      // Only the header is joined until the whole frame is here: a large frame in many chunks is
      // copied once, not once per chunk.
      if (this.chunks[0]!.length < HEADER) this.chunks = [Buffer.concat(this.chunks)];
      const length = this.chunks[0]!.readUInt32BE(0);
      if (length > this.maxBytes()) return this.fail(`a message of ${length} bytes (more than ${this.maxBytes()} allowed)`);
      if (this.buffered < HEADER + length) return;
      const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
      const body = all.subarray(HEADER, HEADER + length);
      const rest = all.subarray(HEADER + length);
      this.chunks = rest.length ? [rest] : [];
      this.buffered = rest.length;
      let message: unknown;
      try {
        message = JSON.parse(body.toString("utf8"));
      } catch {
        return this.fail("a message that is not JSON");
      }
      this.onFrame(message);
    }
  }

  private fail(why: string): void {
    this.failed = true;
    this.chunks = [];
    this.buffered = 0;
    this.onError(why);
  }
}

/** Requests are written by the trusted server; a frame this big would be a bug, not an attack. */
const MAX_REQUEST_BYTES = 2 ** 31;

/**
 * The host's end (inside the confined process): requests from stdin, replies to stdout. When stdin
 * ends the server is gone (or gave up on this host): nothing is left to serve, so the process ends
 * at once (a graceful exit could wait on a busy engine).
 */
export function childPort(input: Readable = process.stdin, output: Writable = process.stdout): HostPort {
  let listener: ((message: HostRequest) => void) | undefined;
  const reader = new FrameReader(
    () => MAX_REQUEST_BYTES,
    (message) => listener?.(message as HostRequest),
    () => process.kill(process.pid, "SIGKILL"),
  );
  input.on("data", (chunk: Buffer) => reader.push(chunk));
  input.on("end", () => process.kill(process.pid, "SIGKILL"));
  return {
    post: (message: HostReply) => void output.write(encodeFrame(message)),
    onMessage: (l) => {
      listener = l;
    },
  };
}
