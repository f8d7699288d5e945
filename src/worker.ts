/**
 * Cloudflare Workers entry: the same Hono app as Node. Stateless routes (metadata, schema,
 * score, mcp) are answered here; each episode lives in its own Episode Durable Object, and each
 * WebSocket is handed to a fresh one that accepts it with the Hibernation API.
 */
import { environments, NODE_ONLY_ENVIRONMENTS } from "../envs/index.ts";
import { configFromEnv } from "./server/config.ts";
import { createApp } from "./server/app.ts";
import { newEpisodeId } from "./server/ids.ts";
import { episodeObject, stringVars, type WorkerBindings } from "./workers/bindings.ts";
import { DurableObjectEpisodeHost } from "./workers/durable-host.ts";
import { workersSandbox } from "./workers/sandbox.ts";
import { WS_ENV_HEADER, WS_OBJECT_HEADER } from "./workers/episode-object.ts";

export { Episode } from "./workers/episode-object.ts";

let bindings: WorkerBindings | undefined;
let app: ReturnType<typeof createApp> | undefined;

function appFor(env: WorkerBindings) {
  bindings = env;
  if (app) return app;
  const config = configFromEnv(stringVars(env));
  app = createApp({
    // Pyodide does not fit a Worker: environments that need the Python sandbox are Node-only.
    envs: environments.filter((e) => !NODE_ONLY_ENVIRONMENTS.has(e.name)),
    host: new DurableObjectEpisodeHost(() => bindings!),
    maxBodyBytes: config.maxBodyBytes,
    services: { sandbox: workersSandbox() },
    token: config.token,
    webSocket: (c) => {
      const object = newEpisodeId();
      const headers = new Headers(c.req.raw.headers);
      headers.set(WS_ENV_HEADER, c.get("env").name);
      headers.set(WS_OBJECT_HEADER, object);
      return episodeObject(bindings!, object).fetch(new Request(c.req.raw, { headers }));
    },
  });
  return app;
}

export default {
  fetch(request: Request, env: WorkerBindings, ctx: ExecutionContext): Response | Promise<Response> {
    return appFor(env).fetch(request, env, ctx);
  },
} satisfies ExportedHandler<WorkerBindings>;
