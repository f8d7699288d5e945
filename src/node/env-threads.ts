/**
 * Environment code off the event loop (Node). Worker threads each host every environment, imported
 * from the module it was loaded from (src/env/source.ts); reset, step, score and MCP calls are
 * sent to them with the episode state as the plain JSON it already is. The main thread keeps only
 * I/O, routing and the episode store.
 *
 * - A thread is handed a few calls at once (PIPELINE_DEPTH computing calls; one waiting for a
 *   sandbox run, which the main thread executes, does not count), so it never sleeps between two
 *   calls under load. A thread that has said nothing for STALL_MS is stalled (a call spins): the
 *   calls it has not started yet (it marks each call it starts in shared memory) move to other
 *   threads, it gets no new ones, and the pool grows (up to `maxThreads`) so the others keep
 *   serving.
 * - Waiting calls queue fairly: round-robin over their keys (episode ids, client ids), so one
 *   client's backlog does not starve another's single call. A caller that gave up (its signal
 *   fired) leaves the queue.
 * - Each call has a deadline (ENVWORKER_ENV_TIMEOUT_S). Past it the call fails with
 *   EXECUTION_ERROR (reason TIMEOUT); the episode is untouched because the main thread only stores
 *   a state a call returned. A thread still busy with it is terminated and replaced; the other
 *   calls it held are run again elsewhere (environment calls are functions of their inputs).
 *
 * Environments that were not loaded from a module (made in-process, e.g. in tests) cannot be
 * re-imported in a thread: their calls run inline, as before.
 */
import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import type { Environment } from "../env/environment.ts";
import type { EpisodeState } from "../env/episode.ts";
import { ApiError } from "../env/errors.ts";
import { JudgeError, type JudgeErrorCode } from "../env/judge.ts";
import type { Action } from "../env/messages.ts";
import type { RubricScore } from "../env/rubric.ts";
import { environmentSource } from "../env/source.ts";
import { siblingModule } from "../wall/sibling-module.ts";
import { startWorker } from "./ts-worker.ts";
import { anySignal } from "../sched/signals.ts";
import type { RunResult, Sandbox } from "../sandbox/types.ts";
import { inlineEngine, type CallScope, type EngineResetOptions, type EnvEngine, type ScopeServices, type Stepped } from "../server/engine.ts";
import type { CallOp, FromThread, ThreadError, ToThread } from "./env-thread-protocol.ts";
import { batchedPoster } from "./message-batch.ts";
import { FairQueue } from "../sched/fair-queue.ts";
import type { JsonRpcResponse } from "../server/mcp.ts";
import type { ExamplesRequest, ScoreBatch } from "../server/protocol.ts";
import { examplesInSlices, type ExamplesList } from "../server/examples.ts";

export interface EnvThreadsOptions {
  /** Services for environment code, narrowed per call (the sandbox's fair queue, cancellation). */
  services: ScopeServices;
  /** Deadline of one call (ENVWORKER_ENV_TIMEOUT_S; default 30 s). */
  timeoutMs?: number;
  /**
   * Threads kept running (default: one per CPU). 0: no threads, every environment runs inline on
   * the caller's thread, without deadlines (ENVWORKER_ENV_THREADS=0, for trusted environments).
   */
  minThreads?: number | undefined;
  /** Threads at most, while calls are slow (default: two more than minThreads). */
  maxThreads?: number;
  /** Heap limit of each thread, MiB (default 256): an environment that blows it costs its call, not the server. */
  threadHeapMb?: number;
}

/** How often a call may be run again after the thread running it died under another call. */
const MAX_ATTEMPTS = 2;
/** Computing calls handed to one thread at a time. */
const PIPELINE_DEPTH = 4;
/** A thread holding computing calls that has been silent this long is stalled. */
const STALL_MS = 250;
/** How often deadlines and stalls are checked. */
const TICK_MS = 50;
/**
 * Sandbox runs a queue key (an episode, a stateless route's client) may have asked for and not yet
 * been answered before its next calls wait in the queue, not computed: a key's work is prepared no
 * faster than the sandbox serves it. 600 waiting js-code /score requests (40 clients) had the threads
 * compute 19,200 harness inputs at once for a sandbox that runs two at a time, and each round of
 * those calls went ahead of other clients' steps in the fair queue (issue 29: steps waited 4.9-11.5 s).
 */
