/**
 * A sandbox host as the pool sees it: one confined child process (confine.ts) behind a small
 * handle. Every engine's hosts are started here (isolated-vm, QuickJS, Python), so they all get the
 * same confinement, the same wire (host-channel.ts) and the same distrust of what comes back:
 * a reply is bounded in size, then schema-checked (host-protocol.ts); anything else kills the host.
 */
import type { ChildProcess } from "node:child_process";
import { encodeFrame, FrameReader } from "./host-channel.ts";
import { HOST_REPLY, type HostReply, type HostRequest } from "./host-protocol.ts";
import { ForkingHost, leafProcess, processTree, processTreeCpuMs, processTreeRss, residentProbe, type ResidentProbe } from "../../wall/process-memory.ts";
import { delayProbe } from "../../sched/run-delay.ts";
import type { DelayProbe } from "../../sched/deadline.ts";
import { launchConfined, type ConfinedProcess, type ConfineOptions, type ConfinementProfile } from "../../wall/confine.ts";

/** How a host ended: what the pool needs to explain it to the run it was serving. */
export interface HostExit {
  /** Human-readable cause ("exit code 1", "signal SIGTRAP: Fatal JavaScript invalid size error"). */
  why: string;
  /** The engine gave up for lack of memory (V8 fatal size/heap error, thread heap limit). */
  outOfMemory: boolean;
}

export interface HostHandle {
  post(message: HostRequest): void;
  onMessage(listener: (message: HostReply) => void): void;
  /** Called once, when the host is gone for any reason (including kill()). */
  onExit(listener: (exit: HostExit) => void): void;
  /** Stops the host at once (SIGKILL). */
  /** Kill the host; `why` is what its run (if any) is told. */
  kill(why?: string): void;
  /** Whether the host keeps the server's process alive (only while it serves a run). */
  keepAlive(on: boolean): void;
  /** The largest reply accepted now (the pool raises it while a run with a large output cap is in flight). */
  setMaxReplyBytes(bytes: number): void;
  /**
   * Resident memory of the host's whole process tree, measured by the server (process-memory.ts);
   * undefined before it started, after it ended, or where the system cannot tell (no /proc).
   */
  measure(): number | undefined;
  /**
   * CPU time the host's whole process tree has used so far, in ms, measured by the server
   * (process-memory.ts); undefined before it started, after it ended, or where the system cannot tell.
   */
  cpuMs?(): number | undefined;
  /**
   * Resident bytes of the host's engine process alone (its /proc statm, kept open: a few µs), for
   * a measure at every answer; undefined where the system cannot tell.
   */
  measureEngine?(): number | undefined;
  /** The process, once started (tests: its pid and uid). */
  readonly started: Promise<ConfinedProcess>;
  /**
   * How long the host's engine process has waited for a CPU (its main thread, ms; run-delay.ts),
   * measured by the server from /proc: the pool's watchdog times runs on the run clock with it.
   */
  waitedMs?(): number;
}

/** V8's last words when it aborts for lack of memory (stderr of a process that died of it). */
const OUT_OF_MEMORY = /invalid (size|array length|table size)|out of memory|heap limit|allocation failed|memory limit/i;
/** Replies when no run is in flight (ready, a late usage report) are small. */
export const IDLE_REPLY_BYTES = 64 * 1024;

/**
 * What a host may write to its stderr: nothing of ours writes there but Node and V8 (a warning, the
 * last words of a fatal error: a few KiB), so a host writing more is one a guest took over. At most
 * STDERR_BURST_BYTES at once, refilled at STDERR_BYTES_PER_S; past that the host is killed. Only
 * the last STDERR_TAIL_BYTES are kept, and decoded once, when the host is gone.
 */
export const STDERR_BURST_BYTES = 256 * 1024;
export const STDERR_BYTES_PER_S = 16 * 1024;
const STDERR_TAIL_BYTES = 4096;

/** A host's stderr as the server reads it: its last bytes kept, its rate bounded (`onFlood` once, past it). */
function stderrWatch(onFlood: (bytes: number) => void): { push(chunk: Buffer): void; text(): string } {
  let tail = Buffer.alloc(0);
  let credit = STDERR_BURST_BYTES;
  let at = performance.now();
  let total = 0;
  let flooded = false;
  return {
    push(chunk) {
      // Past the bound the host is being killed: what it still wrote is read (the pipe must drain
      // for it to end), neither kept nor decoded.
      if (flooded) return;
      total += chunk.length;
      const now = performance.now();
      credit = Math.min(STDERR_BURST_BYTES, credit + ((now - at) * STDERR_BYTES_PER_S) / 1000) - chunk.length;
      at = now;
      tail = Buffer.concat([tail, chunk.subarray(-STDERR_TAIL_BYTES)]);
      if (tail.length > STDERR_TAIL_BYTES) tail = tail.subarray(-STDERR_TAIL_BYTES);
      if (credit < 0) {
        flooded = true;
        onFlood(total);
      }
    },
    text: () => tail.toString("utf8"),
  };
}

