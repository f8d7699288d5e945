/**
 * A rubric is a list of named reward functions with weights. The reward is the weighted sum;
 * weight 0 makes a function a reported metric. A function that throws (or returns something
 * that is not a finite number) scores 0 and its error is reported: the episode is never lost to
 * a buggy reward, nor to a judge that failed (a coded JudgeError, see judge.ts).
 *
 * A function scores one completion (`fn`) or a whole group of completions of one prompt at once
 * (`group`, GRPO's unit: scores relative to the other rollouts). An episode scored alone is a
 * group of one.
 */
import type { JsonObject, Message } from "./messages.ts";
import { withSandbox, type AuthorServices, type Services } from "./services.ts";
import { ApiError } from "./errors.ts";
import { JudgeError, type JudgeReply, type JudgeService, type JudgeSummary } from "./judge.ts";
import { anySignal } from "../sched/signals.ts";

export interface RewardInput<Info = JsonObject, Args = unknown> extends AuthorServices {
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

/**
 * What the scoring functions below take: a RewardInput whose sandbox may be missing (a test that
 * scores a completion by hand); the reward functions get one (withSandbox) that fails its runs.
 */
export type ScoringInput<Info = JsonObject, Args = unknown> = Omit<RewardInput<Info, Args>, "sandbox"> & Services;

export type RewardFunction<Info = JsonObject, Args = unknown> = (
  input: RewardInput<Info, Args>,
) => number | boolean | Promise<number | boolean>;

/** Scores for a group of completions of one prompt, one per input, in order. */
export type GroupRewardFunction<Info = JsonObject, Args = unknown> = (
  inputs: RewardInput<Info, Args>[],
) => readonly (number | boolean)[] | Promise<readonly (number | boolean)[]>;

interface EntryBase {
  name: string;
  /** Default 1. Weight 0 = reported metric that does not count. */
  weight?: number;
}

export type RubricEntry<Info = JsonObject, Args = unknown> =
  | (EntryBase & { fn: RewardFunction<Info, Args>; group?: undefined })
  | (EntryBase & { group: GroupRewardFunction<Info, Args>; fn?: undefined });

export interface RubricScore {
  reward: number;
  metrics: Record<string, number>;
  /** Reward functions that failed, by name, with their error (`CODE: message` for coded errors). */
  errors?: Record<string, string>;
  /**
   * What reward functions left for the reader: `judge`, by judged function, what the client may
   * see of each judge answer (`JudgeSummary`: the verdict and a short reason, never the reply).
   */
  info?: JsonObject;
}

/** Metrics reported when a judge was asked; no rubric entry may take these names. */
export const JUDGE_METRICS = ["judge_calls", "judge_cache_hits", "judge_prompt_tokens", "judge_completion_tokens", "judge_ms"] as const;

/** A reward's error as reported: coded errors (a JudgeError) by their code. */
function errorText(err: unknown): string {
  if (err instanceof JudgeError) return `${err.code}: ${err.message}`;
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function asScore(raw: unknown): number {
  const value = typeof raw === "boolean" ? Number(raw) : raw;
  if (typeof value !== "number" || !Number.isFinite(value)) throw new Error(`reward function returned ${String(raw)}, not a finite number`);
  return value;
}

/** Summaries kept per judged function and completion at most (each is bounded too). */
const MAX_SUMMARIES = 16;

/** A refusal for the client's judge budget: the request's answer (429), not one reward's error. */
export function judgeBudgetError(err: JudgeError): ApiError {
  return new ApiError("CAPACITY_REACHED", err.message, { reason: "JUDGE_BUDGET", ...(err.retryAfterS !== undefined ? { retry_after_s: err.retryAfterS } : {}) });
}

/** One completion's judge use, across its reward functions. */
class JudgeMeter {
  calls = 0;
  cacheHits = 0;
  promptTokens = 0;
  completionTokens = 0;
  ms = 0;
  readonly summaries: Record<string, JudgeSummary[]> = {};

  constructor(
    /** Aborts every judge call of the request (its budget ran out). */
    private readonly stop: AbortController,
    /** Called with the first refusal for the client's budget. */
    private readonly onBudget: (err: JudgeError) => void,
  ) {}

  /**
   * The judge as reward function `name` sees it for this completion: every answer counted, what
   * the client may see of it kept (`note`), the reply itself dropped.
   */
  judgeFor(name: string, judge: JudgeService): JudgeService {
    return {
      note: (summary) => {
        const list = (this.summaries[name] ??= []);
        if (list.length < MAX_SUMMARIES) list.push(summary);
      },
      ask: async (request, options) => {
        const started = Date.now();
        let reply: JudgeReply;
        try {
          reply = await judge.ask(request, { signal: anySignal(options?.signal, this.stop.signal) });
        } catch (err) {
          if (err instanceof JudgeError && err.code === "JUDGE_BUDGET") {
            // Whatever the reward function does with the error, the request is refused.
            this.onBudget(err);
            throw err;
          }
          // A failed call still cost time (and a call, unless it was refused before one was made).
          const sent = !(err instanceof JudgeError && (err.code === "JUDGE_INVALID" || err.code === "JUDGE_UNCONFIGURED"));
          if (sent) this.calls++;
          this.ms += Date.now() - started;
          throw err;
        }
        if (reply.cached) this.cacheHits++;
        else {
          this.calls++;
          this.promptTokens += reply.promptTokens;
          this.completionTokens += reply.completionTokens;
          this.ms += reply.ms;
        }
        return reply;
      },
    };
  }

  get used(): boolean {
    return this.calls + this.cacheHits > 0;
  }

  addTo(score: RubricScore): void {
    if (!this.used) return;
    Object.assign(score.metrics, {
      judge_calls: this.calls,
      judge_cache_hits: this.cacheHits,
      judge_prompt_tokens: this.promptTokens,
      judge_completion_tokens: this.completionTokens,
      judge_ms: this.ms,
    });
    const judged: JsonObject = {};
    for (const [name, list] of Object.entries(this.summaries)) judged[name] = (list.length === 1 ? list[0]! : list) as JsonObject;
    if (Object.keys(judged).length > 0) score.info = { ...score.info, judge: judged };
  }
}

/**
 * Score a group of completions of one prompt (or unrelated completions: `fn` entries score each
 * alone, `group` entries see them all). `onError(index, name, error)` sees each failure itself
 * (with its stack), for the server's log.
 *
 * A judge call refused for the client's budget (JUDGE_BUDGET) refuses the whole scoring at once
 * with a 429 ApiError (CAPACITY_REACHED, `details.reason: "JUDGE_BUDGET"`), and aborts the other
 * judge calls through `judgeStop` (give one controller to several groups of one request).
 */
export async function scoreGroup<Info, Args>(
  rubric: readonly RubricEntry<Info, Args>[],
  given: readonly ScoringInput<Info, Args>[],
  onError?: (index: number, name: string, error: unknown) => void,
  judgeStop: AbortController = new AbortController(),
): Promise<RubricScore[]> {
  const inputs: RewardInput<Info, Args>[] = given.map(withSandbox);
  let refuse!: (err: ApiError) => void;
  const refused = new Promise<never>((_, reject) => (refuse = reject));
  refused.catch(() => {}); // awaited below only if it happens
  const onBudget = (err: JudgeError) => {
    judgeStop.abort();
    refuse(judgeBudgetError(err));
  };
  if (judgeStop.signal.aborted) throw new ApiError("CAPACITY_REACHED", "the request's judge calls were stopped", { reason: "JUDGE_BUDGET" });
  const meters = inputs.map(() => new JudgeMeter(judgeStop, onBudget));
  const values: number[][] = inputs.map(() => []);
  const errors: Record<string, string>[] = inputs.map(() => ({}));
  const fail = (i: number, name: string, err: unknown) => {
    errors[i]![name] = errorText(err);
    onError?.(i, name, err);
  };
  // The inputs as one entry sees them: each with its own metered judge.
  const inputsFor = (name: string) => inputs.map((input, i) => (input.judge ? { ...input, judge: meters[i]!.judgeFor(name, input.judge) } : input));
  // Entries run concurrently: they are independent and some (code execution, a judge) are slow.
  const scored = Promise.all(
    rubric.map(async (entry, e) => {
      const seen = inputsFor(entry.name);
      if (entry.group) {
        try {
          const raw = await entry.group(seen);
          if (!Array.isArray(raw) || raw.length !== inputs.length) throw new Error(`group reward function returned ${Array.isArray(raw) ? `${raw.length} scores` : String(raw)} for ${inputs.length} completions`);
          // One bad score fails that completion alone.
          raw.forEach((r, i) => {
            try {
              values[i]![e] = asScore(r);
            } catch (err) {
              values[i]![e] = 0;
              fail(i, entry.name, err);
            }
          });
        } catch (err) {
          for (let i = 0; i < inputs.length; i++) {
            values[i]![e] = 0;
            fail(i, entry.name, err);
          }
        }
        return;
      }
      const fn = entry.fn!;
      await Promise.all(
        seen.map(async (input, i) => {
          try {
            values[i]![e] = asScore(await fn(input));
          } catch (err) {
            values[i]![e] = 0;
            fail(i, entry.name, err);
          }
        }),
      );
    }),
  );
  // The first refusal for the budget answers now; the calls still waiting are aborted.
  await Promise.race([scored, refused]);
  return inputs.map((_, i) => {
    const metrics: Record<string, number> = {};
    let reward = 0;
    rubric.forEach((entry, e) => {
      const value = values[i]![e]!;
      metrics[entry.name] = value;
      reward += (entry.weight ?? 1) * value;
    });
    const score: RubricScore = Object.keys(errors[i]!).length > 0 ? { reward, metrics, errors: errors[i]! } : { reward, metrics };
    meters[i]!.addTo(score);
    return score;
  });
}

/** Score one completion: a group of one. */
export async function scoreRubric<Info, Args>(
  rubric: readonly RubricEntry<Info, Args>[],
  input: ScoringInput<Info, Args>,
  onError?: (name: string, error: unknown) => void,
): Promise<RubricScore> {
  const [score] = await scoreGroup(rubric, [input], onError && ((_, name, error) => onError(name, error)));
  return score!;
}
