/**
 * The wire: zod schemas for every request body and WebSocket message. They validate input and
 * also produce the JSON Schemas served at `/schema` and `/openapi.json`, so the documentation
 * cannot drift from what the server accepts.
 */
import { z } from "zod";

export const ToolCallSchema = z
  .object({
    id: z.string().max(256),
    type: z.literal("function"),
    function: z.object({ name: z.string().max(256), arguments: z.string() }).strict(),
  })
  .strict();

/** The model's turn: an OpenAI assistant message without the role. Unknown fields are rejected. */
export const ActionSchema = z
  .object({
    content: z.string().nullable(),
    tool_calls: z.array(ToolCallSchema).max(128).optional(),
    reasoning_content: z.string().optional(),
    /** OpenEnv's base Action carries a metadata dict; accepted and ignored. */
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

/** A message of a conversation (also what a Python environment's worker may put in prompts and replies, src/node/python-envs/). */
export const MessageSchema = z.union([
  z.object({ role: z.literal("system"), content: z.string() }).strict(),
  z.object({ role: z.literal("user"), content: z.string() }).strict(),
  z
    .object({
      role: z.literal("assistant"),
      content: z.string().nullable(),
      tool_calls: z.array(ToolCallSchema).optional(),
      reasoning_content: z.string().optional(),
    })
    .strict(),
  z.object({ role: z.literal("tool"), content: z.string(), tool_call_id: z.string() }).strict(),
]);

const Seed = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** Examples one `POST B/examples` may list (the response carries each prompt). */
export const MAX_EXAMPLES = 1000;
/** Longest example reference accepted: args travel inside it, so it is bounded like any input. */
export const MAX_REFERENCE_CHARS = 8192;

/** An example reference from `POST B/examples` (opaque to clients; see examples.ts). */
export const ExampleReferenceSchema = z.string().min(1).max(MAX_REFERENCE_CHARS);

export const ExamplesRequestSchema = z
  .object({
    split: z.string().max(64).optional(),
    start: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    count: z.number().int().min(0).max(MAX_EXAMPLES).optional(),
    seeds: z.array(Seed).min(1).max(MAX_EXAMPLES).optional(),
    args: z.record(z.string(), z.unknown()).optional(),
  })
  .strict()
  .refine((r) => r.seeds === undefined || (r.start === undefined && r.count === undefined), {
    message: "give either seeds or start/count, not both",
  });
const EpisodeId = z.string().min(1).max(255);

/**
 * A reset refuses keys it does not know (`{"sede": 7}` would otherwise be a random seed without a
 * word). OpenEnv's server passes extra reset keys to the environment's `reset(**kwargs)`, filtered
 * against its signature; here that signature is these fields, and an environment's own arguments
 * go in `args` (strict too). Step bodies keep OpenEnv's `extra="allow"`: their action is strict.
 */
const ResetFields = z
  .object({
    seed: Seed.nullish(),
    episode_id: EpisodeId.nullish(),
    index: z.number().int().min(0).nullish(),
    split: z.string().max(64).nullish(),
    args: z.record(z.string(), z.unknown()).nullish(),
  })
  .strict();

/**
 * The message of a reset that failed validation: unknown top-level keys are named, with the keys a
 * reset takes, since a typo there is the likely mistake; anything else keeps `fallback`.
 */
export function resetErrorMessage(err: z.ZodError, fallback: string, http: boolean): string {
  const unknown = err.issues.flatMap((i) => (i.code === "unrecognized_keys" && i.path.length === 0 ? i.keys : []));
  if (unknown.length === 0) return fallback;
  const known = ["seed", "episode_id", "index", "split", "args", ...(http ? ["example"] : [])];
  const names = unknown.map((k) => JSON.stringify(k)).join(", ");
  return `unknown reset key${unknown.length > 1 ? "s" : ""} ${names}: a reset takes ${known.join(", ")} (the environment's own arguments go in "args")`;
}

// JSON null means "not given": hand the engine plain optional fields.
const plainReset = (r: z.output<typeof ResetFields>) => ({
  seed: r.seed ?? undefined,
  episode_id: r.episode_id ?? undefined,
  index: r.index ?? undefined,
  split: r.split ?? undefined,
  args: r.args ?? undefined,
});

export const ResetRequestSchema = ResetFields.transform(plainReset);

/** `POST B/reset` also takes `example`, a reference from `POST B/examples` (see examples.ts). */
export const HttpResetRequestSchema = ResetFields.extend({ example: ExampleReferenceSchema.nullish() }).transform((r) => ({
  ...plainReset(r),
  example: r.example ?? undefined,
}));

export const StepRequestSchema = z.object({
  episode_id: EpisodeId,
  action: ActionSchema,
  /** OpenEnv StepRequest fields, accepted for compatibility. */
  timeout_s: z.number().positive().nullish(),
  request_id: z.string().max(255).nullish(),
});

export const CloseRequestSchema = z.object({ episode_id: EpisodeId }).strict();

export const ScoreItemSchema = z
  .object({
    completion: z.union([z.string(), z.array(MessageSchema)]),
    answer: z.string().optional(),
    info: z.record(z.string(), z.unknown()).optional(),
    prompt: z.union([z.string(), z.array(MessageSchema)]).optional(),
    args: z.record(z.string(), z.unknown()).optional(),
    /** A reference from `POST B/examples`: graded against the server's own answer and info. */
    example: ExampleReferenceSchema.optional(),
  })
  .strict()
  .refine((item) => item.example === undefined || (item.answer === undefined && item.info === undefined && item.prompt === undefined && item.args === undefined), {
    message: "an item with example takes no answer, info, prompt or args: the server has them",
    path: ["example"],
  });

/** Completions one `POST B/score` may carry, in items or in all its groups together. */
export const MAX_SCORE_ITEMS = 1024;
/** Completions of one group (GRPO's rollouts of one prompt) at most. */
export const MAX_GROUP_SIZE = 256;

/**
 * `items` are scored each alone (`results`, one per item); `groups` are completions of one prompt
 * each, scored together so group reward functions see the whole group (`groups`, in the same shape).
 */
export const ScoreRequestSchema = z
  .object({
    items: z.array(ScoreItemSchema).min(1).max(MAX_SCORE_ITEMS).optional(),
    groups: z.array(z.array(ScoreItemSchema).min(1).max(MAX_GROUP_SIZE)).min(1).max(MAX_SCORE_ITEMS).optional(),
  })
  .strict()
  .refine((r) => (r.items === undefined) !== (r.groups === undefined), { message: "give either items or groups" })
  .refine((r) => (r.groups ?? []).reduce((n, g) => n + g.length, 0) <= MAX_SCORE_ITEMS, {
    message: `groups may hold ${MAX_SCORE_ITEMS} completions in all`,
    path: ["groups"],
  });

/** A score request as the engine takes it: groups (items are groups of one), and which the client sent. */
export interface ScoreBatch {
  groups: readonly (readonly ScoreItem[])[];
  grouped: boolean;
}

export const ObservationSchema = z.object({
  messages: z.array(MessageSchema),
  tools: z.array(z.unknown()).optional(),
  turn: z.number().int(),
  truncated: z.boolean(),
  metrics: z.record(z.string(), z.number()).optional(),
  info: z.record(z.string(), z.unknown()).optional(),
});

export const StateSchema = z
  .object({
    episode_id: z.string().nullable(),
    step_count: z.number().int().min(0),
    done: z.boolean(),
  })
  .loose();

export const StepResponseSchema = z.object({
  observation: ObservationSchema,
  reward: z.number().nullable(),
  done: z.boolean(),
  episode_id: z.string(),
});

/** OpenEnv WebSocket messages (client → server). `extra="forbid"` there, strict here. */
export const WsMessageSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("reset"), data: z.record(z.string(), z.unknown()).optional() }).strict(),
  z.object({ type: z.literal("step"), data: z.unknown() }).strict(),
  z.object({ type: z.literal("state") }).strict(),
  z.object({ type: z.literal("close") }).strict(),
  z.object({ type: z.literal("mcp"), data: z.unknown() }).strict(),
]);

export const WS_TYPES = ["reset", "step", "state", "close", "mcp"] as const;

export type ResetRequest = z.infer<typeof ResetRequestSchema>;
export type StepRequest = z.infer<typeof StepRequestSchema>;
export type ScoreItem = z.infer<typeof ScoreItemSchema>;
export type ScoreRequest = z.infer<typeof ScoreRequestSchema>;
export type ExamplesRequest = z.infer<typeof ExamplesRequestSchema>;
