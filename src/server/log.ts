/**
 * The server's log: one line per event, `ENVWORKER_LOG=info|warn|error` (default warn). At info,
 * one line per request; errors are always written: every failure of an environment's own code,
 * with the environment, the episode and the stack under the line.
 *
 * A process-wide logger, because what logs (routes, episode hosts, Durable Objects) is built in
 * many places and the operator sets one level. Lines go to stderr (console.error), so a command's
 * own output on stdout (serve's URL list, validate's report) stays clean.
 */
import { ApiError } from "../env/errors.ts";
import { readSetting } from "../settings/settings.ts";

export const LOG_LEVELS = ["info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const RANK: Record<LogLevel, number> = { info: 0, warn: 1, error: 2 };

/** Extra facts of a line, printed as `key=value` (values JSON-quoted when they hold spaces). */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  readonly level: LogLevel;
  enabled(level: LogLevel): boolean;
  info(message: string, fields?: LogFields): void;
  /** An `error`'s stack (or message) is printed under the line. */
  warn(message: string, fields?: LogFields, error?: unknown): void;
  error(message: string, fields?: LogFields, error?: unknown): void;
}

/** ENVWORKER_LOG from `vars`, validated; `warn` when unset. */
export function logLevelFromEnv(vars: Record<string, string | undefined>): LogLevel {
  const raw = readSetting("ENVWORKER_LOG", vars);
  if (raw === undefined || raw === "") return "warn";
  if ((LOG_LEVELS as readonly string[]).includes(raw)) return raw as LogLevel;
  throw new Error(`ENVWORKER_LOG must be one of ${LOG_LEVELS.join(", ")}; got ${JSON.stringify(raw)}`);
}

function formatFields(fields: LogFields | undefined): string {
  if (!fields) return "";
  let out = "";
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    const s = String(v);
    out += ` ${k}=${/[\s"=]/.test(s) || s === "" ? JSON.stringify(s) : s}`;
  }
  return out;
}

/** The stack of an error (and of its causes), or its message. */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  let e: unknown = error;
  for (let depth = 0; e !== undefined && depth < 4; depth++) {
    parts.push(e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : String(e));
    e = e instanceof Error ? e.cause : undefined;
    if (e !== undefined) parts.push("caused by:");
  }
  return parts.join("\n");
}

export function createLogger(level: LogLevel, write: (line: string) => void = (line) => console.error(line)): Logger {
  const line = (lvl: LogLevel, message: string, fields?: LogFields) => `${new Date().toISOString()} ${lvl} ${message}${formatFields(fields)}`;
  return {
    level,
    enabled: (l) => RANK[l] >= RANK[level],
    info(message, fields) {
      if (RANK.info >= RANK[level]) write(line("info", message, fields));
    },
    warn(message, fields, error) {
      if (RANK.warn >= RANK[level]) write(withStack(line("warn", message, fields), error));
    },
    error(message, fields, error) {
      write(withStack(line("error", message, fields), error));
    },
  };
}

function withStack(line: string, error: unknown): string {
  return error === undefined ? line : `${line}\n${indent(describeError(error))}`;
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((l) => `    ${l}`)
    .join("\n");
}

function processEnv(): Record<string, string | undefined> {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return p?.env ?? {};
}

let current: Logger = createLogger(safeLevel(processEnv()));

function safeLevel(vars: Record<string, string | undefined>): LogLevel {
  try {
    return logLevelFromEnv(vars);
  } catch {
    return "warn";
  }
}

/** The process-wide logger. */
export function logger(): Logger {
  return current;
}

/** Replace the process-wide logger (the CLI sets the level from ENVWORKER_LOG; tests capture lines). */
export function setLogger(next: Logger): void {
  current = next;
}

/** A request path fit for a log: the token of a `/t/{token}/` prefix and of `?token=` become `***`. */
export function redactPath(path: string): string {
  return path.replace(/^\/t\/[^/]+/, "/t/***").replace(/([?&]token=)[^&]*/g, "$1***");
}

/**
 * Log a failure of the environment's own code (or of ours: INTERNAL_ERROR) with the environment,
 * the episode and the stack. Client mistakes are not logged, except those the environment's code
 * threw on (a generator refusing the args: VALIDATION_ERROR with a cause), at warn.
 */
export function logEnvironmentError(envName: string, episodeId: string | undefined, what: string, err: unknown): void {
  const api = err instanceof ApiError ? err : undefined;
  const ours = api === undefined || api.code === "EXECUTION_ERROR" || api.code === "INTERNAL_ERROR";
  if (!ours && api?.cause === undefined) return;
  const message = err instanceof Error ? err.message : String(err);
  const fields = { env: envName, episode: episodeId };
  // An EXECUTION_ERROR without a cause is a check of what the environment returned (its state not
  // JSON): its message names the author's function; our own stack would only point into the engine.
  const stack = api?.cause !== undefined ? api.cause : api?.code === "EXECUTION_ERROR" ? undefined : err;
  if (ours) logger().error(`${what} failed: ${message}`, fields, stack);
  else logger().warn(`${what} refused: ${message}`, fields, stack);
}