const RUNS_AHEAD_PER_KEY = 32;
/** Completions scored per call of a `/score` request (a larger group is one call). */
const SCORE_SLICE = 32;
/** Examples built per call of a `/examples` request (see examplesInSlices). */
const EXAMPLES_SLICE = 50;
/** Plain resets made ahead per refill (see ResetStock). */
const STOCK_BATCH = 16;
/** Environments whose plain resets are larger than this (as the budget counts them) are not stocked. */
const STOCK_MAX_STATE_BYTES = 64 * 1024;
/** The episode id stocked resets are made with, replaced when one is handed out (a real id's length). */
const STOCK_ID = "stocked-reset-xxxxxxxxx";

/**
 * Resets that ask for nothing in particular (no seed, index, split, args or example: OpenEnv's
 * plain `reset()`), made ahead by the threads in batches: a reset's work is a function of a random
 * seed, so one made a moment earlier is the same draw, and handing it out costs no round trip to a
 * thread (whose wake-ups cost more than a small environment's reset). The stock of an environment
 * is refilled in the background, one call per STOCK_BATCH resets, through the same fair queue and
 * deadline as any call; an environment whose refill fails stops being stocked (its plain resets go
 * to the threads one by one and fail there, with their own errors), and so does one whose resets
 * are large (the stock is held outside the memory budget).
 */
interface ResetStock {
  ready: Stepped[];
  refilling: boolean;
  /** No more refills: one failed, or the environment's resets are too large to hold in stock. */
  failed: boolean;
}

function isPlainReset(opts: EngineResetOptions): boolean {
  return opts.seed === undefined && opts.index === undefined && opts.split === undefined && opts.args === undefined && opts.example === undefined;
}

/** A stocked reset as the episode `id`, started now. */
function asEpisode(made: Stepped, id: string): Stepped {
  const now = Date.now();
  made.state.episode_id = id;
  made.state.created_at = now;
  made.state.updated_at = now;
  made.result.episode_id = id;
  made.bytes += 2 * (id.length - STOCK_ID.length);
  return made;
}

interface Call {
  readonly id: number;
  readonly op: CallOp;
  readonly scope: CallScope;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
  /**
   * Cancels the sandbox runs this call started (its deadline passed, or its caller gave up).
   * Made on the first run: most calls never reach the sandbox, and an AbortController is not free.
   */
  services: AbortController | undefined;
  thread: EnvThread | undefined;
  /** Sandbox runs it waits for; while > 0 the call does not hold its thread. */
  waitingOn: number;
  /** Its place among the calls handed to its thread (see EnvThread.started). */
  seq: number;
  attempts: number;
  /**
   * When it last started computing on its thread (handed over, or its sandbox runs answered); 0
   * while queued. The deadline counts computing time only: time spent waiting for sandbox runs is
   * bounded by their own limits (and a sandbox's first start-up is no environment's fault).
   */
  resumedAt: number;
  /** Computing time spent before `resumedAt`. */
  spentMs: number;
  settled: boolean;
  onAbort: (() => void) | undefined;
}

class EnvThread {
  readonly worker: Worker;
  readonly ready: Promise<void>;
  readonly calls = new Set<Call>();
  /** [0]: the sequence number of the last call the thread started (it handles its messages in order). */
  readonly started = new Int32Array(new SharedArrayBuffer(4));
  /** Sequence numbers of the calls handed to this thread. */
  sent = 0;
  /** Sandbox runs under way for this thread, by its request id (to cancel one). */
  readonly runs = new Map<number, AbortController>();
  /** Since when it is blocked on a synchronous call to a Python worker (onMessage "blocked"), 0 when not: handed no calls meanwhile. */
  blockedSince = 0;
  /** The calls whose deadlines stopped while it is blocked. */
  readonly blockedCalls = new Set<Call>();
  /** When the thread last said anything (or was handed its first computing call). */
  lastHeard = performance.now();
  stalled = false;
  dead = false;
  isReady = false;

