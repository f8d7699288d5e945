/**
 * A rubric is a list of named reward functions with weights. The reward is the weighted sum;
 * weight 0 makes a function a reported metric. A function that throws (or returns something
 * that is not a finite number) scores 0 and its error is reported: the episode is never lost to
 * a buggy reward.
 */
import type { JsonObject, Message } from "./messages.ts";
import type { Services } from "./services.ts";

export interface RewardInput<Info = JsonObject, Args = unknown> extends Services {
  /** The prompt messages (system included). */
  prompt: Message[];
  /** Everything after the prompt: the model's turns and the environment's replies. */
  completion: Message[];
  answer: string;
  info: Info;
  /** The environment's per-episode state (what `respond` kept); `{}` when scoring statelessly. */
  state: JsonObject;
  args: Args;
}

export type RewardFunction<Info = JsonObject, Args = unknown> = (
  input: RewardInput<Info, Args>,
) => number | boolean | Promise<number | boolean>;

export interface RubricEntry<Info = JsonObject, Args = unknown> {
  name: string;
  fn: RewardFunction<Info, Args>;
  /** Default 1. Weight 0 = reported metric that does not count. */
  weight?: number;
}

export interface RubricScore {
  reward: number;
  metrics: Record<string, number>;
  /** Reward functions that failed, by name, with their error message. */
  errors?: Record<string, string>;
}

/** `onError` sees each failing function's error itself (with its stack), for the server's log. */
export async function scoreRubric<Info, Args>(
  rubric: readonly RubricEntry<Info, Args>[],
  input: RewardInput<Info, Args>,
  onError?: (name: string, error: unknown) => void,
): Promise<RubricScore> {
  const metrics: Record<string, number> = {};
  const errors: Record<string, string> = {};
  let reward = 0;
  // Run the functions concurrently: they are independent and some (code execution) are slow.
  const values = await Promise.all(
    rubric.map(async (entry) => {
      try {
        const raw = await entry.fn(input);
        const value = typeof raw === "boolean" ? Number(raw) : raw;
        if (typeof value !== "number" || !Number.isFinite(value)) {
          throw new Error(`reward function returned ${String(raw)}, not a finite number`);
        }
        return value;
      } catch (err) {
        errors[entry.name] = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
        onError?.(entry.name, err);
        return 0;
      }
    }),
  );
  rubric.forEach((entry, i) => {
    const value = values[i]!;
    metrics[entry.name] = value;
    reward += (entry.weight ?? 1) * value;
  });
  return Object.keys(errors).length > 0 ? { reward, metrics, errors } : { reward, metrics };
}
