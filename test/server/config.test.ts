/**
 * configFromEnv in process: every numeric setting of the README's settings table has the
 * documented default and is read in its documented unit; values that are not non-negative
 * integers are refused. (test/server/settings.test.ts sets each variable on a real server; this file
 * runs the same code where coverage and mutation testing can see it.)
 */
import { describe, expect, it } from "vitest";
import { configFromEnv, type ServerConfig } from "../../src/server/config.ts";
import { readmeSettings } from "../helpers/readme.ts";

const ROWS = readmeSettings();
const DOCUMENTED = ROWS.flatMap((r) => r.names);

// refusal of values that are not non-negative integers.

/** Where each numeric setting lands in ServerConfig, and the unit it is given in. */
const NUMERIC: Record<string, { field: keyof ServerConfig; scale: number }> = {
  PORT: { field: "port", scale: 1 },
  ENVWORKER_MAX_EPISODES: { field: "maxEpisodes", scale: 1 },
  ENVWORKER_IDLE_TIMEOUT_S: { field: "idleTimeoutMs", scale: 1000 },
  ENVWORKER_MAX_BODY_BYTES: { field: "maxBodyBytes", scale: 1 },
  ENVWORKER_MAX_WS_MESSAGE_BYTES: { field: "maxWsMessageBytes", scale: 1 },
  ENVWORKER_MAX_EPISODE_CHARS: { field: "maxEpisodeChars", scale: 1 },
  ENVWORKER_MAX_STEPS: { field: "maxSteps", scale: 1 },
  ENVWORKER_ENV_TIMEOUT_S: { field: "envTimeoutMs", scale: 1000 },
  ENVWORKER_MAX_MEMORY_MB: { field: "maxMemoryBytes", scale: 2 ** 20 },
  ENVWORKER_SANDBOX_CONCURRENCY: { field: "sandboxConcurrency", scale: 1 },
  ENVWORKER_SHUTDOWN_GRACE_S: { field: "shutdownGraceMs", scale: 1000 },
};

describe("configFromEnv (in process)", () => {
  it("has the README's default for every numeric setting, and reads each in its documented unit", () => {
    const defaults = configFromEnv({});
    for (const row of ROWS) {
      row.names.forEach((name, i) => {
        const n = NUMERIC[name];
        if (!n) return;
        expect(defaults[n.field], `${name} default`).toBe(Number(row.defaults[i]) * n.scale);
        expect(configFromEnv({ [name]: "7" })[n.field], name).toBe(7 * n.scale);
        expect(configFromEnv({ [name]: "0" })[n.field], name).toBe(0);
        expect(configFromEnv({ [name]: "" })[n.field], `${name} empty`).toBe(defaults[n.field]);
        for (const bad of ["-1", "1.5", "ten", "1e999"]) expect(() => configFromEnv({ [name]: bad }), `${name}=${bad}`).toThrow(`${name} must be a non-negative integer, got "${bad}"`);
      });
    }
    expect(Object.keys(NUMERIC).filter((k) => !DOCUMENTED.includes(k))).toEqual([]);
  });

  it("ENVWORKER_ENV_THREADS: unset or empty is one per CPU (undefined here), else a non-negative count", () => {
    expect(configFromEnv({}).envThreads).toBeUndefined();
    expect(configFromEnv({ ENVWORKER_ENV_THREADS: "" }).envThreads).toBeUndefined();
    expect(configFromEnv({ ENVWORKER_ENV_THREADS: "0" }).envThreads).toBe(0);
    expect(configFromEnv({ ENVWORKER_ENV_THREADS: "3" }).envThreads).toBe(3);
    expect(() => configFromEnv({ ENVWORKER_ENV_THREADS: "-1" })).toThrow('ENVWORKER_ENV_THREADS must be a non-negative integer, got "-1"');
    expect(DOCUMENTED).toContain("ENVWORKER_ENV_THREADS");
  });

  it("ENVWORKER_CF_CONNECTING_IP: unset or empty (the build decides), trust or ignore; anything else refused", () => {
    expect(configFromEnv({}).cfConnectingIp).toBeUndefined();
    expect(configFromEnv({ ENVWORKER_CF_CONNECTING_IP: "" }).cfConnectingIp).toBeUndefined();
    expect(configFromEnv({ ENVWORKER_CF_CONNECTING_IP: "trust" }).cfConnectingIp).toBe("trust");
    expect(configFromEnv({ ENVWORKER_CF_CONNECTING_IP: "ignore" }).cfConnectingIp).toBe("ignore");
    expect(() => configFromEnv({ ENVWORKER_CF_CONNECTING_IP: "1" })).toThrow('ENVWORKER_CF_CONNECTING_IP must be "trust" or "ignore", got "1"');
    expect(DOCUMENTED).toContain("ENVWORKER_CF_CONNECTING_IP");
  });

  it("ENVWORKER_SANDBOX_AFFINITY: unset or empty (each engine's per-run default), run, client, episode (or its old name \"key\") or off; anything else refused", () => {
    expect(configFromEnv({}).sandboxAffinity).toBeUndefined();
    expect(configFromEnv({ ENVWORKER_SANDBOX_AFFINITY: "" }).sandboxAffinity).toBeUndefined();
    expect(configFromEnv({ ENVWORKER_SANDBOX_AFFINITY: "run" }).sandboxAffinity).toBe("run");
    expect(configFromEnv({ ENVWORKER_SANDBOX_AFFINITY: "client" }).sandboxAffinity).toBe("client");
    expect(configFromEnv({ ENVWORKER_SANDBOX_AFFINITY: "episode" }).sandboxAffinity).toBe("episode");
    expect(configFromEnv({ ENVWORKER_SANDBOX_AFFINITY: "key" }).sandboxAffinity).toBe("episode");
    expect(configFromEnv({ ENVWORKER_SANDBOX_AFFINITY: "off" }).sandboxAffinity).toBe("off");
    expect(() => configFromEnv({ ENVWORKER_SANDBOX_AFFINITY: "yes" })).toThrow('ENVWORKER_SANDBOX_AFFINITY must be "run", "client", "episode" or "off", got "yes"');
    expect(DOCUMENTED).toContain("ENVWORKER_SANDBOX_AFFINITY");
  });

  it("ENVWORKER_SANDBOX: quickjs when unset or empty (on Node too), isolated-vm when asked; anything else refused", () => {
    expect(configFromEnv({}).sandbox).toBe("quickjs");
    expect(configFromEnv({ ENVWORKER_SANDBOX: "" }).sandbox).toBe("quickjs");
    expect(configFromEnv({ ENVWORKER_SANDBOX: "isolated-vm" }).sandbox).toBe("isolated-vm");
    expect(() => configFromEnv({ ENVWORKER_SANDBOX: "v8" })).toThrow(/ENVWORKER_SANDBOX must be one of quickjs, isolated-vm/);
  });

  it("takes HOST and ENVWORKER_TOKEN as given, an empty value as unset", () => {
    const defaults = configFromEnv({});
    expect(defaults.host).toBe("127.0.0.1");
    expect(defaults.token).toBeUndefined();
    expect(configFromEnv({ HOST: "0.0.0.0", ENVWORKER_TOKEN: "s3cret" })).toMatchObject({ host: "0.0.0.0", token: "s3cret" });
    expect(configFromEnv({ HOST: "", ENVWORKER_TOKEN: "" })).toMatchObject({ host: "127.0.0.1", token: undefined });
  });
});