  constructor(
    sources: string[],
    services: Record<string, Sandbox["kind"]>,
    judge: boolean,
    heapMb: number,
    onMessage: (t: EnvThread, m: FromThread) => void,
    onDeath: (t: EnvThread, why: string) => void,
    private readonly onUnsendable: (t: EnvThread, m: ToThread, err: Error) => void,
  ) {
    this.worker = startWorker(siblingModule("env-thread", import.meta.url), {
      workerData: { sources, services, judge, started: this.started },
      resourceLimits: { maxOldGenerationSizeMb: heapMb },
    });
    this.ready = new Promise<void>((resolve, reject) => {
      this.worker.on("message", (batch: FromThread[]) => {
        this.lastHeard = performance.now();
        this.stalled = false;
        for (const m of batch) {
          if (m.t === "ready") {
            this.isReady = true;
            resolve();
          } else if (m.t === "load-error") reject(new Error(m.message));
          else onMessage(this, m);
        }
      });
      const die = (why: string) => {
        if (this.dead) return;
        this.dead = true;
        reject(new Error(why));
        onDeath(this, why);
      };
      this.worker.on("error", (err) => die(err.message));
      this.worker.on("exit", (code) => die(`exit code ${code}`));
    });
    this.ready.catch(() => {});
    // After the listeners: adding a "message" listener refs the thread's port again. An idle
    // server's threads must not keep a process (validate, eval) alive.
    this.worker.unref();
  }

  /** Calls it holds that are computing (not waiting for a sandbox run). */
  get load(): number {
    let n = 0;
    for (const c of this.calls) if (c.waitingOn === 0) n++;
    return n;
  }

  /**
   * Posted at the end of this turn of the event loop, with whatever else goes to this thread. A
   * message that cannot be copied to the thread (nested too deep for the structured clone's
   * recursion) goes to `onUnsendable` alone; the rest of its batch is sent. Thrown here, it would
   * end the process: the flush runs from setImmediate.
   */
  readonly post = batchedPoster<ToThread>((batch) => {
    if (this.dead) return;
    try {
      this.worker.postMessage(batch);
    } catch {
      for (const msg of batch) {
        try {
          this.worker.postMessage([msg]);
        } catch (err) {
          this.onUnsendable(this, msg, err instanceof Error ? err : new Error(String(err)));
        }
      }
    }
  });

  kill(): void {
    this.dead = true;
    void this.worker.terminate();
  }
}

export class EnvThreadPool implements EnvEngine {
  private readonly threads = new Set<EnvThread>();
  private readonly queue = new FairQueue<Call>();
  /** Plain resets made ahead, by environment name and the server's episode limits. */
  private readonly stock = new Map<string, ResetStock>();
  private readonly calls = new Map<number, Call>();
  /** Sandbox runs asked for by calls of each queue key and not yet answered (RUNS_AHEAD_PER_KEY). */
  private readonly runsAhead = new Map<string, number>();
  private readonly inline: EnvEngine;
  private readonly sources: string[];
  private readonly threaded: Set<string>;
  private readonly serviceKinds: Record<string, Sandbox["kind"]>;
  /** The server has a judge (its requests are answered here, see serveJudge). */
  private readonly hasJudge: boolean;
  private readonly timeoutMs: number;
  private readonly minThreads: number;
  private readonly maxThreads: number;
  private readonly heapMb: number;
  private nextId = 1;
  private disposed = false;
  private ticker: ReturnType<typeof setInterval> | undefined;
  /** Threads terminated because a call overran its deadline (for tests and metrics). */
  killed = 0;
  /** Threads gone for any reason (those killed included: a heap exhausted, a crash; for tests and metrics). */
  died = 0;
  /** Resets handed out from the stock made ahead (for tests and metrics). */
  stockedResets = 0;

  constructor(
    envs: readonly Environment[],
    private readonly opts: EnvThreadsOptions,
  ) {
    this.inline = inlineEngine(opts.services);
    const sources = new Set<string>();
    this.threaded = new Set();
    for (const env of envs) {
      const src = environmentSource(env);
      if (src === undefined || opts.minThreads === 0) continue;
      sources.add(src);
      this.threaded.add(env.name);
    }
    this.sources = [...sources];
    // Which services exist is fixed per server; the thread builds proxies for exactly these.
    const probe = opts.services({ key: "" });
    this.hasJudge = probe.judge !== undefined;
    this.serviceKinds = Object.fromEntries(Object.entries(probe as Record<string, Sandbox | undefined>).flatMap(([k, v]) => (v && typeof v.run === "function" ? [[k, v.kind]] : [])));
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.minThreads = Math.max(1, opts.minThreads ?? availableParallelism());
    this.maxThreads = Math.max(this.minThreads, opts.maxThreads ?? this.minThreads + 2);
    // States are capped at ENVWORKER_MAX_EPISODE_CHARS (1M characters by default): a few MiB.
    this.heapMb = opts.threadHeapMb ?? 256;
    if (this.sources.length > 0) for (let i = 0; i < this.minThreads; i++) this.spawn();
  }

