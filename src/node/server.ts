/**
 * Node entry: the runtime app on @hono/node-server, WebSockets through @hono/node-ws, episodes in
 * process memory.
 */
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { createNodeWebSocket } from "@hono/node-ws";
import type { Context, Hono } from "hono";
import { createApp, sessionWebSocket } from "../server/app.ts";
import type { Environment } from "../env/environment.ts";
import { StoreEpisodeHost } from "../server/episode-host.ts";
import { MemoryEpisodeStore } from "../server/episode-store.ts";
import { breaksPerRunRule, sandboxKindFromEnv, serverAffinity, type CreateSandboxOptions, type Sandbox } from "../sandbox/index.ts";
import { DEFAULT_CLIENT_SHARE_PCT, DEFAULT_MAX_MEMORY_MB, type ServerConfig } from "../server/config.ts";
import { clientIdentity, nodeAddress } from "../server/client-id.ts";
import { isLoopbackListen } from "../server/browser-guards.ts";
import { EnvThreadPool } from "./env-threads.ts";
import { MemoryBudget } from "../server/memory.ts";
import { readNodeBody } from "./node-body.ts";
import { holdArrivingFrames } from "./ws-arriving.ts";
import { nodeAnswers } from "./node-answers.ts";
import { createLocalSandboxes } from "../sandbox/local.ts";
import { watchHostReplacements } from "../sandbox/host/host-pool.ts";
import { describeConfinement } from "../wall/confine.ts";
import { JudgeClient } from "../server/judge-client.ts";
import { logger } from "../server/log.ts";
import { MemoryOrsSessions, ORS_SESSIONS } from "../server/ors.ts";
import { mountWeb } from "../web/mount.ts";

export interface RunningServer {
  url: string;
  port: number;
  store: MemoryEpisodeStore;
  /** Where environment code runs: worker threads for environments loaded from a module. */
  engine: EnvThreadPool;
  /**
   * Graceful stop: refuse new connections, let in-flight requests finish (up to the grace
   * period), close WebSockets with 1001 "going away", then release the port.
   */
  close(): Promise<void>;
}

export interface NodeAppOptions {
  /** Use this sandbox (the caller owns and disposes it) instead of making one from the config. */
  sandbox?: Sandbox;
  /**
   * Make the JavaScript sandbox from the config's settings (concurrency, affinity) with this instead
   * of `createSandbox` (the server owns it). Tests: a pool of hosts with a deliberate escape.
   */
  makeSandbox?: (options: CreateSandboxOptions) => Sandbox;
}

export function buildNodeApp(envs: readonly Environment[], config: Partial<ServerConfig> = {}, opts: NodeAppOptions = {}) {
  // Each client (client-id.ts) may hold a share of the episodes and of the memory budget.
  const clientShare = config.clientShare ?? DEFAULT_CLIENT_SHARE_PCT / 100;
  const maxEpisodes = config.maxEpisodes ?? 10_000;
  const store = new MemoryEpisodeStore({ maxEpisodes, maxEpisodesPerClient: Math.max(1, Math.floor(maxEpisodes * clientShare)), idleTimeoutMs: config.idleTimeoutMs });
  const budget = new MemoryBudget(config.maxMemoryBytes ?? DEFAULT_MAX_MEMORY_MB * 2 ** 20, () => store.bytes, { clientShare, storedBy: (client) => store.bytesFor(client) });
  const clientOf = clientIdentity(config.token, nodeAddress);
  // @hono/node-ws routes upgrade requests through `app.request`; the app needs the upgrade helper
  // to be built, so hand node-ws a late-bound reference to it.
  let app: Hono<any> | undefined;
  const ws = createNodeWebSocket({ app: { request: (...args: Parameters<Hono["request"]>) => app!.request(...args) } as Hono });
  // The code sandboxes for tools and rewards (src/sandbox/local.ts): one of each engine, shared;
  // every call sees them scoped to its episode (or, for stateless routes, its client), so their fair
  // queues keep one client's backlog of slow code from delaying another's tool call, and a call that
  // times out or is given up on cancels its runs.
  const kind = config.sandbox ?? sandboxKindFromEnv();
  if (opts.sandbox === undefined && breaksPerRunRule(kind, config.sandboxAffinity)) {
    const affinity = serverAffinity(kind, config.sandboxAffinity);
    logger().warn(
      `ENVWORKER_SANDBOX_AFFINITY=${affinity} with isolated-vm: a sandbox process serves more than one run, so a guest that breaks V8 can tamper with later runs of ${affinity === "off" ? "any client" : `its own ${affinity}`} (forge their rewards, read their hidden tests); unset it for a process per run`,
    );
  }
  const local = createLocalSandboxes({ kind, affinity: config.sandboxAffinity, maxConcurrency: config.sandboxConcurrency || undefined, sandbox: opts.sandbox, makeSandbox: opts.makeSandbox });
  // The operator's judge, for judged rewards: one client (cache, limits) for every thread.
  const judge = config.judge ? new JudgeClient(config.judge) : undefined;
  // Environment code runs in worker threads under a deadline; the sandboxes stay here.
  const engine = new EnvThreadPool(envs, {
    services: (scope) => ({ ...local.forScope(scope), judge: judge?.forScope({ key: scope.client ?? scope.key, signal: scope.signal }) }),
    timeoutMs: config.envTimeoutMs,
    minThreads: config.envThreads,
  });
  const host = new StoreEpisodeHost(store, engine, { maxSteps: config.maxSteps, maxChars: config.maxEpisodeChars }, budget);
  app = createApp({
    envs,
    host,
    engine,
    clientOf,
    budget,
    webSocket: sessionWebSocket(ws.upgradeWebSocket, host, { maxWsMessageBytes: config.maxWsMessageBytes, engine, budget }),
    maxBodyBytes: config.maxBodyBytes,
    // Bodies arriving are held against the memory budget too (many slow large bodies at once).
    readBody: (c, max) => readNodeBody(c, max, budget),
    // And large answers on their way out (many connections not reading them).
    answers: nodeAnswers(budget),
    token: config.token,
    // The playground and its pages (src/web/), mounted by the platform: the app is the wire only.
    pages: mountWeb,
    // ORS sessions: each client its share of them, as of the episodes.
    orsSessions: new MemoryOrsSessions({ maxPerClient: Math.max(1, Math.floor(ORS_SESSIONS * clientShare)) }),
    // Browsers: only this server's own pages (and listed origins); on a loopback address, only
    // loopback Host names (DNS rebinding).
    allowedOrigins: config.allowedOrigins,
    loopbackOnly: isLoopbackListen(config.host ?? "127.0.0.1"),
    allowedHosts: config.allowedHosts,
  });
  // Frames past twice the message limit are refused by the transport before they are buffered
  // whole (ws's default would take 100 MiB); between 1x and 2x the session answers with an error.
  (ws.wss.options as { maxPayload?: number }).maxPayload = 2 * (config.maxWsMessageBytes ?? 1 << 20);
  holdArrivingFrames(ws.wss, budget);
  const sandboxes = local.owned;
  return { app, store, engine, budget, sandboxes, injectWebSocket: ws.injectWebSocket, wss: ws.wss };
}

