/** Abort signals combined: what every room that cancels work on behalf of a caller shares. */
/** A signal that aborts when any of the given ones does (undefined when none is given). */
export function anySignal(...signals: (AbortSignal | undefined)[]): AbortSignal | undefined {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  if (present.length <= 1) return present[0];
  // AbortSignal.any drops its listeners when the combined signal is collected; a hand-made one
  // would leave a listener on a long-lived scope signal per run.
  const any = (AbortSignal as { any?: (signals: AbortSignal[]) => AbortSignal }).any;
  if (typeof any === "function") return any.call(AbortSignal, present);
  const controller = new AbortController();
  for (const s of present) {
    if (s.aborted) {
      controller.abort(s.reason);
      return controller.signal;
    }
  }
  const onAbort = (event: Event) => {
    controller.abort((event.target as AbortSignal).reason);
    for (const s of present) s.removeEventListener("abort", onAbort);
  };
  for (const s of present) s.addEventListener("abort", onAbort);
  return controller.signal;
}
