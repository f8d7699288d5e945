/**
 * QuickJS on Node (ENVWORKER_SANDBOX=quickjs): QuickJS-NG compiled to WASI, run by wasmtime in a
 * fork server (quickjs-zygote/qjs_zygote.py, on the Python sandbox's zygote core), behind the same
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
 * clock of the child) and the memory watch of the whole tree (by PSS) stay as the backstop.
 */
import { join } from "node:path";
import type { ConfineOptions, ProgramProfile } from "./confine.ts";
import { processHost } from "./host-handles.ts";
import { HostPoolSandbox, type HostAffinity } from "./host-pool.ts";
import { QUICKJS_ZYGOTE_DIR, quickjsRuntime } from "./quickjs-runtime.ts";

export interface QuickJSProcessSandboxOptions {
  /** Max concurrent runs = max zygotes (default: number of CPUs). */
  maxConcurrency?: number;
  /** Time past timeoutMs before the pool kills a zygote whose child it did not stop (default 1000 ms). */
  watchdogSlackMs?: number;
  /** Whom each host is dedicated to (host-pool.ts `HostAffinity`; README.md "The residual"). Default "off". */
  affinity?: HostAffinity;
  /** How the processes are confined (tests turn bubblewrap off to check the rest holds alone). */
  confine?: ConfineOptions;
  /** Tests: the profile to start (an escape fixture's), in place of QUICKJS_PROFILE. */
  profile?: ProgramProfile;
}

/**
 * The zygote stops its child at the limit on the child's own CPU clock; the pool's watchdog is the
 * backstop for a zygote that does not answer. Its run clock of a forking host is read from
 * whichever child is the leaf, which on a busy machine ran a second ahead of the child's CPU time
 * (run-clock test at load ~15: a 1,390 ms run stopped at 2,397 ms by the watchdog, output lost),
 * so its slack is wide: the run's own limit stays exact.
 */
const WATCHDOG_SLACK_MS = 4000;
const MiB = 1024 * 1024;

/**
 * How a zygote is started: the Python sandbox's interpreter on quickjs-zygote/qjs_zygote.py, with the
 * precompiled module and the assets. Address space: wasmtime reserves 4 GiB + guard regions for
 * the linear memory (almost none of it touched); 16 GiB leaves room. A 64 MiB main-thread stack:
 * wasm frames run on it (capped at ~2 MiB by the engine's config), above Python's own use.
 */
export const QUICKJS_PROFILE: ProgramProfile = {
  kind: "program",
  name: "quickjs",
  async command() {
    const runtime = await quickjsRuntime();
    return { executable: runtime.executable, args: ["-I", "-B", join(QUICKJS_ZYGOTE_DIR, "qjs_zygote.py"), runtime.cwasm, runtime.assets], readable: runtime.readable };
  },
  addressSpaceMb: 16 * 1024,
  stackMb: 64,
  forksPerRun: true,
};

export type QuickJSProcessSandbox = HostPoolSandbox;

export function createQuickJSProcessSandbox(options: QuickJSProcessSandboxOptions = {}): QuickJSProcessSandbox {
  const profile = options.profile ?? QUICKJS_PROFILE;
  return new HostPoolSandbox({
    kind: "quickjs",
    label: "QuickJS process",
    start: () => processHost(profile, options.confine),
    maxConcurrency: options.maxConcurrency,
    watchdogSlackMs: options.watchdogSlackMs ?? WATCHDOG_SLACK_MS,
    memory: {
      // The tree's PSS (process-memory.ts): a run's child may add its wasm growth (at most 1.5 x
      // memoryMb + 8 MiB, the store limit) and the pages it copies from the zygote (a few MiB);
      // after its run the child is gone, so a zygote keeps nothing of a run.
      killAboveBytes: (limits) => 2 * limits.memoryMb * MiB + 96 * MiB,
      retireAboveBytes: () => 64 * MiB,
    },
    cooperativeCancel: true,
    // Nothing a run leaves survives it, so recycling bounds nothing of a guest's; a zygote is
    // replaced now and then all the same (its own heap, any slow leak of the host's).
    recycleAfterRuns: 20_000,
    affinity: options.affinity,
  });
}
