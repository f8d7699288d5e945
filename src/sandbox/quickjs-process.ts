/**
 * QuickJS on Node, with a hard stop: runs go to confined child processes (quickjs-host.ts,
 * confine.ts), supervised by host-pool.ts. QuickJS's own interrupt deadline stops almost every
 * runaway run on time, but the interrupt handler is only consulted every ~10 000 calls/backward
 * jumps; a loop made of long native operations (`for(;;) JSON.parse(JSON.stringify(big))`) can go
 * minutes between two checks (measured: 2 handler calls in 235 s). The watchdog therefore kills the
 * process at timeoutMs + WATCHDOG_SLACK_MS; the run ends as a TimeoutError (its output is lost with
 * the process) and a fresh one takes its place. On Workers, the platform CPU limit plays this role.
 */
import { siblingModule } from "../node/ts-worker.ts";
import type { ConfineOptions, NodeProfile } from "./confine.ts";
import { processHost } from "./host-handles.ts";
import { HostPoolSandbox, type HostAffinity } from "./host-pool.ts";

export interface QuickJSProcessSandboxOptions {
  /** Max concurrent runs = max processes (default: number of CPUs). */
  maxConcurrency?: number;
  /** Extra time past timeoutMs before the watchdog kills the process (default 500 ms). */
  watchdogSlackMs?: number;
  /** Whom each host is dedicated to (host-pool.ts `HostAffinity`; README.md "The residual"). Default "off". */
  affinity?: HostAffinity;
  /** How the processes are confined (tests turn bubblewrap off to check the rest holds alone). */
  confine?: ConfineOptions;
}

const WATCHDOG_SLACK_MS = 500;
const MiB = 1024 * 1024;
/**
 * The process's own V8 heap (not the guest's: QuickJS lives in wasm memory, bounded by memoryMb):
 * type stripping, the run's strings and its result. Over it the process dies, not the server.
 */
const HEAP_MB = 256;
/** Wasm memory never shrinks: a process whose instance grew by more than this is replaced. */
const RETIRE_ABOVE_BYTES = 32 * MiB;

/**
 * How a QuickJS process is confined. QuickJS parses and interprets on the native stack (~600 nested
 * parentheses exhausted Node's default): V8's stack limit is raised to ~3.8 MiB, within the 8 MiB
 * the OS gives a main thread. Wasm bounds checks instead of guard regions (`--disable-wasm-trap-
 * handler`): each wasm memory would otherwise reserve ~10 GiB of address space, and the address
 * space is limited.
 */
export const QUICKJS_PROFILE: NodeProfile = {
  name: "quickjs",
  entries: { "quickjs-host": siblingModule("quickjs-host", import.meta.url) },
  packages: ["@jitl/quickjs-wasmfile-release-sync"],
  noEval: true,
  nodeFlags: [`--max-old-space-size=${HEAP_MB}`, "--stack-size=3800", "--disable-wasm-trap-handler"],
  addressSpaceMb: 8 * 1024,
};

export type QuickJSProcessSandbox = HostPoolSandbox;

export function createQuickJSProcessSandbox(options: QuickJSProcessSandboxOptions = {}): QuickJSProcessSandbox {
  return new HostPoolSandbox({
    kind: "quickjs",
    label: "QuickJS process",
    start: () => processHost(QUICKJS_PROFILE, options.confine),
    maxConcurrency: options.maxConcurrency,
    watchdogSlackMs: options.watchdogSlackMs ?? WATCHDOG_SLACK_MS,
    // The pool's RSS bounds (host-pool.ts), and the wasm memory the host reports as a hint.
    memory: { engine: { retireAboveBytes: () => RETIRE_ABOVE_BYTES } },
    cooperativeCancel: false,
    // Like Python's: a host's start-up and JIT warm-up (~0.5 s of CPU) every 1,000 runs cost a third
    // of a long run's throughput (bench/README.md, "Whole lives"). What recycling bounds, an escaped
    // guest's reach into later runs, is bounded by affinity first: those are its own client's runs.
    recycleAfterRuns: 20_000,
    affinity: options.affinity,
  });
}
