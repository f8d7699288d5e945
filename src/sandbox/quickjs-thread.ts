/**
 * QuickJS on Node, with a hard stop: runs go to worker threads (quickjs-worker.ts), supervised by
 * host-pool.ts. QuickJS's own interrupt deadline stops almost every runaway run on time, but the
 * interrupt handler is only consulted every ~10 000 calls/backward jumps; a loop made of long
 * native operations (`for(;;) JSON.parse(JSON.stringify(big))`) can go minutes between two checks
 * (measured: 2 handler calls in 235 s). The watchdog therefore terminates the thread at
 * timeoutMs + WATCHDOG_SLACK_MS; the run ends as a TimeoutError (its output is lost with the
 * thread) and a fresh thread takes its place. On Workers, the platform CPU limit plays this role.
 */
import { siblingModule } from "../node/ts-worker.ts";
import { threadHost } from "./host-handles.ts";
import { HostPoolSandbox } from "./host-pool.ts";

export interface QuickJSThreadSandboxOptions {
  /** Max concurrent runs = max worker threads (default: number of CPUs). */
  maxConcurrency?: number;
  /** Extra time past timeoutMs before the watchdog kills the thread (default 500 ms). */
  watchdogSlackMs?: number;
}

const WATCHDOG_SLACK_MS = 500;
const MiB = 1024 * 1024;
/**
 * The thread's own V8 heap (not the guest's: QuickJS lives in wasm memory, bounded by memoryMb):
 * type stripping, the run's strings and its result. Over it the thread dies, not the server.
 */
const THREAD_HEAP_MB = 256;
/** Wasm memory never shrinks: a thread whose instance grew by more than this is replaced. */
const RETIRE_ABOVE_BYTES = 32 * MiB;

export type QuickJSThreadSandbox = HostPoolSandbox;

export function createQuickJSThreadSandbox(options: QuickJSThreadSandboxOptions = {}): QuickJSThreadSandbox {
  const entry = siblingModule("quickjs-worker", import.meta.url);
  return new HostPoolSandbox({
    kind: "quickjs",
    label: "QuickJS thread",
    start: () => threadHost(entry, { maxOldGenerationSizeMb: THREAD_HEAP_MB, stackSizeMb: 4 }),
    maxConcurrency: options.maxConcurrency,
    watchdogSlackMs: options.watchdogSlackMs ?? WATCHDOG_SLACK_MS,
    memory: { retireAboveBytes: () => RETIRE_ABOVE_BYTES },
    cooperativeCancel: false,
  });
}
