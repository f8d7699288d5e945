/**
 * Worker-thread entry of link.ts: owns one Python environment worker process (clients/python/src/
 * envworker/worker.py) and speaks its framed protocol (frames.ts), so that the thread that hosts the
 * environment (an environment thread, or the main thread while environments load) may wait for a
 * call synchronously (Atomics.wait) without anyone else waiting on it: the process's pipes, its
 * deadlines and its restarts are served here whatever that thread does.
 *
 * - respond, rewards and tools (the calls that carry model output) each run in a child the worker
 *   forks for the call (envworker/_call_fork.py): one call's misdeeds end with its process. They
 *   queue here fairly per client (FairQueue: a client with many episodes or a 64-item /score gets
 *   no more turns than one with one), at most `callsPerClient` of a client and `calls` in all at
 *   once; a call whose caller gave up leaves the queue, or has its child killed.
 * - Every call has a deadline (settings.timeoutMs) on the run clock (src/sandbox/run-delay.ts): time
 *   its process waited for a CPU does not count (a forked call's child, found by the pid the worker
 *   reports), nor does time a call spends waiting for a sandbox run (the server runs it, see
 *   link.ts); its wall time stretches to stretchCapMs at most. Past it the call fails
 *   (EXECUTION_ERROR, reason TIMEOUT): a forked call's child is killed; an inline call (dataset,
 *   generate, ...) runs in the worker itself, which is killed, and the calls it held are sent again
 *   to the next one (a call is a function of its inputs), at most MAX_ATTEMPTS times each.
 * - A forked call's child that dies costs that call (CRASHED); a worker that dies costs the calls
 *   it held the same way as a deadline: sent again, failing with reason CRASHED once a call has
 *   seen MAX_ATTEMPTS processes die under it.
 * - A frame larger than settings.maxMessageBytes is refused at its header, never held: the call it
 *   answers fails with reason TOO_LARGE (the worker checks its children's; this is for its own).
 * - The process's stderr (the environment's print()) is passed on to the server's, at most
 *   STDERR_BUDGET bytes a minute; a flood is dropped and counted, never held.
 * - A new process starts at the next call (its start has its own deadline).
 */
import type { ChildProcess } from "node:child_process";
import { parentPort, workerData, type MessagePort } from "node:worker_threads";
import { launchConfined } from "../../wall/confine.ts";
import { stretchCapMs, type DelayProbe } from "../../sched/deadline.ts";
import { FairQueue } from "../../sched/fair-queue.ts";
import { processWithNsPid } from "../../wall/process-memory.ts";
import { delayProbe } from "../../sched/run-delay.ts";
import { FrameError, FrameReader, frame, type FrameHeader } from "./frames.ts";
import { workerProfile, type PythonSettings } from "./settings.ts";
import type { FromIo, PySpec, ToIo, CallFailure } from "./protocol.ts";

const { target, settings, idleMs, syncPort, asyncPort, flag } = workerData as {
  target: string;
  settings: PythonSettings;
  /** Stop the process after this long without a call (0: never); a new one starts at the next call. */
  idleMs: number;
  syncPort: MessagePort;
  asyncPort: MessagePort;
  flag: Int32Array;
};
if (!parentPort) throw new Error("io-thread.ts must run in a worker thread");

/** Processes a call may see die under it before it fails (its own deadline aside). */
const MAX_ATTEMPTS = 2;
/** stderr passed on to the server's log per minute. */
const STDERR_BUDGET = 32 * 1024;
/** The tail of stderr kept to explain a crash. */
const STDERR_TAIL = 4096;
/** The calls the worker forks a child for (envworker/_call_fork.py FORKED). */
const FORKED = new Set(["respond", "reward", "tool"]);