  /** Resolves once the first threads have loaded the environments (the server starts serving regardless). */
  async warm(): Promise<void> {
    await Promise.all([...this.threads].map((t) => t.ready));
  }

  get threadCount(): number {
    return this.threads.size;
  }

  reset(env: Environment, id: string, opts: EngineResetOptions, scope: CallScope): Promise<Stepped> {
    if (!this.threaded.has(env.name)) return this.inline.reset(env, id, opts, scope);
    if (isPlainReset(opts)) {
      const made = this.stocked(env.name, opts);
      if (made) {
        this.stockedResets++;
        return Promise.resolve(asEpisode(made, id));
      }
    }
    return this.call({ op: "reset", env: env.name, id, opts }, scope) as Promise<Stepped>;
  }

  /** A plain reset from the stock, if there is one; the stock is topped up when it runs low. */
  private stocked(env: string, opts: EngineResetOptions): Stepped | undefined {
    const limits = { maxChars: opts.maxChars, maxSteps: opts.maxSteps };
    const key = `${env}\u0000${limits.maxChars}\u0000${limits.maxSteps}`;
    let stock = this.stock.get(key);
    if (!stock) this.stock.set(key, (stock = { ready: [], refilling: false, failed: false }));
    const made = stock.ready.pop();
    if (stock.ready.length < STOCK_BATCH / 2 && !stock.refilling && !stock.failed && !this.disposed) {
      const refill = stock;
      refill.refilling = true;
      (this.call({ op: "resets", env, id: STOCK_ID, count: STOCK_BATCH, opts: limits }, { key: `stock:${env}` }) as Promise<Stepped[]>).then(
        (made) => {
          refill.ready.push(...made);
          refill.refilling = false;
          // Stocked states are held outside the memory budget: only small ones are made ahead.
          if (made.some((m) => m.bytes > STOCK_MAX_STATE_BYTES)) refill.failed = true;
        },
        () => {
          refill.failed = true;
        },
      );
    }
    return made;
  }

  step(env: Environment, state: EpisodeState, action: Action, scope: CallScope): Promise<Stepped> {
    if (!this.threaded.has(env.name)) return this.inline.step(env, state, action, scope);
    return this.call({ op: "step", env: env.name, state, action }, scope) as Promise<Stepped>;
  }

  async score(env: Environment, batch: ScoreBatch, scope: CallScope): Promise<RubricScore[][]> {
    if (!this.threaded.has(env.name)) return this.inline.score(env, batch, scope);
    // In slices of about SCORE_SLICE completions (a group is never split: its functions see it
    // whole), each its own call in the fair queue, like /examples.
    const scores: RubricScore[][] = [];
    const { groups, grouped } = batch;
    for (let first = 0; first < groups.length; ) {
      let end = first;
      for (let n = 0; end < groups.length && (end === first || n + groups[end]!.length <= SCORE_SLICE); end++) n += groups[end]!.length;
      const slice = groups.slice(first, end);
      scores.push(...((await this.call({ op: "score", env: env.name, groups: slice, first, grouped }, scope)) as RubricScore[][]));
      first = end;
    }
    return scores;
  }

  examples(env: Environment, req: ExamplesRequest, scope: CallScope): Promise<unknown> {
    if (!this.threaded.has(env.name)) return this.inline.examples(env, req, scope);
    // In slices, each its own call in the fair queue: other clients are served between them.
    return examplesInSlices(req, EXAMPLES_SLICE, (slice) => this.call({ op: "examples", env: env.name, req: slice }, scope) as Promise<ExamplesList>);
  }

