/** Server settings from the environment, each with its documented default. */
import { sandboxKindFromEnv } from "../sandbox/kind.ts";
import type { SandboxKind } from "../sandbox/types.ts";
import { allowedHosts, allowedOrigins } from "./browser-guards.ts";
import { readSetting, type SettingName, type SettingsSource } from "../settings/settings.ts";

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
  /** The JavaScript engine on Node (ENVWORKER_SANDBOX; default quickjs: a fresh process forked per run). */
  sandbox: SandboxKind;
  /**
   * Whom a sandbox host (process) is dedicated to (ENVWORKER_SANDBOX_AFFINITY). Undefined (the
   * default): every run starts in a state no earlier guest touched, on every engine: isolated-vm
   * hosts serve one run each ("run"); the QuickJS and Python zygotes fork a fresh child per run
   * and are dedicated to a client. "client", "episode" or "off" on isolated-vm is the operator's
   * explicit choice of speed over that rule: an escaped guest then reaches later runs of its own
   * client, its own episode, or of anyone (src/sandbox/README.md "The residual").
   */
  sandboxAffinity: SandboxAffinity | undefined;
  /** Bearer token required on every route but /health; unset = open. */
  token: string | undefined;
  /**
   * Origins besides the server's own whose pages may call the server from a browser
   * (ENVWORKER_ALLOWED_ORIGINS, comma-separated; they get CORS headers). Default: none.
   */
  allowedOrigins: string[];
  /**
   * Host names (or `*.suffix` patterns) answered besides loopback ones and a Worker's own
   * `*.workers.dev` (ENVWORKER_ALLOWED_HOSTS): a proxy's public name, a Worker's route or custom
   * domain. Applies where Host is checked: a Node server on a loopback address, every Worker.
   */
  allowedHosts: string[];
  /**
   * Workers: whether a client's address is its `CF-Connecting-IP` header (ENVWORKER_CF_CONNECTING_IP):
   * "trust", "ignore", or undefined: trusted in a bundle `wrangler deploy` built (src/workers/edge.ts).
   */
  cfConnectingIp: "trust" | "ignore" | undefined;
  /** How long shutdown waits for in-flight requests before closing connections. */
  shutdownGraceMs: number;
  /** Deadline of one call into environment code (reset, step, score, a tool call over MCP). */
  envTimeoutMs: number;
  /** Memory the server keeps for clients (stored episodes, queued WebSocket messages) at most. */
  maxMemoryBytes: number;
  /**
   * The part (0–1] of the memory budget, of the open episodes and of the parsed requests' share one
   * client may hold (ENVWORKER_CLIENT_SHARE, a percentage; client-id.ts says who a client is).
   */
  clientShare: number;
  /**
   * Environment threads kept running (undefined: one per CPU). 0: none, environment code runs on
   * the event loop, without deadlines (for environments one trusts, where CPU per call matters).
   */
  envThreads: number | undefined;
  /** The operator's judge model for judged rewards (ENVWORKER_JUDGE_*); undefined = none. */
  judge: JudgeSettings | undefined;
}

/** The operator's judge model for judged rewards (src/server/judge-client.ts). */
export interface JudgeSettings {
  /** Base URL of the chat-completions API, e.g. https://api.openai.com/v1 (ENVWORKER_JUDGE_URL). */
  url: string;
  /** ENVWORKER_JUDGE_MODEL; when unset, the judge's own default (defineJudge's `model`). */
  model: string | undefined;
  /** ENVWORKER_JUDGE_API_KEY. */
  apiKey: string | undefined;
  /** One attempt's limit (ENVWORKER_JUDGE_TIMEOUT_S, default 60 s). */
  timeoutMs: number;
  /** Attempts after the first (ENVWORKER_JUDGE_RETRIES, default 2). */
  retries: number;
  /** Calls at once on this server (ENVWORKER_JUDGE_CONCURRENCY, default 32). */
  concurrency: number;
  /** Calls at once for one client or episode (ENVWORKER_JUDGE_CLIENT_CONCURRENCY, default 8). */
  clientConcurrency: number;
  /** Cached answers at most (ENVWORKER_JUDGE_CACHE_ENTRIES, default 4096; 0 = no cache). */
  cacheEntries: number;
  /** Characters of a request's messages at most (ENVWORKER_JUDGE_MAX_REQUEST_CHARS, default 200000). */
  maxRequestChars: number;
  /** Judge calls one client may make a minute (ENVWORKER_JUDGE_CLIENT_CALLS_PER_MIN, default 600): see judge-client.ts. */
  clientCallsPerMinute: number;
}

/**
 * Default memory budget, MiB: well under V8's default heap limit (about 4 GiB on 64-bit), leaving
 * room for transient copies (a state is in flight to an environment thread while the stored one
 * is kept) and everything else the process holds.
 */
export const DEFAULT_MAX_MEMORY_MB = 1024;

/** Default share of one client, percent: four clients filling theirs fill the server. */
export const DEFAULT_CLIENT_SHARE_PCT = 25;

function percent(env: SettingsSource, name: SettingName, fallback: number): number {
  const n = int(env, name, fallback);
  if (n < 1 || n > 100) throw new Error(`${name} must be a percentage from 1 to 100, got ${JSON.stringify(readSetting(name, env))}`);
  return n;
}

