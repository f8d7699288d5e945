/**
 * The judge's settings (ENVWORKER_JUDGE_*), read from the server's environment (Node) or its
 * vars and secrets (Workers). Apart from the client so that reading the config costs no SDK.
 */
export interface JudgeSettings {
  /** Base URL of the chat-completions API, e.g. https://api.openai.com/v1 (ENVWORKER_JUDGE_URL). */
  url: string;
  /** ENVWORKER_JUDGE_MODEL; when unset, the judge's own default (defineJudge's `model`). */
  model: string | undefined;
  /** ENVWORKER_JUDGE_API_KEY. */
  apiKey: string | undefined;
  /** One attempt's limit (ENVWORKER_JUDGE_TIMEOUT_S, default 60 s). */
  timeoutMs: number;
  /** Attempts after the first (ENVWORKER_JUDGE_RETRIES, default 2). */
  retries: number;
  /** Calls at once on this server (ENVWORKER_JUDGE_CONCURRENCY, default 16). */
  concurrency: number;
  /** Calls at once for one client or episode (ENVWORKER_JUDGE_CLIENT_CONCURRENCY, default 4). */
  clientConcurrency: number;
  /** Cached answers at most (ENVWORKER_JUDGE_CACHE_ENTRIES, default 4096; 0 = no cache). */
  cacheEntries: number;
  /** Characters of a request's messages at most (ENVWORKER_JUDGE_MAX_REQUEST_CHARS, default 200000). */
  maxRequestChars: number;
}

function int(env: Record<string, string | undefined>, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  return n;
}

/** A positive number of seconds (fractions allowed: a judge's answer takes seconds, not minutes). */
function seconds(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number of seconds, got ${JSON.stringify(raw)}`);
  return n;
}

/** The judge's settings, or undefined when the operator configured none (ENVWORKER_JUDGE_URL unset). */
export function judgeSettingsFromEnv(env: Record<string, string | undefined>): JudgeSettings | undefined {
  const url = env.ENVWORKER_JUDGE_URL?.trim();
  if (!url) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`ENVWORKER_JUDGE_URL must be an http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error(`ENVWORKER_JUDGE_URL must be an http(s) URL, got ${JSON.stringify(url)}`);
  return {
    url: url.replace(/\/+$/, ""),
    model: env.ENVWORKER_JUDGE_MODEL?.trim() || undefined,
    apiKey: env.ENVWORKER_JUDGE_API_KEY || undefined,
    timeoutMs: seconds(env, "ENVWORKER_JUDGE_TIMEOUT_S", 60) * 1000,
    retries: int(env, "ENVWORKER_JUDGE_RETRIES", 2),
    concurrency: int(env, "ENVWORKER_JUDGE_CONCURRENCY", 16, 1),
    clientConcurrency: int(env, "ENVWORKER_JUDGE_CLIENT_CONCURRENCY", 4, 1),
    cacheEntries: int(env, "ENVWORKER_JUDGE_CACHE_ENTRIES", 4096),
    maxRequestChars: int(env, "ENVWORKER_JUDGE_MAX_REQUEST_CHARS", 200_000, 1),
  };
}

