/**
 * The environment author's API. An environment is a module that default-exports
 * `defineEnvironment({...})`: metadata, an args schema with defaults, where examples come from
 * (a dataset or a seeded generator), the prompt, the rules of interaction and a rubric.
 */
import { z } from "zod";
import type { EnvMessage, JsonObject, Message } from "./messages.ts";
import type { PyRandom } from "../pycompat/random.ts";
import { JUDGE_METRICS, type RubricEntry } from "./rubric.ts";
import type { AuthorServices } from "./services.ts";
import type { Tool } from "./define-tool.ts";
import { toolMetrics } from "./tool-metrics.ts";

/** One task. `prompt` is the user message (a string) or whole messages; the system prompt is added. */
export interface Example<Info = JsonObject> {
  prompt: string | Message[];
  answer?: string;
  info?: Info;
  /** A stable id for reporting (defaults to the index). */
  id?: string | number;
}

export interface ExampleSource<Args> {
  args: Args;
  split: string;
}

export interface GenerateContext<Args> extends ExampleSource<Args> {
  /** CPython-compatible generator seeded with the episode seed: all randomness goes through it. */
  rng: PyRandom;
  /** The episode seed `rng` was seeded with (a generator elsewhere, a Python environment's `random.Random(seed)`, starts from it). */
  seed: number;
  /** The requested example index, if the client asked for one. */
  index: number | undefined;
}

export interface TurnContext<Info = JsonObject, Args = unknown> extends AuthorServices {
  /** The whole conversation so far, prompt included, ending with the model's latest turn. */
  messages: Message[];
  /** The model's latest turn's text ("" if it only called tools). */
  lastText: string;
  /** Number of model turns taken, including the latest. */
  turn: number;
  answer: string;
  info: Info;
  /** Per-episode state: plain JSON, mutate it freely; it is saved after every step. */
  state: JsonObject;
  args: Args;
}

export interface EnvReply {
  /** Messages the environment appends (user messages for games, tool results for tools). */
  messages?: EnvMessage[] | string;
  /** The environment ends the episode (a game won or lost, the last scripted turn answered). */
  done?: boolean;
}

export interface EnvironmentSpec<ArgsSchema extends z.ZodType, Info = JsonObject> {
  name: string;
  description: string;
  version: string;
  author?: string;
  documentationUrl?: string;
  /** zod schema of the environment's arguments; every field should have a default. */
  args?: ArgsSchema;
  /** Dataset splits served (default ["train"]). */
  splits?: readonly string[];
  /** A finite dataset; called once per (args, split) and cached. */
  dataset?: (source: ExampleSource<z.output<ArgsSchema>>) => readonly Example<Info>[];
  /** Or an infinite seeded generator: the same rng state yields the same example. */
  generate?: (ctx: GenerateContext<z.output<ArgsSchema>>) => Example<Info>;
  systemPrompt?: string | ((args: z.output<ArgsSchema>) => string | undefined);
  /**
   * Model turns after which the episode is truncated. Single-turn environments use 1. A function
   * of the (parsed) args when the length of a game depends on them.
   */
  maxTurns: number | ((args: z.output<ArgsSchema>) => number);
  /**
   * Multi-turn rules: called after every model turn. Without it the episode ends after the
   * first turn (single-turn).
   */
  respond?: (ctx: TurnContext<Info, z.output<ArgsSchema>>) => EnvReply | Promise<EnvReply>;
  /**
   * Tools the model may call. An action with tool calls is answered by the tools; an answer
   * without tool calls goes to `respond` (or ends the episode when there is none).
   * `num_turns`, `num_tool_calls` and `num_tool_errors` are reported for every tool environment.
   */
  tools?: readonly Tool[];
  /** Initial per-episode state, derived from the example. */
  initialState?: (example: Example<Info>, args: z.output<ArgsSchema>) => JsonObject;
  rubric: readonly RubricEntry<Info, z.output<ArgsSchema>>[];
}

/** An environment as the runtime sees it: the spec with defaults resolved, types erased. */
export interface Environment {
  readonly name: string;
  readonly description: string;
  readonly version: string;
  readonly author: string | undefined;
  readonly documentationUrl: string | undefined;
  readonly argsSchema: z.ZodType;
  readonly splits: readonly string[];
  /** The spec's maxTurns when it is a number; null when it depends on the args (see maxTurnsFor). */
  readonly maxTurns: number | null;
  readonly spec: EnvironmentSpec<z.ZodType, any>;
  readonly tools: readonly Tool[];
  /** The spec's rubric plus, for tool environments, the tool-use metrics. */
  readonly rubric: readonly RubricEntry<any, any>[];
  /** Validate and default client args (throws a ZodError on bad input). */
  parseArgs(raw: unknown): unknown;
  /** The dataset for these args and split, or undefined for a generated environment. */
  datasetFor(args: unknown, split: string): readonly Example<any>[] | undefined;
  systemPromptFor(args: unknown): string | undefined;
  /** The turn limit for these (parsed) args; throws when the spec's function gives no positive integer. */
  maxTurnsFor(args: unknown): number;
}

/**
 * The turn limit shown for an environment (`GET /envs`' `max_turns`, the playground): the limit of
 * an episode reset with the default args, whether `maxTurns` is a number or a function of the args;
 * null only when the args have no defaults to compute it from.
 */
