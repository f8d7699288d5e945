/**
 * Request bodies on Node, read straight from the IncomingMessage: building a web Request just to
 * call text() on it costs more than the rest of a step.
 */
import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import { ApiError } from "../env/errors.ts";
import { bodyTooLarge, readWebBody } from "../server/body.ts";

export function readNodeBody(c: Context, max: number): Promise<string> {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (!incoming) return readWebBody(c, max); // e.g. app.request() in tests
  const declared = incoming.headers["content-length"];
  if (declared !== undefined && Number(declared) > max) return Promise.reject(bodyTooLarge(max));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        cleanup();
        incoming.resume(); // drain the rest without keeping it
        reject(bodyTooLarge(max));
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size).toString("utf8"));
    };
    const onError = (err: Error) => {
      cleanup();
      // The client went away (or sent a broken body): its doing, not a failure of ours to log.
      reject(new ApiError("VALIDATION_ERROR", `request body could not be read: ${err.message}`, undefined, { cause: err }));
    };
    const cleanup = () => {
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onError);
    };
    incoming.on("data", onData);
    incoming.on("end", onEnd);
    incoming.on("error", onError);
  });
}
