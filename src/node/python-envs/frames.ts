/**
 * The Python worker's wire (clients/python/src/envworker/_frames.py is the worker's side): frames of
 * a fixed-size header, a JSON object padded with spaces whose `n` is the length of the body that
 * follows. A fixed size lets the worker's fork server read exactly one frame and nothing of the
 * next: a call's bytes go to the child forked for it and nowhere else.
 */

export const HEADER_BYTES = 256;

export interface FrameHeader {
  t: string;
  id?: number;
  n: number;
  [k: string]: unknown;
}

/** A frame's bytes: its header (padded) and its body. */
export function frame(fields: Record<string, unknown>, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.from(JSON.stringify({ ...fields, n: body.length }));
  if (head.length >= HEADER_BYTES) throw new Error(`a frame header of ${head.length} bytes`);
  const out = Buffer.alloc(HEADER_BYTES + body.length, 0x20);
  head.copy(out);
  out[HEADER_BYTES - 1] = 0x0a;
  body.copy(out, HEADER_BYTES);
  return out;
}

export class FrameError extends Error {
  constructor(
    message: string,
    /** The id of the call the bad frame was for, when its header said. */
    readonly id?: number,
    readonly tooLarge = false,
  ) {
    super(message);
  }
}

/**
 * Frames out of a stream's chunks. A body larger than `maxBytes` is refused at its header, never
 * held; the reader is broken after any error (the process it reads must go).
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private held = 0;
  private header: FrameHeader | undefined;

  constructor(private readonly maxBytes: number) {}

  /** Every whole frame the chunk completes; throws FrameError on a malformed or oversized one. */
  push(chunk: Buffer): { header: FrameHeader; body: Buffer }[] {
    this.chunks.push(chunk);
    this.held += chunk.length;
    const out: { header: FrameHeader; body: Buffer }[] = [];
    for (;;) {
      if (!this.header) {
        if (this.held < HEADER_BYTES) return out;
        this.header = parseHeader(this.take(HEADER_BYTES), this.maxBytes);
      }
      if (this.held < this.header.n) return out;
      out.push({ header: this.header, body: this.take(this.header.n) });
      this.header = undefined;
    }
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const head = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.held = rest.length;
    return head;
  }
}

function parseHeader(raw: Buffer, maxBytes: number): FrameHeader {
  let fields: unknown;
  try {
    fields = JSON.parse(raw.toString("utf8"));
  } catch {
    throw new FrameError("it wrote something that is not a protocol message");
  }
  const h = fields as Partial<FrameHeader> | null;
  if (!h || typeof h !== "object" || typeof h.t !== "string" || !Number.isInteger(h.n) || h.n! < 0) {
    throw new FrameError("it wrote something that is not a protocol message");
  }
  const id = typeof h.id === "number" ? h.id : undefined;
  if (h.n! > maxBytes) throw new FrameError(`it sent a message larger than the limit (${h.n} bytes)`, id, true);
  return h as FrameHeader;
}
