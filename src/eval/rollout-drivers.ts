/**
 * The episode side of a rollout behind one small interface: reset, step, close. Two
 * implementations: in-process (the same StoreEpisodeHost the HTTP routes use, on a private
 * memory store) and remote (the HTTP routes of an envworker server, with fetch).
 */
import { z } from "zod";
import type { Environment } from "../env/environment.ts";
import type { Services } from "../env/services.ts";
import type { StepResult } from "../env/episode.ts";
import { episodeKey, StoreEpisodeHost } from "../server/episode-host.ts";
import { inlineEngine, type ScopeServices } from "../server/engine.ts";
import { MemoryEpisodeStore } from "../server/episode-store.ts";
import { ApiError } from "../env/errors.ts";
import type { Action, JsonObject } from "../env/messages.ts";
import { ActionSchema } from "../server/protocol.ts";
import { DEFAULT_RETRY, isRetryableStatus, parseRetryAfter, withRetry, type RetryDecision, type RetryPolicy } from "../sched/retry.ts";

/** What a rollout sends to reset: the same fields as POST /envs/{name}/reset. */
export interface ResetParams {
  seed?: number | undefined;
  index?: number | undefined;
  split?: string | undefined;
  args?: Record<string, unknown> | undefined;
}

/** The example's answer and info: in process from the store, remotely once the episode is done (GET /state). */
export interface ExampleDetails {
  answer: string;
  info: JsonObject;
}

/** What GET /state holds of them (only for a finished episode; absent before). */
const ExampleDetailsSchema = z.object({ answer: z.string(), info: z.record(z.string(), z.unknown()) });

export interface EpisodeDriver {
  /** The environment's name. */
  readonly env: string;
  /** "in-process" or the server's origin. */
  readonly location: string;
  reset(params: ResetParams, signal?: AbortSignal): Promise<StepResult>;
  step(episodeId: string, action: Action, signal?: AbortSignal): Promise<StepResult>;
  /** Forget the episode. Never throws: a failed close only leaks until the server's idle timeout. */
  close(episodeId: string): Promise<void>;
  /**
   * The example's answer and info, when this driver can see them (in process; remotely a finished
   * episode's: `finished` says whether it is); else null.
   */
  example(episodeId: string, finished: boolean): Promise<ExampleDetails | null>;
}

/** A failed reset/step, from either driver: the wire's error code and message. */
export class EnvCallError extends Error {
  constructor(
    readonly operation: "reset" | "step" | "close" | "state" | "metadata" | "examples",
    readonly code: string,
    message: string,
    readonly status?: number | undefined,
  ) {
    super(`${operation}: ${code}: ${message}`);
    this.name = "EnvCallError";
  }
}

/** Episodes in this process: no HTTP, but the same validation and engine as the server. */
export class InProcessDriver implements EpisodeDriver {
  readonly location = "in-process";
  readonly store: MemoryEpisodeStore;
  private readonly host: StoreEpisodeHost;

  constructor(
    readonly environment: Environment,
    opts: { maxEpisodes?: number; services?: Services | ScopeServices } = {},
  ) {
    this.store = new MemoryEpisodeStore({ maxEpisodes: opts.maxEpisodes ?? 1_000_000, idleTimeoutMs: 24 * 3600_000 });
    // The sandbox (and anything else the platform provides) for tools and code-running rewards.
    this.host = new StoreEpisodeHost(this.store, inlineEngine(opts.services ?? {}));
  }

  get env(): string {
    return this.environment.name;
  }

  async reset(params: ResetParams): Promise<StepResult> {
    try {
      return await this.host.reset(this.environment, params, undefined);
    } catch (err) {
      throw asEnvError("reset", err);
    }
  }

  async step(episodeId: string, action: Action): Promise<StepResult> {
    // The HTTP route validates the action against the wire schema; so do we, so a malformed model
    // reply fails the same way in both modes.
    const parsed = ActionSchema.safeParse(action);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
      throw new EnvCallError("step", "VALIDATION_ERROR", `the action does not match the schema (${issues})`, 400);
    }
    try {
      return await this.host.step(this.environment, episodeId, parsed.data as Action, undefined);
    } catch (err) {
      throw asEnvError("step", err);
    }
  }

  async close(episodeId: string): Promise<void> {
    this.store.delete(episodeKey(undefined, episodeId));
  }

  async example(episodeId: string): Promise<ExampleDetails | null> {
    const s = this.store.get(episodeKey(undefined, episodeId));
    return s ? { answer: s.answer, info: s.info } : null;
  }
}

function asEnvError(op: EnvCallError["operation"], err: unknown): EnvCallError {
  if (err instanceof EnvCallError) return err;
  if (err instanceof ApiError) return new EnvCallError(op, err.code, err.message, err.status);
  return new EnvCallError(op, "INTERNAL_ERROR", err instanceof Error ? err.message : String(err), 500);
}

export interface RemoteDriverOptions {
  /** Retries of reset (and close) on 429, 502/503/504 and network errors. Steps are never retried. */
  retry?: RetryPolicy;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
}

