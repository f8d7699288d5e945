/**
 * A /proc file read at every run (a thread's schedstat, a process's statm): opened once, kept
 * open, and re-read at offset 0 (~3.5 µs a read, no path lookup), its space-separated fields as
 * numbers. The owner closes it: one left open per sandbox host would leak a descriptor for every
 * host the server ever started.
 */
import { closeSync, openSync, readSync } from "node:fs";

export interface ProcFile {
  /** The file's fields now; undefined once it cannot be read (its process is gone) or after close. */
  fields(): number[] | undefined;
  close(): void;
}

/** A path, or a descriptor opened elsewhere (another thread's file); undefined where it cannot be opened. */
export function procFile(file: string | number): ProcFile | undefined {
  let fd: number;
  try {
    fd = typeof file === "number" ? file : openSync(file, "r");
  } catch {
    return undefined;
  }
  const buf = Buffer.alloc(128);
  let open = true;
  return {
    fields() {
      if (!open) return undefined;
      try {
        return buf.toString("latin1", 0, readSync(fd, buf, 0, buf.length, 0)).split(" ").map(Number);
      } catch {
        return undefined;
      }
    },
    close() {
      if (!open) return;
      open = false;
      try {
        closeSync(fd);
      } catch {
        // Already closed.
      }
    },
  };
}
