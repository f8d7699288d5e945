/**
 * The operator's judge: an OpenAI-compatible chat-completions endpoint reached through the
 * `openai` package (fetch underneath, so the same code runs on Node and on Workers). Its URL,
 * model and key come from the server's settings (ENVWORKER_JUDGE_*), never from a request: a
 * reward function only hands over messages, so no client can aim the server at another address.
 *
 * Every call is bounded: at most `concurrency` at once on this server, shared fairly between
 * clients (episodes, connections), at most `clientConcurrency` for any one of them; a timeout per
 * attempt, retries with backoff (withRetry, as rollouts use), and a deadline over the whole ask,
 * queueing included. Answers are cached by the exact request (model, messages, sampling), up to a
 * bounded size. Every failure is a JudgeError with a code, which the rubric reports as that
 * reward's error: a judge outage costs the judged rewards, never the server.
 *
 * Every call a client causes (a /score item, an episode's reward; a cache hit is free) takes one
 * from its budget: a bucket of `clientCallsPerMinute` calls, refilled continuously at that rate
 * (ENVWORKER_JUDGE_CLIENT_CALLS_PER_MIN). An empty bucket refuses the call (JUDGE_BUDGET), which
 * refuses the client's request with 429: one request of many judged items cannot make the
 * operator's model answer more than the budget allows.
 */
import OpenAI from "openai";
import { JudgeError, type JudgeReply, type JudgeRequest, type JudgeService } from "../env/judge.ts";
import { classifyModelError, errorMessage, RetriesExhaustedError, withRetry, type RetryPolicy } from "../sched/retry.ts";
import { Limiter } from "../sched/limiter.ts";
import { anySignal } from "../sched/signals.ts";
import type { JudgeSettings } from "./config.ts";

/** Characters of cached answers at most (answers are short verdicts; this bounds the cache's memory). */
const CACHE_MAX_CHARS = 8 * 2 ** 20;
/** Backoff between attempts: 0.25 s doubling, capped at 4 s (the whole ask has a deadline anyway). */
const BACKOFF: Omit<RetryPolicy, "maxAttempts"> = { baseDelayMs: 250, maxDelayMs: 4000 };

/** Clients' buckets kept before the full ones are forgotten (a full bucket is a new one). */
const BUDGET_SWEEP_AT = 4096;

/** Judge calls per client: a bucket of `perMinute` calls, refilled continuously at that rate. */
export class CallBudget {
  private readonly buckets = new Map<string, { calls: number; at: number }>();
  /** The next sweep, at twice the buckets the last one kept: sweeping stays O(1) per new client. */
  private sweepAt = BUDGET_SWEEP_AT;

  constructor(
    readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Take one call for `key`: undefined when taken, else the seconds until its bucket is full again. */
  take(key: string): number | undefined {
    const b = this.refilled(key);
    if (b.calls >= 1) {
      b.calls -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil(((this.perMinute - b.calls) * 60) / this.perMinute));
  }

  /** Give back a call that was never made (cancelled while it waited for a slot). */
  refund(key: string): void {
    const b = this.refilled(key);
    b.calls = Math.min(this.perMinute, b.calls + 1);
  }

  /** Clients with a bucket kept. */
  get clients(): number {
    return this.buckets.size;
  }

  /** Calls `key` may make now. */
  available(key: string): number {
    return Math.floor(this.refilled(key).calls);
  }

  private refilled(key: string): { calls: number; at: number } {
    const t = this.now();
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.sweepAt) this.sweep(t);
      this.buckets.set(key, (b = { calls: this.perMinute, at: t }));
      return b;
    }
    b.calls = Math.min(this.perMinute, b.calls + ((t - b.at) * this.perMinute) / 60_000);
    b.at = t;
    return b;
  }

  private sweep(t: number): void {
    for (const [key, b] of this.buckets) if (b.calls + ((t - b.at) * this.perMinute) / 60_000 >= this.perMinute) this.buckets.delete(key);
    this.sweepAt = Math.max(BUDGET_SWEEP_AT, 2 * this.buckets.size);
  }
}

