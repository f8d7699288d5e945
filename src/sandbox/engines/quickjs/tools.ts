/**
 * The host's helpers that run inside the zygote's QuickJS (bundled by assets.ts, evaluated once in
 * the guest context as a closure: no global refers to them, only the host holds them). Both are the
 * very code the other backends run on the host side, so a run strips and wraps the same way
 * whatever the engine. They run before any guest code of the run.
 */
import { lastExpressionCandidates, wrapAsync } from "../../guest.ts";
import { stripTypes } from "../../typescript.ts";

/** "o" + the code without its types, or "e" + error name + "\n" + message. */
export function strip(code: string): string {
  const r = stripTypes(code);
  return r.ok ? "o" + r.code : "e" + r.name + "\n" + r.message;
}

/** JSON: [the async-function wrapper, then the last-expression candidates] (guest.ts). */
export function candidates(source: string): string {
  return JSON.stringify([wrapAsync(source), ...lastExpressionCandidates(source)]);
}
