/**
 * The memory a sandbox host really holds, measured by the server itself: the resident memory (RSS)
 * of the host's whole process tree, read from /proc (Linux). A host's own report of its memory
 * cannot be the limit: a guest that escaped its engine writes whatever it likes on the host's
 * channel (host-protocol.ts), "0 bytes" included, while it allocates.
 *
 * The tree, not one process: the spawned pid is bubblewrap's when it is used (bwrap → its init in the
 * new PID namespace → node), and a guest that escaped further could fork. Children are found through
 * every thread's /proc/<pid>/task/<tid>/children (a child belongs to the thread that forked it).
 */
import { readdirSync, readFileSync } from "node:fs";
import { procFile } from "./proc-file.ts";

/** Whether this system lets the server measure a process (Linux /proc); elsewhere hosts' reports are all there is. */
export const CAN_MEASURE_PROCESSES = (() => {
  try {
    return /^VmRSS:/m.test(readFileSync("/proc/self/status", "utf8"));
  } catch {
    return false;
  }
})();

/** Processes read at most per walk (a host's own uid may have at most 128: confine.ts). */
const MAX_PROCESSES = 1024;

/** Resident bytes of one process (0 for a zombie, which holds none), undefined when it is gone. */
function rssOf(pid: number): number | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, "latin1");
  } catch {
    return undefined;
  }
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status);
  return kb ? Number(kb[1]) * 1024 : 0;
}

function childrenOf(pid: number): number[] {
  const children: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return children;
  }
  for (const tid of tasks) {
    let list: string;
    try {
      list = readFileSync(`/proc/${pid}/task/${tid}/children`, "latin1");
    } catch {
      continue; // the thread ended meanwhile
    }
    for (const child of list.split(" ")) if (child.trim()) children.push(Number(child));
  }
  return children;
}

/** `pid` and every process below it (at most MAX_PROCESSES), parents before their children. */
export function processTree(pid: number): number[] {
  const tree = [pid];
  const seen = new Set<number>(tree);
  const pending = childrenOf(pid);
  while (pending.length > 0 && seen.size < MAX_PROCESSES) {
    const child = pending.shift()!;
    if (seen.has(child)) continue;
    seen.add(child);
    tree.push(child);
    pending.push(...childrenOf(child));
  }
  return tree;
}

/**
 * The engine's process of a confined host: the end of the chain of first children below the pid
 * the server spawned (prlimit execs in place; bubblewrap forks its namespace's init, which forks
 * node; node starts no process).
 */
export function leafProcess(pid: number): number {
  let at = pid;
  for (let depth = 0; depth < 8; depth++) {
    const [first] = childrenOf(at);
    if (first === undefined) return at;
    at = first;
  }
  return at;
}

/**
 * RSS of `pid` and every process below it, in bytes; undefined when `pid` is gone or this system
 * cannot tell (no /proc). Pages shared between the processes (libraries) are counted in each: an
 * upper bound, as a limit wants.
 */
export function processTreeRss(pid: number): number | undefined {
  if (!CAN_MEASURE_PROCESSES) return undefined;
  const own = rssOf(pid);
  if (own === undefined) return undefined;
  let total = own;
  for (const child of processTree(pid).slice(1)) total += rssOf(child) ?? 0;
  return total;
}

/** Page size for statm: 4 KiB on the Linux machines this runs on (x86-64, most arm64). */
const PAGE_BYTES = 4096;

export interface ResidentProbe {
  /** Resident bytes now; undefined once the process is gone, after close, or where it cannot be read. */
  (): number | undefined;
  close(): void;
}

/** Resident bytes of one process, from its `/proc/<pid>/statm` (second field, in pages), kept open (proc-file.ts). */
export function residentProbe(path: string): ResidentProbe {
  const statm = procFile(path);
  const probe = () => {
    const pages = statm?.fields()?.[1];
    return pages !== undefined && Number.isFinite(pages) ? pages * PAGE_BYTES : undefined;
  };
  return Object.assign(probe, { close: () => statm?.close() });
}

/** Proportional set size of one process (its private pages, and its share of pages it shares), bytes. */
function pssOf(pid: number): number | undefined {
  let rollup: string;
  try {
    rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "latin1");
  } catch {
    return undefined;
  }
  const kb = /^Pss:\s+(\d+) kB/m.exec(rollup);
  return kb ? Number(kb[1]) * 1024 : 0;
}

/**
 * Memory held by `pid` and every process below it, each page counted once: the sum of their
 * proportional set sizes (/proc/<pid>/smaps_rollup). For a host that forks a process per run
 * (the Python zygote, confine.ts `forksPerRun`): a child shares nearly all its pages with its
 * zygote, and RSS would count them once per process (a tree measured at three times its size,
 * more or less depending on whether a child is alive at the moment). What a child allocates or
 * copies is its own and counts in full. Pages shared with processes outside the tree (libc) count
 * for their share only. Slower than RSS (the kernel walks the page tables: ~0.1-0.3 ms for a
 * zygote), so only those hosts use it. Undefined when `pid` is gone or there is no /proc.
 */
export function processTreePss(pid: number): number | undefined {
  if (!CAN_MEASURE_PROCESSES) return undefined;
  const own = pssOf(pid);
  if (own === undefined) return undefined;
  let total = own;
  for (const child of processTree(pid).slice(1)) total += pssOf(child) ?? 0;
  return total;
}
