/**
 * Tools the model can call. One definition (a zod schema and a run function) yields both the
 * OpenAI tool schema the model sees and the MCP tool listing, so they cannot disagree.
 */
import { z } from "zod";
import type { JsonValue } from "./messages.ts";
import type { AuthorServices } from "./services.ts";

export interface ToolContext extends AuthorServices {
  /** Aborted when the tool's time is up; long-running tools should pass it on. */
  signal: AbortSignal;
}

export interface ToolSpec<P extends z.ZodType> {
  name: string;
  description: string;
  parameters: P;
  /** The result becomes the tool message: strings as they are, anything else as JSON. */
  run: (args: z.output<P>, ctx: ToolContext) => JsonValue | Promise<JsonValue>;
  /** Wall-clock limit for one call (default 10 s). */
  timeoutMs?: number;
}

export interface OpenAITool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface McpTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface Tool {
  readonly name: string;
  readonly description: string;
  readonly parameters: z.ZodType;
  readonly timeoutMs: number;
  run(args: unknown, ctx: ToolContext): JsonValue | Promise<JsonValue>;
  readonly openai: OpenAITool;
  readonly mcp: McpTool;
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/; // OpenAI's rule for function names

export function defineTool<P extends z.ZodType>(spec: ToolSpec<P>): Tool {
  if (!NAME.test(spec.name)) throw new Error(`tool name ${JSON.stringify(spec.name)} must match ${NAME}`);
  const schema = z.toJSONSchema(spec.parameters, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  delete schema.$schema;
  return {
    name: spec.name,
    description: spec.description,
    parameters: spec.parameters,
    timeoutMs: spec.timeoutMs ?? 10_000,
    run: (args, ctx) => spec.run(args as z.output<P>, ctx),
    openai: { type: "function", function: { name: spec.name, description: spec.description, parameters: schema } },
    mcp: { name: spec.name, description: spec.description, inputSchema: schema },
  };
}
