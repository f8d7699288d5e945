/**
 * Worker-thread entry of link.ts: owns one Python environment worker process (clients/python/src/
 * envworker/worker.py) and speaks its JSON-lines protocol, so that the thread that hosts the
 * environment (an environment thread, or the main thread while environments load) may wait for a
 * call synchronously (Atomics.wait) without anyone else waiting on it: the process's pipes, its
 * deadlines and its restarts are served here whatever that thread does.
 *
 * - Every call has a deadline (settings.timeoutMs) on the run clock (src/sandbox/run-delay.ts): time
 *   the process waited for a CPU does not count, nor does time a call spends waiting for a sandbox
 *   run (the server runs it, see link.ts); its wall time stretches to stretchCapMs at most. (On the
 *   wall clock, two copies of the test suite at once made 2 s calls that print 16 MB time out.) Past it the call fails (EXECUTION_ERROR,
 *   reason TIMEOUT) and the process is killed; the other calls it held are sent again to the next
 *   one (a call is a function of its inputs), at most MAX_ATTEMPTS times each.
 * - A process that dies (a crash, its memory limit) costs the calls it held the same way: sent
 *   again, failing with reason CRASHED once a call has seen MAX_ATTEMPTS processes die under it.
 * - A line longer than settings.maxMessageBytes is never held: the process is killed, the call the
 *   line answers (its id leads the line) fails with reason TOO_LARGE.
 * - The process's stderr (the environment's print()) is passed on to the server's, at most
 *   STDERR_BUDGET bytes a minute; a flood is dropped and counted, never held.
 * - A new process starts at the next call (its start has its own deadline).
 */
import type { ChildProcess } from "node:child_process";
import { parentPort, workerData, type MessagePort } from "node:worker_threads";
import { launchConfined } from "../sandbox/confine.ts";
import { stretchCapMs, type DelayProbe } from "../sandbox/deadline.ts";
import { leafProcess } from "../sandbox/process-memory.ts";
import { delayProbe } from "../sandbox/run-delay.ts";
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

interface Call {
  id: number;
  sync: boolean;
  method: string;
  params: unknown;
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
  /** Its caller gave up: its answer goes nowhere, its deadline still holds (a hung call still costs the process). */
  forgotten: boolean;
}

interface Proc {
  child: ChildProcess;
  ready: Promise<PySpec[]>;
  dead: boolean;
  stderrTail: string;
  /** Its waits for a CPU (the run clock), opened at its first call. */
  waited: DelayProbe | undefined;
}

/** Milliseconds process `p` has waited for a CPU so far (0 where that cannot be read). */
function waitedMs(p: Proc | undefined): number {
  if (!p?.child?.pid) return 0;
  p.waited ??= delayProbe(`/proc/${leafProcess(p.child.pid)}/schedstat`);
  return p.waited();
}

/** The call's computing time since its clock last started: wall time less its process's waits. */
function ranMs(call: Call): number {
  return performance.now() - call.startedAt - Math.max(0, waitedMs(call.proc) - call.waitedAt);
}

const calls = new Map<number, Call>();
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
  idleLater();
  if (call.timer) clearTimeout(call.timer);
  if (call.forgotten) return;
  if (call.sync) {
    syncPort.postMessage(msg);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  } else asyncPort.postMessage(msg);
}

