/**
 * Worker-thread entry of env-threads.ts: hosts the environments (imported from the modules they
 * were loaded from) and runs their code for the main thread, one message per call. Services
 * (the code sandboxes) stay in the main thread, where their queues are shared fairly by every
 * episode: a call's `sandbox.run` is forwarded there and its result sent back.
 */
// First, before anything that could load environment code: no string becomes code in this thread.
import { watchCall, type CallWatch } from "./no-code-from-strings.ts";
import { parentPort, workerData } from "node:worker_threads";
import type { Environment } from "../env/environment.ts";
import { stepEpisode } from "../env/episode.ts";
import { ApiError } from "../env/errors.ts";
import type { Services } from "../env/services.ts";
import { CALL_SCOPE, CALL_WAITS, callWaits, onCallWaits } from "./call-waits.ts";
import { importEnvironments } from "../env/source.ts";
import type { RunOptions, RunResult, Sandbox } from "../sandbox/types.ts";
import { stateBytes } from "../server/engine.ts";
import { listExamples, resetFromRequest } from "../server/examples.ts";
import { handleMcp } from "../server/mcp.ts";
import { scoreGroups } from "../server/score.ts";
import { JudgeError, type JudgeReply, type JudgeService } from "../env/judge.ts";
import type { CallOp, FromThread, ToThread } from "./env-thread-protocol.ts";
import { batchedPoster } from "./message-batch.ts";

const port = parentPort;
if (!port) throw new Error("env-thread.ts must run in a worker thread");
const { sources, services: serviceKinds, judge: hasJudge, started } = workerData as {
  sources: string[];
  services: Record<string, Sandbox["kind"]>;
  /** The server has a judge: its requests go to the main thread's judge client. */
  judge: boolean;
  started: Int32Array;
};
const post = batchedPoster<FromThread>((batch) => port.postMessage(batch));

const envs = new Map<string, Environment>();
try {
  for (const url of sources) for (const env of await importEnvironments(url)) envs.set(env.name, env);
} catch (err) {
  // Sent now, not batched: the thread ends with the throw below.
  port.postMessage([{ t: "load-error", message: err instanceof Error ? (err.stack ?? err.message) : String(err) }] satisfies FromThread[]);
  throw err;
}

/** Service requests of calls in progress, by request id. */
const waiting = new Map<number, { resolve: (r: RunResult) => void; reject: (e: Error) => void; onStart?: (() => void) | undefined }>();
/** Judge requests of calls in progress, by request id. */
const judging = new Map<number, { resolve: (r: JudgeReply) => void; reject: (e: Error) => void }>();
/**
 * The service and judge requests of each call in progress, so that a call the main thread gave up
 * on ("forget": its caller left) lets go of them: their answers never come, and what waited for
 * them (the call's inputs, its reward functions' state) was kept for the thread's life.
 */
const requestsOf = new Map<number, Set<number>>();
let nextServiceId = 1;
/** Each call in progress's cancellation, for work done for it outside the thread (a Python worker's call): aborted when the main thread forgets it. */
const abortsOf = new Map<number, AbortController>();

function requestOf(call: number, sid: number): void {
  let sids = requestsOf.get(call);
  if (!sids) requestsOf.set(call, (sids = new Set()));
  sids.add(sid);
}

function forget(call: number): void {
  for (const sid of requestsOf.get(call) ?? []) {
    waiting.delete(sid);
    judging.delete(sid);
  }
  requestsOf.delete(call);
  // Kept (aborted) until the call ends: a Python call it makes after this is dropped at once.
  const abort = abortsOf.get(call) ?? new AbortController();
  abort.abort(new Error("its caller gave up"));
  abortsOf.set(call, abort);
}

/** A call is over: what was kept for it goes. */
function ended(call: number): void {
  requestsOf.delete(call);
  abortsOf.delete(call);
}

/** The services one call sees: proxies whose runs are executed (and scheduled) by the main thread. */
function servicesFor(call: number, client: string): Services {
  const services: Record<string, Sandbox> = {};
  for (const [name, kind] of Object.entries(serviceKinds)) {
    services[name] = {
      kind,
      run(code: string, options: RunOptions = {}) {
        const sid = nextServiceId++;
        // A signal and a callback cannot cross threads: the main thread cancels the run when this
        // signal fires (a tool's own timeout) or when the call ends.
        const { signal, onStart, ...plain } = options;
        return new Promise<RunResult>((resolve, reject) => {
          waiting.set(sid, { resolve, reject, onStart });
          requestOf(call, sid);
          post({ t: "service", call, sid, name, code, options: plain });
          signal?.addEventListener("abort", () => post({ t: "service-cancel", sid }), { once: true });
        });
      },
      async dispose() {},
    };
  }
  const judge: JudgeService | undefined = hasJudge
    ? {
        // The request is plain data; the main thread owns the endpoint, its key, cache and limits.
        ask: (request) => {
          const sid = nextServiceId++;
          return new Promise<JudgeReply>((resolve, reject) => {
            judging.set(sid, { resolve, reject });
            requestOf(call, sid);
            post({ t: "judge", call, sid, request });
          });
        },
      }
    : undefined;
  // The call's waits on work the thread does for it outside (a Python worker's call), and whose it
  // is and when its caller left, for that work's own queue: call-waits.ts.
  // The signal is made when first asked for (a Python call): most calls never need one.
  const scope = {
    client,
    get signal(): AbortSignal {
      let abort = abortsOf.get(call);
      if (!abort) abortsOf.set(call, (abort = new AbortController()));
      return abort.signal;
    },
  };
  return { ...(services as Services), judge, [CALL_WAITS]: callWaits(call), [CALL_SCOPE]: scope } as Services;
}