  mcp(env: Environment, body: unknown, scope: CallScope): Promise<JsonRpcResponse | null> {
    if (!this.threaded.has(env.name)) return this.inline.mcp(env, body, scope);
    return this.call({ op: "mcp", env: env.name, body }, scope) as Promise<JsonRpcResponse | null>;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    for (const c of [...this.calls.values()]) this.settle(c, new ApiError("INTERNAL_ERROR", "the server is shutting down"));
    clearInterval(this.ticker);
    await Promise.all([...this.threads].map((t) => t.worker.terminate()));
    this.threads.clear();
  }

  private call(op: CallOp, scope: CallScope): Promise<unknown> {
    if (this.disposed) return Promise.reject(new ApiError("INTERNAL_ERROR", "the server is shutting down"));
    if (scope.signal?.aborted) return Promise.reject(cancelled());
    return new Promise((resolve, reject) => {
      const call: Call = {
        id: this.nextId++,
        op,
        scope,
        resolve,
        reject,
        services: undefined,
        thread: undefined,
        waitingOn: 0,
        seq: 0,
        attempts: 0,
        resumedAt: 0,
        spentMs: 0,
        settled: false,
        onAbort: undefined,
      };
      this.calls.set(call.id, call);
      // The ticker runs while calls exist (it stops itself when none are left); it also keeps the
      // process alive while a call is under way, which idle (unref'd) threads do not.
      this.ticker ??= setInterval(() => this.tick(), TICK_MS);
      if (scope.signal) {
        call.onAbort = () => this.abandon(call, cancelled());
        scope.signal.addEventListener("abort", call.onAbort, { once: true });
      }
      this.queue.push(scope.key, call);
      this.pump();
    });
  }

  /**
   * Hand queued calls to threads with room, in the queue's fair order, passing over keys with
   * RUNS_AHEAD_PER_KEY sandbox runs not yet answered; grow the pool when no thread has room.
   */
  private pump(): void {
    while (this.queue.size > 0) {
      const thread = this.leastLoaded();
      if (!thread) break;
      const call = this.queue.shiftReady((c) => (this.runsAhead.get(c.scope.key) ?? 0) < RUNS_AHEAD_PER_KEY);
      if (!call) break;
      this.dispatch(call, thread);
    }
    // Grow only past a stalled thread (a slow call): starting one costs about a second of CPU,
    // more than pipelining into the threads there are gains under plain load.
    const starting = [...this.threads].some((t) => !t.isReady && !t.dead);
    // A thread blocked on a Python worker as long counts as stalled (before, its blocked call kept it
    // "computing" and the stall check marked it).
    const now = performance.now();
    const stalled = [...this.threads].filter((t) => !t.dead && (t.stalled || (t.blockedSince > 0 && now - t.blockedSince >= STALL_MS))).length;
    if (!starting && this.threads.size < Math.min(this.maxThreads, this.minThreads + stalled)) this.spawn();
  }

  /** The ready, unstalled thread with the fewest computing calls, if it has fewer than `depth`. */
  private leastLoaded(depth = PIPELINE_DEPTH): EnvThread | undefined {
    let best: EnvThread | undefined;
    let bestLoad = depth;
    for (const t of this.threads) {
      if (!t.isReady || t.dead || t.stalled || t.blockedSince > 0) continue;
      const load = t.load;
      if (load < bestLoad) {
        best = t;
        bestLoad = load;
      }
    }
    return best;
  }

  /**
   * Every TICK_MS while calls exist: calls past their deadline time out, and threads silent for
   * STALL_MS with computing calls hand over the calls they have not started. (One interval instead
   * of a timer per call: a timer costs more than the calls of a fast environment.)
   */
  private tick(): void {
    const now = performance.now();
    let held = 0;
    for (const t of this.threads) {
      held += t.calls.size;
      for (const call of [...t.calls]) {
        if (call.resumedAt > 0 && call.waitingOn === 0 && call.spentMs + now - call.resumedAt >= this.timeoutMs) this.timedOut(call);
      }
    }
    if (this.calls.size === 0 && held === 0) {
      clearInterval(this.ticker);
      this.ticker = undefined;
      return;
    }
    for (const t of this.threads) {
      if (t.dead || t.stalled || t.load === 0 || now - t.lastHeard < STALL_MS) continue;
      t.stalled = true;
      const started = Atomics.load(t.started, 0);
      for (const call of [...t.calls].reverse()) {
        if (call.seq <= started) continue;
        this.detach(call);
        if (call.settled) continue;
        call.attempts--; // not its fault
        this.queue.unshift(call.scope.key, call);
      }
    }
    this.pump();
  }

