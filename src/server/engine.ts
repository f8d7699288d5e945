/**
 * Where environment code runs. Everything an environment author wrote (reset's generator, respond,
 * tools, rewards, parsers) is reached through an EnvEngine, so a platform decides where it runs:
 * inline on the caller's thread (Workers, where each Durable Object contains its own episode, and
 * in-process eval), or on a pool of worker threads with a deadline per call (the Node server; see
 * env-threads.ts), so that a slow or runaway environment never stalls the event loop.
 */
import type { Environment } from "../env/environment.ts";
import { stepEpisode, type EnvironmentFailure, type EpisodeState, type ResetOptions, type StepResult } from "../env/episode.ts";
import type { Action } from "../env/messages.ts";
import type { RubricScore } from "../env/rubric.ts";
import type { Services } from "../env/services.ts";
import { handleMcp, type JsonRpcResponse } from "./mcp.ts";
import { listExamples, resetFromRequest } from "./examples.ts";
import type { ExamplesRequest, ScoreBatch } from "./protocol.ts";
import { scoreGroups } from "./score.ts";

/** Who a call is for: the fairness key of its queue, and a signal that fires when the caller gives up. */
export interface CallScope {
  /** An episode id for episode calls; a client id for stateless ones. */
  key: string;
  signal?: AbortSignal | undefined;
  /**
   * The client an episode call is for (its owner), where known: limits kept per client (the
   * judge's) count it there, so a client's many episodes share one client's allowance.
   */
  client?: string | undefined;
}

export interface Stepped {
  state: EpisodeState;
  result: StepResult;
  /** What the stored state costs, counted against the server's memory budget (see memory.ts). */
  bytes: number;
  /** Reward functions that threw during the step (scored 0; the host logs them). */
  failures?: EnvironmentFailure[];
}

/** A reset's options, with the example reference a client may name instead of split/index/seed/args. */
export type EngineResetOptions = ResetOptions & { example?: string | undefined };

export interface EnvEngine {
  reset(env: Environment, id: string, opts: EngineResetOptions, scope: CallScope): Promise<Stepped>;
  step(env: Environment, state: EpisodeState, action: Action, scope: CallScope): Promise<Stepped>;
  /** `POST B/score`: each group scored together (items come as groups of one). */
  score(env: Environment, batch: ScoreBatch, scope: CallScope): Promise<RubricScore[][]>;
  mcp(env: Environment, body: unknown, scope: CallScope): Promise<JsonRpcResponse | null>;
  /** `POST B/examples`: prompts and references (building them runs the environment's generator). */
  examples(env: Environment, req: ExamplesRequest, scope: CallScope): Promise<unknown>;
  dispose(): Promise<void>;
}

/**
 * The memory an episode's state holds, as counted by the budget: its size as JSON (strings by
 * their length, unescaped, as memory holds them; every number, boolean or null as 24 characters,
 * a double's longest form) at two bytes per character (V8 strings are one or two bytes per
 * character; counting two keeps the budget an upper bound). A walk, not JSON.stringify: it runs
 * on every reset and step, and building the string only to measure it cost more than the step.
 * Computed by whichever thread ran the step, never on the event loop of the pool.
 */
export function stateBytes(state: EpisodeState): number {
  return 2 * jsonChars(state);
}

function jsonChars(v: unknown): number {
  if (typeof v === "string") return v.length + 2;
  if (typeof v !== "object" || v === null) return 24;
  let n = 2;
  if (Array.isArray(v)) {
    for (const item of v) n += jsonChars(item) + 1;
    return n;
  }
  for (const key in v) n += key.length + 4 + jsonChars((v as Record<string, unknown>)[key]);
  return n;
}

/**
 * Services as one call sees them: a platform may narrow them to the call's scope (the sandbox's
 * fair queue keyed by episode, cancelled with the call).
 */
export type ScopeServices = (scope: CallScope) => Services;

/** Environment code on the caller's own thread. */
export function inlineEngine(services: Services | ScopeServices = {}): EnvEngine {
  const forScope: ScopeServices = typeof services === "function" ? services : () => services;
  return {
    async reset(env, id, opts) {
      const { state, result } = await resetFromRequest(env, id, opts);
      return { state, result, bytes: stateBytes(state) };
    },
    async step(env, previous, action, scope) {
      const { state, result, failures } = await stepEpisode(env, previous, action, forScope(scope));
      return { state, result, bytes: stateBytes(state), failures };
    },
    score: (env, batch, scope) => scoreGroups(env, batch, forScope(scope)),
    mcp: (env, body, scope) => handleMcp(env, body, forScope(scope)),
    examples: (env, req) => listExamples(env, req),
    async dispose() {},
  };
}
