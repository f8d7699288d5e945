/**
 * The one Hono app: every route of the wire protocol, for every environment, on every platform.
 * Platform entries (src/node/server.ts, src/worker.ts) only choose the episode host and how WebSockets
 * are upgraded.
 */
import { Hono, type Context, type MiddlewareHandler } from "hono";
import type { UpgradeWebSocket, WSContext } from "hono/ws";
import type { z } from "zod";
import { defaultMaxTurns, type Environment } from "../env/environment.ts";
import type { EpisodeHost } from "./episode-host.ts";
import { zodIssues } from "../env/episode.ts";
import { ApiError, toApiError } from "../env/errors.ts";
import { rpcError, RPC } from "./mcp.ts";
import { handleEpisodeMcp, isEpisodeMcp, withQuerySession } from "./mcp-episode.ts";
import type { Services } from "../env/services.ts";
import { environmentSchemas, openApiDocument } from "./openapi.ts";
import { CloseRequestSchema, ExamplesRequestSchema, HttpResetRequestSchema, resetErrorMessage, ScoreRequestSchema, StepRequestSchema } from "./protocol.ts";
import { inlineEngine, type EnvEngine, type ScopeServices } from "./engine.ts";
import { scoreAnswer, scoreBatch } from "./score.ts";
import { OVERLOADED_RETRY_AFTER_S, SMALL_ARRIVING_BYTES, type MemoryBudget } from "./memory.ts";
import { clientIdentity, type ClientOf } from "./client-id.ts";
import { ownTurn } from "./turns.ts";
import { requireToken } from "./auth.ts";
import { browserGuards } from "./browser-guards.ts";
import { readWebBody, type BodyReader } from "./body.ts";
import { jsonHeapBytes, NotJsonError, parseClientJson } from "./client-json.ts";
import { WsSession, wsError, wsReplyText } from "./ws-session.ts";
import { answerFlow } from "./ws-answers.ts";
import { MemoryOrsSessions, mountOrs, type OrsSessionStore } from "./ors.ts";
import { logger, redactPath } from "./log.ts";
import { didYouMean } from "./did-you-mean.ts";

export interface AppOptions {
  envs: readonly Environment[];
  /** Environments this platform cannot serve, by name, with why (py-code on Workers): named in UNKNOWN_ENV. */
  unavailable?: Readonly<Record<string, string>> | undefined;
  host: EpisodeHost;
  /**
   * The platform's handler for `GET /envs/{name}/ws` (the environment is in `c.get("env")`).
   * Node upgrades in-process (`sessionWebSocket`); Workers hands the socket to a Durable Object.
   */
  webSocket?: MiddlewareHandler<AppEnv> | undefined;
  /** Request bodies larger than this get 413 (default 1 MiB). */
  maxBodyBytes?: number;
  /** Sandbox, judge and friends for tools and reward functions of stateless routes (score, mcp), when no engine is given; a function to scope them per caller. */
  services?: Services | ScopeServices;
  /** Where the stateless routes' environment code runs (default: inline with `services`). */
  engine?: EnvEngine;
  /**
   * Who is asking: the client whose share of the memory budget and of the episodes a request uses,
   * and the key its stateless calls queue fairly under (client-id.ts). Default: the token it
   * presents when several are configured, else one client for all.
   */
  clientOf?: ClientOf;
  /** The memory budget parsed requests waiting for their work are held against (Node). */
  budget?: MemoryBudget | undefined;
  /**
   * How the platform reads a request body as text, refusing more than `max` bytes with 413.
   * Default: web streams (Workers). Node reads the IncomingMessage directly, which is much faster
   * than materializing a web Request.
   */
  readBody?: BodyReader;
  /** Answers held against the memory budget until sent (Node: node-answers.ts). Default: none (a Durable Object's answers are its own episode's). */
  answers?: AnswerHolder;
  /** When set, every route but `GET /health` requires this bearer token (see auth.ts). */
  token?: string | undefined;
  /** Origins besides the server's own whose pages may call it (ENVWORKER_ALLOWED_ORIGINS; browser-guards.ts). */
  allowedOrigins?: readonly string[] | undefined;
  /** Host names are checked (DNS rebinding; browser-guards.ts): a Node server on a loopback address, every Worker. */
  loopbackOnly?: boolean | undefined;
  /** Host names answered besides loopback ones (ENVWORKER_ALLOWED_HOSTS). */
  allowedHosts?: readonly string[] | undefined;
  /** Host names that are the server's own (a Worker's `*.workers.dev`). */
  ownHost?: ((hostname: string) => boolean) | undefined;
  /** Where Open Reward Standard sessions are kept (ors.ts; default: in memory, no share per client). */
  orsSessions?: OrsSessionStore;
  /** How often an ORS tool call's stream says it is alive (ors.ts HEARTBEAT_MS; tests). */
  orsHeartbeatMs?: number;
  /**
   * The web pages the platform mounts (src/web/mount.ts `mountWeb`: the playground at /web, `GET /`
   * → /web), under the same token rule as every route. Default: none (the wire only).
   */
  pages?: ((app: Hono<AppEnv>, opts: { envs: readonly Environment[]; tokens: boolean }) => void) | undefined;
}

