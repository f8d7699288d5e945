/** What one rollout gives: the row `envworker eval` writes, and what the report reads (report.ts). */
import type { JsonObject, Message } from "../env/messages.ts";
import type { ResetParams } from "./rollout-drivers.ts";

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface RolloutTiming {
  /** Waiting for the model, retries and backoff included. */
  generation_ms: number;
  /** The last step: the environment's final turn and the rubric (scoring runs inside it). */
  scoring_ms: number;
  /** Every environment call: reset, steps (scoring included), close. */
  env_ms: number;
  total_ms: number;
}

export interface RolloutResult {
  /** The example's number in this run (0-based). */
  example_id: number;
  /** Which of the example's rollouts this is (0-based). */
  rollout: number;
  /** What reset was called with. */
  reset: ResetParams;
  episode_id: string | null;
  /** The prompt as the model first saw it (system message included). */
  prompt: Message[];
  /** Everything after the prompt: the model's turns and the environment's replies. */
  completion: Message[];
  /** The example's answer and info (remotely: when the episode finished; null when it did not). */
  answer: string | null;
  info: JsonObject | null;
  /** What the environment reported in its observations (seed, split, index, example_id, reward_errors, service_errors). */
  env_info: JsonObject;
  /** Null when the episode did not finish (see `error`). */
  reward: number | null;
  metrics: Record<string, number> | null;
  done: boolean;
  truncated: boolean;
  /** Model turns taken. */
  turns: number;
  /** Why the rollout failed (model, environment or timeout), or null. */
  error: string | null;
  /** Model calls retried (429, 5xx, network), over the whole rollout. */
  retries: number;
  /** Stopped by the run's signal (Ctrl-C) before it finished, or never started: not a result. */
  interrupted?: true;
  timing: RolloutTiming;
  usage: Usage;
}