/** Who asks: the fairness key (an episode, a client) and a signal that fires when they give up. */
export interface JudgeScope {
  key: string;
  signal?: AbortSignal | undefined;
}

interface Cached {
  text: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
}

export class JudgeClient {
  private readonly openai: OpenAI;
  private readonly server: Limiter;
  private readonly clients = new Map<string, { limiter: Limiter; users: number }>();
  /** LRU (a Map's order) of answers by the digest of their request. */
  private readonly cache = new Map<string, Cached>();
  private cacheChars = 0;
  /** Calls per client (the scope's key) and minute. */
  readonly budget: CallBudget;

  constructor(
    readonly settings: JudgeSettings,
    /** For tests: the jitter of the backoff. */
    private readonly random: () => number = Math.random,
    /** For tests: the budget's clock. */
    now: () => number = Date.now,
  ) {
    this.openai = new OpenAI({ baseURL: settings.url, apiKey: settings.apiKey ?? "none", maxRetries: 0, timeout: settings.timeoutMs });
    this.server = new Limiter(settings.concurrency);
    this.budget = new CallBudget(settings.clientCallsPerMinute, now);
  }

  /** The judge as one caller sees it: its requests queue under its key and end with its signal. */
  forScope(scope: JudgeScope): JudgeService {
    return { ask: (request, options) => this.ask(request, { key: scope.key, signal: anySignal(scope.signal, options?.signal) }) };
  }

  /** The deadline of a whole ask, queueing included: every attempt timing out, with the backoff between. */
  get deadlineMs(): number {
    return (this.settings.retries + 1) * this.settings.timeoutMs + this.settings.retries * BACKOFF.maxDelayMs;
  }

  async ask(request: JudgeRequest, scope: JudgeScope): Promise<JudgeReply> {
    const model = this.settings.model ?? request.model;
    if (!model) throw new JudgeError("JUDGE_UNCONFIGURED", "no judge model: the operator sets ENVWORKER_JUDGE_MODEL (or the judge names a default model)");
    const chars = request.messages.reduce((n, m) => n + m.content.length, 0);
    if (chars > this.settings.maxRequestChars) {
      throw new JudgeError("JUDGE_INVALID", `the judge request holds ${chars} characters, more than ENVWORKER_JUDGE_MAX_REQUEST_CHARS (${this.settings.maxRequestChars})`);
    }
    const body = {
      model,
      messages: request.messages.map((m) => ({ role: m.role, content: m.content })),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
    };
    const key = this.settings.cacheEntries > 0 ? await digest(JSON.stringify(body)) : undefined;
    const hit = key === undefined ? undefined : this.fromCache(key);
    if (hit) {
      return { ...hit, cached: true, ms: 0, attempts: 0 };
    }
    const retryAfterS = this.budget.take(scope.key);
    if (retryAfterS !== undefined) {
      const n = this.settings.clientCallsPerMinute;
      throw new JudgeError(
        "JUDGE_BUDGET",
        `this client has used its judge calls (${n} a minute, ENVWORKER_JUDGE_CLIENT_CALLS_PER_MIN): retry in ${retryAfterS} s, with at most ${n} judged items a minute`,
        retryAfterS,
      );
    }
    const deadline = AbortSignal.timeout(this.deadlineMs);
    const signal = anySignal(scope.signal, deadline)!;
    const started = Date.now();
    let attempts = 0;
    try {
      const answer = await this.limited(scope.key, signal, () =>
        withRetry(
          async () => {
            attempts++;
            const completion = await this.openai.chat.completions.create(body, { signal, timeout: this.settings.timeoutMs });
            const text = completion.choices?.[0]?.message?.content;
            if (typeof text !== "string" || text === "") throw new JudgeError("JUDGE_FAILED", "the judge's answer has no text");
            return { text, model: completion.model || model, promptTokens: completion.usage?.prompt_tokens ?? 0, completionTokens: completion.usage?.completion_tokens ?? 0 };
          },
          { policy: { ...BACKOFF, maxAttempts: this.settings.retries + 1, random: this.random }, classify: classifyModelError, signal },
        ),
      );
      if (key !== undefined) this.toCache(key, answer);
      return { ...answer, cached: false, ms: Date.now() - started, attempts };
    } catch (err) {
      // Never sent (cancelled while it waited for a slot): the call was not made, nor is it counted.
      if (attempts === 0) this.budget.refund(scope.key);
      throw this.judgeError(err, scope.signal, deadline, attempts);
    }
  }

