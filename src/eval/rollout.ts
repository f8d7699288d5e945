/**
 * Rollouts: one episode of an environment played by an OpenAI-compatible chat-completions model.
 * The observation's messages (and tools) go to the model; its reply (content, tool calls,
 * reasoning) is the action; repeat until the episode is done. The episode side is an
 * EpisodeDriver (in-process or a remote envworker), so the same loop evaluates both.
 *
 * Failures stay inside their rollout: a model that keeps failing, an environment error or a
 * timeout is recorded in that rollout's result and the run goes on.
 */
import type OpenAI from "openai";
import { OpenAIError } from "openai";
import type { StepResult } from "../env/episode.ts";
import type { Action, AssistantMessage, JsonObject, Message, ToolCall } from "../env/messages.ts";
import type { EpisodeDriver, ResetParams } from "./rollout-drivers.ts";
import { EnvCallError } from "./rollout-drivers.ts";
import { SERVICE_ERRORS } from "../env/service-failures.ts";
import { serviceErrorsOf } from "./report.ts";
import type { RolloutResult, RolloutTiming, Usage } from "./rollout-result.ts";
import { classifyModelError, DEFAULT_RETRY, errorMessage, explainConnectionError, RetriesExhaustedError, withRetry, type RetryPolicy } from "../sched/retry.ts";

export * from "./rollout-drivers.ts";
export * from "../sched/retry.ts";
export type { RolloutResult, RolloutTiming, Usage } from "./rollout-result.ts";

export interface ModelSettings {
  client: OpenAI;
  model: string;
  /** Merged into every chat-completions request (max_tokens, temperature, ...). */
  sampling?: Record<string, unknown>;
}

export interface RolloutOptions {
  model: ModelSettings;
  driver: EpisodeDriver;
  reset: ResetParams;
  example_id: number;
  rollout: number;
  retry?: RetryPolicy;
  /** The whole rollout (every model call and step) must finish within this (default 10 min). */
  timeoutMs?: number;
  /** Stops the rollout early (Ctrl-C); recorded as an error like a timeout. */
  signal?: AbortSignal;
  /** Model turns before giving up, in case an environment never ends (default 1000). */
  maxTurns?: number;
}

export class RolloutTimeoutError extends Error {
  constructor(ms: number) {
    super(`timed out: the rollout took longer than ${formatSeconds(ms)}`);
    this.name = "RolloutTimeoutError";
  }
}

function formatSeconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Number((ms / 1000).toFixed(3))} s`;
}

const emptyUsage = (): Usage => ({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });

/** Play one episode. Never throws: failures end up in `error`. */
export async function runRollout(opts: RolloutOptions): Promise<RolloutResult> {
  const started = performance.now();
  const timeoutMs = opts.timeoutMs ?? 600_000;
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new RolloutTimeoutError(timeoutMs)), timeoutMs);
  const signal = opts.signal ? AbortSignal.any([timeout.signal, opts.signal]) : timeout.signal;
  const { driver } = opts;

  const result = blankResult({ example_id: opts.example_id, rollout: opts.rollout, reset: opts.reset });
  const envCall = async <T>(fn: () => Promise<T>): Promise<T> => {
    const t = performance.now();
    try {
      return await abortable(fn(), signal);
    } finally {
      result.timing.env_ms += performance.now() - t;
    }
  };
  const note = (r: StepResult) => {
    if (r.observation.info) {
      // Each step lists its own service failures: the rollout keeps every step's.
      const earlier = serviceErrorsOf(result);
      Object.assign(result.env_info, r.observation.info);
      const now = serviceErrorsOf(result);
      if (earlier && now !== earlier) result.env_info[SERVICE_ERRORS] = [...earlier, ...(now ?? [])];
    }
    const tools = (r.observation as { tools?: unknown[] }).tools;
    if (Array.isArray(tools) && tools.length > 0) currentTools = tools;
  };
  let currentTools: unknown[] | undefined;

  try {
    const first = await envCall(() => driver.reset(opts.reset, signal));
    result.episode_id = first.episode_id;
    result.prompt = first.observation.messages;
    note(first);
    const conversation: Message[] = [...first.observation.messages];
    let done = first.done;
    let last = first;
    const maxTurns = opts.maxTurns ?? 1000;
    while (!done) {
      if (result.turns >= maxTurns) throw new Error(`the episode did not end after ${maxTurns} model turns`);
      const t = performance.now();
      let reply;
      try {
        reply = await chat(opts, conversation, currentTools, signal, () => result.retries++);
      } finally {
        result.timing.generation_ms += performance.now() - t;
      }
      addUsage(result.usage, reply.usage);
      const action = toAction(reply.message);
      const turn: AssistantMessage = { role: "assistant", ...action };
      result.completion.push(turn);
      conversation.push(turn);
      result.turns += 1;

      const s = performance.now();
      last = await envCall(() => driver.step(first.episode_id, action, signal));
      const stepMs = performance.now() - s;
      note(last);
      result.completion.push(...last.observation.messages);
      conversation.push(...last.observation.messages);
      done = last.done;
      if (done) result.timing.scoring_ms = stepMs;
    }
    result.done = true;
    result.truncated = last.observation.truncated;
    result.reward = last.reward;
    result.metrics = last.observation.metrics ?? {};
  } catch (err) {
    result.error = describeError(signal.aborted ? signal.reason : err);
    if (opts.signal?.aborted && !timeout.signal.aborted) result.interrupted = true;
  } finally {
    clearTimeout(timer);
  }
  if (result.episode_id !== null) {
    const id = result.episode_id;
    const t = performance.now();
    try {
      const ex = await driver.example(id, result.done);
      if (ex) {
        result.answer = ex.answer;
        result.info = ex.info;
      }
      await driver.close(id);
    } catch {
      // close is best effort
    }
    result.timing.env_ms += performance.now() - t;
  }
  result.timing.total_ms = performance.now() - started;
  for (const k of Object.keys(result.timing) as (keyof RolloutTiming)[]) result.timing[k] = Math.round(result.timing[k] * 1000) / 1000;
  return result;
}

/** In-process calls ignore signals: race them so a timeout still ends the rollout. */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

function describeError(err: unknown): string {
  if (err instanceof RolloutTimeoutError) return err.message;
  if (err instanceof EnvCallError) return `environment: ${err.message}`;
  if (err instanceof ModelReplyError) return `model: ${err.message}`;
  if (err instanceof RetriesExhaustedError) return `${err.last instanceof EnvCallError ? "environment" : "model"}: ${err.message}`;
  if (err instanceof OpenAIError) return `model: ${errorMessage(err)}`;
  if (err instanceof RunInterruptedError) return err.message;
  if (err instanceof DOMException && err.name === "AbortError") return "aborted";
  return errorMessage(err);
}

/** The model's reply could not be turned into an action. */
export class ModelReplyError extends Error {
  override name = "ModelReplyError";
}

interface ModelMessage {
  content?: unknown;
  tool_calls?: unknown;
  reasoning_content?: unknown;
  reasoning?: unknown;
}

/** One chat-completions call, retried on 429 / 5xx / network errors. */
async function chat(
  opts: RolloutOptions,
  conversation: readonly Message[],
  tools: unknown[] | undefined,
  signal: AbortSignal,
  onRetry: () => void,
): Promise<{ message: ModelMessage; usage: Partial<Usage> | undefined }> {
  const { client, model, sampling } = opts.model;
  const body: Record<string, unknown> = { ...(sampling ?? {}), model, messages: conversation.map(forModel) };
  if (tools && tools.length > 0) body.tools = tools;
  const completion = await withRetry(
    () =>
      client.chat.completions.create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming, { signal, maxRetries: 0 }).catch((err: unknown) => {
        throw explainConnectionError(err, `${String(client.baseURL).replace(/\/+$/, "")}/chat/completions`);
      }),
    { policy: opts.retry ?? DEFAULT_RETRY, classify: (e) => classifyModelError(e), signal, onRetry },
  );
  const choice = completion?.choices?.[0];
  if (!choice || !choice.message) throw new ModelReplyError("the response has no choices");
  return { message: choice.message as ModelMessage, usage: (completion.usage ?? undefined) as Partial<Usage> | undefined };
}

/**
 * A conversation message as the model gets it back: our own reasoning is not replayed (most chat
 * templates drop earlier turns' reasoning, and some APIs reject the field).
 */
function forModel(m: Message): Message {
  if (m.role !== "assistant" || m.reasoning_content === undefined) return m;
  const { reasoning_content: _drop, ...rest } = m;
  return rest;
}

/**
 * The model's message → the action: content, tool calls (ids filled in when a server leaves them
 * out, object arguments serialized) and reasoning (`reasoning_content`, or `reasoning` as some
 * servers name it). A tool call without a function name cannot be an action: ModelReplyError.
 */
export function toAction(message: ModelMessage): Action {
  const action: Action = { content: typeof message.content === "string" ? message.content : null };
  if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
    action.tool_calls = message.tool_calls.map((raw, i): ToolCall => {
      const call = (raw ?? {}) as { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } };
      const name = call.function?.name;
      if (typeof name !== "string" || name === "") {
        throw new ModelReplyError(`malformed tool call #${i + 1} (no function name): ${JSON.stringify(raw)?.slice(0, 200)}`);
      }
      if (call.type !== undefined && call.type !== "function") {
        throw new ModelReplyError(`unsupported tool call type ${JSON.stringify(call.type)} in tool call #${i + 1}`);
      }
      const args = call.function?.arguments;
      return {
        id: typeof call.id === "string" && call.id !== "" ? call.id : `call_${i}`,
        type: "function",
        function: { name, arguments: typeof args === "string" ? args : args === undefined || args === null ? "" : JSON.stringify(args) },
      };
    });
  }
  const reasoning = typeof message.reasoning_content === "string" ? message.reasoning_content : message.reasoning;
  if (typeof reasoning === "string") action.reasoning_content = reasoning;
  return action;
}

