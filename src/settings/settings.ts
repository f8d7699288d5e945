/**
 * Settings: every environment variable envworker reads (`ENVWORKER_*`, and `PORT`, `HOST`), named
 * here and read only through `readSetting`. README.md's settings tables list the same names
 * (test/package/settings-module.test.ts checks both ways, and that nothing else in src/ reads one).
 * What a value means, and its checks, stay with what it sets (server/config.ts,
 * node/python-envs/settings.ts, sandbox/kind.ts, …).
 */

export const SETTINGS = [
  // The server (server/config.ts; README "Settings").
  "PORT",
  "HOST",
  "ENVWORKER_MAX_EPISODES",
  "ENVWORKER_IDLE_TIMEOUT_S",
  "ENVWORKER_MAX_BODY_BYTES",
  "ENVWORKER_MAX_WS_MESSAGE_BYTES",
  "ENVWORKER_MAX_EPISODE_CHARS",
  "ENVWORKER_MAX_STEPS",
  "ENVWORKER_ENV_TIMEOUT_S",
  "ENVWORKER_ENV_THREADS",
  "ENVWORKER_MAX_MEMORY_MB",
  "ENVWORKER_CLIENT_SHARE",
  "ENVWORKER_SANDBOX",
  "ENVWORKER_QUICKJS_MODE", // sandbox/engines/quickjs/quickjs-process.ts
  "ENVWORKER_UNCONFINED",
  "ENVWORKER_SANDBOX_CONCURRENCY",
  "ENVWORKER_SANDBOX_AFFINITY",
  "ENVWORKER_TOKEN",
  "ENVWORKER_ALLOWED_ORIGINS",
  "ENVWORKER_ALLOWED_HOSTS",
  "ENVWORKER_CF_CONNECTING_IP",
  "ENVWORKER_LOG",
  "ENVWORKER_SHUTDOWN_GRACE_S",
  "ENVWORKER_JUDGE_URL",
  "ENVWORKER_JUDGE_MODEL",
  "ENVWORKER_JUDGE_API_KEY",
  "ENVWORKER_JUDGE_TIMEOUT_S",
  "ENVWORKER_JUDGE_RETRIES",
  "ENVWORKER_JUDGE_CONCURRENCY",
  "ENVWORKER_JUDGE_CLIENT_CONCURRENCY",
  "ENVWORKER_JUDGE_CACHE_ENTRIES",
  "ENVWORKER_JUDGE_MAX_REQUEST_CHARS",
  "ENVWORKER_JUDGE_CLIENT_CALLS_PER_MIN",
  // Python environments (node/python-envs/settings.ts).
  "ENVWORKER_PYTHON",
  "ENVWORKER_PYTHON_TIMEOUT_S",
  "ENVWORKER_PYTHON_START_TIMEOUT_S",
  "ENVWORKER_PYTHON_MAX_MESSAGE_MB",
  "ENVWORKER_PYTHON_MEMORY_MB",
  "ENVWORKER_PYTHON_NETWORK",
  "ENVWORKER_PYTHON_CALLS",
  "ENVWORKER_PYTHON_CALLS_PER_CLIENT",
  // The zygotes' interpreter (sandbox/engines/python/python-runtime.ts; scripts/install-python.mjs).
  "ENVWORKER_SANDBOX_PYTHON",
  "ENVWORKER_REQUIRE_PYTHON",
  "ENVWORKER_SKIP_PYTHON",
] as const;

export type SettingName = (typeof SETTINGS)[number];

/**
 * Variables envworker sets for its own children and never reads as a setting: the shim's mark on
 * the server it starts (bin/envworker.js, cli/watch.ts), which the tests look for.
 */
export const MARKERS = ["ENVWORKER_SHIM_PARENT"] as const;

/** Where settings come from: a process's environment, a Worker's vars, a test's record. */
export type SettingsSource = Readonly<Record<string, string | undefined>>;

/** This process's environment; none where there is no process (Workers pass their vars). */
export function processSettings(): SettingsSource {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return proc?.env ?? {};
}

/** The one read of a setting: its raw value in `from` (default: this process's environment). */
export function readSetting(name: SettingName, from: SettingsSource = processSettings()): string | undefined {
  return from[name];
}
