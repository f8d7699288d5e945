/**
 * Request bodies on Node, read straight from the IncomingMessage: building a web Request just to
 * call text() on it costs more than the rest of a step.
 */
import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import { ApiError } from "../env/errors.ts";
import { bodyTooLarge, readWebBody } from "../server/body.ts";
import { Arriving, type MemoryBudget, SMALL_ARRIVING_BYTES } from "../server/memory.ts";

/**
 * The body as text, refusing more than `max` bytes with 413. With a `budget`, the bytes a body
 * will hold are counted against the budget's shares for arriving bodies while it arrives (a large
 * declared length up front, a small one once its first bytes come without the rest, a chunked body
 * chunk by chunk): many clients each sending a body slowly would otherwise hold gigabytes outside
 * any limit. Past it the request gets 503 OVERLOADED. A small body that comes whole (a step, a
 * close: almost every request) is never held, so slow senders cannot crowd it out.
 */
export function readNodeBody(c: Context, max: number, budget?: MemoryBudget): Promise<string> {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (!incoming) return readWebBody(c, max); // e.g. app.request() in tests
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
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (err: unknown) => {
      cleanup();
      incoming.resume(); // drain the rest without keeping it
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) return fail(bodyTooLarge(max));
      // A chunked body is held as it grows; a small declared one once it is seen to come in pieces.
      if (length === undefined || size < length) {
        try {
          arriving.resize(length ?? size);
        } catch (err) {
          return fail(err);
        }
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size).toString("utf8"));
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
