/**
 * Child processes whose entry module may be TypeScript: the counterpart of ts-worker.ts for
 * `child_process.fork`. Loaders registered in the parent (tsx through its API, vitest's) do not
 * reach a child, so when the entry is `.ts` the child is started with tsx's loader (`--import`).
 * Every process pool on Node (isolated-vm runs; later perhaps Pyodide) starts its children here.
 */
import { fork, type ChildProcess, type ForkOptions } from "node:child_process";
import { createRequire } from "node:module";
import { setPriority } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

let tsxLoader: string | undefined;

/** tsx's loader as a file URL (`--import` needs no resolution from the child's cwd then). */
function tsx(): string {
  if (tsxLoader) return tsxLoader;
  try {
    tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  } catch {
    tsxLoader = "tsx"; // resolved from the child's cwd, or Node strips types natively
  }
  return tsxLoader;
}

export interface ForkChildOptions extends Omit<ForkOptions, "execArgv"> {
  /** Node flags of the child (the parent's own execArgv is never inherited). */
  execArgv?: string[];
}

/**
 * Fork a child process running `entry` (a file URL, `.ts` or `.js`) with an IPC channel. The
 * parent's execArgv is not inherited (test runners and loaders put their own flags there); pass
 * what the child needs.
 */
export function forkChild(entry: URL, options: ForkChildOptions = {}): ChildProcess {
  const execArgv = [...(options.execArgv ?? [])];
  if (entry.pathname.endsWith(".ts")) execArgv.push("--import", tsx());
  const child = fork(fileURLToPath(entry), [], { ...options, execArgv });
  // Below the server in CPU priority, like the worker threads (ts-worker.ts): a guest that spins
  // must not slow the process that serves I/O.
  try {
    if (child.pid) setPriority(child.pid, 10);
  } catch {
    // Not permitted here: the child runs at the server's priority.
  }
  return child;
}
