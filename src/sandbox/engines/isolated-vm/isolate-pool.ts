/**
 * A small pool of isolated-vm isolates. Creating an isolate costs ~2 ms; a context in a warm one
 * costs microseconds, and every run gets a fresh context, so reusing isolates is what makes
 * isolated-vm cheap. An isolate is replaced when it died (OOM disposes it), when V8 reported a
 * catastrophic error in it, or after a number of runs (garbage and compiled-code caches of earlier
 * runs should not accumulate forever).
 *
 * The pool does not queue: the caller's Limiter keeps at most `max` runs in flight, so a free
 * slot always exists when acquire() is called.
 */
import { setFlagsFromString } from "node:v8";
import ivm from "isolated-vm";
import { GUEST_PRELUDE } from "../../guest.ts";

// Resizable ArrayBuffers and growable SharedArrayBuffers get their memory from V8 directly, not
// from the allocator through which isolated-vm enforces `memoryLimit`: measured, `new
// ArrayBuffer(40e6, { maxByteLength: 40e6 })` (or `resize(40e6)` of a small one) filled 40 MB
// under a 16 MiB limit, and 2 GiB until the process's RSS watch killed it. Without the flag the
// constructors ignore `maxByteLength` and `resize`/`grow` do not exist, in every context created
// from here on (the process's own main context keeps them). Set before any isolate exists.
setFlagsFromString("--no-harmony-rab-gsab");

export interface PooledIsolate {
  readonly isolate: ivm.Isolate;
  readonly memoryMb: number;
  /** The guest prelude, compiled once per isolate, run in each fresh context. */
  readonly prelude: ivm.Script;
  runs: number;
  broken: boolean;
}

export class IsolatePool {
  private readonly idle: PooledIsolate[] = [];
  private readonly all = new Set<PooledIsolate>();
  private disposed = false;
  /** Isolates replaced because they died (OOM, catastrophic error). For tests and metrics. */
  replaced = 0;

  constructor(
    readonly max: number,
    private readonly recycleAfterRuns = 500,
  ) {}

  acquire(memoryMb: number): PooledIsolate {
    const i = this.idle.findIndex((p) => p.memoryMb === memoryMb);
    if (i >= 0) return this.idle.splice(i, 1)[0]!;
    // No idle isolate with this memory limit: make room by dropping an idle one with another limit.
    if (this.all.size >= this.max) {
      const evicted = this.idle.shift();
      if (evicted) this.destroy(evicted);
    }
    return this.create(memoryMb);
  }

  release(p: PooledIsolate): void {
    if (this.disposed) this.destroy(p);
    else if (p.isolate.isDisposed || p.broken) {
      this.replaced++;
      this.destroy(p);
    } else if (p.runs >= this.recycleAfterRuns) this.destroy(p);
    else this.idle.push(p);
  }

  /** Disposes every isolate, idle or busy (a busy run then ends as an error result). */
  dispose(): void {
    this.disposed = true;
    this.idle.length = 0;
    for (const p of [...this.all]) this.destroy(p);
  }

  private create(memoryMb: number): PooledIsolate {
    const entry: { -readonly [K in keyof PooledIsolate]: PooledIsolate[K] } = {
      isolate: new ivm.Isolate({
        memoryLimit: memoryMb,
        // Without this, a V8 fatal error in the isolate aborts the whole process; with it the
        // isolate is merely unusable, and we drop it.
        onCatastrophicError: () => {
          entry.broken = true;
        },
      }),
      memoryMb,
      prelude: undefined as unknown as ivm.Script,
      runs: 0,
      broken: false,
    };
    entry.prelude = entry.isolate.compileScriptSync(GUEST_PRELUDE, { filename: "envworker-prelude.js" });
    this.all.add(entry);
    return entry;
  }

  private destroy(p: PooledIsolate): void {
    this.all.delete(p);
    try {
      if (!p.isolate.isDisposed) p.isolate.dispose();
    } catch {
      // Already gone.
    }
  }
}
