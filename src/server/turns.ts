/**
 * Turns of the event loop for costly work on it (parsing a large request): one piece of work per
 * turn, so the requests that arrive between them are served in between. 2,000 connections each
 * sending a 1 MiB `/score` at once had the loop parse them back to back, and a probe waited 41 s.
 */
const waiting: (() => void)[] = [];
// Workers have no setImmediate (large bodies there are a Durable Object's own episode's).
const immediate = (globalThis as { setImmediate?: (run: () => void) => unknown }).setImmediate;
const later = (run: () => void): void => void (immediate ? immediate(run) : setTimeout(run, 0));

function next(): void {
  waiting.shift()?.();
  if (waiting.length > 0) later(next);
}

/** Resolves on a turn of the loop of its own (after the earlier callers' turns). */
export function ownTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (waiting.length === 1) later(next);
  });
}
