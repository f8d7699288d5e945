/**
 * The sandbox contract shared by every backend: what a caller passes in (code, limits, inputs) and
 * what always comes back (a RunResult; a run never throws because of what the guest did).
 */

/** Plain JSON data: the only thing that crosses the sandbox boundary in either direction. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Hard limits for one run. Every backend enforces all of them, except where noted. */
export interface RunLimits {
  /**
   * Wall-clock budget for the whole run: the script, the promise it returns and the jobs that
   * promise needs. With the QuickJS "budget" deadline (Workers) it is converted into a number of
   * interrupt-handler calls, see deadline.ts.
   */
  timeoutMs: number;
  /** Heap limit: QuickJS runtime memory limit / isolated-vm isolate `memoryLimit` (min 8 MiB). */
  memoryMb: number;
  /** QuickJS `setMaxStackSize`, in KiB (16..384; above 384 KiB QuickJS can overflow the host stack). V8 uses its own fixed stack. */
  stackKb: number;
  /**
   * Cap on captured console output (stdout + stderr together, UTF-8 bytes); the serialised
   * result gets a cap of the same size of its own.
   */
  maxOutputBytes: number;
}

export const DEFAULT_LIMITS: Readonly<RunLimits> = Object.freeze({
  timeoutMs: 1000,
  memoryMb: 64,
  stackKb: 256,
  maxOutputBytes: 64 * 1024,
});

/** Options of one run: limits (each defaulting to DEFAULT_LIMITS) plus the guest's inputs. */
export interface RunOptions extends Partial<RunLimits> {
  /** Strip TypeScript types (sucrase) before running. Syntax errors come back as an error result. */
  ts?: boolean;
  /** Plain JSON data defined as globals of the guest. It is copied (serialised), never shared. */
  globals?: Record<string, JsonValue>;
  /** Exposed to the guest as the global string `stdin` ("" when not given). */
  stdin?: string;
  /**
   * Fair-queue key (an episode id, a client): runs wait for a slot in one queue per key and keys
   * take turns, so one key's backlog cannot starve another key. Default: one shared queue.
   * Usually set through `scopedSandbox`, not by environment code.
   */
  queueKey?: string;
  /**
   * Who the run is for (a client of the server): free slots go to clients in turn first, then to
   * the client's queue keys in turn, so a client's many episodes share one client's turns. Node
   * hosts are dedicated to it (the pool's `affinity: "client"`). Default: the queueKey (a client of
   * its own). Usually set through `scopedSandbox`.
   */
  client?: string;
  /**
   * The caller gave up when this aborts: a queued run leaves the queue, a running one is stopped;
   * either way the run resolves as `ok: false` with error name `CancelledError`.
   */
  signal?: AbortSignal;
  /** Called once when the run leaves the queue and starts: its time limit counts from here. */
  onStart?: () => void;
  /**
   * Python only: run this on the grading engine, processes of their own that never run a
   * candidate's code (an environment's harness with its hidden tests and expected values goes
   * there; README.md "Python"). Other backends ignore it.
   */
  grading?: boolean;
}

/** `{name, message}` of a failed run; for guest errors both were computed inside the sandbox. */
export interface RunError {
  /**
   * The guest's error name (`TypeError`, `SyntaxError`, ...) or one of the host's:
   * `TimeoutError`, `MemoryLimitError`, `OutputLimitError` (result too large),
   * `UnsettledPromiseError` (the result promise can never settle), `CancelledError` (the caller's
   * signal aborted), `SandboxError` (host failure).
   */
  name: string;
  message: string;
  /** The guest's stack trace, when it had one (clipped). */
  stack?: string;
}

export interface RunResult {
  ok: boolean;
  /** The JSON-safe result (see README "What comes back"); null when !ok. */
  result: JsonValue;
  stdout: string;
  stderr: string;
  error?: RunError;
  /** Time spent running (queueing excluded). Stands still in deployed Workers, like their clock. */
  elapsedMs: number;
  /** Set when console output hit maxOutputBytes and later output was dropped. */
  truncated?: boolean;
}

export interface Sandbox {
  /** Which backend this is. */
  readonly kind: SandboxKind;
  /** Runs `code` in a fresh context. Rejects only on host misuse (bad options, disposed sandbox). */
  run(code: string, options?: RunOptions): Promise<RunResult>;
  /** Frees isolates / worker threads / child processes. Runs started afterwards reject. */
  dispose(): Promise<void>;
  /**
   * Node backends: memory held by the sandbox's processes, as the server last measured it (the RSS
   * of each host's process tree, host-pool.ts; never what a host says), for memory budgets and metrics.
   */
  memoryBytes?(): number;
}

export type SandboxKind = "isolated-vm" | "quickjs" | "python";

/** Appended to a stream whose output was cut at maxOutputBytes. */
export const TRUNCATION_MARKER = "…[truncated]";