/** How a host ended, told once: to the listener, or to one registered afterwards. */
function exitLatch(): { end: (exit: HostExit) => void; onExit: (listener: (exit: HostExit) => void) => void } {
  let listener: ((exit: HostExit) => void) | undefined;
  let ended: HostExit | undefined;
  return {
    end(exit) {
      if (ended) return;
      ended = exit;
      listener?.(exit);
    },
    onExit(l) {
      listener = l;
      if (ended) l(ended);
    },
  };
}

type Refable = { ref?: () => void; unref?: () => void } | null | undefined;

export function processHost(profile: ConfinementProfile, options: ConfineOptions = {}, args: string[] = []): HostHandle {
  const { end, onExit } = exitLatch();
  let listener: ((message: HostReply) => void) | undefined;
  let child: ChildProcess | undefined;
  let killed = false;
  let alive = false;
  const pending: HostRequest[] = [];
  let maxReplyBytes = IDLE_REPLY_BYTES;
  const kill = (why = "killed") => {
    end({ why, outOfMemory: false });
    killed = true;
    killTree();
  };
  // Every process of the host, not only the one spawned: killed while bubblewrap was still setting
  // up, its namespace's init outlived it (before --die-with-parent took hold), holding the host's
  // stdio open, so "close" never came and a `run-code` process waited for it for ever.
  const killTree = () => {
    // Not once the spawned process is reaped: its pid may be another process's by then.
    if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    for (const pid of processTree(child.pid).reverse()) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    }
  };
  const reader = new FrameReader(
    () => maxReplyBytes,
    (raw) => {
      const parsed = safeParse(raw);
      if (!parsed.success) return kill(`it sent a reply the server refuses (${parsed.why})`);
      listener?.(parsed.reply);
    },
    (why) => kill(`it sent ${why}`),
  );
  const keepAlive = (on: boolean) => {
    alive = on;
    if (!child) return;
    for (const handle of [child, child.stdin, child.stdout, child.stderr] as Refable[]) handle?.[on ? "ref" : "unref"]?.();
  };
  // The engine process's /proc files: opened on first use (by then that process exists below
  // prlimit and bubblewrap), closed when the host is gone and never opened again after.
  let waited: DelayProbe | undefined;
  let resident: ResidentProbe | undefined;
  let gone = false;
  // A host that forks a process per run (confine.ts `forksPerRun`): its leaf is the zygote while it
  // starts, then the child that serves (or will serve) the next run, a new process each run; the
  // probe follows it. A run's waits are read from one process, its own child.
  const forks = profile.kind === "program" && profile.forksPerRun === true;
  let forking: ForkingHost | undefined;
  let waitedPid = 0;
  // A forking host's leaf changes (the zygote itself between two children, then its spare): each
  // process's counter is its own, so the total is what each leaf waited while it was the leaf. Read
  // raw, a run sent while the zygote was its leaf (no spare yet) compared the zygote's lifetime of
  // waits with its child's few: the run clock ran seconds ahead and the watchdog stopped a run at
  // 1.3 s of wall time with an elapsedMs of 8.6 s (QuickJS zygote, sandbox-attacks, load ~4).
  let waitedBefore = 0;
  /** The current leaf's waits since its birth, as last read. */
  let leafLast = 0;
  // The zygote's own waits count too, on a probe of their own: a run also waits while its zygote,
  // starved of a CPU, has not yet handed it the code or reaped it, time the child spends asleep,
  // not runnable. Without them the watchdog (a backstop: the zygote's own clock ends runs) stopped
  // a 2 s QuickJS run at load ~20 as "replaced, output lost". A leaf that is the zygote itself is
  // counted by that probe only. Waits of the zygote and its child that overlap count twice: that
  // only makes the backstop later, and the stretch cap (deadline.ts) still bounds it.
  let zygoteWaited: DelayProbe | undefined;
  let zygotePid = 0;
  let zygoteFirst = 0;
  const waitedMs = () => {
    if (!child?.pid || (gone && !waited)) return 0;
    if (forks && !gone) {
      forking ??= new ForkingHost(child.pid);
      const zygote = forking.zygote();
      if (zygote !== undefined && zygoteWaited === undefined) {
        zygotePid = zygote;
        zygoteWaited = delayProbe(`/proc/${zygote}/schedstat`);
        zygoteFirst = zygoteWaited();
        // Until now the zygote (or the launcher above it) was the leaf: what it waited is counted.
        waitedBefore += leafLast;
        leafLast = 0;
        waited?.close();
        waited = undefined;
        waitedPid = 0;
      }
      const leaf = forking.leaf();
      const leafIsZygote = leaf === zygotePid;
      if (leaf !== waitedPid) {
        waited?.close();
        waitedBefore += leafLast;
        waited = leafIsZygote ? undefined : delayProbe(`/proc/${leaf}/schedstat`);
        waitedPid = leaf;
        // A child's waits count from its birth, not from when it was first read: a run sent while
        // the zygote had no spare is served by a child first read at the watchdog's first check,
        // and its waits until then (seconds at load ~20) were lost, so the backstop stopped a 2 s
        // QuickJS run as "replaced, output lost". A child serves one run and waited for little else.
        leafLast = waited ? waited() : 0;
      }
      if (waited) leafLast = Math.max(leafLast, waited());
      const zygoteMs = zygoteWaited ? zygoteWaited() - zygoteFirst : 0;
      return waitedBefore + leafLast + zygoteMs;
    }
    waited ??= delayProbe(`/proc/${leafProcess(child.pid)}/schedstat`);
    return waited();
  };
  const started = launchConfined(profile, options, args).then((confined) => {
    child = confined.child;
    if (killed) killTree();
    // The last few KiB of stderr: how V8 explains an abort.
    const stderr = stderrWatch((bytes) => kill(`it wrote ${bytes} bytes to its stderr, more than a host may (${STDERR_BURST_BYTES} at once, ${STDERR_BYTES_PER_S} a second)`));
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.stdout?.on("data", (chunk: Buffer) => reader.push(chunk));
    // A host that stops reading is killed by the pool's watchdog; writes to it must not throw meanwhile.
    child.stdin?.on("error", () => {});
    // "close" comes after the stdio streams ended, so stderrTail holds V8's last words by then.
    child.on("close", (code, signal) => {
      gone = true;
      waited?.close();
      zygoteWaited?.close();
      resident?.close();
      const stderrTail = stderr.text();
      const line = stderrTail.split("\n").find((l) => OUT_OF_MEMORY.test(l)) ?? stderrTail.trim().split("\n").at(-1) ?? "";
      const last = line.replace(/^[#\s]+/, "").trim();
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      end({ why: last ? `${how}: ${last.slice(0, 300)}` : how, outOfMemory: OUT_OF_MEMORY.test(stderrTail) });
    });
    child.on("error", (err) => end({ why: err.message, outOfMemory: false }));
    // Should a process of the host outlive the one spawned and keep its stdio open, "close" would
    // never come: a little after the exit, the streams are closed from this side.
    child.once("exit", () => {
      setTimeout(() => {
        for (const stream of [child?.stdin, child?.stdout, child?.stderr]) stream?.destroy();
      }, 1000).unref();
    });
    keepAlive(alive);
    for (const message of pending.splice(0)) child.stdin?.write(encodeFrame(message));
    return confined;
  });
  started.catch((err: Error) => end({ why: err.message, outOfMemory: false }));
  return {
    post: (message) => {
      if (!child) pending.push(message);
      else if (child.stdin?.writable) child.stdin.write(encodeFrame(message));
    },
    onMessage: (l) => {
      listener = l;
    },
    onExit,
    kill: (why) => kill(why),
    keepAlive,
    setMaxReplyBytes: (bytes) => {
      maxReplyBytes = bytes;
    },
    // Not once it ended: its pid may be another process's by then. (A forking host's engine process
    // is a new one per run: its whole tree is measured instead.)
    measureEngine: () => {
      if (forks || gone || child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return undefined;
      resident ??= residentProbe(`/proc/${leafProcess(child.pid)}/statm`);
      return resident();
    },
    measure: () => {
      if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return undefined;
      if (!forks) return processTreeRss(child.pid);
      forking ??= new ForkingHost(child.pid);
      return forking.memory();
    },
    cpuMs: () => (child?.pid !== undefined && child.exitCode === null && child.signalCode === null ? processTreeCpuMs(child.pid) : undefined),
    started,
    waitedMs,
  };
}

function safeParse(raw: unknown): { success: true; reply: HostReply } | { success: false; why: string } {
  try {
    const parsed = HOST_REPLY.safeParse(raw);
    if (parsed.success) return { success: true, reply: parsed.data };
    const issue = parsed.error.issues[0];
    return { success: false, why: `${issue?.path.join(".") || "message"}: ${issue?.message ?? "invalid"}`.slice(0, 200) };
  } catch {
    // Nesting deep enough to overflow the checker's stack.
    return { success: false, why: "too deeply nested" };
  }
}
