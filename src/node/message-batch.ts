/**
 * Messages to another thread, sent in batches: everything posted during one turn of the event
 * loop goes out as one array at its end (setImmediate). Under load a postMessage (a wake-up of the
 * other thread) costs more than the work it carries; batching pays it once per turn, not per call.
 * `now` sends at once, after what is pending: for a thread about to block (its turn would not end
 * until the block does).
 */
export interface BatchedPoster<M> {
  (msg: M): void;
  now(msg: M): void;
}

export function batchedPoster<M>(send: (batch: M[]) => void): BatchedPoster<M> {
  let pending: M[] = [];
  const flush = () => {
    if (pending.length === 0) return; // sent by now() meanwhile
    const batch = pending;
    pending = [];
    send(batch);
  };
  return Object.assign(
    (msg: M) => {
      if (pending.push(msg) === 1) setImmediate(flush);
    },
    {
      now(msg: M) {
        pending.push(msg);
        flush();
      },
    },
  );
}
