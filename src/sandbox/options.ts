/**
 * Host-side preparation of a run, shared by the backends: validate the limits (a bad limit is a
 * caller bug, so it throws), strip TypeScript (a bad program is the guest's problem, so it becomes an
 * error result) and serialise the guest's inputs once, as JSON, so nothing host-side is ever shared.
 */
import { CancelledError } from "../sched/limiter.ts";
import { timeoutError } from "./report.ts";
import { DEFAULT_LIMITS, type RunLimits, type RunOptions, type RunResult } from "./types.ts";
import { stripTypes } from "./typescript.ts";

const BOUNDS: Record<keyof RunLimits, [min: number, max: number]> = {
  timeoutMs: [1, 10 * 60_000],
  // isolated-vm refuses less than 8 MiB.
  memoryMb: [8, 4096],
  // sandboxes.md: with the sync QuickJS build anything above 384 KiB can overflow the host's stack.
  stackKb: [16, 384],
  maxOutputBytes: [0, 64 * 1024 * 1024],
};

export function resolveLimits(options: RunOptions = {}): RunLimits {
  const limits = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(BOUNDS) as (keyof RunLimits)[]) {
    const value = options[key];
    if (value === undefined) continue;
    const [min, max] = BOUNDS[key];
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      throw new RangeError(`sandbox: ${key} must be an integer in [${min}, ${max}], got ${String(value)}`);
    }
    limits[key] = value;
  }
  return limits;
}

/** What the guest-side prelude receives (as a JSON string) at the start of a run. */
export interface GuestConfig {
  globals: Record<string, unknown>;
  stdin: string;
  /** Caps the guest applies itself, in UTF-16 code units (the host then enforces UTF-8 bytes). */
  maxOutputChars: number;
  maxResultChars: number;
}

export interface PreparedRun {
  limits: RunLimits;
  /** JavaScript to run (types already stripped). */
  source: string;
  configJson: string;
  /** Time already spent preparing (type stripping), counted against the run's time limit. */
  spentMs: number;
}

export type Preparation = { ok: true; run: PreparedRun } | { ok: false; result: RunResult };

export function prepareRun(code: string, options: RunOptions = {}): Preparation {
  if (typeof code !== "string") throw new TypeError("sandbox: code must be a string");
  const limits = resolveLimits(options);
  if (options.stdin !== undefined && typeof options.stdin !== "string") throw new TypeError("sandbox: stdin must be a string");
  if (options.queueKey !== undefined && typeof options.queueKey !== "string") throw new TypeError("sandbox: queueKey must be a string");
  if (options.client !== undefined && typeof options.client !== "string") throw new TypeError("sandbox: client must be a string");
  const globals = options.globals ?? {};
  if (typeof globals !== "object" || globals === null || Array.isArray(globals)) throw new TypeError("sandbox: globals must be an object");
  const config: GuestConfig = {
    globals,
    stdin: options.stdin ?? "",
    maxOutputChars: limits.maxOutputBytes,
    maxResultChars: limits.maxOutputBytes,
  };
  // Throws (TypeError) on cycles / BigInt: the caller handed in something that is not JSON.
  const configJson = JSON.stringify(config);

  let source = code;
  let spentMs = 0;
  if (options.ts) {
    // Stripping cost grows with the input (quadratically on some inputs): it must only ever run
    // where a watchdog can stop it (a sandbox thread or process), or on Workers under the CPU limit.
    const started = performance.now();
    const stripped = stripTypes(code);
    spentMs = performance.now() - started;
    if (!stripped.ok) return { ok: false, result: errorResult(stripped.name, stripped.message, spentMs) };
    if (spentMs >= limits.timeoutMs) {
      const error = timeoutError(limits);
      error.message += " (stripping the TypeScript types took all of it)";
      return { ok: false, result: { ok: false, result: null, stdout: "", stderr: "", error, elapsedMs: spentMs } };
    }
    source = stripped.code;
  }
  return { ok: true, run: { limits, source, configJson, spentMs } };
}

export function errorResult(name: string, message: string, elapsedMs: number, stdout = "", stderr = ""): RunResult {
  return { ok: false, result: null, stdout, stderr, error: { name, message }, elapsedMs };
}

/**
 * The result of a run whose caller gave up: `cause` is the queue's CancelledError, or, for a run
 * stopped while running, the signal that aborted.
 */
export function cancelledResult(cause: CancelledError | AbortSignal | undefined, elapsedMs = 0): RunResult {
  if (cause instanceof CancelledError) return errorResult("CancelledError", cause.message, elapsedMs);
  const reason: unknown = cause?.reason;
  const why = reason instanceof Error ? reason.message : typeof reason === "string" ? reason : "its caller gave up";
  return errorResult("CancelledError", `the run was cancelled while running: ${why}`, elapsedMs);
}

/** `limiter.run` for a sandbox run: queue under the run's key and signal; a cancelled wait becomes a result. */
export async function queued(
  limiter: { run<T>(task: () => Promise<T>, options: { key?: string; group?: string; signal?: AbortSignal }): Promise<T> },
  options: RunOptions,
  task: () => Promise<RunResult>,
): Promise<RunResult> {
  try {
    return await limiter.run(
      () => {
        options.onStart?.();
        return task();
      },
      { key: options.queueKey, group: options.client, signal: options.signal },
    );
  } catch (err) {
    if (err instanceof CancelledError) return cancelledResult(err);
    throw err;
  }
}