export type AppEnv = {
  Variables: {
    env: Environment;
    /** Who asks (clientOf): the client an episode of this request belongs to. */
    client: string;
    /** `B/ws?session_id=S`: the episode S (of this client) the WebSocket attaches to. */
    attach: string | undefined;
  };
};

/** How a platform holds answers on their way out against its memory budget. */
export interface AnswerHolder {
  /** Throws OVERLOADED unless an answer of about `bytes` would fit: checked before a costly one is made. */
  room(c: Context, bytes: number): void;
  /** Hold an answer of `bytes` until it has been sent, or throw OVERLOADED. */
  hold(c: Context, bytes: number): void;
}

/** Stateless requests (score, examples, MCP) one client may have in progress at once. */
export const MAX_STATELESS_PER_CLIENT = 16;

/** Every route under /envs/{name}/ with its method (the tests generate their access matrix from it). */
export const ENV_ROUTES: Readonly<Record<string, string>> = { health: "GET", metadata: "GET", schema: "GET", "openapi.json": "GET", reset: "POST", step: "POST", state: "GET", close: "POST", score: "POST", examples: "POST", mcp: "POST", ws: "GET" };

export function createApp(opts: AppOptions): Hono<AppEnv> {
  const envs = new Map(opts.envs.map((e) => [e.name, e]));
  const maxBody = opts.maxBodyBytes ?? 1 << 20;
  const engine = opts.engine ?? inlineEngine(opts.services ?? {});
  const clientOf = opts.clientOf ?? clientIdentity(opts.token, () => undefined);
  /** The caller's scope for a stateless call: queued fairly per client, cancelled when the client goes away. */
  const scopeOf = (c: Context) => ({ key: clientOf(c), signal: c.req.raw.signal });
  /** Bytes each request holds of the budget's share for parsed requests, until it is answered. */
  const parsedHeld = new WeakMap<Context, { bytes: number; client: string }>();
  /** Stateless requests (score, examples, MCP) each client has in progress. */
  const inProgress = new Map<string, number>();
  const readText = opts.readBody ?? readWebBody;
  /**
   * The answer of a route whose size the client decides (an episode's state, a thousand examples):
   * a client that does not read it would otherwise make the server keep it outside any limit.
   */
  const answer = (c: Context, value: unknown) => answerJson(c, JSON.stringify(value));
  const answerJson = (c: Context, json: string) => {
    opts.answers?.hold(c, 2 * json.length); // counted as stored states are: two bytes a character
    return c.body(json, 200, { "content-type": "application/json" });
  };
  const app = new Hono<AppEnv>();
  /** Parse a JSON body against a schema: INVALID_JSON or VALIDATION_ERROR (400) on failure. */
  async function readBody<S extends z.ZodType>(
    c: Context,
    schema: S,
    emptyIsObject = false,
    message: (err: z.ZodError) => string = () => "request body does not match the schema",
  ): Promise<z.output<S>> {
    const text = await readBodyText(c);
    let json: unknown;
    if (emptyIsObject && text.trim() === "") json = {};
    else {
      try {
        json = parseClientJson(text);
      } catch (err) {
        throw err instanceof NotJsonError ? new ApiError("INVALID_JSON", "request body is not valid JSON") : err;
      }
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw new ApiError("VALIDATION_ERROR", message(parsed.error), zodIssues(parsed.error));
    if (text.length > SMALL_ARRIVING_BYTES) holdParsed(c, json);
    return parsed.data;
  }

  /**
   * A request body as text; a large one waits for a turn of the event loop of its own before it is
   * parsed (turns.ts), and is refused OVERLOADED at once when its client's share of parsed
   * requests has no room for it.
   */
  async function readBodyText(c: Context): Promise<string> {
    // JSON routes take JSON only: a form post or a text/plain fetch from a web page (sent without
    // a CORS preflight) is refused before anything is read or parsed.
    const type = c.req.header("content-type");
    if (type !== undefined && !isJsonType(type)) {
      c.header("connection", "close"); // its body is not read
      throw notJson(type);
    }
    const text = await readText(c, maxBody);
    if (type === undefined && text.length > 0) throw notJson(type);
    if (text.length > SMALL_ARRIVING_BYTES) {
      if (opts.budget) {
        // Room for at least its text, before the cost of parsing it is paid.
        opts.budget.holdRequest(2 * text.length, clientOf(c));
        opts.budget.releaseRequest(2 * text.length, clientOf(c));
      }
      // Made now, before the wait: on Node a request's signal is made when first read, and only
      // one made before its client left is aborted by its leaving; read after the wait, the work
      // of clients long gone was done to the end (issue 29: 250 of 600 waiting /score). Not
      // earlier: made before the body is in, its body stream would start reading the request.
      const signal = c.req.raw.signal;
      await ownTurn();
      // Its client left while it waited for its turn: not parsed for nobody (nobody reads this answer).
      if (signal.aborted) throw new ApiError("EXECUTION_ERROR", "the client went away before its request was read", { reason: "CANCELLED" });
    }
    return text;
  }

  /** Hold a large parsed request against the budget until it is answered (released in the routes' middleware). */
  function holdParsed(c: Context, json: unknown): void {
    if (!opts.budget) return;
    const client = clientOf(c);
    const bytes = jsonHeapBytes(json);
    opts.budget.holdRequest(bytes, client);
    parsedHeld.set(c, { bytes, client });
  }

  app.get("/health", (c) => c.json({ status: "healthy" }));
  app.get("/envs", (c) =>
    c.json({
      envs: opts.envs.map((e) => ({
        name: e.name,
        description: e.description,
        version: e.version,
        max_turns: defaultMaxTurns(e),
        splits: e.splits,
        url: `/envs/${e.name}`,
      })),
    }),
  );

  // The playground (/web) and `GET /` → /web: pages and their assets, under the same token rule.
  opts.pages?.(app, { envs: opts.envs, tokens: Boolean(opts.token) });

  const b = "/envs/:name";
  app.use(`${b}/*`, async (c, next) => {
    const env = envs.get(c.req.param("name") ?? "");
    if (!env) {
      const name = c.req.param("name") ?? "";
      const why = Object.hasOwn(opts.unavailable ?? {}, name) ? opts.unavailable![name] : undefined;
      throw new ApiError("UNKNOWN_ENV", why ? `${JSON.stringify(name)} is not served here: ${why}` : `unknown environment ${JSON.stringify(name)}${didYouMean(name, [...envs.keys()])}; GET /envs lists them`);
    }
    c.set("env", env);
    c.set("client", clientOf(c));
    try {
      await next();
    } finally {
      const held = parsedHeld.get(c);
      if (held) opts.budget?.releaseRequest(held.bytes, held.client);
    }
  });

  /**
   * The work one client may have queued at once through stateless routes: each `/score` may hold
   * 1,024 items of sandboxed code, each running up to its time limit; a client past
   * MAX_STATELESS_PER_CLIENT requests in progress is refused before its body is read.
   */
  const oneMoreStateless: MiddlewareHandler<AppEnv> = async (c, next) => {
    const client = clientOf(c);
    const n = inProgress.get(client) ?? 0;
    if (n >= MAX_STATELESS_PER_CLIENT) {
      // Its body (up to ENVWORKER_MAX_BODY_BYTES) is not read: the connection is closed after the answer.
      c.header("connection", "close");
      throw new ApiError("OVERLOADED", `this client has ${n} requests to /score, /examples or /mcp in progress: wait for their answers`, { retry_after_s: OVERLOADED_RETRY_AFTER_S });
    }
    inProgress.set(client, n + 1);
    try {
      await next();
    } finally {
      const left = (inProgress.get(client) ?? 1) - 1;
      if (left > 0) inProgress.set(client, left);
      else inProgress.delete(client);
    }
  };
  for (const route of ["score", "examples", "mcp"]) app.use(`${b}/${route}`, oneMoreStateless);

  app.get(`${b}/health`, (c) => c.json({ status: "healthy" }));
  app.get(`${b}/metadata`, (c) => {
    const e = c.get("env");
    return c.json({
      name: e.name,
      description: e.description,
      version: e.version,
      ...(e.author ? { author: e.author } : {}),
      ...(e.documentationUrl ? { documentation_url: e.documentationUrl } : {}),
    });
  });
  app.get(`${b}/schema`, (c) => c.json(environmentSchemas(c.get("env"))));
  app.get(`${b}/openapi.json`, (c) => c.json(openApiDocument(c.get("env"))));

  app.post(`${b}/reset`, async (c) => {
    // An `example` reference is resolved where environment code runs (the engine), like the rest of a reset.
    return answer(
      c,
      await opts.host.reset(c.get("env"), await readBody(c, HttpResetRequestSchema, true, (err) => resetErrorMessage(err, "request body does not match the schema", true)), c.get("client")),
    );
  });
  app.post(`${b}/step`, async (c) => {
    const req = await readBody(c, StepRequestSchema);
    return answer(c, await opts.host.step(c.get("env"), req.episode_id, req.action, c.get("client"), c.req.raw.signal));
  });
  app.get(`${b}/state`, async (c) => {
    const id = c.req.query("episode_id");
    if (!id) throw new ApiError("VALIDATION_ERROR", "episode_id query parameter is required");
    // A whole episode, possibly megabytes: not made while answers nobody reads fill their share
    // (a client pipelining requests for it would otherwise cost a copy each).
    const client = c.get("client");
    opts.answers?.room(c, opts.host.stateBytes?.(id, client) ?? 0);
    const env = c.get("env");
    return opts.host.stateJson ? answerJson(c, await opts.host.stateJson(env, id, client)) : answer(c, await opts.host.state(env, id, client));
  });
  app.post(`${b}/close`, async (c) => {
    const req = await readBody(c, CloseRequestSchema);
    await opts.host.close(c.get("env"), req.episode_id, c.get("client"));
    return c.json({ episode_id: req.episode_id, closed: true });
  });
  app.post(`${b}/score`, async (c) => {
    const req = await readBody(c, ScoreRequestSchema);
    const batch = scoreBatch(req);
    return answer(c, scoreAnswer(batch, await engine.score(c.get("env"), batch, scopeOf(c))));
  });
  app.post(`${b}/examples`, async (c) => {
    const req = await readBody(c, ExamplesRequestSchema, true);
    return answer(c, await engine.examples(c.get("env"), req, scopeOf(c)));
  });
  app.post(`${b}/mcp`, async (c) => {
    const text = await readBodyText(c);
    let body: unknown;
    try {
      body = withQuerySession(parseClientJson(text), c.req.query("session_id"));
    } catch (err) {
      if (err instanceof NotJsonError) return c.json(rpcError(null, RPC.PARSE_ERROR, "parse error: body is not valid JSON"));
      return c.json(rpcError(null, RPC.INVALID_REQUEST, (err as Error).message));
    }
    if (text.length > SMALL_ARRIVING_BYTES) holdParsed(c, body);
    // OpenEnv's production mode: sessions are episodes, their tool calls are steps (mcp-episode.ts).
    if (isEpisodeMcp(body)) return answer(c, await handleEpisodeMcp(c.get("env"), opts.host, body, c.get("client"), c.req.raw.signal));
    const response = await engine.mcp(c.get("env"), body, scopeOf(c));
    return response === null ? c.body(null, 202) : answer(c, response);
  });

  app.get(`${b}/ws`, async (c, next) => {
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      return c.json(new ApiError("VALIDATION_ERROR", "this route speaks WebSocket: send an Upgrade: websocket request").toJSON(), 426);
    }
    if (!opts.webSocket) throw new ApiError("NOT_FOUND", "WebSocket is not available on this server");
    // OpenEnv's MCP clients create a session over HTTP (`openenv/session/create`), then open
    // `B/ws?session_id=S` so that the socket's reset/step/state and their HTTP tool calls play the
    // same episode. Only the client's own: another client's S is unknown (404), as a made-up one is.
    const attach = c.req.query("session_id") || undefined;
    if (attach !== undefined) {
      const env = c.get("env");
      if (!(await opts.host.exists(env, attach, c.get("client")))) throw new ApiError("UNKNOWN_EPISODE", `no open episode ${attach} in ${env.name}`);
    }
    c.set("attach", attach);
    return opts.webSocket(c, next);
  });

  // The Open Reward Standard, at the root where its clients look (ors.ts): sessions are episodes.
  mountOrs(app, { envs: opts.envs, host: opts.host, engine, sessions: opts.orsSessions ?? new MemoryOrsSessions(), clientOf, readBody: (c, schema) => readBody(c, schema), heartbeatMs: opts.orsHeartbeatMs });

  // A known route asked with the wrong method is 405, not 404.
  app.all(`${b}/:route`, (c) => {
    const allowed = ENV_ROUTES[c.req.param("route")];
    if (!allowed) throw new ApiError("NOT_FOUND", `no route ${c.req.method} ${c.req.path}`);
    return c.json(new ApiError("METHOD_NOT_ALLOWED", `${c.req.path} accepts ${allowed}, not ${c.req.method}`).toJSON(), 405, { allow: allowed });
  });

  // The routes are served at the root and under /t/{token}/ (for clients that cannot send headers).
  const root = new Hono<AppEnv>();
  // ENVWORKER_LOG=info: one line per request (method, path with any token redacted, status, time).
  root.use("*", async (c, next) => {
    const log = logger();
    if (!log.enabled("info")) return next();
    const started = performance.now();
    await next();
    const url = new URL(c.req.url);
    log.info(`${c.req.method} ${redactPath(url.pathname + url.search)} ${c.res.status}`, { ms: Math.round((performance.now() - started) * 10) / 10 });
  });
  root.onError((err, c) => {
    const e = toApiError(err);
    // Any refusal that says when to come back says it in the header too (the judge budget's is its own).
    const retryAfter = (e.details as { retry_after_s?: unknown } | undefined)?.retry_after_s;
    if (typeof retryAfter === "number" && Number.isFinite(retryAfter)) c.header("retry-after", String(Math.max(1, Math.ceil(retryAfter))));
    else if (e.code === "OVERLOADED") c.header("retry-after", String(OVERLOADED_RETRY_AFTER_S));
    // Our own failures (not the client's, not an environment's: those are logged where they happen).
    if (e.code === "INTERNAL_ERROR") logger().error(`${c.req.method} ${redactPath(c.req.path)} failed: ${e.message}`, undefined, err);
    return c.json(e.toJSON(), e.status as 400);
  });
  root.notFound((c) => c.json(new ApiError("NOT_FOUND", `no route ${c.req.method} ${c.req.path}`).toJSON(), 404));
  // Before the token check: a page of another origin (or a DNS-rebound name) is refused whatever it sends.
  root.use("*", browserGuards({ allowedOrigins: opts.allowedOrigins, loopbackOnly: opts.loopbackOnly, allowedHosts: opts.allowedHosts, ownHost: opts.ownHost }));
  if (opts.token) {
    const auth = requireToken(opts.token);
    root.use("/t/:token/*", auth);
    root.use("*", async (c, next) => (c.req.path.startsWith("/t/") ? next() : auth(c, next)));
    root.route("/t/:token", app);
  }
  root.route("/", app);
  return root;
}