/**
 * An envworker server's HTTP routes. `origin` is the server's base URL; the environment lives at
 * `{origin}/envs/{env}`. Only reset and close are retried: a step is not idempotent (a step that
 * reached the server but whose reply was lost must not be applied twice).
 */
export class RemoteDriver implements EpisodeDriver {
  readonly location: string;
  private readonly base: string;
  private readonly retry: RetryPolicy;
  private readonly headers: Record<string, string>;
  private readonly fetch: typeof fetch;

  constructor(
    origin: string,
    readonly env: string,
    opts: RemoteDriverOptions = {},
  ) {
    const root = origin.replace(/\/+$/, "");
    // What is shown (summaries, errors, metadata.json): a /t/{token}/ path prefix is masked.
    this.location = redactUrl(root);
    this.base = `${root}/envs/${encodeURIComponent(env)}`;
    this.retry = opts.retry ?? DEFAULT_RETRY;
    this.headers = opts.headers ?? {};
    this.fetch = opts.fetch ?? globalThis.fetch;
  }

  /** GET /envs/{env}/metadata: checks the server and the environment before a run. */
  async metadata(signal?: AbortSignal): Promise<JsonObject> {
    return (await this.call("metadata", "GET", "/metadata", undefined, signal)) as JsonObject;
  }

  reset(params: ResetParams, signal?: AbortSignal): Promise<StepResult> {
    return withRetry(() => this.call("reset", "POST", "/reset", params, signal) as Promise<StepResult>, {
      policy: this.retry,
      classify: classifyEnvError,
      signal,
    });
  }

  step(episodeId: string, action: Action, signal?: AbortSignal): Promise<StepResult> {
    return this.call("step", "POST", "/step", { episode_id: episodeId, action }, signal) as Promise<StepResult>;
  }

  async close(episodeId: string): Promise<void> {
    try {
      await withRetry(() => this.call("close", "POST", "/close", { episode_id: episodeId }, AbortSignal.timeout(10_000)), {
        policy: { ...this.retry, maxAttempts: Math.min(this.retry.maxAttempts, 3) },
        classify: classifyEnvError,
      });
    } catch {
      // Best effort: the server drops idle episodes by itself.
    }
  }

  /** GET /state of the finished episode: once it is done the server tells its owner the answer and info. */
  async example(episodeId: string, finished: boolean): Promise<ExampleDetails | null> {
    if (!finished) return null;
    const state = await this.call("state", "GET", `/state?episode_id=${encodeURIComponent(episodeId)}`, undefined, AbortSignal.timeout(30_000));
    const known = ExampleDetailsSchema.safeParse(state);
    return known.success ? { answer: known.data.answer, info: known.data.info as JsonObject } : null;
  }

  /** POST /examples with count 0: how many examples the split has for these args (`total`). */
  async exampleTotal(split: string | undefined, args: Record<string, unknown> | undefined, signal?: AbortSignal): Promise<number> {
    const r = (await this.call("examples", "POST", "/examples", { count: 0, ...(split ? { split } : {}), ...(args ? { args } : {}) }, signal)) as { total?: unknown };
    if (typeof r?.total !== "number") throw new EnvCallError("examples", "NO_TOTAL", `POST ${redactUrl(this.base)}/examples gives no total: the environment generates its examples`);
    return r.total;
  }

  private async call(op: EnvCallError["operation"], method: string, path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    let res: Response;
    try {
      res = await this.fetch(`${this.base}${path}`, {
        method,
        headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...this.headers },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ?? null,
      });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw new EnvCallError(op, "NETWORK_ERROR", `${method} ${redactUrl(this.base)}${path}: ${causeMessage(err)}`);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const e = (json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
      const code = typeof e?.code === "string" ? e.code : `HTTP_${res.status}`;
      const message = typeof e?.message === "string" ? e.message : text.slice(0, 200) || res.statusText;
      const err = new EnvCallError(op, code, message, res.status);
      (err as EnvCallError & { retryAfterMs?: number }).retryAfterMs = parseRetryAfter(res.headers);
      throw err;
    }
    if (json === undefined) throw new EnvCallError(op, "INVALID_RESPONSE", `${method} ${redactUrl(this.base)}${path} did not return JSON`, res.status);
    return json;
  }
}

/** An envworker URL fit to print: the token of a `/t/{token}/` path prefix becomes `***`. */
export function redactUrl(url: string): string {
  return url.replace(/\/t\/[^/?#]+/, "/t/***");
}

function classifyEnvError(err: unknown): RetryDecision {
  if (!(err instanceof EnvCallError)) return { retry: false };
  if (err.code === "NETWORK_ERROR") return { retry: true };
  // 500 is envworker's own failure (INTERNAL_ERROR): deterministic, not retried; an environment's
  // code failing is 422 EXECUTION_ERROR, not retried either.
  const s = err.status;
  if (s !== undefined && isRetryableStatus(s) && s !== 500) {
    return { retry: true, afterMs: (err as EnvCallError & { retryAfterMs?: number }).retryAfterMs };
  }
  return { retry: false };
}

/** undici's "fetch failed" hides the useful part in `cause`. */
function causeMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
}