  private dispatch(call: Call, thread: EnvThread): void {
    if (thread.load === 0) thread.lastHeard = performance.now();
    call.thread = thread;
    call.seq = ++thread.sent;
    call.attempts++;
    thread.calls.add(call);
    call.resumedAt = performance.now();
    call.spentMs = 0;
    thread.post({ t: "call", id: call.id, seq: call.seq, op: call.op, client: call.scope.client ?? call.scope.key });
  }

  private timedOut(call: Call): void {
    const thread = call.thread;
    const computing = call.waitingOn === 0;
    this.settle(call, new ApiError("EXECUTION_ERROR", `${call.op.env}: ${call.op.op} did not finish within ${this.timeoutMs / 1000} s`, { reason: "TIMEOUT" }));
    this.detach(call);
    // A thread still computing this call is stuck in it: replace the thread, and run the other
    // calls it held again elsewhere.
    if (thread && computing && !thread.dead) {
      this.killed++;
      this.retire(thread, "a call overran its deadline");
    }
    this.pump();
  }

  /**
   * The caller gave up: it gets `err` now and the call's sandbox runs are cancelled. A call its
   * thread is computing stays on that thread until it answers or its deadline kills the thread,
   * so a spin nobody waits for still cannot hold a thread forever.
   */
  private abandon(call: Call, err: unknown): void {
    if (call.settled) return;
    this.queue.remove(call.scope.key, call);
    this.settle(call, err);
    if (call.thread && call.waitingOn > 0) {
      // Its runs' answers will not be passed on: the thread lets go of what waits for them.
      call.thread.post({ t: "forget", id: call.id });
      this.detach(call);
    }
    this.pump();
  }

  /** Answer the caller (once). Where the call runs is detach()'s business. */
  private settle(call: Call, outcome: unknown, ok = false): void {
    if (call.settled) return;
    call.settled = true;
    this.calls.delete(call.id);
    if (call.onAbort) call.scope.signal?.removeEventListener("abort", call.onAbort);
    call.services?.abort();
    if (ok) call.resolve(outcome);
    else call.reject(outcome);
  }

  /** Take a call off its thread (it answered, moved, or its thread is gone). */
  private detach(call: Call): void {
    call.resumedAt = 0;
    call.thread?.calls.delete(call);
    call.thread = undefined;
    call.waitingOn = 0;
  }

  private spawn(): void {
    if (this.disposed) return;
    const thread = new EnvThread(
      this.sources,
      this.serviceKinds,
      this.hasJudge,
      this.heapMb,
      (t, m) => this.onMessage(t, m),
      (t, why) => this.onDeath(t, why),
      (t, m, err) => this.onUnsendable(t, m, err),
    );
    this.threads.add(thread);
    thread.ready.then(
      () => this.pump(),
      (err: Error) => {
        if (this.disposed) return;
        // Environments that cannot even load in a thread: fail what waits rather than spin.
        console.error(`envworker: an environment thread failed to start: ${err.message}`);
        this.threads.delete(thread);
        if (this.threads.size === 0) for (const c of [...this.calls.values()]) this.settle(c, new ApiError("INTERNAL_ERROR", `environment threads cannot start: ${err.message.split("\n")[0]}`));
      },
    );
  }

  private retire(thread: EnvThread, why: string): void {
    thread.kill();
    this.onDeath(thread, why);
  }

  private onDeath(thread: EnvThread, why: string): void {
    if (!this.threads.delete(thread)) return;
    this.died++;
    for (const call of [...thread.calls]) {
      this.detach(call);
      if (call.settled) continue; // nobody waits for it any more
      if (call.attempts >= MAX_ATTEMPTS) {
        this.settle(call, new ApiError("EXECUTION_ERROR", `${call.op.env}: the environment thread died (${why})`, { reason: "CRASHED" }));
      } else this.queue.unshift(call.scope.key, call);
    }
    if (!this.disposed && this.threads.size < this.minThreads) this.spawn();
    this.pump();
  }