/** In-process WebSocket sessions through a Hono upgrade helper (Node). */
export function sessionWebSocket(
  upgrade: UpgradeWebSocket<any>,
  host: EpisodeHost,
  opts: { maxWsMessageBytes?: number | undefined; services?: Services | ScopeServices | undefined; engine?: EnvEngine | undefined; budget?: MemoryBudget | undefined } = {},
): MiddlewareHandler<AppEnv> {
  const maxMessageBytes = opts.maxWsMessageBytes ?? 1 << 20;
  const engine = opts.engine ?? inlineEngine(opts.services ?? {});
  return upgrade((c) => {
    // The socket is its token's or address's client (the app's clientOf), for everything it does:
    // its episodes, its stateless MCP calls' turns in the fair queues, its sandbox hosts.
    const client = c.get("client");
    return wsHandlers(new WsSession(c.get("env"), host, { maxMessageBytes, engine, client, attached: c.get("attach") }), opts.budget, 2 * maxMessageBytes, client);
  });
}

/**
 * Backpressure for a socket whose waiting messages reach the per-socket limit: stop reading from it
 * (Node's `ws` socket can pause) until they drain, so a flood of large frames waits in the
 * client's buffers and the kernel's rather than costing this event loop the unmasking, decoding
 * and answering of every one of them. A transport that cannot pause (a Durable Object's socket)
 * answers such messages OVERLOADED instead (wsHandlers).
 */
