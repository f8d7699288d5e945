/**
 * The stateful operations of the protocol (reset, step, state, close) over an EpisodeStore.
 * Routes and the WebSocket handler call this; a platform swaps in another host (Durable Objects)
 * without touching either.
 */
import type { Environment } from "../env/environment.ts";
import { publicState, type EpisodeState, type ResetOptions, type StepResult } from "../env/episode.ts";
import { ApiError } from "../env/errors.ts";
import type { EpisodeStore } from "./episode-store.ts";
import { newEpisodeId } from "./ids.ts";
import type { Action, JsonObject } from "../env/messages.ts";
import type { EnvEngine, Stepped } from "./engine.ts";
import type { MemoryBudget } from "./memory.ts";
import { logger } from "./log.ts";

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

export interface EpisodeHost {
  /**
   * `example`: a reference from POST B/examples, resolved by the engine. `client`: who asks (the
   * episode is kept in that client's share of the memory budget and of the episodes).
   */
  reset(env: Environment, opts: ResetOptions & { episode_id?: string | undefined; example?: string | undefined }, client?: string): Promise<StepResult>;
  /** `signal`: the caller gave up (an HTTP client disconnected): the step is cancelled, the episode kept. */
  step(env: Environment, episodeId: string, action: Action, signal?: AbortSignal): Promise<StepResult>;
  state(env: Environment, episodeId: string): Promise<JsonObject>;
  close(env: Environment, episodeId: string): Promise<boolean>;
  /** About what an episode's state will cost as an answer, in bytes, when the host knows (0: unknown). */
  stateBytes?(episodeId: string): number;
  /** `state` as its JSON text, when the host keeps it made (the same state asked again is not made again). */
  stateJson?(env: Environment, episodeId: string): Promise<string>;
}

/** State answers kept made: a client asking for one large episode over and over pays one copy. */
const STATE_ANSWERS_KEPT = 4;

export class StoreEpisodeHost implements EpisodeHost {
  // Steps on one episode run one at a time, in arrival order; different episodes never wait.
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: EpisodeStore,
    /** Where environment code runs (inline, or worker threads on the Node server). */
    private readonly engine: EnvEngine,
    /** Server-wide caps on an episode: steps (ENVWORKER_MAX_STEPS) and conversation size (ENVWORKER_MAX_EPISODE_CHARS). */
    private readonly limits: { maxSteps?: number | undefined; maxChars?: number | undefined } = {},
    /** The server's memory budget (ENVWORKER_MAX_MEMORY_MB); none on Durable Objects, which hold one episode each. */
    private readonly budget?: MemoryBudget,
  ) {}

  async reset(env: Environment, opts: ResetOptions & { episode_id?: string | undefined; example?: string | undefined }, client?: string): Promise<StepResult> {
    const create = async (id: string) => {
      // New episodes are the first thing refused when memory runs short (or the client's share of
      // it): existing ones keep working.
      this.budget?.admit(0, client);
      let made: Stepped;
      try {
        made = await this.engine.reset(env, id, { ...opts, ...this.limits }, { key: id, client });
      } catch (err) {
        logEnvironmentError(env.name, id, "reset", err);
        throw err;
      }
      this.budget?.admit(made.bytes, client);
      await this.store.create(made.state, made.bytes, client);
      return made.result;
    };
    // A client-chosen id may be one whose last step is still running (close, then reset with the
    // same id): queue behind it, so that step cannot write its old state over the new episode.
    return opts.episode_id === undefined ? create(newEpisodeId()) : this.serialized(opts.episode_id, () => create(opts.episode_id!));
  }

  step(env: Environment, episodeId: string, action: Action, signal?: AbortSignal): Promise<StepResult> {
    return this.serialized(episodeId, async () => {
      const current = await this.load(env, episodeId);
      let stepped: Stepped;
      try {
        stepped = await this.engine.step(env, current, action, { key: episodeId, signal, client: this.store.clientOf?.(episodeId) });
      } catch (err) {
        logEnvironmentError(env.name, episodeId, "step", err);
        throw err;
      }
      for (const f of stepped.failures ?? []) logEnvironmentError(env.name, episodeId, f.where, f.error);
      // A step that grows the episode past the budget (or its client's share) is refused; the
      // episode stays as it was.
      this.budget?.admit(stepped.bytes - (this.store.bytesOf?.(episodeId) ?? 0), this.store.clientOf?.(episodeId));
      await this.store.put(stepped.state, stepped.bytes);
      return stepped.result;
    });
  }

  async state(env: Environment, episodeId: string): Promise<JsonObject> {
    return publicState(await this.load(env, episodeId));
  }

  stateBytes(episodeId: string): number {
    return this.store.bytesOf?.(episodeId) ?? 0;
  }

  /** The last few state answers, by the stored state they were made of (a step stores a new one). */
  private readonly stateAnswers = new Map<EpisodeState, string>();

  async stateJson(env: Environment, episodeId: string): Promise<string> {
    const s = await this.load(env, episodeId);
    let json = this.stateAnswers.get(s);
    if (json) this.stateAnswers.delete(s); // moved to the newest place below
    else json = JSON.stringify(publicState(s));
    this.stateAnswers.set(s, json);
    if (this.stateAnswers.size > STATE_ANSWERS_KEPT) this.stateAnswers.delete(this.stateAnswers.keys().next().value!);
    return json;
  }

  close(env: Environment, episodeId: string): Promise<boolean> {
    return this.serialized(episodeId, async () => {
      await this.load(env, episodeId);
      return this.store.delete(episodeId);
    });
  }

  private async load(env: Environment, episodeId: string) {
    const s = await this.store.get(episodeId);
    // An id of another environment is as unknown here as a made-up one.
    if (!s || s.env !== env.name) throw new ApiError("UNKNOWN_EPISODE", `no open episode ${episodeId} in ${env.name}`);
    return s;
  }

  private serialized<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(id) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.queues.set(id, tail);
    void tail.then(() => {
      if (this.queues.get(id) === tail) this.queues.delete(id);
    });
    return run;
  }
}
