/**
 * Request bodies on Node, read straight from the IncomingMessage: building a web Request just to
 * call text() on it costs more than the rest of a step.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Context } from "hono";
import { ApiError } from "../env/errors.ts";
import { bodyTooLarge, readWebBody } from "../server/body.ts";
import { Arriving, type MemoryBudget, SMALL_ARRIVING_BYTES } from "../server/memory.ts";

/**
 * The body as text, refusing more than `max` bytes with 413. With a `budget`, the bytes a body
 * will hold are counted against the budget's shares for arriving bodies while it arrives (a large
 * declared length up front, a small one once its first bytes come without the rest, a chunked body
 * as its buffer grows), at the memory they really take (one buffer, see onData): many clients each sending a body slowly would otherwise hold gigabytes outside
 * any limit. Past it the request gets 503 OVERLOADED. A small body that comes whole (a step, a
 * close: almost every request) is never held, so slow senders cannot crowd it out.
 */
/**
 * Pieces (chunks of a chunked body, reads of a declared one) a body may come in beyond one per
 * 256 bytes. 8 clients each sending 256 KB in one-byte chunks made the event loop handle 2 million
 * pieces, and a probe waited 3.2 s; a 1 MiB body over a slow link arrives in ~700 reads.
 */
export const FREE_PIECES = 1024;

export function readNodeBody(c: Context, max: number, budget?: MemoryBudget): Promise<string> {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (!incoming) return readWebBody(c, max); // e.g. app.request() in tests
  // Once something read the request's web form (`c.req.raw.signal`, `.body`), @hono/node-server
  // piped the message into that Request's stream: its bytes go there, and a reader of the message
  // itself waited forever (ORS's first tool call of a session started lazily: 30 s, then a retry).
  // A safety net: such a body is still refused past `max`, but not counted against the budget
  // while it arrives, so routes read their body before anything reads the request's signal.
  if (incoming.listenerCount("data") > 0 || incoming.readableDidRead) return readWebBody(c, max);
  const declared = incoming.headers["content-length"];
  const length = declared === undefined ? undefined : Number(declared);
  if (length !== undefined && length > max) return Promise.reject(bodyTooLarge(max));
  const arriving = new Arriving(budget);
  try {
    if (length !== undefined && length > SMALL_ARRIVING_BYTES) arriving.resize(length);
  } catch (err) {
    incoming.resume(); // drain it without keeping it
    return Promise.reject(err);
  }
  return new Promise((resolve, reject) => {
    // The body is copied into one buffer as it arrives: kept as Node hands it over, a body in
    // one-byte chunks cost a Buffer each (~340 bytes of memory per byte of body, 8 unfinished
    // 256 KB bodies +688 MiB), while only its bytes were counted. The buffer is what is counted.
    let body: Buffer | undefined;
    let size = 0;
    let pieces = 0;
    const fail = (err: unknown) => {
      cleanup();
      incoming.resume(); // drain the rest without keeping it
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      const end = size + chunk.length;
      if (end > max) return fail(bodyTooLarge(max));
      if (++pieces > FREE_PIECES + end / 256) {
        // Parsing every piece costs the event loop; answered, then the connection is closed
        // rather than drained (Node stops reading it once the answer is sent).
        (c.env as { outgoing?: ServerResponse }).outgoing?.setHeader("connection", "close");
        return fail(new ApiError("VALIDATION_ERROR", `request body sent in more than ${FREE_PIECES} pieces averaging under 256 bytes: send it in larger chunks`));
      }
      // A declared body that comes whole (almost every request) is used as it came: no copy, never held.
      if (size === 0 && length !== undefined && end >= length) {
        body = chunk;
        size = end;
        return;
      }
      if (!body || end > body.length) {
        // Room for all of a declared body at once (counted up front when large, now when small);
        // a chunked one grows by doubling, up to `max`.
        const capacity = length ?? Math.min(max, Math.max(end, 2 * (body?.length ?? 0), 4096));
        try {
          arriving.resize(capacity);
        } catch (err) {
          return fail(err);
        }
        const grown = Buffer.allocUnsafe(capacity);
        body?.copy(grown, 0, 0, size);
        body = grown;
      }
      chunk.copy(body, size);
      size = end;
    };
    const onEnd = () => {
      cleanup();
      resolve(body === undefined ? "" : body.toString("utf8", 0, size));
    };
    // The request stream fails when the client goes away mid-body ("aborted"): the client's
    // doing, not the server's, so a 400 nobody reads rather than an error in the log per request.
    const onError = (err: Error) => {
      cleanup();
      reject(new ApiError("VALIDATION_ERROR", `request body could not be read: ${err.message}`, undefined, { cause: err }));
    };
    const cleanup = () => {
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onError);
      arriving.release();
    };
    incoming.on("data", onData);
    incoming.on("end", onEnd);
    incoming.on("error", onError);
  });
}
