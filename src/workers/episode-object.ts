/**
 * The Episode Durable Object: it holds the episodes routed to it (one per HTTP reset, or those of
 * one WebSocket connection), runs the same engine as Node through StoreEpisodeHost, persists
 * after every step, and accepts WebSockets with the Hibernation API so an idle session costs
 * nothing.
 */
import { DurableObject } from "cloudflare:workers";
import { configFromEnv } from "../server/config.ts";
import { createLogger, logLevelFromEnv, setLogger } from "../server/log.ts";
import type { Environment } from "../env/environment.ts";
import { StoreEpisodeHost, type EpisodeHost, type HostResetOptions } from "../server/episode-host.ts";
import { inlineEngine, type ScopeServices } from "../server/engine.ts";
import type { StepResult } from "../env/episode.ts";
import { ApiError } from "../env/errors.ts";
import { newEpisodeId } from "../server/ids.ts";
import type { Action, JsonObject } from "../env/messages.ts";
import { WsSession, wsReplyText } from "../server/ws-session.ts";
import { stringVars, type WorkerBindings } from "./bindings.ts";
import { capture, type Envelope } from "./rpc.ts";
import { StorageEpisodeStore } from "./storage-store.ts";
import type { OrsSession } from "../server/ors.ts";
import { workerServices } from "./services.ts";


/**
 * Headers the Worker sets (over any a client sent) when it hands a WebSocket upgrade to an object:
 * the environment, the object's own name part, the client (client-id.ts) and, for
 * `B/ws?session_id=S`, the episode S the socket attaches to.
 */
export const WS_ENV_HEADER = "x-envworker-env";
export const WS_OBJECT_HEADER = "x-envworker-object";
export const WS_CLIENT_HEADER = "x-envworker-client";
export const WS_ATTACH_HEADER = "x-envworker-attach";

interface SocketAttachment {
  env: string;
  object: string;
  episodeId?: string | undefined;
  /** Who the socket's client is (its episodes, its stateless calls). */
  client?: string | undefined;
  /** The HTTP session's episode the socket attached to (ws-session.ts `attached`). */
  attached?: string | undefined;
}

/** The constructor workerd calls for the Episode binding. */
export type EpisodeClass = new (ctx: DurableObjectState, env: WorkerBindings) => EpisodeObject;

/**
 * The Durable Object class for these environments. A class per environment list, because workerd
 * constructs it with only (state, bindings): what it serves has to be closed over.
 */
export function episodeClass(environments: readonly Environment[]): EpisodeClass {
  const byName = new Map(environments.map((e) => [e.name, e]));
  return class Episode extends EpisodeObject {
    protected envNamed(name: string): Environment {
      const env = byName.get(name);
      if (!env) throw new ApiError("UNKNOWN_ENV", `unknown environment ${JSON.stringify(name)}`);
      return env;
    }
  };
}

export abstract class EpisodeObject extends DurableObject<WorkerBindings> {
  protected abstract envNamed(name: string): Environment;
  private readonly store: StorageEpisodeStore;
  private readonly host: StoreEpisodeHost;
  private readonly maxWsMessageBytes: number;
  private readonly services: ScopeServices;

  constructor(ctx: DurableObjectState, env: WorkerBindings) {
    super(ctx, env);
    const vars = stringVars(env);
    setLogger(createLogger(logLevelFromEnv(vars)));
    const config = configFromEnv(vars);
    this.store = new StorageEpisodeStore(ctx.storage, config.idleTimeoutMs);
    this.services = workerServices(config);
    this.host = new StoreEpisodeHost(this.store, inlineEngine(this.services), { maxSteps: config.maxSteps, maxChars: config.maxEpisodeChars });
    this.maxWsMessageBytes = config.maxWsMessageBytes;
  }

  // The Worker routes a client's calls only to objects named after that client (routing.ts); the
  // client is passed along too, and episodes are kept under it here as on Node (episodeKey).
  reset(envName: string, opts: HostResetOptions & { episode_id: string }, client: string | undefined): Promise<Envelope<StepResult>> {
    return capture(() => this.host.reset(this.envNamed(envName), opts, client));
  }

  step(envName: string, episodeId: string, action: Action, client: string | undefined): Promise<Envelope<StepResult>> {
    return capture(() => this.host.step(this.envNamed(envName), episodeId, action, client));
  }

