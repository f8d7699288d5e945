/**
 * `envworker/workers`: serve environments from Cloudflare Workers. The same Hono app as Node;
 * stateless routes (metadata, schema, score, mcp) are answered by the Worker, each episode lives in
 * its own `Episode` Durable Object, and each WebSocket is handed to a fresh one that accepts it
 * with the Hibernation API.
 *
 *   // src/worker.ts of a project
 *   import { createWorker } from "envworker/workers";
 *   import myEnv from "./index.ts";
 *   const worker = createWorker([myEnv]);
 *   export const Episode = worker.Episode;
 *   export default { fetch: worker.fetch };
 *
 * wrangler.toml binds the class as `EPISODES` (see the scaffold `envworker init` writes).
 */
import type { Environment } from "../env/environment.ts";
import { configFromEnv } from "../server/config.ts";
import { createLogger, logLevelFromEnv, setLogger } from "../server/log.ts";
import { clientIdentity } from "../server/client-id.ts";
import { createApp } from "../server/app.ts";
import { newEpisodeId } from "../server/ids.ts";
import { episodeObject, stringVars, type WorkerBindings } from "./bindings.ts";
import { DurableObjectEpisodeHost } from "./durable-host.ts";
import { edgeAddress, isWorkersDevHost } from "./edge.ts";
import { workerServices } from "./services.ts";
import { episodeClass, WS_ATTACH_HEADER, WS_CLIENT_HEADER, WS_ENV_HEADER, WS_OBJECT_HEADER } from "./episode-object.ts";
import { objectNameFor, objectPart } from "./routing.ts";
import { mountWeb } from "../web/mount.ts";

/** Loosely typed on purpose: a project needs no @cloudflare/workers-types to use it. */
export interface EnvworkerWorker {
  /** The Worker's fetch handler: `export default { fetch: worker.fetch }`. */
  fetch(request: Request, env: any, ctx: any): Response | Promise<Response>;
  /** The Durable Object class to export as `Episode` (bound as `EPISODES` in wrangler.toml). */
  Episode: new (ctx: any, env: any) => object;
}

export type { WorkerBindings };

export interface CreateWorkerOptions {
  /** Environments left out of this Worker, by name, with why: a request for one says so (UNKNOWN_ENV). */
  unavailable?: Readonly<Record<string, string>>;
}

/** A Worker and its Durable Object class serving `environments`. */
export function createWorker(environments: readonly Environment[], options: CreateWorkerOptions = {}): EnvworkerWorker {
  if (environments.length === 0) throw new Error("createWorker: give at least one environment");
  const names = new Set<string>();
  for (const e of environments) {
    if (names.has(e.name)) throw new Error(`createWorker: two environments are named ${JSON.stringify(e.name)}`);
    names.add(e.name);
  }
  let bindings: WorkerBindings | undefined;
  let app: ReturnType<typeof createApp> | undefined;

  function appFor(env: WorkerBindings) {
    bindings = env;
    if (app) return app;
    const vars = stringVars(env);
    // ENVWORKER_LOG from wrangler.toml's [vars] (Workers have no process.env).
    setLogger(createLogger(logLevelFromEnv(vars)));
    const config = configFromEnv(vars);
    app = createApp({
      envs: environments,
      unavailable: options.unavailable,
      host: new DurableObjectEpisodeHost(() => bindings!),
      // ORS sessions live with their episodes: in the Durable Object the session id names.
      orsSessions: {
        get: (client, sid) => episodeObject(bindings!, objectNameFor(client, sid)).orsSession(sid).then((s) => (s && Date.now() - s.at <= config.idleTimeoutMs ? s : undefined)),
        put: async (client, sid, session) => void (await episodeObject(bindings!, objectNameFor(client, sid)).orsSession(sid, session)),
        delete: async (client, sid) => void (await episodeObject(bindings!, objectNameFor(client, sid)).orsSession(sid, null)),
      },
      maxBodyBytes: config.maxBodyBytes,
      services: workerServices(config),
      // Who asks (an episode's owner, the key of fair queues and per-client caps): its token when
      // several are configured, else the address Cloudflare's edge sets, where the request can
      // have come through the edge (edge.ts); one client for all otherwise (local dev).
      clientOf: clientIdentity(config.token, edgeAddress(config.cfConnectingIp)),
      token: config.token,
      // The playground and its pages (src/web/), mounted by the platform: the app is the wire only.
      pages: mountWeb,
      allowedOrigins: config.allowedOrigins,
      // DNS rebinding: `wrangler dev` on 127.0.0.1 is reachable by a rebound name as Node is.
      loopbackOnly: true,
      allowedHosts: config.allowedHosts,
      ownHost: isWorkersDevHost,
      webSocket: (c) => {
        // A fresh object of the client's own; attached to a session (B/ws?session_id=S), the
        // object that holds S (the app checked it is this client's).
        const client = c.get("client");
        const attach = c.get("attach");
        const object = attach === undefined ? newEpisodeId() : objectPart(attach);
        const headers = new Headers(c.req.raw.headers);
        headers.set(WS_ENV_HEADER, c.get("env").name);
        headers.set(WS_OBJECT_HEADER, object);
        headers.set(WS_CLIENT_HEADER, client);
        if (attach === undefined) headers.delete(WS_ATTACH_HEADER);
        else headers.set(WS_ATTACH_HEADER, attach);
        return episodeObject(bindings!, objectNameFor(client, object)).fetch(new Request(c.req.raw, { headers }));
      },
    });
    return app;
  }

  return {
    fetch: (request, env: WorkerBindings, ctx: ExecutionContext) => appFor(env).fetch(request, env, ctx),
    Episode: episodeClass(environments),
  };
}
