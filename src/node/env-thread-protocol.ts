/** Messages between the main thread (env-threads.ts) and an environment thread (env-thread.ts). */
import type { EpisodeState } from "../env/episode.ts";
import type { ErrorCode } from "../env/errors.ts";
import type { JudgeErrorCode, JudgeReply, JudgeRequest } from "../env/judge.ts";
import type { Action } from "../env/messages.ts";
import type { RunOptions, RunResult } from "../sandbox/types.ts";
import type { EngineResetOptions } from "../server/engine.ts";
import type { ExamplesRequest, ScoreItem } from "../server/protocol.ts";

export type CallOp =
  | { op: "reset"; env: string; id: string; opts: EngineResetOptions }
  /** `count` plain resets made ahead, all as episode `id` (env-threads.ts ResetStock). */
  | { op: "resets"; env: string; id: string; count: number; opts: EngineResetOptions }
  | { op: "step"; env: string; state: EpisodeState; action: Action }
  /** `first`: the index of groups[0] in the client's request (a slice of it); `grouped`: it came as groups. */
  | { op: "score"; env: string; groups: readonly (readonly ScoreItem[])[]; first: number; grouped: boolean }
  | { op: "mcp"; env: string; body: unknown }
  | { op: "examples"; env: string; req: ExamplesRequest };

export type ToThread =
  /** `client`: whose call it is (the episode's owner, or the stateless route's caller). */
  | { t: "call"; id: number; seq: number; op: CallOp; client: string }
  | { t: "service-result"; sid: number; result: RunResult }
  | { t: "service-error"; sid: number; message: string }
  | { t: "judge-result"; sid: number; reply: JudgeReply }
  | { t: "judge-error"; sid: number; code: JudgeErrorCode; message: string; retryAfterS?: number | undefined }
  /** The run left the sandbox's queue and started (RunOptions.onStart, across threads). */
  | { t: "service-started"; sid: number }
  /** Nobody waits for this call any more (its caller gave up): its runs' answers will not come, drop what waits for them. */
  | { t: "forget"; id: number };

/** An error as it crosses threads. */
export interface ThreadError {
  name: string;
  message: string;
  stack?: string | undefined;
}

export type FromThread =
  | { t: "ready"; envs: string[] }
  | { t: "load-error"; message: string }
  // `seq`: the hand-over this answers (a call that moved off a stalled thread and came back has a new one).
  | { t: "done"; id: number; seq: number; value: unknown }
  /** An ApiError; `cause` is the environment's own error behind it, for the main thread's log. */
  | { t: "failed"; id: number; seq: number; code: ErrorCode; message: string; details?: unknown; cause?: ThreadError }
  | { t: "crashed"; id: number; seq: number; message: string; stack?: string | undefined }
  | { t: "service"; call: number; sid: number; name: string; code: string; options: RunOptions }
  /** A judge request of a call: the main thread's judge client answers it (shared cache and limits). */
  | { t: "judge"; call: number; sid: number; request: JudgeRequest }
  /** The run's caller in the thread gave up (a tool's own timeout): cancel it. */
  | { t: "service-cancel"; sid: number }
  /** Call `call` waits (or no longer waits) on work with limits of its own, in the thread (a Python worker): its deadline stops meanwhile (call-waits.ts). */
  | { t: "waiting"; call: number; on: boolean }
  /** The thread is blocked (or no longer) on a synchronous call to a Python worker: none of its calls computes meanwhile (call-waits.ts). */
  | { t: "blocked"; on: boolean };