  state(envName: string, episodeId: string, client: string | undefined): Promise<Envelope<JsonObject>> {
    return capture(() => this.host.state(this.envNamed(envName), episodeId, client));
  }

  close(envName: string, episodeId: string, client: string | undefined): Promise<Envelope<boolean>> {
    return capture(() => this.host.close(this.envNamed(envName), episodeId, client));
  }

  exists(envName: string, episodeId: string, client: string | undefined): Promise<Envelope<boolean>> {
    return capture(() => this.host.exists(this.envNamed(envName), episodeId, client));
  }

  /** The ORS session `sid`'s record (this object holds its episode too): read it, or write (`null`: delete). */
  async orsSession(sid: string, put?: OrsSession | null): Promise<OrsSession | undefined> {
    const key = `ors:${sid}`;
    if (put === null) await this.ctx.storage.delete(key);
    else if (put !== undefined) await this.ctx.storage.put(key, put);
    else return this.ctx.storage.get<OrsSession>(key);
    return undefined;
  }

  override async alarm(): Promise<void> {
    await this.store.expireIdle();
  }

  override async fetch(request: Request): Promise<Response> {
    const env = request.headers.get(WS_ENV_HEADER);
    const object = request.headers.get(WS_OBJECT_HEADER);
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket" || !env || !object) {
      return Response.json(new ApiError("NOT_FOUND", "this object only accepts WebSocket upgrades from the Worker").toJSON(), { status: 404 });
    }
    const client = request.headers.get(WS_CLIENT_HEADER) ?? undefined;
    const attached = request.headers.get(WS_ATTACH_HEADER) ?? undefined;
    // Checked again here, where the episode lives (the Worker checked before routing the upgrade).
    if (attached !== undefined && !(await this.host.exists(this.envNamed(env), attached, client))) {
      return Response.json(new ApiError("UNKNOWN_EPISODE", `no open episode ${attached} in ${env}`).toJSON(), { status: 404 });
    }
    const pair = new WebSocketPair();
    const [socket, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server);
    server.serializeAttachment({ env, object, client, attached, episodeId: attached } satisfies SocketAttachment);
    return new Response(null, { status: 101, webSocket: socket });
  }

  // Messages of one socket are handled one at a time: a step sent right behind its reset must
  // see the episode the reset made (any await that is not storage would let them interleave).
  private readonly socketQueues = new WeakMap<WebSocket, Promise<void>>();

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const next = (this.socketQueues.get(ws) ?? Promise.resolve()).then(() => this.handleSocketMessage(ws, message));
    this.socketQueues.set(ws, next.catch(() => undefined));
    return next;
  }

  private async handleSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const att = ws.deserializeAttachment() as SocketAttachment;
    const session = this.sessionFor(att);
    const text = typeof message === "string" ? message : new TextDecoder().decode(message);
    const { reply, close } = await session.handle(text);
    ws.serializeAttachment({ ...att, episodeId: session.currentEpisodeId } satisfies SocketAttachment);
    if (reply) ws.send(wsReplyText(reply));
    if (close) ws.close(1000, "closed by client");
  }

  override async webSocketClose(ws: WebSocket): Promise<void> {
    await this.sessionFor(ws.deserializeAttachment() as SocketAttachment).dispose();
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.webSocketClose(ws);
  }

  /**
   * A session object per message: the socket may have hibernated since the last one, so what it
   * needs to continue (its episode id) lives in the socket's attachment, not in memory.
   */
  private sessionFor(att: SocketAttachment): WsSession {
    const host: EpisodeHost = {
      // Episodes of this socket are named after this object, so HTTP routes find them too; an
      // attached socket's reset keeps its session's id (the session lives in this object).
      reset: (env, opts, client) => this.host.reset(env, { ...opts, episode_id: att.attached ?? `${att.object}.${newEpisodeId()}` }, client),
      step: (env, id, action, client) => this.host.step(env, id, action, client),
      state: (env, id, client) => this.host.state(env, id, client),
      close: (env, id, client) => this.host.close(env, id, client),
      exists: (env, id, client) => this.host.exists(env, id, client),
    };
    return new WsSession(this.envNamed(att.env), host, {
      maxMessageBytes: this.maxWsMessageBytes,
      episodeId: att.episodeId,
      services: this.services,
      client: att.client,
      attached: att.attached,
    });
  }
}
