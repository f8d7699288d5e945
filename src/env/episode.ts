/**
 * The episode engine: pure functions from (environment, plain-JSON state, input) to a new state
 * and what the trainer sees. No I/O and no platform code, so the Node store and a Durable Object
 * run exactly the same logic and an episode can continue on another machine.
 */
import type { Environment, Example } from "./environment.ts";
import { ApiError } from "./errors.ts";
import type { Action, AssistantMessage, EnvMessage, JsonObject, Message } from "./messages.ts";
import { PyRandom } from "../pycompat/random.ts";
import { randomUint32 } from "./entropy.ts";
import { findNonJson } from "./json-check.ts";
import { environmentSource } from "./source.ts";
import { judgeBudgetError, scoreRubric, type RubricScore } from "./rubric.ts";
import { JudgeError } from "./judge.ts";
import { withSandbox, type Services } from "./services.ts";
import { runToolCalls } from "./tool-dispatch.ts";
import { SERVICE_ERRORS, watchServices } from "./service-failures.ts";

export interface EpisodeState {
  episode_id: string;
  env: string;
  env_version: string;
  seed: number;
  split: string;
  index: number | null;
  example_id: string | number | null;
  args: unknown;
  /** The whole conversation: prompt, then alternating model turns and environment replies. */
  messages: Message[];
  /** How many of `messages` are the prompt. */
  prompt_length: number;
  answer: string;
  info: JsonObject;
  /** The environment's own state (see TurnContext.state). */
  state: JsonObject;
  /** Model turns taken. */
  turn: number;
  /** Turns after which the episode is truncated: the environment's maxTurns, or the server's lower cap. */
  max_turns: number;
  /** The conversation may hold at most this many characters (ENVWORKER_MAX_EPISODE_CHARS). */
  max_chars: number;
  done: boolean;
  truncated: boolean;
  reward: number | null;
  metrics: Record<string, number> | null;
  reward_errors: Record<string, string> | null;
  created_at: number;
  updated_at: number;
}

export interface Observation {
  messages: Message[];
  /** On reset, the OpenAI tool schemas of a tool environment. */
  tools?: unknown[];
  turn: number;
  truncated: boolean;
  metrics?: Record<string, number>;
  info?: JsonObject;
}

export interface StepResult {
  observation: Observation;
  reward: number | null;
  done: boolean;
  episode_id: string;
}

/**
 * A failure of the environment's own code that did not stop the step (a reward function that
 * threw scores 0): returned so the server can log it with its stack.
 */
export interface EnvironmentFailure {
  /** What failed, e.g. "reward correct_answer". */
  where: string;
  error: unknown;
}

/** The environment's code failed: EXECUTION_ERROR naming the environment and what failed, the original error as cause. */
function executionError(env: Environment, what: string, err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  // The client's judge budget ran out (a `respond` that asks the judge): 429, as for rewards.
  if (err instanceof JudgeError && err.code === "JUDGE_BUDGET") return judgeBudgetError(err);
  const message = err instanceof Error ? err.message : String(err);
  return new ApiError("EXECUTION_ERROR", `${env.name}: ${what} failed: ${message}`, undefined, { cause: err });
}

/** Run the environment's `what`, turning anything it throws into EXECUTION_ERROR. */
function envCode<T>(env: Environment, what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw executionError(env, what, err);
  }
}

/** The environment's state after `what` must be plain JSON (see json-check.ts). */
function checkState(env: Environment, state: unknown, what: string): void {
  // The author's function, named where it is: the error is found here, after it returned, so no
  // stack would lead there.
  const source = environmentSource(env);
  const where = source ? ` (${source.startsWith("file:") ? decodeURIComponent(new URL(source).pathname) : source})` : "";
  if (typeof state !== "object" || state === null || Array.isArray(state)) {
    throw new ApiError("EXECUTION_ERROR", `${env.name}: ${what}${where} must leave state a plain object, not ${Array.isArray(state) ? "an array" : String(state)}`);
  }
  const bad = findNonJson(state, "state");
  if (bad) throw new ApiError("EXECUTION_ERROR", `${env.name}: after its ${what}${where}, ${bad} (episode state must be plain JSON: numbers, strings, booleans, null, arrays and plain objects)`);
}

/** Default cap on an episode's conversation, in characters of message content. */
export const DEFAULT_MAX_EPISODE_CHARS = 1_000_000;

/**
 * Characters an episode's conversation holds: every string a message stores (content, a model
 * turn's reasoning_content, each tool call's id, type, name and arguments, a tool reply's
 * tool_call_id), so no field of a turn is a way around the cap. (Roles are fixed words, not counted.)
 */
export function conversationChars(messages: readonly Message[]): number {
  let n = 0;
  for (const m of messages) {
    n += m.content?.length ?? 0;
    if (m.role === "assistant") {
      n += m.reasoning_content?.length ?? 0;
      for (const c of m.tool_calls ?? []) n += c.id.length + c.type.length + c.function.name.length + c.function.arguments.length;
    } else if (m.role === "tool") {
      n += m.tool_call_id.length;
    }
  }
  return n;
}

