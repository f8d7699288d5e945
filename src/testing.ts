/**
 * `envworker/testing`: play an environment's episodes in process, for its author's unit tests.
 * The same engine the server runs (reset, step, the rubric, /score's scoring), without HTTP.
 *
 *   const episode = await playEpisode(env, { seed: 1, actions: ["<guess>50</guess>", "<guess>75</guess>"] });
 *   expect(episode.reward).toBe(1.5);
 *
 * Code that tools and reward functions run goes to a QuickJS sandbox (as on Workers; it needs no
 * Node flags), made on first use and disposed when the episode ends; pass `sandbox` to use yours.
 */
import type { Environment } from "./env/environment.ts";
import { resetEpisode, stepEpisode, type EnvironmentFailure, type EpisodeState, type Observation, type StepResult } from "./env/episode.ts";
import type { Action, JsonObject, Message } from "./env/messages.ts";
import type { RubricScore } from "./env/rubric.ts";
import type { Services } from "./env/services.ts";
import { createSandbox } from "./sandbox/index.ts";
import type { Sandbox } from "./sandbox/types.ts";
import { scoreGroups } from "./server/score.ts";
import { ActionSchema, type ScoreItem } from "./server/protocol.ts";
import type { JudgeService } from "./env/judge.ts";
import { assertDistFresh } from "./node/dist-stamp.ts";

// Compiled, in a checkout whose sources changed since: refuse, rather than test older code (src/node/dist-stamp.ts).
assertDistFresh(import.meta.url);

export type { EnvironmentFailure, Observation, StepResult, RubricScore };

export interface EpisodeOptions {
  seed?: number;
  /** A dataset row (default: chosen with the seed). */
  index?: number;
  split?: string;
  /** The environment's args, as a client sends them (defaults filled in by its schema). */
  args?: Record<string, unknown>;
  /** The sandbox for tools and code rewards (default: QuickJS, made on first use). */
  sandbox?: Sandbox;
}

/** What a player sees before each of its turns. */
export interface PlayerTurn {
  /** The model turn about to be taken, from 1. */
  turn: number;
  /** The conversation so far (the prompt, then turns and replies). */
  messages: Message[];
  /** The text of the conversation's last message: the environment's latest reply, or the prompt's last message. */
  reply: string;
  /** The latest observation (the reset's before the first turn). */
  observation: Observation;
}

export type Turn = string | Action;

export interface PlayOptions extends EpisodeOptions {
  /** The model's turns, in order: text, or a whole action (`{ content, tool_calls }`). */
  actions?: readonly Turn[];
  /** Or a function giving each turn. */
  player?: (turn: PlayerTurn) => Turn | Promise<Turn>;
  /** A reward function that throws fails the play (default); true keeps its 0 and reports it in rewardErrors. */
  allowRewardErrors?: boolean;
}

export interface PlayedEpisode {
  episodeId: string;
  seed: number;
  args: unknown;
  /** The prompt (system message included). */
  prompt: Message[];
  /** Everything after the prompt: the model's turns and the environment's replies. */
  completion: Message[];
  answer: string;
  info: JsonObject;
  /** The environment's own per-episode state at the end. */
  state: JsonObject;
  /** The observation of each step, in order. */
  observations: Observation[];
  /** Model turns taken. */
  turns: number;
  done: boolean;
  truncated: boolean;
  /** The rubric's weighted total (null when the episode is not done). */
  reward: number | null;
  /** Each reward function's value. */
  metrics: Record<string, number>;
  /** Reward functions that threw (only with allowRewardErrors). */
  rewardErrors: Record<string, string>;
}

/** An episode in progress: step it yourself. */
export interface EpisodeHandle {
  readonly prompt: Message[];
  /** The reset's observation (its messages are the prompt; its tools, a tool environment's). */
  readonly observation: Observation;
  /** The engine's whole state of the episode (conversation, the environment's `state`, turn, done...). */
  readonly episode: EpisodeState;
  readonly done: boolean;
  /** Take one model turn; the step's result, as the server would send it. */
  step(action: Turn): Promise<StepResult>;
  /** The episode as played so far. */
  played(): PlayedEpisode;
  /** Reward functions that threw so far, with their errors (stacks included). */
  readonly failures: readonly EnvironmentFailure[];
  /** Dispose the sandbox this handle made (if any code ran). */
  close(): Promise<void>;
}

/**
 * A turn as the engine takes it, checked as the server checks a client's action (a test that
 * passes undefined, or a player that returns nothing, gets this error, not a crash in the engine).
 */