function fail(call: Call, failure: CallFailure): void {
  answer(call, { t: "failed", id: call.id, failure });
}

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
  const p: Proc = { child: undefined as unknown as ChildProcess, ready, dead: false, stderrTail: "", waited: undefined };
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
      let buffered: Buffer[] = [];
      let size = 0;
      child.stdout!.on("data", (chunk: Buffer) => {
        // A process being killed may still be sending (the rest of an oversized line): dropped.
        if (p.dead) {
          buffered = [];
          return;
        }
        let start = 0;
        for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
          const piece = chunk.subarray(start, nl);
          const line = buffered.length === 0 ? piece : Buffer.concat([...buffered, piece]);
          buffered = [];
          size = 0;
          start = nl + 1;
          if (line.length > settings.maxMessageBytes) return tooLarge(p, line);
          receive(p, line, resolveReady, rejectReady);
          if (p.dead) return;
        }
        if (start < chunk.length) {
          buffered.push(chunk.subarray(start));
          size += chunk.length - start;
          if (size > settings.maxMessageBytes) {
            const head = Buffer.concat(buffered.slice(0, 8)).subarray(0, 64);
            buffered = [];
            tooLarge(p, head);
          }
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

/** A line over the limit: the call it answers (its id leads the line) fails, the process goes. */
function tooLarge(p: Proc, head: Buffer): void {
  const id = /^\{"t":"(?:done|failed|sandbox)","id":(\d+)/.exec(head.subarray(0, 64).toString("latin1"))?.[1];
  const call = id === undefined ? undefined : calls.get(Number(id));
  if (call && call.proc === p) fail(call, { reason: "TOO_LARGE", message: `its answer is larger than ${settings.maxMessageBytes} bytes (ENVWORKER_PYTHON_MAX_MESSAGE_MB)` });
  lost(p, "it sent a message larger than the limit", call);
}

function receive(p: Proc, line: Buffer, resolveReady: (s: PySpec[]) => void, rejectReady: (e: Error) => void): void {
  let msg: { t?: unknown; id?: unknown; [k: string]: unknown };
  try {
    msg = JSON.parse(line.toString("utf8")) as typeof msg;
  } catch {
    return lost(p, "it wrote something that is not a protocol message");
  }
  if (msg.t === "hello") return resolveReady(msg.envs as PySpec[]);
  if (msg.t === "load-error") return rejectReady(new StartRefused(String(msg.message)));
  const call = typeof msg.id === "number" ? calls.get(msg.id) : undefined;
  if (!call || call.proc !== p) return; // a call that timed out or moved: its answer is no longer awaited
  if (msg.t === "done") answer(call, { t: "done", id: call.id, value: msg.value });
  else if (msg.t === "failed") {
    const e = (msg.error ?? {}) as { type?: string; message?: string; traceback?: string; too_large?: boolean };
    fail(call, e.too_large ? { reason: "TOO_LARGE", message: String(e.message) } : { reason: "ERROR", type: String(e.type ?? "Error"), message: String(e.message ?? ""), traceback: String(e.traceback ?? "") });
  } else if (msg.t === "sandbox") {
    // The clock stops while the server runs it (it has its own limits).
    if (call.waiting++ === 0) pause(call);
    asyncPort.postMessage({ t: "sandbox", id: call.id, sid: msg.sid, code: msg.code, lang: msg.lang, options: msg.options } satisfies FromIo);
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
  call.waitedAt = waitedMs(call.proc);
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
  if (p) lost(p, `a call (${call.method}) passed its deadline`, call);
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
  resume(call);
  p.child.stdin!.write(JSON.stringify({ t: "call", id: call.id, method: call.method, params: call.params }) + "\n");
}

function handle(msg: ToIo): void {
  switch (msg.t) {
    case "call": {
      const call: Call = { id: msg.id, sync: msg.sync, method: msg.method, params: msg.params, attempts: 0, leftMs: settings.timeoutMs, startedAt: 0, waitedAt: 0, capAt: 0, pausedAt: 0, timer: undefined, waiting: 0, proc: undefined, forgotten: false };
      calls.set(call.id, call);
      idleLater();
      void send(call);
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
      call.proc.child.stdin!.write(JSON.stringify(msg.t === "sandbox-result" ? { t: msg.t, sid: msg.sid, result: msg.result } : { t: msg.t, sid: msg.sid, message: msg.message }) + "\n");
      break;
    }
    case "forget": {
      // Its caller gave up (a tool's timeout): the answer is not awaited; a call still running past
      // its deadline still costs the process, or it would hold it for every later call.
      const call = calls.get(msg.id);
      if (call) call.forgotten = true;
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
