/**
 * An image of a WebAssembly memory, and putting the memory back to it after a run: only the pages
 * the kernel saw written since the last time where it can (native/wasm-dirty.c: userfaultfd write
 * protection in asynchronous mode and PAGEMAP_SCAN, Linux >= 6.7), all of it where it cannot.
 *
 * Why: the Python host puts its interpreter's memory back after every run (python-worker.ts).
 * Copying all of it (~30 MB) was most of a short run's CPU, and a short run writes ~300 of the
 * memory's ~7,700 pages. Where the native module is missing (not built: no C compiler at install)
 * or the kernel refuses (older than 6.7, userfaultfd off), `tracking` says why and every restore
 * copies what the caller's `untracked` copy says (python-worker.ts: what the interpreter can have
 * changed at rest; by default everything).
 *
 * What makes a tracked restore exact: the kernel reports every page written since the pages were
 * last protected (a superset: never fewer), pages never touched included
 * (UFFD_FEATURE_WP_UNPOPULATED). Memory the run grew is registered as it grows (`grown`, called from
 * the memory's `grow`), and whatever was written above the image's length is zeroed. A memory that
 * moved, or any error from the kernel, ends the tracking: that restore and every later one are
 * untracked copies.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** native/wasm-dirty.c's functions (negative results are -errno; written() is -1 when the regions did not fit). */
interface DirtyPages {
  track(buffer: ArrayBuffer): number;
  extend(buffer: ArrayBuffer): number;
  written(buffer: ArrayBuffer, out: Float64Array): number;
  clean(buffer: ArrayBuffer): number;
}

/** Where `npm install` builds the module (scripts/build-native.mjs), seen from src/sandbox or dist/src/sandbox. */
export function dirtyPagesAddon(): string | undefined {
  for (const up of ["../../", "../../../"]) {
    const path = fileURLToPath(new URL(`${up}native/build/wasm-dirty.node`, import.meta.url));
    if (existsSync(path)) return path;
  }
  return undefined;
}

/** The most written regions one scan reports (the native MAX_REGIONS); past it, everything is copied. */
const MAX_REGIONS = 4096;

export interface MemoryImage {
  /** Why pages are not tracked (every restore copies everything), or undefined when they are. */
  readonly tracking: string | undefined;
  /** Tells the tracker the memory just grew: its new buffer (call after every successful grow, before the heap's views are updated). */
  grown(buffer: ArrayBuffer): void;
  /** Puts the memory back to the image: what is below its length copied back, what is above it zeroed. */
  restore(): void;
  /** Whether the memory equals the image (and zeros above it): a full comparison, for tests. */
  matches(): boolean;
  /** Bytes the last restore copied or zeroed. */
  readonly lastBytes: number;
}

/**
 * What to copy where pages are not tracked: by default everything (the image, zeros above it); the
 * interpreter knows which parts of its memory cannot have changed at rest and passes a cheaper one.
 */
export type CopyBack = (memory: Uint8Array, image: Uint8Array) => void;

const copyEverything: CopyBack = (memory, image) => {
  memory.set(image, 0);
  memory.fill(0, image.length);
};

/** Takes an image of `heap()` (the memory's current view) and tracks its pages where it can. */
export function memoryImage(heap: () => Uint8Array, addonPath: string | undefined, untracked: CopyBack = copyEverything): MemoryImage {
  const image = heap().slice();
  const native = loadAddon(addonPath);
  let tracking = typeof native === "string" ? native : undefined;
  if (typeof native !== "string") {
    const started = native.track(heap().buffer as ArrayBuffer);
    if (started !== 0) tracking = `the kernel refused to track writes (errno ${-started})`;
  }
  const pages = typeof native === "string" || tracking !== undefined ? undefined : native;
  const regions = new Float64Array(2 * MAX_REGIONS);
  let lastBytes = 0;
  /** How much of the memory the kernel tracks. */
  let tracked = image.length;

  const stop = (why: string) => {
    tracking ??= why;
  };
  const extend = (buffer: ArrayBuffer) => {
    const err = pages!.extend(buffer);
    if (err === 0) tracked = buffer.byteLength;
    else stop(`the memory could not be tracked as it grew (errno ${-err})`);
    return err === 0;
  };
  const copyAll = (memory: Uint8Array) => {
    copyEverything(memory, image);
    lastBytes = memory.length;
  };
  const copyWritten = (memory: Uint8Array): boolean => {
    const buffer = memory.buffer as ArrayBuffer;
    lastBytes = 0;
    if (memory.length > tracked) {
      // Growth that did not go through grown() (it always should): its writes were not seen, so
      // all of it is zeroed, then tracked like the rest.
      memory.fill(0, tracked);
      lastBytes += memory.length - tracked;
      if (!extend(buffer)) return false;
    }
    const n = pages!.written(buffer, regions);
    if (n < -1) return stop(`the kernel's list of written pages failed (errno ${-n})`), false;
    // More written regions than one scan holds: everything (the pages stay tracked).
    if (n === -1) copyAll(memory);
    for (let i = 0; i < n; i++) {
      const start = regions[2 * i]!;
      const end = regions[2 * i + 1]!;
      if (start < image.length) memory.set(image.subarray(start, Math.min(end, image.length)), start);
      if (end > image.length) memory.fill(0, Math.max(start, image.length), end);
      lastBytes += end - start;
    }
    // The copies above wrote those pages again: protect them again, so that only the next run's writes show.
    const err = pages!.clean(buffer);
    if (err !== 0) return stop(`the kernel could not protect the pages again (errno ${-err})`), false;
    return true;
  };

  return {
    get tracking() {
      return tracking;
    },
    grown(buffer) {
      if (tracking === undefined) extend(buffer);
    },
    restore() {
      const memory = heap();
      if (tracking === undefined && copyWritten(memory)) return;
      // Not tracked (or the tracking just failed: the untracked copy restores as much as it always did).
      untracked(memory, image);
      lastBytes = memory.length;
    },
    matches() {
      const memory = heap();
      if (Buffer.compare(memory.subarray(0, image.length), image) !== 0) return false;
      const zeros = new Uint8Array(1 << 20);
      for (let at = image.length; at < memory.length; at += zeros.length) {
        const part = memory.subarray(at, Math.min(at + zeros.length, memory.length));
        if (Buffer.compare(part, zeros.subarray(0, part.length)) !== 0) return false;
      }
      return true;
    },
    get lastBytes() {
      return lastBytes;
    },
  };
}

function loadAddon(path: string | undefined): DirtyPages | string {
  if (!path) return "the native module is not built (scripts/build-native.mjs)";
  try {
    const module = { exports: {} as DirtyPages };
    process.dlopen(module, path);
    return module.exports;
  } catch (err) {
    return `the native module did not load: ${err instanceof Error ? err.message : String(err)}`;
  }
}
