/**
 * What the two zygote backends (python.ts: CPython for WASI; quickjs-process.ts: QuickJS-NG for
 * WASI) share on the server's side: how a zygote is started (a confined Python program that forks
 * a fresh child per run) and the host pool's settings for one. Each backend names its program and
 * its label; the rest is one piece of code.
 */
import type { ConfineOptions, ProgramCommand, ProgramProfile } from "../../wall/confine.ts";
import { processHost } from "./host-handles.ts";
import type { HostAffinity, HostPoolOptions } from "./host-pool.ts";
import type { SandboxKind } from "../types.ts";

/** The options every zygote backend takes. */
export interface ZygoteSandboxOptions {
  /** Max concurrent runs = max zygotes (default: number of CPUs). */
  maxConcurrency?: number;
  /** Time past timeoutMs before the pool kills a zygote whose child it did not stop (default WATCHDOG_SLACK_MS). */
  watchdogSlackMs?: number;
  /** Replace a zygote after this many runs (default 20,000). */
  recycleAfterRuns?: number;
  /** Whom each zygote is dedicated to (host-pool.ts `HostAffinity`; README.md "The residual"). Default "off". */
  affinity?: HostAffinity;
  /** How the processes are confined (tests turn bubblewrap off to check the rest holds alone). */
  confine?: ConfineOptions;
  /** Tests: the profile to start (an escape fixture's), in place of the backend's own. */
  profile?: ProgramProfile;
}

/**
 * The zygote stops its child at the limit on the child's own CPU clock; the pool's watchdog is the
 * backstop for a zygote that does not answer. Its run clock of a forking host is read from
 * whichever child is the leaf, which on a busy machine ran a second ahead of the child's CPU time
 * (run-clock test at load ~15: a 1,390 ms run stopped at 2,397 ms by the watchdog, output lost),
 * so its slack is wide: the run's own limit stays exact.
 */
export const WATCHDOG_SLACK_MS = 4000;
const MiB = 1024 * 1024;

/**
 * How a zygote is started: `command` (the Python of python-runtime.ts on the backend's zygote
 * file). Address space: wasmtime reserves 4 GiB + guard regions per linear memory (~8 GiB of
 * mappings, almost none of it touched); 16 GiB leaves room. A 64 MiB main-thread stack: wasm frames
 * run on it (capped at ~2 MiB by the engines' config), above Python's own use.
 */
export function zygoteProfile(name: string, command: () => Promise<ProgramCommand>): ProgramProfile {
  return { kind: "program", name, command, addressSpaceMb: 16 * 1024, stackMb: 64, forksPerRun: true };
}

/** The host pool's settings for zygotes of one backend. */
export function zygotePoolOptions(
  kind: SandboxKind,
  label: string,
  profile: ProgramProfile,
  options: ZygoteSandboxOptions,
  extra: Pick<HostPoolOptions, "maxConcurrency" | "affinity" | "validate">,
): HostPoolOptions {
  return {
    kind,
    label,
    start: () => processHost(options.profile ?? profile, options.confine),
    watchdogSlackMs: options.watchdogSlackMs ?? WATCHDOG_SLACK_MS,
    memory: {
      // The tree's memory (process-memory.ts ForkingHost): a run's child may add its wasm growth (at
      // most memoryMb for Python, 1.5 x memoryMb + 8 MiB for QuickJS: their store limits) and the
      // pages it copies from the zygote (its engine's, a few to ~40 MiB); after its run the child
      // is gone, so a zygote keeps nothing of a run.
      killAboveBytes: (limits) => 2 * limits.memoryMb * MiB + 96 * MiB,
      retireAboveBytes: () => 64 * MiB,
    },
    cooperativeCancel: true,
    // Nothing a run leaves survives it, so recycling bounds nothing of a guest's; a zygote is
    // replaced now and then all the same (its own heap, any slow leak of the host's).
    recycleAfterRuns: options.recycleAfterRuns ?? 20_000,
    ...extra,
  };
}
