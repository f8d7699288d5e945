/**
 * Messages to another thread, sent in batches: everything posted during one turn of the event
 * loop goes out as one array at its end (setImmediate). Under load a postMessage (a wake-up of the
 * other thread) costs more than the work it carries; batching pays it once per turn, not per call.
 */
export function batchedPoster<M>(send: (batch: M[]) => void): (msg: M) => void {
  let pending: M[] = [];
  const flush = () => {
    const batch = pending;
    pending = [];
    send(batch);
  };
  return (msg: M) => {
    if (pending.push(msg) === 1) setImmediate(flush);
  };
}
