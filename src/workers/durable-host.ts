/** The Worker's EpisodeHost: each stateful call goes to the Durable Object that holds the episode. */
import type { Environment } from "../env/environment.ts";
import type { EpisodeHost } from "../server/episode-host.ts";
import type { ResetOptions, StepResult } from "../env/episode.ts";
import { newEpisodeId } from "../server/ids.ts";
import type { Action, JsonObject } from "../env/messages.ts";
import { episodeObject, type WorkerBindings } from "./bindings.ts";
import { objectNameFor } from "./routing.ts";
import { unwrap } from "./rpc.ts";

export class DurableObjectEpisodeHost implements EpisodeHost {
  constructor(private readonly bindings: () => WorkerBindings) {}

  private object(episodeId: string) {
    return episodeObject(this.bindings(), objectNameFor(episodeId));
  }

  reset(env: Environment, opts: ResetOptions & { episode_id?: string | undefined }): Promise<StepResult> {
    const episodeId = opts.episode_id ?? newEpisodeId();
    return unwrap(this.object(episodeId).reset(env.name, { ...opts, episode_id: episodeId }));
  }

  step(env: Environment, episodeId: string, action: Action): Promise<StepResult> {
    return unwrap(this.object(episodeId).step(env.name, episodeId, action));
  }

  state(env: Environment, episodeId: string): Promise<JsonObject> {
    return unwrap(this.object(episodeId).state(env.name, episodeId));
  }

  close(env: Environment, episodeId: string): Promise<boolean> {
    return unwrap(this.object(episodeId).close(env.name, episodeId));
  }
}
