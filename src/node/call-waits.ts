/**
 * Which environment-thread call the running code belongs to, so that work done for it outside
 * the thread, under limits of its own, stops its deadline (ENVWORKER_ENV_TIMEOUT_S counts the
 * call's own computing, env-threads.ts). Sandbox runs and judge calls already go through the main
 * thread, which knows; a Python environment's calls go to its worker from the thread itself
 * (src/python/link.ts), and say so here. On a loaded machine the wait for a Python worker's start
 * alone passed the 30 s deadline: a Python package's first reset failed 504.
 */
import { AsyncLocalStorage } from "node:async_hooks";

const current = new AsyncLocalStorage<number>();
let notify: ((call: number, waiting: boolean) => void) | undefined;

/** Runs `fn` (and what it starts) as the work of environment-thread call `call`. */
export function runAsCall<T>(call: number, fn: () => T): T {
  return current.run(call, fn);
}

/** How the thread tells the main thread (env-thread.ts): once, at its start. */
export function onCallWaits(fn: (call: number, waiting: boolean) => void): void {
  notify = fn;
}

/**
 * The current call waits, from now until the returned function is called (once), on work with
 * limits of its own. Outside an environment thread's call (the main thread, a test) a no-op.
 */
export function waitingOutside(): () => void {
  const call = current.getStore();
  const tell = notify;
  if (call === undefined || tell === undefined) return () => {};
  tell(call, true);
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    tell(call, false);
  };
}
