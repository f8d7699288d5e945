/**
 * JSON from clients (request bodies, WebSocket messages), refused when nested deeper than
 * MAX_JSON_DEPTH. V8 parses any depth, but much of what follows walks a value by recursion
 * (structured clone to an environment thread, JSON.stringify, validation): a 1 MB body of 100,000
 * nested arrays in a reset's `args` overflowed the stack of the postMessage that hands it to a
 * thread, and the server died. Real requests nest a dozen levels at most.
 */
import { ApiError } from "../env/errors.ts";

/** Deepest nesting of arrays and objects a client may send (protobuf's default recursion limit). */
export const MAX_JSON_DEPTH = 100;

/** Thrown for text that is not JSON at all (callers answer it in their own protocol's terms). */
export class NotJsonError extends Error {
  override readonly name = "NotJsonError";
}

/** `text` parsed, or NotJsonError; VALIDATION_ERROR when it nests deeper than MAX_JSON_DEPTH. */
export function parseClientJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new NotJsonError((err as Error).message);
  }
  if (depthOver(value, MAX_JSON_DEPTH)) {
    throw new ApiError("VALIDATION_ERROR", `JSON nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
  }
  return value;
}

/** Whether arrays and objects in `value` nest deeper than `max` (iteratively: any depth is safe to ask). */
export function depthOver(value: unknown, max: number): boolean {
  const stack: [object, number][] = [];
  if (value !== null && typeof value === "object") stack.push([value, 1]);
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * About what a parsed JSON value takes on V8's heap, in bytes (an upper bound for the shapes JSON
 * makes): strings at two bytes a character and their header, numbers as heap numbers, objects and
 * arrays with their slots. Its text length says little: `[{},{},…]` is 3 characters an object
 * that takes ~60 bytes. Iterative, like depthOver.
 */
export function jsonHeapBytes(value: unknown): number {
  let bytes = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") bytes += 24 + 2 * v.length;
    else if (typeof v === "number") bytes += 16;
    else if (Array.isArray(v)) {
      bytes += 32 + 8 * v.length;
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === "object") {
      const keys = Object.keys(v);
      bytes += 64 + 24 * keys.length;
      for (const k of keys) {
        bytes += 24 + 2 * k.length;
        stack.push((v as Record<string, unknown>)[k]);
      }
    }
  }
  return bytes;
}
