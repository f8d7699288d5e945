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
import { logEnvironmentError, logger } from "./log.ts";

/**
 * Where an episode is kept: its id as its client knows it, scoped to that client (client-id.ts:
 * its token when several are configured, else its address). Every route that acts on an episode
 * looks it up under the caller's own scope, so another client's episode is as unknown as a
 * made-up id, and a client choosing an id (`reset` with `episode_id`) can never learn whether
 * another client uses it. `undefined`: an in-process caller (eval, tests), one client.
 */
export function episodeKey(client: string | undefined, episodeId: string): string {
  return JSON.stringify([client ?? null, episodeId]);
}

/** A reset's options as the host takes them. */
export type HostResetOptions = ResetOptions & {
  episode_id?: string | undefined;
  /** A reference from POST B/examples, resolved by the engine. */
  example?: string | undefined;
  /**
   * Replace the episode `episode_id` of this client if it exists (a WebSocket attached to an
   * OpenEnv session resets it in place: the session keeps its id). Never from a request body.
   */
  replace?: boolean | undefined;
};

/**
 * Every method takes `client`, who asks (client-id.ts): an episode belongs to the client that
 * reset it and is found only under that client (episodeKey). It is also the client whose share of
 * the memory budget and of the episodes a reset uses.
 */
export interface EpisodeHost {
  reset(env: Environment, opts: HostResetOptions, client: string | undefined): Promise<StepResult>;
  /** `signal`: the caller gave up (an HTTP client disconnected): the step is cancelled, the episode kept. */
  step(env: Environment, episodeId: string, action: Action, client: string | undefined, signal?: AbortSignal): Promise<StepResult>;
  state(env: Environment, episodeId: string, client: string | undefined): Promise<JsonObject>;
  close(env: Environment, episodeId: string, client: string | undefined): Promise<boolean>;
  /** Whether this client has this open episode in `env` (a WebSocket attaching to it). */
  exists(env: Environment, episodeId: string, client: string | undefined): Promise<boolean>;
  /** About what an episode's state will cost as an answer, in bytes, when the host knows (0: unknown). */
  stateBytes?(episodeId: string, client: string | undefined): number;
  /** `state` as its JSON text, when the host keeps it made (the same state asked again is not made again). */
  stateJson?(env: Environment, episodeId: string, client: string | undefined): Promise<string>;
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

  async reset(env: Environment, opts: HostResetOptions, client: string | undefined): Promise<StepResult> {
    const { replace, ...resetOpts } = opts;
    const create = async (id: string) => {
      const key = episodeKey(client, id);
      // New episodes are the first thing refused when memory runs short (or the client's share of
      // it): existing ones keep working.
      this.budget?.admit(0, client);
      let made: Stepped;
      try {
        made = await this.engine.reset(env, id, { ...resetOpts, ...this.limits }, { key, client });
      } catch (err) {
        logEnvironmentError(env.name, id, "reset", err);
        throw err;
      }
      // In place: the old one goes once the new one is made (a reset that fails leaves it as it was).
      if (replace && (await this.store.get(key))?.env === env.name) await this.store.delete(key);
      this.budget?.admit(made.bytes, client);
      await this.store.create(made.state, made.bytes, client, key);
      return made.result;
    };
    // A client-chosen id may be one whose last step is still running (close, then reset with the
    // same id): queue behind it, so that step cannot write its old state over the new episode.
    const chosen = opts.episode_id;
    return chosen === undefined ? create(newEpisodeId()) : this.serialized(episodeKey(client, chosen), () => create(chosen));
  }

  step(env: Environment, episodeId: string, action: Action, client: string | undefined, signal?: AbortSignal): Promise<StepResult> {
    const key = episodeKey(client, episodeId);
    return this.serialized(key, async () => {
      const current = await this.load(env, episodeId, key);
      let stepped: Stepped;
      try {
        stepped = await this.engine.step(env, current, action, { key, signal, client: this.store.clientOf?.(key) ?? client });
      } catch (err) {
        logEnvironmentError(env.name, episodeId, "step", err);
        throw err;
      }
      for (const f of stepped.failures ?? []) logEnvironmentError(env.name, episodeId, f.where, f.error);
      // A step that grows the episode past the budget (or its client's share) is refused; the
      // episode stays as it was.
      this.budget?.admit(stepped.bytes - (this.store.bytesOf?.(key) ?? 0), this.store.clientOf?.(key));
      await this.store.put(stepped.state, stepped.bytes, key);
      return stepped.result;
    });
  }

  async state(env: Environment, episodeId: string, client: string | undefined): Promise<JsonObject> {
    return publicState(await this.load(env, episodeId, episodeKey(client, episodeId)));
  }

  async exists(env: Environment, episodeId: string, client: string | undefined): Promise<boolean> {
    const s = await this.store.get(episodeKey(client, episodeId));
    return s !== undefined && s.env === env.name;
  }

  stateBytes(episodeId: string, client: string | undefined): number {
    return this.store.bytesOf?.(episodeKey(client, episodeId)) ?? 0;
  }

  /** The last few state answers, by the stored state they were made of (a step stores a new one). */
  private readonly stateAnswers = new Map<EpisodeState, string>();

  async stateJson(env: Environment, episodeId: string, client: string | undefined): Promise<string> {
    const s = await this.load(env, episodeId, episodeKey(client, episodeId));
    let json = this.stateAnswers.get(s);
    if (json) this.stateAnswers.delete(s); // moved to the newest place below
    else json = JSON.stringify(publicState(s));
    this.stateAnswers.set(s, json);
    if (this.stateAnswers.size > STATE_ANSWERS_KEPT) this.stateAnswers.delete(this.stateAnswers.keys().next().value!);
    return json;
  }

  close(env: Environment, episodeId: string, client: string | undefined): Promise<boolean> {
    const key = episodeKey(client, episodeId);
    return this.serialized(key, async () => {
      await this.load(env, episodeId, key);
      return this.store.delete(key);
    });
  }

  /** The episode under `key`; UNKNOWN_EPISODE when there is none (another client's is none). */
  private async load(env: Environment, episodeId: string, key: string) {
    const s = await this.store.get(key);
    // An id of another environment, or of another client, is as unknown here as a made-up one.
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
