/**
 * Reading request bodies with a size limit: 413 PAYLOAD_TOO_LARGE past it, checked before the
 * whole body is in memory.
 */
import type { Context } from "hono";
import { ApiError } from "../env/errors.ts";

/** How a platform reads a body as text, refusing more than `max` bytes. */
export type BodyReader = (c: Context, max: number) => Promise<string>;

export const bodyTooLarge = (max: number) => new ApiError("PAYLOAD_TOO_LARGE", `request body exceeds ${max} bytes`);

/**
 * The request body as text through web streams, refusing more than `max` bytes with 413. A
 * declared Content-Length is checked before anything is read; a chunked body is read up to the
 * limit and no further. (Hono's bodyLimit middleware does the same but wraps every request,
 * which on @hono/node-server materializes a full Request and cost 6x in requests per second.)
 */
export async function readWebBody(c: Context, max: number): Promise<string> {
  const tooLarge = () => bodyTooLarge(max);
  const declared = c.req.header("content-length");
  if (declared !== undefined) {
    if (Number(declared) > max) throw tooLarge();
    return c.req.text();
  }
  const body = c.req.raw.body;
  if (!body) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(all);
}