interface Call {
  id: number;
  sync: boolean;
  method: string;
  params: unknown;
  /** Runs in a child of its own (FORKED): queued per client, killed alone. */
  forked: boolean;
  client: string;
  attempts: number;
  /** Computing time left (ms); the clock stops while it waits for sandbox runs or for a CPU. */
  leftMs: number;
  startedAt: number;
  /** Its process's waits for a CPU when the clock last started (ms). */
  waitedAt: number;
  /** When its wall time is up whatever the clock says (the stretch cap; moved on by its pauses). */
  capAt: number;
  pausedAt: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Sandbox runs it waits for. */
  waiting: number;
  proc: Proc | undefined;
  /** The waits for a CPU of the process it computes in (its child's once the worker says which). */
  delay: DelayProbe | undefined;
  /** A forked call's child, as the worker's PID namespace numbers it: found when its clock is first read. */
  childNsPid: number | undefined;
  /** Its caller gave up: its answer goes nowhere, its deadline still holds (a hung call still costs the process). */
  forgotten: boolean;
}

interface Proc {
  child: ChildProcess;
  ready: Promise<PySpec[]>;
  dead: boolean;
  stderrTail: string;
  /** The worker's own pid as the server sees it (found at its hello, before it has children). */
  pid: number | undefined;
  /** Its waits for a CPU (the run clock of its inline calls), opened at its first call. */
  waited: DelayProbe | undefined;
}

/** The call's computing time since its clock last started: wall time less its process's waits. */
function ranMs(call: Call): number {
  return performance.now() - call.startedAt - Math.max(0, (delayOf(call)?.() ?? 0) - call.waitedAt);
}

/**
 * The run clock's probe of a forked call's child, opened when first needed (most calls end long
 * before their clock is read): its waits so far count from the child's start, a spare's wait for
 * its call included (it waits blocked, off any CPU queue, so that adds little).
 */
function delayOf(call: Call): DelayProbe | undefined {
  if (call.delay || call.childNsPid === undefined) return call.delay;
  const pid = call.proc?.pid !== undefined ? processWithNsPid(call.proc.pid, call.childNsPid) : undefined;
  call.childNsPid = undefined;
  if (pid !== undefined) call.delay = delayProbe(`/proc/${pid}/schedstat`);
  return call.delay;
}

const calls = new Map<number, Call>();
/** Forked calls waiting for a turn, by client. */
const queue = new FairQueue<Call>();
/** Forked calls sent and not yet answered, in all and per client. */
let running = 0;
const runningOf = new Map<string, number>();
let proc: Proc | undefined;
let stderrSent = 0;
let stderrDropped = 0;
let stderrWindow = Date.now();

let idleTimer: ReturnType<typeof setTimeout> | undefined;

/** With no call left, the process goes after idleMs (the main thread's, used while loading and rarely after). */
function idleLater(): void {
  if (idleTimer) clearTimeout(idleTimer);
  idleTimer = undefined;
  if (idleMs <= 0 || calls.size > 0) return;
  idleTimer = setTimeout(() => {
    if (calls.size === 0 && proc) kill(proc);
  }, idleMs);
  idleTimer.unref();
}

function answer(call: Call, msg: FromIo): void {
  calls.delete(call.id);
  release(call);
  idleLater();
  if (call.timer) clearTimeout(call.timer);
  if (call.forked) call.delay?.close();
  if (call.forgotten) return;
  const port = call.sync ? syncPort : asyncPort;
  if (!posted(port, msg)) posted(port, { t: "failed", id: call.id, failure: { reason: "CRASHED", message: "its answer cannot be passed on (nested too deeply to copy)" } });
  if (call.sync) {
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  }
}

/**
 * Posts `msg`; false when it cannot be copied to the other thread: a value nested past the
 * structured clone's stack (a child that broke Python can send one), which thrown here would end
 * this thread and every call it holds, other clients' with it.
 */
function posted(port: MessagePort, msg: FromIo): boolean {
  try {
    port.postMessage(msg);
    return true;
  } catch {
    return false;
  }
}

function fail(call: Call, failure: CallFailure): void {
  answer(call, { t: "failed", id: call.id, failure });
}

/** Writes a frame to the worker (a dead one's pipe takes nothing: its exit says what happened). */
function write(p: Proc, fields: Record<string, unknown>, body?: Buffer): void {
  if (!p.dead) p.child.stdin!.write(frame(fields, body));
}

// -- the fair queue of forked calls --------------------------------------------------------------

function slotFree(call: Call): boolean {
  return running < settings.calls && (runningOf.get(call.client) ?? 0) < settings.callsPerClient;
}

