/**
 * Concurrency cap with fair queueing: at most `max` tasks run at once; the rest wait in one queue
 * per key (an episode, a client), and free slots go to the keys in turn (round-robin), FIFO within
 * a key. Keys may be grouped (an episode's key in its client's group): then the groups take turns
 * first, and the keys of a group share its turns, so a client's ten episodes together get what
 * another client's one gets. One key's backlog of twenty runaway runs then delays another key's single run by at most
 * one run per slot, not by the whole backlog. A waiter whose signal aborts leaves the queue at once
 * (its `run` rejects with a CancelledError) and never runs.
 */
import { GroupedFairQueue } from "./fair-queue.ts";

export interface QueueOptions {
  /** Queue to wait in (default: the shared unnamed queue). */
  key?: string;
  /** The group the key belongs to (a client; default: the key is a group of its own). */
  group?: string;
  /** Aborting it removes the task from the queue; a task already running is told through it. */
  signal?: AbortSignal;
}

/** Thrown (and, by the sandboxes, reported as error name "CancelledError") when a caller gave up. */
export class CancelledError extends Error {
  override readonly name = "CancelledError";
}

interface Waiter {
  start(): void;
  cancel(err: CancelledError): void;
}

export class Limiter {
  private active = 0;
  private readonly queue = new GroupedFairQueue<Waiter>();
  /** Waiters per signal: one abort listener per signal, however many runs share it (an episode's). */
  private readonly bySignal = new WeakMap<AbortSignal, Set<Waiter>>();

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`max concurrency must be a positive integer, got ${max}`);
  }

  /** Tasks waiting for a slot, over all keys. */
  get pending(): number {
    return this.queue.size;
  }

  /** Tasks waiting under `key`. */
  pendingFor(key: string): number {
    return this.queue.sizeOf(key);
  }

  async run<T>(task: () => Promise<T>, options: QueueOptions = {}): Promise<T> {
    const { signal } = options;
    if (signal?.aborted) throw cancelled(signal);
    if (this.active < this.max && this.queue.size === 0) this.active++;
    else {
      const key = options.key ?? "";
      await this.enqueue(options.group ?? key, key, signal);
    }
    try {
      return await task();
    } finally {
      this.handOver();
    }
  }

  private enqueue(group: string, key: string, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        start: () => {
          if (signal) this.bySignal.get(signal)?.delete(waiter);
          resolve();
        },
        cancel: (err) => {
          if (!this.queue.remove(group, key, waiter)) return; // already started
          reject(err);
        },
      };
      this.queue.push(group, key, waiter);
      if (signal) this.watch(signal, waiter);
    });
  }

  private watch(signal: AbortSignal, waiter: Waiter): void {
    let waiters = this.bySignal.get(signal);
    if (!waiters) {
      const set = new Set<Waiter>();
      this.bySignal.set(signal, (waiters = set));
      signal.addEventListener(
        "abort",
        () => {
          this.bySignal.delete(signal);
          // One error for all of them: a client that leaves with thousands of runs queued made as
          // many errors (and stack traces) at once, on the event loop.
          const err = cancelled(signal);
          for (const w of set) w.cancel(err);
        },
        { once: true },
      );
    }
    waiters.add(waiter);
  }

  /** Hands the finished task's slot to the next key's oldest waiter (active stays the same), or frees it. */
  private handOver(): void {
    const waiter = this.queue.shift();
    if (waiter) waiter.start();
    else this.active--;
  }
}

function cancelled(signal: AbortSignal | undefined): CancelledError {
  const reason = signal?.reason;
  const why = reason instanceof Error ? reason.message : typeof reason === "string" ? reason : "its caller gave up";
  return new CancelledError(`the run was cancelled before it started: ${why}`);
}
