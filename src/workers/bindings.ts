/** What wrangler.toml binds into the Worker and its Durable Object. */
import type { StepResult } from "../env/episode.ts";
import type { HostResetOptions } from "../server/episode-host.ts";
import type { Action, JsonObject } from "../env/messages.ts";
import type { Envelope } from "./rpc.ts";
import type { OrsSession } from "../server/ors.ts";

/** The Episode object's RPC surface, as the Worker calls it. */
export interface EpisodeRpc {
  reset(envName: string, opts: HostResetOptions & { episode_id: string }, client: string | undefined): Promise<Envelope<StepResult>>;
  step(envName: string, episodeId: string, action: Action, client: string | undefined): Promise<Envelope<StepResult>>;
  state(envName: string, episodeId: string, client: string | undefined): Promise<Envelope<JsonObject>>;
  close(envName: string, episodeId: string, client: string | undefined): Promise<Envelope<boolean>>;
  exists(envName: string, episodeId: string, client: string | undefined): Promise<Envelope<boolean>>;
  /** An Open Reward Standard session's record (src/server/ors.ts), kept with its episode: get, or put (`null`: delete). */
  orsSession(sid: string, put?: OrsSession | null): Promise<OrsSession | undefined>;
  fetch(request: Request): Promise<Response>;
}

export interface WorkerBindings {
  // Untyped namespace: the generic stub type of workers-types is too deep for tsc here.
  EPISODES: DurableObjectNamespace;
  [name: string]: unknown;
}

export function episodeObject(env: WorkerBindings, name: string): EpisodeRpc {
  return env.EPISODES.get(env.EPISODES.idFromName(name)) as unknown as EpisodeRpc;
}

/** The string vars (ENVWORKER_*), for configFromEnv. */
export function stringVars(env: WorkerBindings): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === "string") out[k] = v;
  return out;
}
