/**
 * The `javascript` tool: run the model's code in the platform's sandbox (`ctx.sandbox`: QuickJS,
 * on Node in a process forked per call; isolated-vm when the operator chooses it) and answer with
 * what it printed and the value of its last expression, like a notebook cell. Every run starts
 * fresh: nothing persists between calls.
 *
 * What the model reads:
 *   stdout:            (only when something was printed with console.log/info/debug)
 *   <printed text>
 *   stderr:            (only when console.error/warn was used)
 *   <text>
 *   result: <JSON>     (the last expression's value, JSON; omitted when it is undefined/null
 *                       and something was printed)
 * A guest error (a throw, a syntax error, the time or memory limit) becomes the tool error
 * `Error: <Name>: <message>`, followed by whatever was printed before it. The whole text is cut at
 * `maxChars` characters with a `…[truncated N chars]` marker; the tool description tells the model
 * the limits.
 */
import { z } from "zod";
import type { RunResult } from "../sandbox/types.ts";
import { defineTool, type Tool } from "../env/define-tool.ts";

export interface JavascriptToolOptions {
  /** Tool name (default "javascript"). */
  name?: string;
  /** Sandbox time limit per call (default 2000 ms). */
  timeoutMs?: number;
  /** Sandbox heap limit per call (default 64 MiB). */
  memoryMb?: number;
  /** Longest answer the model gets, in characters (default 4000). */
  maxChars?: number;
  /** Offer the `typescript` flag (default true). */
  typescript?: boolean;
}

export const JAVASCRIPT_DEFAULTS = { timeoutMs: 2000, memoryMb: 64, maxChars: 4000 } as const;

/** Cut `text` to `max` characters, saying how many were dropped. */
export function truncateText(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = max;
  // Never split a surrogate pair.
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return `${text.slice(0, cut)}…[truncated ${text.length - cut} chars]`;
}

function printed(r: RunResult): string[] {
  const parts: string[] = [];
  if (r.stdout !== "") parts.push(`stdout:\n${r.stdout.replace(/\n$/, "")}`);
  if (r.stderr !== "") parts.push(`stderr:\n${r.stderr.replace(/\n$/, "")}`);
  return parts;
}

/** The text the model reads for a successful run. */
export function formatRun(r: RunResult): string {
  const parts = printed(r);
  if (parts.length === 0 && r.result === null) {
    return "result: null (nothing was printed and the last expression was undefined or null: end with an expression or use console.log)";
  }
  if (r.result !== null || parts.length === 0) parts.push(`result: ${JSON.stringify(r.result)}`);
  return parts.join("\n");
}

/** The error text for a failed run (without the "Error: " prefix, which the dispatcher adds). */
export function formatFailure(r: RunResult): string {
  const e = r.error ?? { name: "Error", message: "the run failed" };
  const head = `${e.name}: ${e.message}`;
  const parts = printed(r);
  return parts.length > 0 ? `${head}\n${parts.join("\n")}` : head;
}

export function createJavascriptTool(options: JavascriptToolOptions = {}): Tool {
  const timeoutMs = options.timeoutMs ?? JAVASCRIPT_DEFAULTS.timeoutMs;
  const memoryMb = options.memoryMb ?? JAVASCRIPT_DEFAULTS.memoryMb;
  const maxChars = options.maxChars ?? JAVASCRIPT_DEFAULTS.maxChars;
  const allowTs = options.typescript ?? true;
  const code = z.string().max(100_000).describe("The JavaScript to run. The value of the last expression is returned; console.log output is shown.");
  const parameters = allowTs
    ? z
        .object({
          code,
          typescript: z.boolean().optional().describe("Set to true if the code is TypeScript (types are stripped before running)."),
        })
        .strict()
    : z.object({ code }).strict();
  const description =
    "Run JavaScript in a fresh sandbox and see the result. No network, no file system, no require/import, no timers; " +
    "variables do not persist between calls. The value of the last expression is returned together with console.log output " +
    `(code that uses top-level await runs as an async function body: use return to give a value). Limits per call: ${timeoutMs} ms, ${memoryMb} MiB; ` +
    `the answer is cut after ${maxChars} characters.` +
    (allowTs ? " Set typescript to true to run TypeScript." : "");
  return defineTool({
    name: options.name ?? "javascript",
    description,
    parameters,
    // The sandbox enforces timeoutMs itself (its watchdog stops a run at most ~1.5 s past it); the
    // dispatcher's limit only catches a stuck host. Neither counts time spent waiting for a sandbox
    // slot (tool-dispatch.ts stops the tool's clock while a run is queued).
    timeoutMs: timeoutMs + 5000,
    async run(args, ctx) {
      const sandbox = ctx.sandbox;
      if (!sandbox) throw new Error("no sandbox available");
      const ts = "typescript" in args && args.typescript === true;
      // Type stripping happens in the sandbox's thread/process, under the run's time limit.
      const r = await sandbox.run(args.code, { timeoutMs, memoryMb, maxOutputBytes: Math.max(maxChars * 4, 16 * 1024), ts, signal: ctx.signal });
      if (!r.ok) throw new Error(truncateText(formatFailure(r), maxChars));
      return truncateText(formatRun(r), maxChars);
    },
  });
}

/** The `javascript` tool with the default limits (2 s, 64 MiB, 4,000 characters). */
export const javascriptTool: Tool = createJavascriptTool();
