/**
 * A Python environment as the TypeScript engine sees it: defineEnvironment's result whose hooks call
 * the Python worker (link.ts). Episodes, the rubric's weighting, /score, /examples, MCP, the
 * WebSocket, validate and eval are the engine's own, unchanged; only the environment's functions
 * run in Python. What the worker answers is checked here (zod), as any input from outside.
 */
import { z } from "zod";
import { defineEnvironment, type Environment, type Example } from "../../env/environment.ts";
import type { Tool } from "../../env/define-tool.ts";
import type { EnvMessage, JsonObject, JsonValue, Message } from "../../env/messages.ts";
import type { RewardInput } from "../../env/rubric.ts";
import type { Services } from "../../env/services.ts";
import { MessageSchema } from "../../server/protocol.ts";
import { CALL_SCOPE, CALL_WAITS, callScopeOf, callWaitsOf } from "../call-waits.ts";
import type { PythonLink } from "./link.ts";
import type { PySpec } from "./protocol.ts";

const Info = z.record(z.string(), z.unknown());
const ExampleSchema = z.object({
  prompt: z.union([z.string(), z.array(MessageSchema)]),
  answer: z.string(),
  info: Info,
  id: z.union([z.string(), z.number()]).optional(),
});
const ReplySchema = z.object({
  messages: z.union([z.string(), z.array(MessageSchema), z.null()]),
  done: z.boolean(),
  state: Info,
});

/** What the worker said, checked; a wrong shape is the environment's error (its call fails, saying what). */
function checked<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new Error(`${what} gave ${r.error.issues.map((i) => `${i.path.join(".") || "the value"}: ${i.message}`).join("; ")}`);
  return r.data;
}

/** Values of a function of the args, kept per args (they are functions of the args); the newest few. */
function perArgs<T>(compute: (args: unknown) => T): (args: unknown) => T {
  const cache = new Map<string, T>();
  return (args) => {
    const key = JSON.stringify(args);
    if (cache.has(key)) return cache.get(key)!;
    const value = compute(args);
    if (cache.size >= 64) cache.delete(cache.keys().next().value!);
    cache.set(key, value);
    return value;
  };
}

/** The services a call's `sandbox.run` requests are run on. */
function servicesOf(ctx: Services): Services {
  // With the call's waits (src/node/call-waits.ts): the worker's time does not count against the call's deadline.
  // With its scope: the worker queues it with its client's calls and drops it when its caller leaves.
  return { sandbox: ctx.sandbox, python: ctx.python, judge: ctx.judge, [CALL_WAITS]: callWaitsOf(ctx), [CALL_SCOPE]: callScopeOf(ctx) } as Services;
}

function asExample(raw: unknown, what: string): Example<JsonObject> {
  const e = checked(ExampleSchema, raw, what);
  return { prompt: e.prompt as Message[] | string, answer: e.answer, info: e.info as JsonObject, ...(e.id !== undefined ? { id: e.id } : {}) };
}

function pythonTool(link: PythonLink, env: string, t: PySpec["tools"][number]): Tool {
  const parameters = z.fromJSONSchema(t.parameters as Parameters<typeof z.fromJSONSchema>[0]);
  return {
    name: t.name,
    description: t.description,
    parameters,
    timeoutMs: t.timeout_ms,
    run: (args, ctx) => link.call(env, "tool", { name: t.name, arguments: args }, servicesOf(ctx), ctx.signal) as Promise<JsonValue>,
    openai: { type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } },
    mcp: { name: t.name, description: t.description, inputSchema: t.parameters },
  };
}

export function pythonEnvironment(link: PythonLink, spec: PySpec): Environment {
  const env = spec.name;
  const args = z.fromJSONSchema(spec.args_schema as Parameters<typeof z.fromJSONSchema>[0]);
  const sp = spec.system_prompt;
  const mt = spec.max_turns;
  return defineEnvironment<z.ZodType>({
    name: spec.name,
    description: spec.description,
    version: spec.version,
    ...(spec.author ? { author: spec.author } : {}),
    ...(spec.documentation_url ? { documentationUrl: spec.documentation_url } : {}),
    args,
    splits: spec.splits,
    ...(spec.source === "dataset"
      ? {
          dataset: ({ args, split }) => {
            const rows = link.callSync(env, "dataset", { args, split });
            if (!Array.isArray(rows)) throw new Error(`dataset(args, ${JSON.stringify(split)}) did not give a list`);
            return rows.map((r, i) => asExample(r, `dataset(args, ${JSON.stringify(split)})[${i}]`));
          },
        }
      : { generate: ({ seed, index, args, split }) => asExample(link.callSync(env, "generate", { seed, index: index ?? null, args, split }), "generate(ctx)") }),
    systemPrompt: "static" in sp ? (sp.static ?? undefined) : perArgs((a) => checked(z.string().nullable(), link.callSync(env, "system_prompt", { args: a }), "system_prompt(args)") ?? undefined),
    maxTurns: "static" in mt ? mt.static : perArgs((a) => checked(z.number().int().min(1), link.callSync(env, "max_turns", { args: a }), "max_turns(args)")),
    ...(spec.multi_turn
      ? {
          respond: async (ctx) => {
            const raw = await link.call(
              env,
              "respond",
              { messages: ctx.messages, last_text: ctx.lastText, turn: ctx.turn, answer: ctx.answer, info: ctx.info, state: ctx.state, args: ctx.args },
              servicesOf(ctx),
            );
            const r = checked(ReplySchema, raw, "respond(turn)");
            // The engine keeps the state object it handed over: the worker's copy replaces its contents.
            for (const k of Object.keys(ctx.state)) delete ctx.state[k];
            Object.assign(ctx.state, r.state);
            return { messages: (r.messages ?? undefined) as EnvMessage[] | string | undefined, done: r.done };
          },
        }
      : {}),
    tools: spec.tools.map((t) => pythonTool(link, env, t)),
    rubric: spec.rubric.map((r) => ({
      name: r.name,
      weight: r.weight,
      fn: async (input: RewardInput) =>
        checked(
          z.number(),
          await link.call(env, "reward", { name: r.name, prompt: input.prompt, completion: input.completion, answer: input.answer, info: input.info, state: input.state, args: input.args }, servicesOf(input)),
          `reward ${r.name}`,
        ),
    })),
  });
}
