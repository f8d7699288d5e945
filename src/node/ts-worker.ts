/**
 * Worker threads whose entry module (or what it imports) may be TypeScript. Loaders registered in the parent (tsx
 * through its API, as bin/envworker.js does, or vitest's) do not reach worker threads, and a failed
 * import is cached, so when the entry is TypeScript (run from the sources) the bootstrap registers
 * tsx inside the thread before the first import. A compiled entry (dist/) starts without it: the
 * thread registers tsx itself before it imports a module that is not envworker's own
 * (src/node/typescript-loader.ts), and most threads never do.
 * Every thread pool on Node (environment code) starts its threads through this; sandbox hosts are
 * processes (src/wall/confine.ts).
 */
import { Worker, type WorkerOptions } from "node:worker_threads";

const BOOTSTRAP = `
const { workerData } = require("node:worker_threads");
// Work in these threads (environment code, sandboxed guests) may spin until its deadline: it runs
// at a lower CPU priority than the thread that serves I/O, so on a busy machine the server keeps
// answering. An I/O thread (workerData.__nice 0) serves pipes and deadlines at the server's own:
// a thread starts at its creator's, and only root may raise it back. Linux: a thread's id names it to setpriority.
try {
  const tid = Number(require("node:fs").readlinkSync("/proc/thread-self").split("/").pop());
  if (tid > 0) require("node:os").setPriority(tid, workerData.__nice ?? 10);
} catch {}
(async () => {
  if (workerData.__tsx) try {
    const { register } = await import(workerData.__tsx);
    register();
  } catch {
    // No tsx: this Node may strip types natively; the import below says if not.
  }
  await import(workerData.__entry);
})().catch((err) => { setImmediate(() => { throw err; }); });
`;

let tsxSpecifier: string | undefined;

/** tsx's ESM API, resolved from here (the CJS entry cannot register the ESM loader inside a worker). */
function tsx(): string {
  if (tsxSpecifier) return tsxSpecifier;
  try {
    tsxSpecifier = import.meta.resolve("tsx/esm/api");
  } catch {
    // No import.meta.resolve here, or tsx is not installed: fall back to a bare specifier.
    tsxSpecifier = "tsx/esm/api";
  }
  return tsxSpecifier;
}

/**
 * Start a worker thread running `entry` (a file URL, `.ts` or `.js`). `workerData` reaches the
 * entry as `workerData` (keys starting with `__` are the bootstrap's). `io: true` for a thread that
 * only serves I/O: it keeps the server's CPU priority, and so do the processes it starts.
 */
export function startWorker(entry: URL, options: WorkerOptions & { workerData?: Record<string, unknown>; io?: boolean } = {}): Worker {
  const { io, ...rest } = options;
  options = rest;
  const data = { ...(options.workerData ?? {}), __entry: entry.href, __tsx: /\.[cm]?tsx?$/.test(entry.pathname) ? tsx() : undefined, __nice: io ? 0 : 10 };
  return new Worker(BOOTSTRAP, { ...options, eval: true, workerData: data });
}
