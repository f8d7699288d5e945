/**
 * Retries for the calls a rollout makes: exponential backoff with jitter, `Retry-After` honoured,
 * everything abortable. Our own loop rather than the OpenAI SDK's built-in retries: the SDK's
 * backoff starts at 0.5 s and cannot be configured, and its sleeps do not listen to the abort
 * signal, so a test could not run it fast and a timed-out rollout would keep sleeping.
 */
import { APIConnectionError, APIError, APIUserAbortError } from "openai";

export interface RetryPolicy {
  /** Attempts in all, the first included (default 5). 1 = no retries. */
  maxAttempts: number;
  /** Delay before the first retry; doubles each time (default 500 ms). */
  baseDelayMs: number;
  /** Backoff delays are capped here (default 30 s). `Retry-After` is honoured beyond it. */
  maxDelayMs: number;
  /** Source of jitter in [0, 1); injectable for tests. */
  random?: () => number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 30_000 };

export interface RetryDecision {
  retry: boolean;
  /** What the server asked for (`Retry-After`), in ms; replaces the backoff delay. */
  afterMs?: number | undefined;
}

/** Thrown when the attempts are used up: the last error, and how many attempts it took. */
export class RetriesExhaustedError extends Error {
  constructor(
    readonly last: unknown,
    readonly attempts: number,
  ) {
    super(`${errorMessage(last)} (gave up after ${attempts} attempts)`);
    this.name = "RetriesExhaustedError";
  }
}

/** Backoff before retry number `retry` (1-based): base·2^(retry-1), capped, times a jitter in [0.5, 1). */
export function backoffDelay(retry: number, policy: RetryPolicy): number {
  const raw = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  const r = (policy.random ?? Math.random)();
  return raw * (0.5 + 0.5 * r);
}

/**
 * `Retry-After` (RFC 9110: delay-seconds or an HTTP date) and the non-standard `retry-after-ms`,
 * in ms from `now`; undefined when absent or unparsable. A date in the past means "now" (0).
 */
export function parseRetryAfter(headers: Headers | undefined | null, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get("retry-after-ms");
  if (ms !== null && ms.trim() !== "" && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Number(ms);
  const raw = headers.get("retry-after");
  if (raw === null || raw.trim() === "") return undefined;
  const value = raw.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** A sleep that ends early (rejecting with the signal's reason) when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** HTTP statuses worth another try: rate limits, request timeouts and server-side failures. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status === 408 || status >= 500;
}

/** OpenAI SDK errors: 429 (with its Retry-After), 408, 5xx and connection failures retry. */
export function classifyModelError(err: unknown, now = Date.now()): RetryDecision {
  if (err instanceof APIUserAbortError) return { retry: false };
  // Connection errors (refused, reset, the SDK's own request timeout) have no status.
  if (err instanceof APIConnectionError) return { retry: true };
  if (err instanceof APIError && typeof err.status === "number") {
    if (!isRetryableStatus(err.status)) return { retry: false };
    return { retry: true, afterMs: parseRetryAfter(err.headers, now) };
  }
  return { retry: false };
}

export interface RetryOptions {
  policy: RetryPolicy;
  classify: (err: unknown) => RetryDecision;
  signal?: AbortSignal | undefined;
  /** Called before each wait: the retry number (1-based), the delay and the error. */
  onRetry?: (retry: number, delayMs: number, err: unknown) => void;
}

/**
 * Run `fn` until it succeeds, the error is not retryable, the attempts are used up
 * (RetriesExhaustedError) or the signal aborts (its reason is thrown).
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  const attempts = Math.max(1, Math.floor(opts.policy.maxAttempts));
  for (let attempt = 1; ; attempt++) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    try {
      return await fn(attempt);
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      const decision = opts.classify(err);
      if (!decision.retry) throw err;
      if (attempt >= attempts) throw new RetriesExhaustedError(err, attempt);
      const delay = decision.afterMs ?? backoffDelay(attempt, opts.policy);
      opts.onRetry?.(attempt, delay, err);
      await sleep(delay, opts.signal);
    }
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

/**
 * The OpenAI SDK's connection errors say only "Connection error.": name the URL it was sending to
 * and the cause underneath (refused, not resolving, reset). The error keeps its class, so it is
 * still classified (and retried) as a connection error.
 */
export function explainConnectionError(err: unknown, url: string): unknown {
  if (!(err instanceof APIConnectionError) || err instanceof APIUserAbortError) return err;
  let cause: unknown = err.cause;
  // fetch's TypeError("fetch failed") wraps the system error that says what happened.
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
  const why = cause instanceof Error ? describeCause(cause as Error & { code?: string }) : undefined;
  err.message = `cannot reach ${url}${why ? `: ${why}` : ` (${err.message})`}`;
  return err;
}

function describeCause(err: Error & { code?: string }): string {
  const code = err.code ? `${err.code}` : "";
  return err.message && code && !err.message.includes(code) ? `${code} ${err.message}` : err.message || code;
}