function asAction(env: Environment, t: unknown, where: string): Action {
  if (typeof t === "string") return { content: t };
  const parsed = ActionSchema.safeParse(t);
  if (parsed.success) return parsed.data as Action;
  const shown = t === undefined ? "undefined" : (JSON.stringify(t) ?? String(t)).slice(0, 200);
  const why = parsed.error.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ");
  throw new TypeError(`${env.name}: ${where} got ${shown}: a turn is the model's text (a string) or an action { content: string | null, tool_calls?: [...] } (${why})`);
}

let counter = 0;

/** Start an episode (reset) of `env`. */
export async function startEpisode(env: Environment, opts: EpisodeOptions = {}): Promise<EpisodeHandle> {
  const ownSandbox = opts.sandbox === undefined ? createSandbox("quickjs") : undefined;
  const services: Services = { sandbox: opts.sandbox ?? ownSandbox };
  const { state: first, result } = resetEpisode(env, `test-${++counter}`, {
    seed: opts.seed ?? 0,
    index: opts.index,
    split: opts.split,
    args: opts.args,
  });
  let state = first;
  const observations: Observation[] = [];
  const failures: EnvironmentFailure[] = [];
  return {
    failures,
    prompt: first.messages.slice(0, first.prompt_length),
    observation: result.observation,
    get episode() {
      return state;
    },
    get done() {
      return state.done;
    },
    async step(action) {
      const stepped = await stepEpisode(env, state, asAction(env, action, "step()"), services);
      state = stepped.state;
      failures.push(...stepped.failures);
      observations.push(stepped.result.observation);
      return stepped.result;
    },
    played: () => ({
      episodeId: state.episode_id,
      seed: state.seed,
      args: state.args,
      prompt: state.messages.slice(0, state.prompt_length),
      completion: state.messages.slice(state.prompt_length),
      answer: state.answer,
      info: state.info,
      state: state.state,
      observations: [...observations],
      turns: state.turn,
      done: state.done,
      truncated: state.truncated,
      reward: state.reward,
      metrics: state.metrics ?? {},
      rewardErrors: state.reward_errors ?? {},
    }),
    close: async () => {
      await ownSandbox?.dispose();
    },
  };
}

/**
 * Play an episode to its end with scripted `actions` or a `player`. Throws when the actions run
 * out before the episode ends, when the episode ends with actions left, when the environment's
 * code throws (the error names what failed; its cause is the original), and when a reward
 * function throws (unless allowRewardErrors).
 */
export async function playEpisode(env: Environment, opts: PlayOptions): Promise<PlayedEpisode> {
  if ((opts.actions === undefined) === (opts.player === undefined)) throw new Error("playEpisode: give actions or a player (one of them)");
  const handle = await startEpisode(env, opts);
  try {
    let observation = handle.observation;
    let turn = 0;
    while (!handle.done) {
      turn++;
      let action: Turn;
      if (opts.actions) {
        if (turn > opts.actions.length) {
          throw new Error(`${env.name}: the episode is not done after the ${opts.actions.length} scripted action(s); give more, or use startEpisode to stop early`);
        }
        action = opts.actions[turn - 1]!;
      } else {
        const messages = handle.episode.messages;
        action = await opts.player!({ turn, messages: structuredClone(messages), reply: messages.at(-1)?.content ?? "", observation });
      }
      observation = (await handle.step(asAction(env, action, opts.actions ? `actions[${turn - 1}]` : `the player's turn ${turn}`))).observation;
    }
    if (opts.actions && turn < opts.actions.length) {
      throw new Error(`${env.name}: the episode ended after ${turn} of the ${opts.actions.length} scripted actions`);
    }
    const played = handle.played();
    const failed = Object.entries(played.rewardErrors);
    if (failed.length > 0 && !opts.allowRewardErrors) {
      throw new Error(`${env.name}: reward function(s) failed: ${failed.map(([k, v]) => `${k}: ${v}`).join("; ")}`, { cause: handle.failures[0]?.error });
    }
    return played;
  } finally {
    await handle.close();
  }
}

export interface ScoreOptions {
  completion: string | Message[];
  prompt?: string | Message[];
  answer?: string;
  info?: Record<string, unknown>;
  args?: Record<string, unknown>;
  sandbox?: Sandbox;
  /** The judge judged rewards ask (a fake in unit tests; see JudgeService). */
  judge?: JudgeService;
}

/** Score a completion statelessly, exactly as `POST /score` does (the environment's state is `{}` there). */
export async function scoreCompletion(env: Environment, item: ScoreOptions): Promise<RubricScore> {
  const { sandbox, judge, ...rest } = item;
  const own = sandbox === undefined ? createSandbox("quickjs") : undefined;
  try {
    const [[score]] = (await scoreGroups(env, { groups: [[rest as ScoreItem]], grouped: false }, { sandbox: sandbox ?? own, judge })) as [[RubricScore]];
    return score;
  } finally {
    await own?.dispose();
  }
}