/** Start serving; resolves once the port is bound (port 0 picks a free one). */
export function startServer(envs: readonly Environment[], config: Partial<ServerConfig> = {}, opts: NodeAppOptions = {}): Promise<RunningServer> {
  // Whether bubblewrap works here is tried once per process, by starting Node under it with
  // spawnSync (31-47 ms idle, 161-207 ms beside six busy loops): now, before the port is bound,
  // not at the first sandboxed run (or serve's warning after its URL), where it held up requests.
  describeConfinement();
  const { app, store, engine, sandboxes, injectWebSocket, wss } = buildNodeApp(envs, config, opts);
  const graceMs = config.shutdownGraceMs ?? 10_000;
  store.startSweeping();
  // Why sandbox hosts restart (a guest past its memory, a host that died or spun while idle): at
  // info, since a model's code hitting its limits is routine in RL.
  const unwatch = watchHostReplacements((r) => logger().info(`sandbox: a ${r.label} was replaced: ${r.why}`));
  return new Promise((resolve, reject) => {
    let listening = false;
    const server: ServerType = serve({ fetch: app.fetch, hostname: config.host ?? "127.0.0.1", port: config.port ?? 8000 }, (info: AddressInfo) => {
      listening = true;
      const host = info.family === "IPv6" ? `[${info.address}]` : info.address;
      let closing: Promise<void> | undefined;
      resolve({
        url: `http://${host}:${info.port}`,
        port: info.port,
        store,
        engine,
        close: () =>
          (closing ??= shutdown(server, wss, graceMs).finally(async () => {
            unwatch();
            store.stopSweeping();
            await engine.dispose();
            await Promise.all(sandboxes.map((s) => s.dispose()));
          })),
      });
    });
    // Trainers pause between steps while the model generates: keep idle connections open well
    // past Node's 5 s default, so a client reusing one does not race the server's close.
    const http = server as { keepAliveTimeout?: number; headersTimeout?: number };
    http.keepAliveTimeout = 75_000;
    http.headersTimeout = 76_000;
    // A port that is taken or a host that is not ours: release what was built before rejecting,
    // so the caller's process can exit (the environment threads would hold it open).
    server.once("error", (err) => {
      if (listening) return;
      unwatch();
      store.stopSweeping();
      void Promise.allSettled([engine.dispose(), ...sandboxes.map((s) => s.dispose())]).finally(() => reject(err));
    });
    injectWebSocket(server);
  });
}

type HttpServerLike = ServerType & { closeIdleConnections?: () => void; closeAllConnections?: () => void };

function shutdown(server: HttpServerLike, wss: { clients: Set<{ close(code: number, reason: string): void }> }, graceMs: number): Promise<void> {
  return new Promise((done) => {
    // server.close stops accepting and calls back once every connection has ended.
    server.close(() => done());
    // Keep-alive connections with no request in flight would otherwise hold the close open.
    server.closeIdleConnections?.();
    for (const ws of wss.clients) ws.close(1001, "server shutting down");
    const idle = setInterval(() => server.closeIdleConnections?.(), 50);
    const force = setTimeout(() => server.closeAllConnections?.(), graceMs);
    idle.unref();
    force.unref();
    server.once("close", () => {
      clearInterval(idle);
      clearTimeout(force);
    });
  });
}