function checkSize(messages: readonly Message[], max: number, what: string): void {
  if (conversationChars(messages) > max) {
    throw new ApiError("PAYLOAD_TOO_LARGE", `${what} would hold more than ${max} characters; start a new episode`);
  }
}

export interface ResetOptions {
  /** The server's cap on an episode's conversation size (characters). */
  maxChars?: number | undefined;
  /** The server's cap on steps per episode (ENVWORKER_MAX_STEPS); the environment's maxTurns when lower. */
  maxSteps?: number | undefined;
  seed?: number | undefined;
  index?: number | undefined;
  split?: string | undefined;
  args?: unknown;
}

/** Seeds chosen by the server when the client gives none: 32 random bits, reported back. */
const randomSeed = randomUint32;

function toMessages(prompt: string | Message[], system: string | undefined): Message[] {
  const body: Message[] = typeof prompt === "string" ? [{ role: "user", content: prompt }] : structuredClone(prompt);
  if (system !== undefined && body[0]?.role !== "system") body.unshift({ role: "system", content: system });
  return body;
}

function pickExample(env: Environment, args: unknown, split: string, seed: number, index: number | undefined) {
  if (!env.splits.includes(split)) {
    throw new ApiError("VALIDATION_ERROR", `unknown split ${JSON.stringify(split)}; this environment has ${env.splits.join(", ")}`);
  }
  const rng = new PyRandom(seed);
  const rows = envCode(env, "dataset", () => env.datasetFor(args, split));
  if (rows) {
    if (rows.length === 0) {
      // With the default args an empty dataset is the environment's own mistake; with the client's
      // args, the args filtered it down to nothing: the client's input, so a 400.
      let defaults = false;
      try {
        defaults = JSON.stringify(env.parseArgs({})) === JSON.stringify(args);
      } catch {
        // args without defaults: the client chose them
      }
      if (defaults) throw new ApiError("EXECUTION_ERROR", `${env.name}: its dataset gives no ${split} examples with the default args (the environment's dataset(), not this request)`);
      throw new ApiError("VALIDATION_ERROR", `no ${split} examples of ${env.name} match these args`);
    }
    if (index !== undefined && index >= rows.length) {
      throw new ApiError("VALIDATION_ERROR", `index ${index} is out of range: the ${split} split has ${rows.length} examples`);
    }
    const i = index ?? rng.randrange(rows.length);
    return { example: rows[i]!, index: i };
  }
  let example: Example<JsonObject>;
  try {
    example = env.spec.generate!({ rng, seed, args, split, index }) as Example<JsonObject>;
  } catch (err) {
    // A failure of the code that runs the generator (a Python worker's deadline), not of the args.
    if (err instanceof ApiError) throw err;
    // Arguments the schema accepts can still ask for the impossible (a target range no numbers
    // reach): report it against the args rather than as a server fault.
    throw new ApiError("VALIDATION_ERROR", `${env.name} cannot generate an example with these args: ${err instanceof Error ? err.message : String(err)}`, undefined, {
      cause: err,
    });
  }
  return { example, index: index ?? null };
}

/** Start an episode: choose (or generate) the example and build the prompt. */
export function resetEpisode(env: Environment, id: string, opts: ResetOptions): { state: EpisodeState; result: StepResult } {
  let args: unknown;
  try {
    args = env.parseArgs(opts.args);
  } catch (err) {
    throw new ApiError("VALIDATION_ERROR", `invalid args for ${env.name}`, zodIssues(err));
  }
  const seed = opts.seed ?? randomSeed();
  const split = opts.split ?? env.splits[0]!;
  const { example, index } = pickExample(env, args, split, seed, opts.index);
  const messages = toMessages(example.prompt, envCode(env, "systemPrompt", () => env.systemPromptFor(args)));
  const maxChars = opts.maxChars ?? DEFAULT_MAX_EPISODE_CHARS;
  checkSize(messages, maxChars, "the prompt");
  const info = envCode(env, "the example's info", () => structuredClone((example.info ?? {}) as JsonObject));
  const envState = env.spec.initialState ? envCode(env, "initialState", () => env.spec.initialState!(example, args)) : {};
  checkState(env, envState, "initialState");
  const maxTurns = envCode(env, "maxTurns", () => env.maxTurnsFor(args));
  const now = Date.now();
  const state: EpisodeState = {
    episode_id: id,
    env: env.name,
    env_version: env.version,
    seed,
    split,
    index,
    example_id: example.id ?? index,
    args,
    messages,
    prompt_length: messages.length,
    answer: example.answer ?? "",
    info,
    state: envState,
    turn: 0,
    max_turns: Math.min(maxTurns, opts.maxSteps ?? Infinity),
    max_chars: maxChars,
    done: false,
    truncated: false,
    reward: null,
    metrics: null,
    reward_errors: null,
    created_at: now,
    updated_at: now,
  };
  const observation: Observation = {
    messages: structuredClone(messages),
    ...(env.tools.length > 0 ? { tools: env.tools.map((t) => t.openai) } : {}),
    turn: 0,
    truncated: false,
    info: { seed, split, index, example_id: state.example_id },
  };
  return { state, result: { observation, reward: null, done: false, episode_id: id } };
}

