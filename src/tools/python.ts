/**
 * The `python` tool: run the model's Python in the Python sandbox (`ctx.python`: CPython for WASI, Node
 * only) and answer with what it printed and the value of its last expression, like a notebook
 * cell. Every call starts from a clean interpreter: nothing persists between calls.
 *
 * What the model reads is the same as for the `javascript` tool (javascript.ts): `stdout:` /
 * `stderr:` sections when something was printed, `result: <JSON>` for the last expression's value,
 * and for a failure the tool error `Error: <Name>: <message>` followed by what was printed. The
 * text is cut at `maxChars` characters.
 */
import { z } from "zod";
import type { RunResult } from "../sandbox/types.ts";
import { defineTool, type Tool } from "../env/define-tool.ts";
import { formatFailure, truncateText } from "./javascript.ts";

export interface PythonToolOptions {
  /** Tool name (default "python"). */
  name?: string;
  /** Time limit per call (default 5000 ms). */
  timeoutMs?: number;
  /** Memory limit per call, above the idle interpreter (default 128 MiB). */
  memoryMb?: number;
  /** Longest answer the model gets, in characters (default 4000). */
  maxChars?: number;
}

export const PYTHON_DEFAULTS = { timeoutMs: 5000, memoryMb: 128, maxChars: 4000 } as const;

/** The text the model reads for a successful run. */
export function formatPythonRun(r: RunResult): string {
  const parts: string[] = [];
  if (r.stdout !== "") parts.push(`stdout:\n${r.stdout.replace(/\n$/, "")}`);
  if (r.stderr !== "") parts.push(`stderr:\n${r.stderr.replace(/\n$/, "")}`);
  if (parts.length === 0 && r.result === null) return "result: None (nothing was printed and the last line was not an expression: end with an expression or use print)";
  if (r.result !== null || parts.length === 0) parts.push(`result: ${JSON.stringify(r.result)}`);
  return parts.join("\n");
}

export function createPythonTool(options: PythonToolOptions = {}): Tool {
  const timeoutMs = options.timeoutMs ?? PYTHON_DEFAULTS.timeoutMs;
  const memoryMb = options.memoryMb ?? PYTHON_DEFAULTS.memoryMb;
  const maxChars = options.maxChars ?? PYTHON_DEFAULTS.maxChars;
  return defineTool({
    name: options.name ?? "python",
    description:
      "Run Python 3 (standard library only: math, fractions, itertools, collections, re, ...) in a fresh sandbox and see the result. " +
      "No network, no packages to install, no files that persist; variables do not persist between calls. The value of the last " +
      `expression is returned together with print output. Limits per call: ${timeoutMs} ms, ${memoryMb} MiB; the answer is cut after ${maxChars} characters.`,
    parameters: z.object({ code: z.string().max(100_000).describe("The Python code to run. The value of the last expression is returned; print output is shown.") }).strict(),
    // The sandbox enforces timeoutMs itself (its watchdog at +0.5 s); this only catches a stuck host.
    timeoutMs: timeoutMs + 5000,
    async run(args, ctx) {
      const python = ctx.python;
      if (!python) throw new Error("no Python sandbox available (the python tool needs the Node server)");
      const r = await python.run(args.code, { timeoutMs, memoryMb, maxOutputBytes: Math.max(maxChars * 4, 16 * 1024) });
      if (!r.ok) throw new Error(truncateText(formatFailure(r), maxChars));
      return truncateText(formatPythonRun(r), maxChars);
    },
  });
}

/** The `python` tool with the default limits (5 s, 128 MiB, 4,000 characters). */
export const pythonTool: Tool = createPythonTool();