  /** A message the thread could not be sent: its call fails alone, a sandbox run's result as an error. */
  private onUnsendable(thread: EnvThread, m: ToThread, err: Error): void {
    const why = `it cannot be handed to an environment thread (${err.message})`;
    if (m.t === "call") {
      const call = this.calls.get(m.id);
      if (!call || call.thread !== thread) return;
      this.detach(call);
      this.settle(call, new ApiError("VALIDATION_ERROR", `${call.op.env}: ${call.op.op}: ${why}`));
      this.pump();
    } else if (m.t === "service-result") {
      thread.post({ t: "service-error", sid: m.sid, message: `the run's result: ${why}` });
    }
  }

  private onMessage(thread: EnvThread, m: FromThread): void {
    if (m.t === "service") {
      void this.serve(thread, m);
      return;
    }
    if (m.t === "judge") {
      void this.serveJudge(thread, m);
      return;
    }
    if (m.t === "service-cancel") {
      thread.runs.get(m.sid)?.abort();
      return;
    }
    if (m.t === "blocked") {
      // A synchronous call to a Python worker blocks the thread: none of its calls can compute,
      // and their deadlines stop until it is over (call-waits.ts). It is handed no new calls
      // meanwhile: with its calls all waiting it would look the least loaded, and calls handed to
      // it would wait out the block (its stall check skips a thread with no computing call).
      thread.blockedSince = m.on ? performance.now() : 0;
      if (m.on) {
        for (const call of thread.calls) {
          if (call.settled) continue;
          stopDeadline(call);
          thread.blockedCalls.add(call);
        }
      } else {
        for (const call of thread.blockedCalls) if (call.thread === thread && !call.settled) restartDeadline(call);
        thread.blockedCalls.clear();
        this.pump();
      }
      return;
    }
    if (m.t === "waiting") {
      // As whileWaiting, for work the thread does itself (a Python worker's call): the deadline
      // stops, the thread takes no other calls for it (it may be blocked on that work).
      const call = this.calls.get(m.call);
      if (!call || call.thread !== thread || call.settled) return;
      if (m.on) {
        stopDeadline(call);
        this.pump(); // as whileWaiting: the thread is free for another call meanwhile
      } else restartDeadline(call);
      return;
    }
    if (m.t !== "done" && m.t !== "failed" && m.t !== "crashed") return;
    // An answer for a call this thread no longer holds (it timed out, or moved) is ignored; so is
    // one from an earlier hand-over of a call that moved off this thread (stalled) and came back:
    // that run was refused its sandbox runs meanwhile ("the call was abandoned").
    let call: Call | undefined;
    for (const c of thread.calls) if (c.id === m.id && c.seq === m.seq) call = c;
    if (!call) return;
    this.detach(call);
    if (call.settled) this.pump();
    else if (m.t === "done") this.settle(call, revived(call.op, m.value), true);
    else if (m.t === "failed") this.settle(call, new ApiError(m.code, m.message, m.details, m.cause ? { cause: revive(m.cause) } : undefined));
    else {
      console.error(`envworker: ${call.op.env}: ${call.op.op} failed:`, m.stack ?? m.message);
      this.settle(call, new ApiError("INTERNAL_ERROR", m.message));
    }
    this.pump();
  }

  /** A sandbox run for a call, in the main thread's sandbox (fair queue keyed by the call's scope). */
  private async serve(thread: EnvThread, m: Extract<FromThread, { t: "service" }>): Promise<void> {
    const call = this.calls.get(m.call);
    if (!call || call.thread !== thread) {
      thread.post({ t: "service-error", sid: m.sid, message: "the call was abandoned" });
      return;
    }
    call.services ??= new AbortController();
    // Cancelled with its call, or alone when its caller in the thread gives up on it.
    const own = new AbortController();
    const signal = anySignal(call.services.signal, own.signal);
    const service = (this.opts.services({ key: call.scope.key, client: call.scope.client, signal }) as Record<string, Sandbox | undefined>)[m.name];
    if (!service) {
      thread.post({ t: "service-error", sid: m.sid, message: `no ${m.name} service on this server` });
      return;
    }
    thread.runs.set(m.sid, own);
    const key = call.scope.key;
    this.runsAhead.set(key, (this.runsAhead.get(key) ?? 0) + 1);
    const outcome = await this.whileWaiting(call, thread, () =>
      service
        .run(m.code, { ...m.options, onStart: () => thread.post({ t: "service-started", sid: m.sid }) })
        .finally(() => {
          thread.runs.delete(m.sid);
          this.runAnswered(key);
        }),
    );
    if (!outcome) return;
    thread.post(outcome.ok ? { t: "service-result", sid: m.sid, result: outcome.value } : { t: "service-error", sid: m.sid, message: errorText(outcome.error) });
  }