function readPauser() {
  let paused = false;
  const raw = (ws: WSContext) => ws.raw as { pause?: () => void; resume?: () => void } | undefined;
  return {
    pause(ws: WSContext) {
      const socket = raw(ws);
      if (paused || typeof socket?.pause !== "function" || typeof socket.resume !== "function") return;
      paused = true;
      socket.pause();
    },
    resume(ws: WSContext) {
      if (!paused) return;
      paused = false;
      raw(ws)!.resume!();
    },
  };
}

/** Messages a client may have waiting on one socket; a client flooding past it is cut off. */
const MAX_PENDING_WS_MESSAGES = 64;

/**
 * Socket events → the session, one message at a time (OpenEnv clients are request/response).
 * (Exported for its unit test.)
 * Waiting messages are held against the memory budget: past it, a message is answered with an
 * OVERLOADED error instead of being queued.
 */
export function wsHandlers(session: WsSession, budget: MemoryBudget | undefined, maxPendingChars: number, client?: string) {
  let chain: Promise<void> = Promise.resolve();
  let pending = 0;
  /** Characters of the messages waiting on this socket. */
  let pendingChars = 0;
  let closed = false;
  const flow = readPauser();
  const answers = answerFlow(budget);
  const enqueue = (work: () => Promise<void>) => {
    // A failure here is a bug, not a client's doing: log it and keep the session's queue alive.
    chain = chain.then(work).catch((err) => console.error("envworker: WebSocket handler failed:", err));
  };
  return {
    onMessage(evt: MessageEvent, ws: WSContext) {
      if (closed) return;
      if (pending + 1 > MAX_PENDING_WS_MESSAGES) {
        closed = true;
        ws.close(1008, `more than ${MAX_PENDING_WS_MESSAGES} messages waiting: send one at a time`);
        enqueue(() => session.dispose());
        return;
      }
      const data = evt.data;
      const text = typeof data === "string" ? data : new TextDecoder().decode(data as ArrayBuffer);
      // Strings are counted at two bytes per character, like stored states.
      const bytes = 2 * text.length;
      // Large ones in the client's share; a small one (a step, a close) only in the budget, so a
      // client whose episodes fill its share can still play and close them.
      const holder = text.length > SMALL_ARRIVING_BYTES ? client : undefined;
      try {
        // One socket may keep about two large messages waiting: a request/response client never
        // has more, and a flood is answered at once instead of being parsed.
        if (pending > 0 && pendingChars + text.length > maxPendingChars) {
          throw new ApiError("OVERLOADED", `more than ${maxPendingChars} characters of messages waiting on this socket: send one at a time`, { retry_after_s: 1 });
        }
        budget?.hold(bytes, holder);
      } catch (err) {
        if (ws.readyState === 1) ws.send(JSON.stringify(wsError(toApiError(err))));
        return;
      }
      pending++;
      pendingChars += text.length;
      if (pendingChars >= maxPendingChars) flow.pause(ws);
      enqueue(async () => {
        // A client that is not reading its answers gets no more until they go (ws-answers.ts);
        // meanwhile its messages keep waiting, and the limits above apply to them.
        await answers.ready();
        pending--;
        pendingChars -= text.length;
        if (pendingChars < maxPendingChars) flow.resume(ws);
        try {
          if (closed) return;
          const { reply, close } = await session.handle(text);
          if (reply && ws.readyState === 1) answers.send(ws, wsReplyText(reply));
          if (close) {
            closed = true;
            ws.close(1000, "closed by client");
          }
        } finally {
          budget?.release(bytes, holder);
        }
      });
    },
    onClose() {
      closed = true;
      answers.close();
      enqueue(() => session.dispose());
    },
    onError() {
      closed = true;
      answers.close();
      enqueue(() => session.dispose());
    },
  };
}

/** Whether a Content-Type names JSON: `application/json` (any parameters, such as charset) or a `+json` type. */
export function isJsonType(contentType: string): boolean {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || /^application\/[a-z0-9!#$&^_.-]+\+json$/.test(type);
}

function notJson(type: string | undefined): ApiError {
  return new ApiError("UNSUPPORTED_MEDIA_TYPE", `this route takes a JSON body: send Content-Type: application/json${type === undefined ? "" : `, not ${JSON.stringify(type)}`}`);
}

