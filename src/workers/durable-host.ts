/**
 * The Worker's EpisodeHost: each stateful call goes to the Durable Object that holds the episode,
 * one of the caller's own (routing.ts: objects are named after their client).
 */
import type { Environment } from "../env/environment.ts";
import type { EpisodeHost, HostResetOptions } from "../server/episode-host.ts";
import type { StepResult } from "../env/episode.ts";
import { newEpisodeId } from "../server/ids.ts";
import type { Action, JsonObject } from "../env/messages.ts";
import { episodeObject, type WorkerBindings } from "./bindings.ts";
import { objectNameFor } from "./routing.ts";
import { unwrap } from "./rpc.ts";

export class DurableObjectEpisodeHost implements EpisodeHost {
  constructor(private readonly bindings: () => WorkerBindings) {}

  private object(client: string | undefined, episodeId: string) {
    return episodeObject(this.bindings(), objectNameFor(client, episodeId));
  }

  reset(env: Environment, opts: HostResetOptions, client: string | undefined): Promise<StepResult> {
    const episodeId = opts.episode_id ?? newEpisodeId();
    return unwrap(this.object(client, episodeId).reset(env.name, { ...opts, episode_id: episodeId }, client));
  }

  step(env: Environment, episodeId: string, action: Action, client: string | undefined): Promise<StepResult> {
    return unwrap(this.object(client, episodeId).step(env.name, episodeId, action, client));
  }

  state(env: Environment, episodeId: string, client: string | undefined): Promise<JsonObject> {
    return unwrap(this.object(client, episodeId).state(env.name, episodeId, client));
  }

  close(env: Environment, episodeId: string, client: string | undefined): Promise<boolean> {
    return unwrap(this.object(client, episodeId).close(env.name, episodeId, client));
  }

  exists(env: Environment, episodeId: string, client: string | undefined): Promise<boolean> {
    return unwrap(this.object(client, episodeId).exists(env.name, episodeId, client));
  }
}