  /** A sandbox run of `key` was answered: a call of its that waited for room may go now. */
  private runAnswered(key: string): void {
    const left = (this.runsAhead.get(key) ?? 1) - 1;
    if (left > 0) this.runsAhead.set(key, left);
    else this.runsAhead.delete(key);
    if (left === RUNS_AHEAD_PER_KEY - 1 && this.queue.sizeOf(key) > 0) this.pump();
  }

  /**
   * A judge request of a call, asked through the server's judge client (one cache and one set of
   * limits for every thread), keyed and cancelled with the call. Always answered, so a reward
   * function waiting in the thread never hangs.
   */
  private async serveJudge(thread: EnvThread, m: Extract<FromThread, { t: "judge" }>): Promise<void> {
    const call = this.calls.get(m.call);
    const refuse = (code: JudgeErrorCode, message: string, retryAfterS?: number) => thread.post({ t: "judge-error", sid: m.sid, code, message, retryAfterS });
    if (!call || call.thread !== thread) return refuse("JUDGE_CANCELLED", "the call was abandoned");
    call.services ??= new AbortController();
    const judge = this.opts.services({ key: call.scope.key, client: call.scope.client, signal: call.services.signal }).judge;
    if (!judge) return refuse("JUDGE_UNCONFIGURED", "this server has no judge");
    const outcome = await this.whileWaiting(call, thread, () => judge.ask(m.request));
    if (outcome?.ok) thread.post({ t: "judge-result", sid: m.sid, reply: outcome.value });
    else if (outcome) {
      const err = outcome.error;
      refuse(err instanceof JudgeError ? err.code : "JUDGE_FAILED", errorText(err), err instanceof JudgeError ? err.retryAfterS : undefined);
    } else refuse("JUDGE_CANCELLED", "the call was abandoned");
  }

  /**
   * Work the main thread does for a call (a sandbox run, a judge's answer) while the call waits:
   * its deadline stops (it counts computing time only; the work has its own limits) and its thread
   * takes other calls meanwhile. Undefined when the call no longer waits on this thread (it timed
   * out, was given up on, or moved).
   */
  private async whileWaiting<T>(call: Call, thread: EnvThread, work: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown } | undefined> {
    stopDeadline(call);
    this.pump(); // the thread is free for another call while this one waits
    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await work() };
    } catch (error) {
      outcome = { ok: false, error };
    }
    if (call.settled || call.thread !== thread) return undefined;
    restartDeadline(call);
    return outcome;
  }
}

/**
 * A call starts waiting on work with limits of its own (nested waits count): its deadline, which
 * counts its computing only, stops at the first.
 */
function stopDeadline(call: Call): void {
  if (call.waitingOn++ === 0) call.spentMs += performance.now() - call.resumedAt;
}

/** One of the call's waits ended: its deadline runs again once none is left. */
function restartDeadline(call: Call): void {
  if (call.waitingOn > 0 && --call.waitingOn === 0) call.resumedAt = performance.now();
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** An error from a thread, as an Error again (its stack is the thread's). */
function revive(e: ThreadError): Error {
  const err = new Error(e.message);
  err.name = e.name;
  if (e.stack) err.stack = e.stack;
  return err;
}

/** A step's reward failures come back as plain data: revive them for the host's log. */
function revived(op: CallOp, value: unknown): unknown {
  if (op.op !== "step") return value;
  const stepped = value as Omit<Stepped, "failures"> & { failures?: { where: string; error: ThreadError }[] };
  return { ...stepped, failures: stepped.failures?.map((f) => ({ where: f.where, error: revive(f.error) })) };
}

function cancelled(): ApiError {
  return new ApiError("EXECUTION_ERROR", "the caller gave up on this call", { reason: "CANCELLED" });
}
