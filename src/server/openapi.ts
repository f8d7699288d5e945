/**
 * `/schema` and `/openapi.json`, generated from the zod schemas of protocol.ts. OpenEnv's
 * validator reads `info.version` (1.x → profile openenv-http/1.x) and looks for /reset, /step
 * and /state among the paths.
 */
import { z } from "zod";
import type { Environment } from "../env/environment.ts";
import {
  ActionSchema,
  CloseRequestSchema,
  ExamplesRequestSchema,
  HttpResetRequestSchema,
  ObservationSchema,
  ScoreRequestSchema,
  StateSchema,
  StepRequestSchema,
  StepResponseSchema,
} from "./protocol.ts";

const jsonSchema = (s: z.ZodType) => z.toJSONSchema(s, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;

// The protocol schemas are the same for every environment: compute them once.
let shared: Record<string, Record<string, unknown>> | undefined;
function sharedSchemas() {
  shared ??= {
    action: jsonSchema(ActionSchema),
    observation: jsonSchema(ObservationSchema),
    state: jsonSchema(StateSchema),
    reset: jsonSchema(HttpResetRequestSchema),
    step: jsonSchema(StepRequestSchema),
    stepResponse: jsonSchema(StepResponseSchema),
    close: jsonSchema(CloseRequestSchema),
    score: jsonSchema(ScoreRequestSchema),
    examples: jsonSchema(ExamplesRequestSchema),
  };
  return shared;
}

const argsSchemas = new WeakMap<Environment, Record<string, unknown>>();

export function environmentSchemas(env: Environment) {
  const s = sharedSchemas();
  let args = argsSchemas.get(env);
  if (!args) argsSchemas.set(env, (args = jsonSchema(env.argsSchema)));
  return { action: s.action, observation: s.observation, state: s.state, args };
}

const errorResponse = { description: "error", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };

function post(summary: string, request: Record<string, unknown>, response: Record<string, unknown>) {
  return {
    post: {
      summary,
      requestBody: { required: true, content: { "application/json": { schema: request } } },
      responses: { "200": { description: "ok", content: { "application/json": { schema: response } } }, "4XX": errorResponse },
    },
  };
}

function get(summary: string, response: Record<string, unknown>, parameters?: unknown[]) {
  return {
    get: {
      summary,
      ...(parameters ? { parameters } : {}),
      responses: { "200": { description: "ok", content: { "application/json": { schema: response } } }, "4XX": errorResponse },
    },
  };
}

const EXAMPLES_RESPONSE = {
  type: "object",
  properties: {
    examples: {
      type: "array",
      items: {
        type: "object",
        properties: {
          prompt: { type: "array", items: { type: "object" } },
          example: { type: "string", description: "reference for /score items and /reset" },
          split: { type: "string" },
          index: { type: ["integer", "null"] },
          seed: { type: ["integer", "null"] },
          example_id: {},
        },
        required: ["prompt", "example", "split"],
      },
    },
    total: { type: ["integer", "null"], description: "dataset size; null for generated environments" },
    rubric: { type: "array", items: { type: "object", properties: { name: { type: "string" }, weight: { type: "number" }, group: { type: "boolean" } } } },
    tools: { type: "array", items: { type: "object" } },
  },
  required: ["examples", "total", "rubric"],
};

export function openApiDocument(env: Environment) {
  const s = sharedSchemas();
  const any = { type: "object" };
  return {
    openapi: "3.1.0",
    info: { title: `envworker: ${env.name}`, version: "1.0.0", description: env.description },
    paths: {
      "/health": get("health", { type: "object", properties: { status: { type: "string" } } }),
      "/metadata": get("environment metadata", any),
      "/schema": get("action, observation and state JSON Schemas", any),
      "/reset": post("start an episode", s.reset!, s.stepResponse!),
      "/step": post("apply the model's turn to an episode", s.step!, s.stepResponse!),
      "/state": get("episode state", s.state!, [{ name: "episode_id", in: "query", required: true, schema: { type: "string" } }]),
      "/close": post("end and free an episode", s.close!, any),
      "/score": post("stateless batch scoring", s.score!, any),
      "/examples": post("list examples (prompts and example references, never answers) without opening episodes", s.examples!, EXAMPLES_RESPONSE),
      "/mcp": post("JSON-RPC 2.0: tools/list, tools/call", any, any),
    },
    components: {
      schemas: {
        Error: {
          type: "object",
          properties: {
            error: {
              type: "object",
              properties: { code: { type: "string" }, message: { type: "string" }, details: {} },
              required: ["code", "message"],
            },
          },
        },
      },
    },
  };
}