export function defaultMaxTurns(env: Environment): number | null {
  if (env.maxTurns !== null) return env.maxTurns;
  try {
    return env.maxTurnsFor(env.parseArgs({}));
  } catch {
    return null;
  }
}

/**
 * Mistakes of a dataset environment that only show when it is used, found before any client comes:
 * a split whose dataset gives no examples (or throws) with the default args. Generated
 * environments, and args without defaults, are not checked. Returns the problems, in the author's terms.
 */
export function datasetProblems(env: Environment): string[] {
  if (!env.spec.dataset) return [];
  let args: unknown;
  try {
    args = env.parseArgs({});
  } catch {
    return [];
  }
  const problems: string[] = [];
  for (const split of env.splits) {
    try {
      const rows = env.datasetFor(args, split);
      if (!Array.isArray(rows)) problems.push(`${env.name}: dataset({ split: "${split}" }) must return an array of examples, not ${rows === null ? "null" : typeof rows}`);
      else if (rows.length === 0) problems.push(`${env.name}: dataset({ split: "${split}" }) gives no examples with the default args`);
    } catch (err) {
      problems.push(`${env.name}: dataset({ split: "${split}" }) threw: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return problems;
}

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** Datasets kept per environment, keyed by (split, args). */
const DATASET_CACHE_SIZE = 16;

export function defineEnvironment<ArgsSchema extends z.ZodType = z.ZodObject<{}>, Info = JsonObject>(
  spec: EnvironmentSpec<ArgsSchema, Info>,
): Environment {
  if (!NAME.test(spec.name)) throw new Error(`environment name ${JSON.stringify(spec.name)} must be lower-case kebab-case`);
  if (!spec.dataset === !spec.generate) throw new Error(`${spec.name}: give exactly one of dataset or generate`);
  const validTurns = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1;
  if (typeof spec.maxTurns !== "function" && !validTurns(spec.maxTurns)) {
    throw new Error(`${spec.name}: maxTurns must be a positive integer or a function of the args`);
  }
  // A missing rubric would otherwise surface at the first reward as "spec.rubric is not iterable".
  if (!Array.isArray(spec.rubric) || spec.rubric.length === 0) {
    throw new Error(`${spec.name}: give a rubric: rubric: [{ name: "correct", weight: 1, fn: ({ completion, answer }) => ... }] (at least one reward function)`);
  }
  for (const [i, r] of spec.rubric.entries()) {
    if (typeof r?.name !== "string" || (typeof r.fn !== "function" && typeof (r as { group?: unknown }).group !== "function")) {
      throw new Error(`${spec.name}: rubric[${i}] needs a name (string) and fn (a function; group for a group reward)`);
    }
  }
  const tools = spec.tools ?? [];
  if (new Set(tools.map((t) => t.name)).size !== tools.length) throw new Error(`${spec.name}: duplicate tool names`);
  const rubric = tools.length > 0 ? [...spec.rubric, ...toolMetrics.filter((m) => !spec.rubric.some((r) => r.name === m.name))] : spec.rubric;
  const names = new Set<string>();
  for (const r of spec.rubric) {
    if (names.has(r.name)) throw new Error(`${spec.name}: duplicate reward function ${r.name}`);
    if ((JUDGE_METRICS as readonly string[]).includes(r.name)) throw new Error(`${spec.name}: ${r.name} is the name of a judge metric; choose another`);
    if ((typeof r.fn === "function") === (typeof r.group === "function")) throw new Error(`${spec.name}: reward ${r.name} needs exactly one of fn or group`);
    names.add(r.name);
  }
  const argsSchema: z.ZodType = spec.args ?? z.object({}).strict();
  const cache = new Map<string, readonly Example<any>[]>();
  return {
    name: spec.name,
    description: spec.description,
    version: spec.version,
    author: spec.author,
    documentationUrl: spec.documentationUrl,
    argsSchema,
    splits: spec.splits ?? ["train"],
    maxTurns: typeof spec.maxTurns === "function" ? null : spec.maxTurns,
    spec: spec as unknown as EnvironmentSpec<z.ZodType, any>,
    tools,
    rubric: rubric as readonly RubricEntry<any, any>[],
    parseArgs: (raw) => argsSchema.parse(raw ?? {}),
    datasetFor(args, split) {
      if (!spec.dataset) return undefined;
      const key = `${split}\u0000${JSON.stringify(args)}`;
      let rows = cache.get(key);
      if (rows) {
        cache.delete(key); // re-insert: the Map's order is the LRU order
      } else {
        rows = spec.dataset({ args: args as z.output<ArgsSchema>, split });
        // Args come from clients: keep only the most recently used datasets, not one per args value.
        if (cache.size >= DATASET_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      }
      cache.set(key, rows);
      return rows;
    },
    systemPromptFor(args) {
      const p = spec.systemPrompt;
      return typeof p === "function" ? p(args as z.output<ArgsSchema>) : p;
    },
    maxTurnsFor(args) {
      const m = spec.maxTurns;
      if (typeof m !== "function") return m;
      const n = m(args as z.output<ArgsSchema>);
      if (!validTurns(n)) throw new Error(`maxTurns(args) returned ${String(n)}, not a positive integer`);
      return n;
    },
  };
}