/** Sends the queued forked calls that have a turn now, clients in turn. */
function pump(): void {
  for (let call = queue.shiftReady(slotFree); call; call = queue.shiftReady(slotFree)) {
    running++;
    runningOf.set(call.client, (runningOf.get(call.client) ?? 0) + 1);
    void send(call);
  }
}

/** A forked call that held a turn gives it back (answered, failed, forgotten). */
function release(call: Call): void {
  if (!call.forked) return;
  if (queue.remove(call.client, call)) return;
  const n = runningOf.get(call.client) ?? 0;
  if (n <= 0) return;
  running--;
  if (n === 1) runningOf.delete(call.client);
  else runningOf.set(call.client, n - 1);
  queueMicrotask(pump);
}

// -- the process -----------------------------------------------------------------------------------

function passStderr(chunk: Buffer, p: Proc): void {
  const text = chunk.toString("utf8");
  p.stderrTail = (p.stderrTail + text).slice(-STDERR_TAIL);
  const now = Date.now();
  if (now - stderrWindow > 60_000) {
    if (stderrDropped > 0) process.stderr.write(`[python ${target}] ${stderrDropped} bytes of output dropped (more than ${STDERR_BUDGET} a minute)\n`);
    stderrWindow = now;
    stderrSent = 0;
    stderrDropped = 0;
  }
  if (stderrSent + chunk.length <= STDERR_BUDGET) {
    stderrSent += chunk.length;
    process.stderr.write(text);
  } else stderrDropped += chunk.length;
}

function kill(p: Proc): void {
  if (p.dead) return;
  p.dead = true;
  p.waited?.close();
  try {
    p.child.kill("SIGKILL");
  } catch {
    // Gone already.
  }
  if (proc === p) proc = undefined;
}

/** The process died or was killed: its calls go to the next one, or fail when they have seen too many die. */
function lost(p: Proc, why: string, except?: Call): void {
  kill(p);
  for (const call of [...calls.values()]) {
    if (call.proc !== p || call === except) continue;
    if (call.timer) clearTimeout(call.timer);
    call.timer = undefined;
    call.proc = undefined;
    if (call.forked) call.delay?.close();
    call.delay = undefined;
    call.childNsPid = undefined;
    if (++call.attempts >= MAX_ATTEMPTS) fail(call, { reason: "CRASHED", message: `the Python worker died under it: ${why}` });
    else void send(call);
  }
}

/** A start that would fail the same way again (the module does not load, the start timed out): not retried. */
class StartRefused extends Error {}