export function addUsage(total: Usage, u: Partial<Usage> | undefined): void {
  if (!u) return;
  const p = num(u.prompt_tokens);
  const c = num(u.completion_tokens);
  total.prompt_tokens += p;
  total.completion_tokens += c;
  total.total_tokens += u.total_tokens === undefined || u.total_tokens === null ? p + c : num(u.total_tokens);
}

function num(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

export interface RolloutJob {
  example_id: number;
  rollout: number;
  reset: ResetParams;
}

export interface RunOptions extends Omit<RolloutOptions, "reset" | "example_id" | "rollout"> {
  jobs: readonly RolloutJob[];
  /** Rollouts in flight at once (default 32). */
  concurrency?: number;
  /** Called as each rollout finishes, in completion order. */
  onResult?: (r: RolloutResult) => void;
}

/**
 * Run the jobs with bounded concurrency; results come back in job order. Once `signal` aborts
 * (Ctrl-C), no job starts: the rollouts in flight and the jobs left are results marked
 * `interrupted` (and not passed to `onResult`).
 */
export async function runRollouts(opts: RunOptions): Promise<RolloutResult[]> {
  const { jobs, concurrency = 32, onResult, ...common } = opts;
  const results: RolloutResult[] = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      const job = jobs[i]!;
      if (common.signal?.aborted) {
        results[i] = notStarted(job, common.signal.reason);
        continue;
      }
      const r = await runRollout({ ...common, ...job });
      results[i] = r;
      if (!r.interrupted) onResult?.(r);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, jobs.length)) }, worker));
  return results;
}

/** A job's result before anything happened: what a rollout fills in as it goes. */
function blankResult(job: RolloutJob): RolloutResult {
  return {
    ...job,
    episode_id: null,
    prompt: [],
    completion: [],
    answer: null,
    info: null,
    env_info: {},
    reward: null,
    metrics: null,
    done: false,
    truncated: false,
    turns: 0,
    error: null,
    retries: 0,
    timing: { generation_ms: 0, scoring_ms: 0, env_ms: 0, total_ms: 0 },
    usage: emptyUsage(),
  };
}

function notStarted(job: RolloutJob, reason: unknown): RolloutResult {
  return { ...blankResult(job), error: `not started: ${describeError(reason)}`, interrupted: true };
}

/** The run was stopped from outside (Ctrl-C, SIGTERM): the reason runRollouts' signal aborts with. */
export class RunInterruptedError extends Error {
  constructor(signal: string) {
    super(`interrupted (${signal})`);
    this.name = "RunInterruptedError";
  }
}

/** Example i of a run, rollout k: every rollout of an example resets with the same parameters. */
export function planJobs(n: number, r: number, base: { seed: number; split?: string | undefined; args?: Record<string, unknown> | undefined }): RolloutJob[] {
  const jobs: RolloutJob[] = [];
  for (let i = 0; i < n; i++) {
    const reset: ResetParams = { seed: base.seed + i, index: i };
    if (base.split !== undefined) reset.split = base.split;
    if (base.args !== undefined) reset.args = base.args;
    for (let k = 0; k < r; k++) jobs.push({ example_id: i, rollout: k, reset });
  }
  return jobs;
}
