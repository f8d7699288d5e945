/**
 * The stateful operations of the protocol (reset, step, state, close) over an EpisodeStore.
 * Routes and the WebSocket handler call this; a platform swaps in another host (Durable Objects)
 * without touching either.
 */
import type { Environment } from "../env/environment.ts";
import { publicState, type ResetOptions, type StepResult } from "../env/episode.ts";
import { ApiError } from "../env/errors.ts";
import type { EpisodeStore } from "./episode-store.ts";
import { newEpisodeId } from "./ids.ts";
import type { Action, JsonObject } from "../env/messages.ts";
import type { EnvEngine } from "./engine.ts";
import type { MemoryBudget } from "./memory.ts";

export interface EpisodeHost {
  /** `example`: a reference from POST B/examples, resolved by the engine. */
  reset(env: Environment, opts: ResetOptions & { episode_id?: string | undefined; example?: string | undefined }): Promise<StepResult>;
  /** `signal`: the caller gave up (an HTTP client disconnected): the step is cancelled, the episode kept. */
  step(env: Environment, episodeId: string, action: Action, signal?: AbortSignal): Promise<StepResult>;
  state(env: Environment, episodeId: string): Promise<JsonObject>;
  close(env: Environment, episodeId: string): Promise<boolean>;
}

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

  async reset(env: Environment, opts: ResetOptions & { episode_id?: string | undefined; example?: string | undefined }): Promise<StepResult> {
    const create = async (id: string) => {
      // New episodes are the first thing refused when memory runs short: existing ones keep working.
      this.budget?.admit(0);
      const { state, result, bytes } = await this.engine.reset(env, id, { ...opts, ...this.limits }, { key: id });
      this.budget?.admit(bytes);
      await this.store.create(state, bytes);
      return result;
    };
    // A client-chosen id may be one whose last step is still running (close, then reset with the
    // same id): queue behind it, so that step cannot write its old state over the new episode.
    return opts.episode_id === undefined ? create(newEpisodeId()) : this.serialized(opts.episode_id, () => create(opts.episode_id!));
  }

  step(env: Environment, episodeId: string, action: Action, signal?: AbortSignal): Promise<StepResult> {
    return this.serialized(episodeId, async () => {
      const current = await this.load(env, episodeId);
      const { state, result, bytes } = await this.engine.step(env, current, action, { key: episodeId, signal });
      // A step that grows the episode past the budget is refused; the episode stays as it was.
      this.budget?.admit(bytes - (this.store.bytesOf?.(episodeId) ?? 0));
      await this.store.put(state, bytes);
      return result;
    });
  }

  async state(env: Environment, episodeId: string): Promise<JsonObject> {
    return publicState(await this.load(env, episodeId));
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