function normalizeReply(messages: EnvMessage[] | string | undefined): EnvMessage[] {
  if (messages === undefined) return [];
  return typeof messages === "string" ? [{ role: "user", content: messages }] : messages;
}

/**
 * Apply the model's turn. The input state is not modified: on any failure the caller keeps the
 * old state, so a throwing environment never loses or corrupts an episode.
 */
export async function stepEpisode(
  env: Environment,
  previous: EpisodeState,
  action: Action,
  services: Services = {},
): Promise<{ state: EpisodeState; result: StepResult; failures: EnvironmentFailure[] }> {
  if (previous.done) {
    throw new ApiError("EPISODE_DONE", `episode ${previous.episode_id} is finished; reset to start a new one`);
  }
  const s = structuredClone(previous);
  // Failures of the sandboxes and judge while this step runs: reported with it (service-failures.ts).
  const watched = watchServices(services);
  services = watched.services;
  const turnMessage: AssistantMessage = { role: "assistant", content: action.content ?? null };
  if (action.tool_calls && action.tool_calls.length > 0) turnMessage.tool_calls = action.tool_calls;
  if (action.reasoning_content !== undefined) turnMessage.reasoning_content = action.reasoning_content;
  s.messages.push(turnMessage);
  s.turn += 1;
  // Memory per episode is bounded: a turn that would overflow it is refused, the episode kept.
  checkSize(s.messages, s.max_chars, "this episode");

  let reply: EnvMessage[] = [];
  let envDone = env.spec.respond === undefined; // single-turn: one answer ends it
  if (env.tools.length > 0 && turnMessage.tool_calls) {
    // A tool turn: the tools answer and the model goes on.
    reply = await runToolCalls(env.tools, turnMessage.tool_calls, services);
    envDone = false;
  } else if (env.spec.respond) {
    try {
      const r = await env.spec.respond({
        messages: s.messages,
        lastText: turnMessage.content ?? "",
        turn: s.turn,
        answer: s.answer,
        info: s.info,
        state: s.state,
        args: s.args,
        ...withSandbox(services),
      });
      reply = normalizeReply(r.messages);
      envDone = r.done === true;
    } catch (err) {
      throw executionError(env, "respond", err);
    }
    checkState(env, s.state, "respond");
  }
  s.messages.push(...reply);
  checkSize(s.messages, s.max_chars, "this episode");
  const truncated = !envDone && s.turn >= s.max_turns;
  s.done = envDone || truncated;
  s.truncated = truncated;
  s.updated_at = Date.now();

  const observation: Observation = { messages: envCode(env, "respond's reply", () => structuredClone(reply)), turn: s.turn, truncated };
  const failures: EnvironmentFailure[] = [];
  if (s.done) {
    const score = await scoreEpisode(env, s, services, (name, error) => failures.push({ where: `reward ${name}`, error }));
    s.reward = score.reward;
    s.metrics = score.metrics;
    s.reward_errors = score.errors ?? null;
    observation.metrics = score.metrics;
    // Judged functions leave the judge's answers (score.info.judge): the trainer sees why.
    if (score.errors || score.info) observation.info = { ...score.info, ...(score.errors ? { reward_errors: score.errors } : {}) };
  }
  if (watched.failures.length > 0) observation.info = { ...observation.info, [SERVICE_ERRORS]: [...watched.failures] };
  return { state: s, result: { observation, reward: s.reward, done: s.done, episode_id: s.episode_id }, failures };
}

export function scoreEpisode(
  env: Environment,
  s: EpisodeState,
  services: Services = {},
  onError?: (name: string, error: unknown) => void,
): Promise<RubricScore> {
  return scoreRubric(env.rubric, {
    prompt: s.messages.slice(0, s.prompt_length),
    completion: s.messages.slice(s.prompt_length),
    answer: s.answer,
    info: s.info,
    state: s.state,
    args: s.args,
    ...withSandbox(services),
  }, onError);
}

/** The OpenEnv State view of an episode (`episode_id`, `step_count`, plus ours). */
export function publicState(s: EpisodeState): JsonObject {
  return {
    episode_id: s.episode_id,
    step_count: s.turn,
    max_turns: s.max_turns,
    env: s.env,
    seed: s.seed,
    split: s.split,
    index: s.index,
    example_id: s.example_id,
    done: s.done,
    truncated: s.truncated,
    reward: s.reward,
    metrics: s.metrics,
    messages: s.messages as unknown as JsonObject[],
    // Once the episode is over the answer is no secret: a client can then score the completion
    // statelessly (POST /score) as the episode did, which is what `envworker validate` checks.
    ...(s.done ? { answer: s.answer, info: s.info } : {}),
  } as JsonObject;
}

export function zodIssues(err: unknown): unknown {
  if (err && typeof err === "object" && "issues" in err) {
    return (err as { issues: { path: PropertyKey[]; message: string }[] }).issues.map((i) => ({
      path: i.path.map(String).join("."),
      message: i.message,
    }));
  }
  return err instanceof Error ? err.message : String(err);
}