async function run(op: CallOp, call: number, client: string): Promise<unknown> {
  const env = envs.get(op.env);
  if (!env) throw new ApiError("UNKNOWN_ENV", `environment ${op.env} is not loaded in this thread`);
  switch (op.op) {
    case "reset": {
      const { state, result } = await resetFromRequest(env, op.id, op.opts);
      return { state, result, bytes: stateBytes(state) };
    }
    case "resets": {
      const made = [];
      for (let i = 0; i < op.count; i++) {
        const { state, result } = await resetFromRequest(env, op.id, op.opts);
        made.push({ state, result, bytes: stateBytes(state) });
      }
      return made;
    }
    case "step": {
      const { state, result, failures } = await stepEpisode(env, op.state, op.action, servicesFor(call, client));
      return { state, result, bytes: stateBytes(state), failures: failures.map((f) => ({ where: f.where, error: describe(f.error) })) };
    }
    case "score":
      return scoreGroups(env, { groups: op.groups, grouped: op.grouped }, servicesFor(call, client), op.first);
    case "mcp":
      return handleMcp(env, op.body, servicesFor(call, client));
    case "examples":
      return listExamples(env, op.req);
  }
}

/**
 * `run`, failing with a coded error when the call tried to turn a string into code: whatever the
 * environment did with the refusal (caught it and returned a reward), its result is not used.
 */
async function watched(op: CallOp, call: number, client: string): Promise<unknown> {
  const watch: CallWatch = {};
  let value: unknown;
  try {
    value = await watchCall(watch, () => run(op, call, client));
  } catch (err) {
    if (watch.refused === undefined) throw err;
  }
  if (watch.refused !== undefined) {
    throw new ApiError("EXECUTION_ERROR", `${op.env}: ${op.op}: the environment's code tried to turn a string into code (${watch.refused}), which environment threads refuse`, { reason: "CODE_FROM_STRINGS", refused: watch.refused });
  }
  return value;
}

/** An error as plain data for the main thread's log (name, message, stack survive; the object does not). */
function describe(err: unknown): { name: string; message: string; stack?: string | undefined } {
  return err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : { name: "Error", message: String(err) };
}

port.on("message", (batch: ToThread[]) => {
  for (const msg of batch) receive(msg);
});

function receive(msg: ToThread): void {
  switch (msg.t) {
    case "call":
      // Tells the main thread this call is under way: calls after it are not, and can move.
      Atomics.store(started, 0, msg.seq);
      watched(msg.op, msg.id, msg.client).then(
        (value) => {
          ended(msg.id);
          post({ t: "done", id: msg.id, seq: msg.seq, value });
        },
        (err: unknown) => {
          ended(msg.id);
          post(
            err instanceof ApiError
              ? { t: "failed", id: msg.id, seq: msg.seq, code: err.code, message: err.message, details: err.details, ...(err.cause !== undefined ? { cause: describe(err.cause) } : {}) }
              : { t: "crashed", id: msg.id, seq: msg.seq, message: err instanceof Error ? err.message : String(err), stack: err instanceof Error ? err.stack : undefined },
          );
        },
      );
      break;
    case "forget":
      forget(msg.id);
      break;
    case "service-started":
      // The run left the sandbox's queue: a tool's clock runs again from here.
      waiting.get(msg.sid)?.onStart?.();
      break;
    case "service-result": {
      const w = waiting.get(msg.sid);
      waiting.delete(msg.sid);
      w?.resolve(msg.result);
      break;
    }
    case "service-error": {
      const w = waiting.get(msg.sid);
      waiting.delete(msg.sid);
      w?.reject(new Error(msg.message));
      break;
    }
    case "judge-result": {
      const w = judging.get(msg.sid);
      judging.delete(msg.sid);
      w?.resolve(msg.reply);
      break;
    }
    case "judge-error": {
      const w = judging.get(msg.sid);
      judging.delete(msg.sid);
      w?.reject(new JudgeError(msg.code, msg.message, msg.retryAfterS));
      break;
    }
  }
}
onCallWaits(
  (call, on) => post({ t: "waiting", call, on }),
  (on) => post.now({ t: "blocked", on }),
);
post({ t: "ready", envs: [...envs.keys()] });
