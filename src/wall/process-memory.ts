/**
 * The memory a sandbox host really holds, measured by the server itself: the resident memory (RSS)
 * of the host's whole process tree, read from /proc (Linux); and the CPU time the tree used (an idle
 * host is stopped when it runs: host-pool.ts). A host's own report of its memory
 * cannot be the limit: a guest that escaped its engine writes whatever it likes on the host's
 * channel (host-protocol.ts), "0 bytes" included, while it allocates.
 *
 * The tree, not one process: the spawned pid is bubblewrap's when it is used (bwrap → its init in the
 * new PID namespace → node), and a guest that escaped further could fork. Children are found through
 * every thread's /proc/<pid>/task/<tid>/children (a child belongs to the thread that forked it).
 */
import { readdirSync, readFileSync } from "node:fs";
import { procFile } from "../sched/proc-file.ts";

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

/**
 * The process at or below `root` whose pid in its own PID namespace is `nsPid` (the last field of
 * its status's NSpid line: a confined process reports pids as its namespace sees them), or
 * undefined. Outside a namespace a process's NSpid is its pid.
 */
export function processWithNsPid(root: number, nsPid: number): number | undefined {
  for (const pid of processTree(root)) {
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/status`, "latin1");
    } catch {
      continue;
    }
    const ids = /^NSpid:\s+([\d\s]+)$/m.exec(status)?.[1]?.trim().split(/\s+/);
    if (ids && Number(ids[ids.length - 1]) === nsPid) return pid;
  }
  return undefined;
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

/**
 * Clock ticks per second of /proc/<pid>/stat's times (USER_HZ): 100 on every Linux this runs on
 * (x86-64, arm64), whatever the kernel's own HZ; Node cannot ask sysconf(_SC_CLK_TCK).
 */
const CLOCK_TICKS_PER_S = 100;

/**
 * CPU time one process has used, in ms: its user and system time (every thread's, the ended ones
 * included) and that of the children it reaped, from /proc/<pid>/stat (fields 14-17, after the
 * command name, which may itself hold spaces and parentheses); undefined when it is gone.
 */
function cpuMsOf(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
  // After ") ": state (field 3), ..., utime (14), stime (15), cutime (16), cstime (17).
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  let ticks = 0;
  for (let i = 11; i <= 14; i++) ticks += Number(fields[i]) || 0;
  return (ticks * 1000) / CLOCK_TICKS_PER_S;
}

/**
 * CPU time used so far by `pid` and every process below it, in ms (10 ms steps); undefined when
 * `pid` is gone or this system cannot tell. What a process that ended below it used is lost
 * unless its parent reaped it (then it is in the parent's figure): a bound from below.
 */
export function processTreeCpuMs(pid: number): number | undefined {
  if (!CAN_MEASURE_PROCESSES) return undefined;
  const own = cpuMsOf(pid);
  if (own === undefined) return undefined;
  let total = own;
  for (const child of processTree(pid).slice(1)) total += cpuMsOf(child) ?? 0;
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

/** Fields of /proc/<pid>/stat after the command name (state is [0], ppid [1], minflt [7], majflt [9], rss [21]). */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

function cmdline(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1");
  } catch {
    return undefined;
  }
}

/**
 * A host that forks a process per run (the Python zygote, confine.ts `forksPerRun`), as the server
 * measures it. `root` is the spawned pid (bubblewrap's, or the zygote's own without it); the
 * zygote is found once (`zygote()`): the last process of the chain of first children whose command
 * line differs from its parent's (bubblewrap's init has bubblewrap's; a forked child has its
 * zygote's). After that a measure reads only the chain's few files and the zygote's children.
 *
 * Memory (`memory()`), each page counted once: a forked child shares nearly every page with its
 * zygote, and RSS counts those once per process (a zygote with its child and a spare measured ~3x
 * its size, and varied with the moment). What a child holds beyond its zygote's pages it got
 * through a page fault (a copy on write, a new page, a page populated ahead: each counts in its
 * fault counters, /proc/<pid>/stat minflt + majflt, from its fork on; the zygote turns transparent
 * huge pages off for itself and its children, so a fault is a page; a child can start no process
 * of its own), so the zygote's children count their faults × the page size, an upper bound of what
 * they added, and the chain down to the zygote its RSS. ~0.1 ms; the proportional set size (from
 * smaps_rollup, which walks the page tables) gave the same answer in 3.8 ms, every 20 ms of a run.
 *
 * `leaf()`: the process serving (or about to serve) the next run, the zygote's first child, else
 * the zygote: the run clock of a run is read from it (host-handles.ts).
 */
export class ForkingHost {
  private chain: number[] | undefined;

  constructor(private readonly root: number) {}

  /**
   * The chain from the root down to the zygote, found on first use (the pool's first measure is at
   * the host's ready message, when the zygote is there): of the chain of first children, the
   * deepest process whose command line differs from its parent's, else the root.
   */
  private zygoteChain(): number[] | undefined {
    if (this.chain) return this.chain;
    const chain = [this.root];
    const lines = [cmdline(this.root)];
    if (lines[0] === undefined) return undefined;
    for (let depth = 0; depth < 8; depth++) {
      const [next] = childrenOf(chain.at(-1)!);
      if (next === undefined) break;
      chain.push(next);
      lines.push(cmdline(next));
    }
    let zygote = 0;
    for (let i = 1; i < chain.length; i++) if (lines[i] !== undefined && lines[i] !== lines[i - 1]) zygote = i;
    this.chain = chain.slice(0, zygote + 1);
    return this.chain;
  }

  /** The zygote's pid, once it is there. */
  zygote(): number | undefined {
    return this.zygoteChain()?.at(-1);
  }

  leaf(): number {
    const zygote = this.zygote();
    if (zygote === undefined) return leafProcess(this.root);
    return childrenOf(zygote)[0] ?? zygote;
  }

  memory(): number | undefined {
    if (!CAN_MEASURE_PROCESSES) return undefined;
    const chain = this.zygoteChain();
    if (!chain) return processTreeRss(this.root);
    let total = 0;
    for (const pid of chain) {
      const f = statFields(pid);
      if (!f) return pid === this.root ? undefined : total;
      total += Number(f[21]) * PAGE_BYTES;
    }
    for (const child of childrenOf(chain.at(-1)!)) {
      const f = statFields(child);
      if (f) total += (Number(f[7]) + Number(f[9])) * PAGE_BYTES;
    }
    return total;
  }
}
