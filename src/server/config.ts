/** Server settings from the environment, each with its documented default. */
export interface ServerConfig {
  host: string;
  port: number;
  maxEpisodes: number;
  idleTimeoutMs: number;
  maxBodyBytes: number;
  maxWsMessageBytes: number;
  /** Steps per episode at most, whatever an environment's maxTurns (then truncated). */
  maxSteps: number;
  /** An episode's conversation may hold at most this many characters (then 413). */
  maxEpisodeChars: number;
  /** Concurrent sandbox runs at most (0 = the backend's default: one per CPU). */
  sandboxConcurrency: number;
  /**
   * Sandbox hosts dedicated to one queue key (an episode; a client on stateless routes), so a guest
   * that escaped its engine reaches only its own later runs (src/sandbox/README.md "The residual").
   */
  sandboxAffinity: boolean;
  /** Bearer token required on every route but /health; unset = open. */
  token: string | undefined;
  /** How long shutdown waits for in-flight requests before closing connections. */
  shutdownGraceMs: number;
  /** Deadline of one call into environment code (reset, step, score, a tool call over MCP). */
  envTimeoutMs: number;
  /** Memory the server keeps for clients (stored episodes, queued WebSocket messages) at most. */
  maxMemoryBytes: number;
  /**
   * Environment threads kept running (undefined: one per CPU). 0: none, environment code runs on
   * the event loop, without deadlines (for environments one trusts, where CPU per call matters).
   */
  envThreads: number | undefined;
}

/**
 * Default memory budget, MiB: well under V8's default heap limit (about 4 GiB on 64-bit), leaving
 * room for transient copies (a state is in flight to an environment thread while the stored one
 * is kept) and everything else the process holds.
 */
export const DEFAULT_MAX_MEMORY_MB = 1024;

function int(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return n;
}

function affinity(raw: string | undefined): boolean {
  if (raw === undefined || raw === "" || raw === "off") return false;
  if (raw === "key") return true;
  throw new Error(`ENVWORKER_SANDBOX_AFFINITY must be "key" or "off", got ${JSON.stringify(raw)}`);
}

export function configFromEnv(env: Record<string, string | undefined>): ServerConfig {
  return {
    host: env.HOST || "127.0.0.1",
    port: int(env, "PORT", 8000),
    maxEpisodes: int(env, "ENVWORKER_MAX_EPISODES", 10_000),
    idleTimeoutMs: int(env, "ENVWORKER_IDLE_TIMEOUT_S", 600) * 1000,
    maxBodyBytes: int(env, "ENVWORKER_MAX_BODY_BYTES", 1 << 20),
    maxWsMessageBytes: int(env, "ENVWORKER_MAX_WS_MESSAGE_BYTES", 1 << 20),
    maxSteps: int(env, "ENVWORKER_MAX_STEPS", 1000),
    maxEpisodeChars: int(env, "ENVWORKER_MAX_EPISODE_CHARS", 1_000_000),
    sandboxConcurrency: int(env, "ENVWORKER_SANDBOX_CONCURRENCY", 0),
    sandboxAffinity: affinity(env.ENVWORKER_SANDBOX_AFFINITY),
    token: env.ENVWORKER_TOKEN || undefined,
    shutdownGraceMs: int(env, "ENVWORKER_SHUTDOWN_GRACE_S", 10) * 1000,
    envTimeoutMs: int(env, "ENVWORKER_ENV_TIMEOUT_S", 30) * 1000,
    maxMemoryBytes: int(env, "ENVWORKER_MAX_MEMORY_MB", DEFAULT_MAX_MEMORY_MB) * 2 ** 20,
    envThreads: env.ENVWORKER_ENV_THREADS ? int(env, "ENVWORKER_ENV_THREADS", 0) : undefined,
  };
}
