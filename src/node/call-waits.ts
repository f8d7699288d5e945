/**
 * Which environment-thread call the running code belongs to, so that work done for it outside
 * the thread, under limits of its own, stops its deadline (ENVWORKER_ENV_TIMEOUT_S counts the
 * call's own computing, env-threads.ts). Sandbox runs and judge calls already go through the main
 * thread, which knows; a Python environment's calls go to its worker from the thread itself
 * (src/node/python-envs/link.ts), and say so here. On a loaded machine the wall-clock deadline came before
 * the worker's own deadlines (on the run clock), and calls failed 504.
 *
 * Two ways, both without AsyncLocalStorage (on Node 20 it hooks every promise of the thread, and
 * a thread may hold hundreds of calls): an asynchronous call carries its call's
 * `CALL_WAITS` on the services it is given (env-thread.ts `servicesFor`); a synchronous one
 * (dataset, generate, asked while a call's code runs) blocks the whole thread, so the thread says
 * it is blocked (`threadBlocked`) and the main thread stops the deadline of every call it holds:
 * none of them can compute meanwhile. Code outside both is not paused: its deadline counts the
 * wait, as before.
 */

/** What the thread knows of a call for work done for it outside (a Python worker's): whose it is, and when its caller left. */
export interface ThreadCallScope {
  client: string;
  signal: AbortSignal;
}

/** The key of a call's `ThreadCallScope` on the services its code is given (env-thread.ts `servicesFor`). */
export const CALL_SCOPE: unique symbol = Symbol("envworker.callScope");

/** The scope of the call whose `services` these are; undefined outside an environment thread's call. */
export function callScopeOf(services?: object): ThreadCallScope | undefined {
  return (services as { [CALL_SCOPE]?: ThreadCallScope } | undefined)?.[CALL_SCOPE];
}

/** Starts a wait of the call outside the thread; the function it returns ends it (once). */
export type CallWaits = () => () => void;

/** The key of a call's `CallWaits` on the services its code is given. */
export const CALL_WAITS: unique symbol = Symbol("envworker.callWaits");

let notify: ((call: number, waiting: boolean) => void) | undefined;
let notifyBlocked: ((blocked: boolean) => void) | undefined;

/** How the thread tells the main thread (env-thread.ts): once, at its start. */
export function onCallWaits(waits: (call: number, waiting: boolean) => void, blocked: (blocked: boolean) => void): void {
  notify = waits;
  notifyBlocked = blocked;
}

/** Says `on` now and `off` when the returned function is first called. */
function span(tell: ((on: boolean) => void) | undefined): () => void {
  if (tell === undefined) return () => {};
  tell(true);
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    tell(false);
  };
}

/** The waits of call `call`. */
export function callWaits(call: number): CallWaits {
  return () => {
    const tell = notify;
    return span(tell && ((on) => tell(call, on)));
  };
}

/** The waits of the call whose `services` these are; undefined outside an environment thread's call. */
export function callWaitsOf(services?: object): CallWaits | undefined {
  return (services as { [CALL_WAITS]?: CallWaits } | undefined)?.[CALL_WAITS];
}

/** Starts a wait of the call given by `services` (a no-op without one: outside an environment thread's call). */
export function waitingOutside(services?: object): () => void {
  const own = callWaitsOf(services);
  return own ? own() : () => {};
}

/** This thread blocks (a synchronous call to a Python worker) until the returned function is called (once). */
export function threadBlocked(): () => void {
  return span(notifyBlocked);
}