  /** A slot for `key` (its own cap), then one of the server's (shared fairly between keys). */
  private async limited<T>(key: string, signal: AbortSignal, task: () => Promise<T>): Promise<T> {
    let client = this.clients.get(key);
    if (!client) this.clients.set(key, (client = { limiter: new Limiter(this.settings.clientConcurrency), users: 0 }));
    client.users++;
    try {
      return await client.limiter.run(() => this.server.run(task, { key, signal }), { signal });
    } finally {
      // A client's limiter lives while it has requests: the map does not grow with every key ever seen.
      if (--client.users === 0) this.clients.delete(key);
    }
  }

  private judgeError(err: unknown, caller: AbortSignal | undefined, deadline: AbortSignal, attempts: number): JudgeError {
    if (err instanceof JudgeError) return err;
    if (caller?.aborted) return new JudgeError("JUDGE_CANCELLED", "the caller gave up on the judge's answer");
    const last = err instanceof RetriesExhaustedError ? err.last : err;
    const tries = attempts === 1 ? "1 attempt" : `${attempts} attempts`;
    if (deadline.aborted) {
      return new JudgeError("JUDGE_TIMEOUT", `the judge did not answer within ${this.deadlineMs / 1000} s (${tries}, queueing included)`);
    }
    if (last instanceof OpenAI.APIConnectionTimeoutError) {
      return new JudgeError("JUDGE_TIMEOUT", `the judge did not answer within ${this.settings.timeoutMs / 1000} s (${tries})`);
    }
    if (last instanceof JudgeError) return last;
    const status = last instanceof OpenAI.APIError && typeof last.status === "number" ? last.status : undefined;
    // The endpoint's own words (the SDK puts the status first), cut short: they are the
    // operator's, but have no business being long.
    const words = errorMessage(last).replace(/^\d{3}\s+/, "").slice(0, 300);
    return new JudgeError("JUDGE_FAILED", `the judge failed (${tries}): ${status === undefined ? "" : `HTTP ${status}: `}${words}`);
  }

  private fromCache(key: string): Cached | undefined {
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
    }
    return hit;
  }

  private toCache(key: string, value: Cached): void {
    if (value.text.length > CACHE_MAX_CHARS / 16) return;
    const old = this.cache.get(key);
    if (old) {
      this.cacheChars -= old.text.length;
      this.cache.delete(key);
    }
    this.cache.set(key, value);
    this.cacheChars += value.text.length;
    while (this.cache.size > this.settings.cacheEntries || this.cacheChars > CACHE_MAX_CHARS) {
      const [oldest, v] = this.cache.entries().next().value!;
      this.cache.delete(oldest);
      this.cacheChars -= v.text.length;
    }
  }

  get cacheSize(): number {
    return this.cache.size;
  }
}

/** SHA-256 of the request, hex: the cache keeps 64 characters per request, not the request. */
async function digest(text: string): Promise<string> {
  const bytes = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * One judge client per settings in this isolate: on Workers the Worker and every Durable Object
 * in it share one cache and one concurrency cap, as the threads of a Node server do.
 */
const clients = new Map<string, JudgeClient>();
export function sharedJudgeClient(settings: JudgeSettings): JudgeClient {
  const id = JSON.stringify(settings);
  let client = clients.get(id);
  if (!client) clients.set(id, (client = new JudgeClient(settings)));
  return client;
}