function int(env: SettingsSource, name: SettingName, fallback: number, min = 0): number {
  const raw = readSetting(name, env);
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be a ${min === 0 ? "non-negative" : "positive"} integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** A positive number of seconds (fractions allowed: a judge's answer takes seconds, not minutes). */
function seconds(env: SettingsSource, name: SettingName, fallback: number): number {
  const raw = readSetting(name, env);
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number of seconds, got ${JSON.stringify(raw)}`);
  return n;
}

export type SandboxAffinity = "run" | "client" | "episode" | "off";

function affinity(raw: string | undefined): SandboxAffinity | undefined {
  if (raw === undefined || raw === "") return undefined;
  // "key" was the name of "episode" (a host per queue key) when it was the only choice besides off.
  if (raw === "key") return "episode";
  if (raw === "run" || raw === "client" || raw === "episode" || raw === "off") return raw;
  throw new Error(`ENVWORKER_SANDBOX_AFFINITY must be "run", "client", "episode" or "off", got ${JSON.stringify(raw)}`);
}

function cfConnectingIp(raw: string | undefined): "trust" | "ignore" | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (raw === "trust" || raw === "ignore") return raw;
  throw new Error(`ENVWORKER_CF_CONNECTING_IP must be "trust" or "ignore", got ${JSON.stringify(raw)}`);
}

export function configFromEnv(env: Record<string, string | undefined>): ServerConfig {
  return {
    host: readSetting("HOST", env) || "127.0.0.1",
    port: int(env, "PORT", 8000),
    maxEpisodes: int(env, "ENVWORKER_MAX_EPISODES", 10_000),
    idleTimeoutMs: int(env, "ENVWORKER_IDLE_TIMEOUT_S", 600) * 1000,
    maxBodyBytes: int(env, "ENVWORKER_MAX_BODY_BYTES", 1 << 20),
    maxWsMessageBytes: int(env, "ENVWORKER_MAX_WS_MESSAGE_BYTES", 1 << 20),
    maxSteps: int(env, "ENVWORKER_MAX_STEPS", 1000),
    maxEpisodeChars: int(env, "ENVWORKER_MAX_EPISODE_CHARS", 1_000_000),
    sandboxConcurrency: int(env, "ENVWORKER_SANDBOX_CONCURRENCY", 0),
    sandbox: sandboxKindFromEnv(env),
    sandboxAffinity: affinity(readSetting("ENVWORKER_SANDBOX_AFFINITY", env)),
    token: readSetting("ENVWORKER_TOKEN", env) || undefined,
    allowedOrigins: allowedOrigins(readSetting("ENVWORKER_ALLOWED_ORIGINS", env)),
    allowedHosts: allowedHosts(readSetting("ENVWORKER_ALLOWED_HOSTS", env)),
    cfConnectingIp: cfConnectingIp(readSetting("ENVWORKER_CF_CONNECTING_IP", env)),
    shutdownGraceMs: int(env, "ENVWORKER_SHUTDOWN_GRACE_S", 10) * 1000,
    envTimeoutMs: int(env, "ENVWORKER_ENV_TIMEOUT_S", 30) * 1000,
    maxMemoryBytes: int(env, "ENVWORKER_MAX_MEMORY_MB", DEFAULT_MAX_MEMORY_MB) * 2 ** 20,
    clientShare: percent(env, "ENVWORKER_CLIENT_SHARE", DEFAULT_CLIENT_SHARE_PCT) / 100,
    envThreads: readSetting("ENVWORKER_ENV_THREADS", env) ? int(env, "ENVWORKER_ENV_THREADS", 0) : undefined,
    judge: judgeSettingsFromEnv(env),
  };
}

/** The judge's settings (ENVWORKER_JUDGE_*), or undefined when the operator configured none (ENVWORKER_JUDGE_URL unset). */
export function judgeSettingsFromEnv(env: Record<string, string | undefined>): JudgeSettings | undefined {
  const url = readSetting("ENVWORKER_JUDGE_URL", env)?.trim();
  if (!url) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`ENVWORKER_JUDGE_URL must be an http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error(`ENVWORKER_JUDGE_URL must be an http(s) URL, got ${JSON.stringify(url)}`);
  return {
    url: url.replace(/\/+$/, ""),
    model: readSetting("ENVWORKER_JUDGE_MODEL", env)?.trim() || undefined,
    apiKey: readSetting("ENVWORKER_JUDGE_API_KEY", env) || undefined,
    timeoutMs: seconds(env, "ENVWORKER_JUDGE_TIMEOUT_S", 60) * 1000,
    retries: int(env, "ENVWORKER_JUDGE_RETRIES", 2),
    concurrency: int(env, "ENVWORKER_JUDGE_CONCURRENCY", 32, 1),
    clientConcurrency: int(env, "ENVWORKER_JUDGE_CLIENT_CONCURRENCY", 8, 1),
    cacheEntries: int(env, "ENVWORKER_JUDGE_CACHE_ENTRIES", 4096),
    maxRequestChars: int(env, "ENVWORKER_JUDGE_MAX_REQUEST_CHARS", 200_000, 1),
    clientCallsPerMinute: int(env, "ENVWORKER_JUDGE_CLIENT_CALLS_PER_MIN", 600, 1),
  };
}