function startProcess(): Proc {
  let resolveReady!: (specs: PySpec[]) => void;
  let rejectReady!: (err: Error) => void;
  const ready = new Promise<PySpec[]>((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  ready.catch(() => {});
  const p: Proc = { child: undefined as unknown as ChildProcess, ready, dead: false, stderrTail: "", pid: undefined, waited: undefined };
  const startTimer = setTimeout(() => {
    rejectReady(new StartRefused(`the Python worker for ${target} did not start within ${settings.startTimeoutMs / 1000} s (ENVWORKER_PYTHON_START_TIMEOUT_S)`));
    kill(p);
  }, settings.startTimeoutMs);
  launchConfined(workerProfile(target, settings)).then(
    ({ child }) => {
      p.child = child;
      if (p.dead) {
        child.kill("SIGKILL");
        return;
      }
      const reader = new FrameReader(settings.maxMessageBytes);
      child.stdout!.on("data", (chunk: Buffer) => {
        // A process being killed may still be sending: dropped.
        if (p.dead) return;
        let frames;
        try {
          frames = reader.push(chunk);
        } catch (err) {
          const e = err as FrameError;
          const call = e.id === undefined ? undefined : calls.get(e.id);
          if (e.tooLarge && call && call.proc === p) fail(call, { reason: "TOO_LARGE", message: `its answer is larger than ${settings.maxMessageBytes} bytes (ENVWORKER_PYTHON_MAX_MESSAGE_MB)` });
          return lost(p, e.tooLarge ? "it sent a message larger than the limit" : e.message, call);
        }
        for (const f of frames) {
          receive(p, f.header, f.body, resolveReady, rejectReady);
          if (p.dead) return;
        }
      });
      child.stderr!.on("data", (chunk: Buffer) => passStderr(chunk, p));
      child.stdin!.on("error", () => {}); // a dead process's pipe: its exit says what happened
      child.on("error", (err) => {
        rejectReady(err);
        lost(p, err.message);
      });
      child.on("exit", (code, signal) => {
        clearTimeout(startTimer);
        const tail = p.stderrTail.trim().split("\n").slice(-3).join(" | ");
        const why = `${signal ? `killed by ${signal}` : `exit code ${code}`}${tail ? `: ${tail}` : ""}`;
        rejectReady(new Error(`the Python worker for ${target} stopped before it was ready (${why})`));
        if (!p.dead) lost(p, why);
      });
    },
    (err: Error) => {
      clearTimeout(startTimer);
      rejectReady(err);
      p.dead = true;
      if (proc === p) proc = undefined;
    },
  );
  ready.then(() => clearTimeout(startTimer), () => {});
  return p;
}

function json(body: Buffer): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(body.toString("utf8"));
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function receive(p: Proc, h: FrameHeader, body: Buffer, resolveReady: (s: PySpec[]) => void, rejectReady: (e: Error) => void): void {
  if (h.t === "hello") {
    const hello = json(body) ?? {};
    // The worker's pid as the server sees it: it says its own, as its PID namespace sees it.
    if (p.child.pid && typeof hello.pid === "number") p.pid = processWithNsPid(p.child.pid, hello.pid);
    return resolveReady((hello.envs ?? []) as PySpec[]);
  }
  if (h.t === "load-error") return rejectReady(new StartRefused(String(json(body)?.message ?? "the module did not load")));
  const call = typeof h.id === "number" ? calls.get(h.id) : undefined;
  if (!call || call.proc !== p) return; // a call that timed out or moved: its answer is no longer awaited
  switch (h.t) {
    case "started":
      // The call's child: its clock is that process's (delayOf).
      if (typeof h.pid === "number") call.childNsPid = h.pid;
      return;
    case "done": {
      let value: unknown;
      try {
        value = JSON.parse(body.toString("utf8"));
      } catch {
        return fail(call, { reason: "CRASHED", message: "its answer could not be read" });
      }
      return answer(call, { t: "done", id: call.id, value });
    }
    case "failed": {
      const e = (json(body) ?? {}) as { type?: string; message?: string; traceback?: string; too_large?: boolean };
      return fail(call, e.too_large ? { reason: "TOO_LARGE", message: String(e.message) } : { reason: "ERROR", type: String(e.type ?? "Error"), message: String(e.message ?? ""), traceback: String(e.traceback ?? "") });
    }
    case "crashed": {
      const e = json(body) ?? {};
      return fail(call, { reason: e.reason === "TOO_LARGE" ? "TOO_LARGE" : "CRASHED", message: String(e.message ?? "its process died") });
    }
    case "sandbox": {
      const req = json(body) ?? {};
      // The clock stops while the server runs it (it has its own limits).
      if (call.waiting++ === 0) pause(call);
      if (posted(asyncPort, { t: "sandbox", id: call.id, sid: h.sid, code: req.code, lang: req.lang, options: req.options })) return;
      fail(call, { reason: "CRASHED", message: "it asked for a sandbox run that cannot be passed on (nested too deeply to copy)" });
      if (call.forked) write(p, { t: "kill", id: call.id });
      return;
    }
  }
}

function pause(call: Call): void {
  if (call.timer) clearTimeout(call.timer);
  call.timer = undefined;
  call.leftMs -= ranMs(call);
  call.pausedAt = performance.now();
}

function resume(call: Call): void {
  const now = performance.now();
  if (call.pausedAt > 0) call.capAt += now - call.pausedAt;
  call.pausedAt = 0;
  call.startedAt = now;
  call.waitedAt = call.forked && call.delay === undefined ? 0 : (delayOf(call)?.() ?? 0);
  const check = () => {
    const left = Math.min(call.leftMs - ranMs(call), call.capAt - performance.now());
    if (left > 0) call.timer = setTimeout(check, left);
    else timedOut(call);
  };
  call.timer = setTimeout(check, Math.max(0, call.leftMs));
}

function timedOut(call: Call): void {
  const p = call.proc;
  fail(call, { reason: "TIMEOUT", message: `it took longer than ${settings.timeoutMs / 1000} s (ENVWORKER_PYTHON_TIMEOUT_S)` });
  if (!p) return;
  // A forked call's child goes alone; an inline call holds the worker itself.
  if (call.forked) write(p, { t: "kill", id: call.id });
  else lost(p, `a call (${call.method}) passed its deadline`, call);
}

async function ensureProcess(): Promise<Proc> {
  if (!proc || proc.dead) proc = startProcess();
  const p = proc;
  await p.ready;
  return p;
}

async function send(call: Call): Promise<void> {
  let p: Proc;
  try {
    p = await ensureProcess();
  } catch (err) {
    if (calls.get(call.id) !== call) return;
    // A worker that died or could not be launched before it was ready (on a loaded machine, two
    // copies of the test suite: a call failed START at once) costs the call an attempt, as a
    // worker that dies under it does; one whose module does not load fails the call now.
    if (!(err instanceof StartRefused) && ++call.attempts < MAX_ATTEMPTS) return void send(call);
    fail(call, { reason: "START", message: (err as Error).message });
    return;
  }
  if (calls.get(call.id) !== call) return;
  if (p.dead) return void send(call);
  call.proc = p;
  call.leftMs = settings.timeoutMs;
  call.waiting = 0;
  call.capAt = performance.now() + stretchCapMs(settings.timeoutMs);
  call.pausedAt = 0;
  // Until the worker says which child runs it, a forked call's clock is the wall clock.
  if (!call.forked && p.pid !== undefined) call.delay = (p.waited ??= delayProbe(`/proc/${p.pid}/schedstat`));
  resume(call);
  write(p, { t: "call", id: call.id, method: call.method }, Buffer.from(JSON.stringify(call.params)));
}

function handle(msg: ToIo): void {
  switch (msg.t) {
    case "call": {
      const forked = FORKED.has(msg.method);
      const call: Call = { id: msg.id, sync: msg.sync, method: msg.method, params: msg.params, forked, client: msg.client ?? "", attempts: 0, leftMs: settings.timeoutMs, startedAt: 0, waitedAt: 0, capAt: 0, pausedAt: 0, timer: undefined, waiting: 0, proc: undefined, delay: undefined, childNsPid: undefined, forgotten: false };
      calls.set(call.id, call);
      idleLater();
      if (forked) {
        queue.push(call.client, call);
        pump();
      } else void send(call);
      break;
    }
    case "describe":
      ensureProcess().then(
        (p) =>
          p.ready.then((envs) => {
            asyncPort.postMessage({ t: "described", envs } satisfies FromIo);
            idleLater();
          }),
        (err: Error) => asyncPort.postMessage({ t: "describe-failed", message: err.message } satisfies FromIo),
      );
      break;
    case "sandbox-result":
    case "sandbox-error": {
      const call = calls.get(msg.id);
      if (!call || !call.proc || call.proc.dead) return;
      if (--call.waiting === 0) resume(call);
      const payload = msg.t === "sandbox-result" ? { result: msg.result } : { message: msg.message };
      write(call.proc, { t: msg.t, id: call.id, sid: msg.sid }, Buffer.from(JSON.stringify(payload)));
      break;
    }
    case "forget": {
      // Its caller gave up (a tool's timeout, a request that went away): a queued call leaves the
      // queue, a forked one's child is killed. An inline call still running past its deadline still
      // costs the process, or it would hold it for every later call.
      const call = calls.get(msg.id);
      if (!call) break;
      call.forgotten = true;
      if (!call.forked) break;
      const p = call.proc;
      answer(call, { t: "failed", id: call.id, failure: { reason: "CRASHED", message: "abandoned" } });
      if (p) write(p, { t: "kill", id: call.id });
      break;
    }
    case "stop":
      if (proc) kill(proc);
      process.exit(0);
  }
}

asyncPort.on("message", handle);
process.on("exit", () => {
  if (proc) kill(proc);
});
