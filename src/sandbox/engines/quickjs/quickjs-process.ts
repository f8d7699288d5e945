/**
 * QuickJS on Node (ENVWORKER_SANDBOX=quickjs). By default (`mode: "instance"`) every run is a fresh
 * wasm instance of the warm engine's snapshot in a host that serves one client:
 * quickjs-instances.ts. What follows is the fork zygote (`mode: "fork"`, ENVWORKER_QUICKJS_MODE=fork),
 * kept for comparison: QuickJS-NG compiled to WASI, run by wasmtime in a
 * fork server (zygote/quickjs/qjs_zygote.py, on the Python sandbox's zygote core), behind the same
 * `Sandbox` interface and through the same supervised, confined host pool (host-pool.ts,
 * confine.ts) as the other Node backends. In-process QuickJS (quickjs.ts, quickjs-emscripten) stays
 * what Workers run.
 *
 * Isolation ("a broken engine gains nothing"): a host is a zygote, a Python process holding a warm
 * QuickJS (the guest context with its prelude, sucrase) that never runs a guest's code itself.
 * EVERY run executes in a fresh child forked from it, used once, killed and reaped before the next
 * child exists: nothing a run does, to QuickJS or to its process should it break out of
 * WebAssembly, is seen by a later run. There is no JavaScript host in the process, and the guest's
 * context has no module (import() of qjs:std / qjs:os fails) and no host function.
 *
 * Limits, all enforced by the zygote on its child: time on the run clock (at timeoutMs QuickJS is
 * interrupted and the run ends as a TimeoutError with its output; a child that does not stop
 * within 250 ms of run clock more is killed), memory by QuickJS's own count (the warm heap +
 * memoryMb) and wasmtime's store limit on the wasm memory (MemoryLimitError), stack by stackKb
 * (QuickJS's limit) and wasmtime's cap on the native stack (RangeError), TypeScript stripped inside
 * the child under the run's limits. The pool's watchdog (timeoutMs + watchdogSlackMs, on the run
 * clock of the child) and the memory watch of the whole tree (process-memory.ts ForkingHost) stay as the backstop.
 */
import { join } from "node:path";
import type { ProgramProfile } from "../../../wall/confine.ts";
import { HostPoolSandbox } from "../../host/host-pool.ts";
import { QUICKJS_ZYGOTE_DIR, quickjsRuntime } from "./quickjs-runtime.ts";
import { createQuickJSInstanceSandbox, type QuickJSInstanceSandboxOptions } from "./quickjs-instances.ts";
import { zygotePoolOptions, zygoteProfile } from "../../host/zygote-pool.ts";
import { processSettings, readSetting, type SettingsSource } from "../../../settings/settings.ts";

export interface QuickJSProcessSandboxOptions extends QuickJSInstanceSandboxOptions {
  /**
   * "instance" (the default): a fresh wasm instance of the warm engine's snapshot per run, hosts
   * dedicated to a client (quickjs-instances.ts, issue 42). "fork": the zygote below, a process
   * forked per run (kept for comparison). Default: ENVWORKER_QUICKJS_MODE, else "instance".
   */
  mode?: "instance" | "fork";
}

/** The QuickJS process sandbox's mode from the settings (ENVWORKER_QUICKJS_MODE=fork|instance; default: this process's environment). */
export function quickjsModeFromEnv(env: SettingsSource = processSettings()): "instance" | "fork" {
  return readSetting("ENVWORKER_QUICKJS_MODE", env) === "fork" ? "fork" : "instance";
}

/** How a zygote is started: the Python sandbox's interpreter on zygote/quickjs/qjs_zygote.py, with the precompiled module and the assets. */
export const QUICKJS_PROFILE: ProgramProfile = zygoteProfile("quickjs", async () => {
  const runtime = await quickjsRuntime();
  return { executable: runtime.executable, args: ["-I", "-B", join(QUICKJS_ZYGOTE_DIR, "qjs_zygote.py"), runtime.cwasm, runtime.assets], readable: runtime.readable };
});

export type QuickJSProcessSandbox = HostPoolSandbox;

export function createQuickJSProcessSandbox(options: QuickJSProcessSandboxOptions = {}): QuickJSProcessSandbox {
  if ((options.mode ?? quickjsModeFromEnv()) === "instance") return createQuickJSInstanceSandbox(options);
  return new HostPoolSandbox(zygotePoolOptions("quickjs", "QuickJS process", QUICKJS_PROFILE, options, { maxConcurrency: options.maxConcurrency, affinity: options.affinity }));
}
