/**
 * Errors cross the Durable Object RPC boundary as data: a thrown ApiError would arrive as a plain
 * Error without its code and status, so methods return an envelope and the caller rethrows.
 */
import { ApiError, toApiError, type ErrorCode } from "../env/errors.ts";

export type Envelope<T> = { ok: true; value: T } | { ok: false; error: { code: ErrorCode; message: string; details?: unknown } };

export async function capture<T>(fn: () => Promise<T>): Promise<Envelope<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (err) {
    const e = toApiError(err);
    return { ok: false, error: { code: e.code, message: e.message, details: e.details } };
  }
}

export async function unwrap<T>(p: Promise<Envelope<T>>): Promise<T> {
  const r = await p;
  if (r.ok) return r.value;
  throw new ApiError(r.error.code, r.error.message, r.error.details);
}
