/**
 * Which JavaScript sandbox: ENVWORKER_SANDBOX, validated. Apart from index.ts so the server's
 * settings (src/server/config.ts, also built for Workers) can read it without the sandboxes.
 */
import { processSettings, readSetting, type SettingsSource } from "../settings/settings.ts";
import type { SandboxKind } from "./types.ts";

export const SANDBOX_KINDS: readonly SandboxKind[] = ["quickjs", "isolated-vm"];

/** ENVWORKER_SANDBOX from `env` (default: process.env where there is one), validated; quickjs when unset (on Node too: src/sandbox/index.ts says why). */
export function sandboxKindFromEnv(env: SettingsSource = processSettings()): SandboxKind {
  const value = readSetting("ENVWORKER_SANDBOX", env);
  if (value === undefined || value === "") return "quickjs";
  if ((SANDBOX_KINDS as readonly string[]).includes(value)) return value as SandboxKind;
  throw new Error(`ENVWORKER_SANDBOX must be one of ${SANDBOX_KINDS.join(", ")}; got ${JSON.stringify(value)}`);
}
