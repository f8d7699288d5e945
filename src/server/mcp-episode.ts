/**
 * Tools called inside an episode, as OpenEnv's MCP clients call them:
 * - over the WebSocket, `MCPToolClient` sends `{"type": "list_tools"}` and
 *   `{"type": "call_tool", "tool_name", "arguments"}` as step data;
 * - in production mode it posts JSON-RPC to `B/mcp`: `openenv/session/create`, then `tools/list` /
 *   `tools/call` with `session_id`, then `openenv/session/close`.
 * A session is an episode, and a call is the model's turn with one tool call: it goes through the
 * episode's step (counted by the tool metrics, graded like any tool call). A client that can only
 * call tools ends the episode with the `submit` tool: its `content` is sent as a plain reply.
 * TextArena's clients send `{"message": text}`: that is a plain reply too.
 */
import { z } from "zod";
import type { Environment } from "../env/environment.ts";
import type { Action } from "../env/messages.ts";
import type { StepResult } from "../env/episode.ts";
import { zodIssues } from "../env/episode.ts";
import { ApiError, toApiError } from "../env/errors.ts";
import { TOOL_ERROR_PREFIX, toolErrorType, unknownToolMessage, type ToolErrorType } from "../env/tool-dispatch.ts";
import type { EpisodeHost } from "./episode-host.ts";
import { RPC, rpcError, type JsonRpcId, type JsonRpcResponse } from "./mcp.ts";
import { HttpResetRequestSchema } from "./protocol.ts";

/** The tool that sends a plain reply (no tool call): how a tools-only client finishes an episode. */
export const SUBMIT_TOOL = "submit";

const SUBMIT_SCHEMA = {
  type: "object",
  properties: { content: { type: "string", description: "Your reply, e.g. the final answer in the format the task asks for." } },
  required: ["content"],
  additionalProperties: false,
};

/** Whether `submit` is ours here: an environment's own tool of that name wins. */
function offersSubmit(env: Environment): boolean {
  return !env.tools.some((t) => t.name === SUBMIT_TOOL);
}

/** The MCP tool list of an episode: the environment's tools, then `submit`. */
export function episodeTools(env: Environment): unknown[] {
  const tools: unknown[] = env.tools.map((t) => t.mcp);
  if (offersSubmit(env)) {
    tools.push({
      name: SUBMIT_TOOL,
      description:
        "Send your reply as a plain message, without a tool call. In a single-turn or tool environment this is your final answer and ends the episode; in a multi-turn game it is your next move. The result carries the reward once the episode ends.",
      inputSchema: SUBMIT_SCHEMA,
    });
  }
  return tools;
}

const SubmitArgs = z.object({ content: z.string() }).strict();

/** The model's turn that calls `name` with `args` (or, for `submit`, replies in plain text). */
export function toolCallAction(env: Environment, name: string, args: Record<string, unknown>): Action {
  if (name === SUBMIT_TOOL && offersSubmit(env)) {
    const parsed = SubmitArgs.safeParse(args);
    if (!parsed.success) throw new ApiError("VALIDATION_ERROR", `${SUBMIT_TOOL} takes {"content": string}`, zodIssues(parsed.error));
    return { content: parsed.data.content };
  }
  return { content: null, tool_calls: [{ id: `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`, type: "function", function: { name, arguments: JSON.stringify(args) } }] };
}

/**
 * An MCP CallToolResult for a call made as a step: the text the model reads (the tool's answer, or
 * the environment's reply to a submit), `isError` as the tool metrics count errors, and in `data`
 * (what OpenEnv's `call_tool` returns) the tool's text, or for `submit` the step's outcome with
 * its reward.
 */
export function mcpResultOfStep(name: string, step: StepResult, submitted: boolean): Record<string, unknown> {
  const text = step.observation.messages.map((m) => m.content ?? "").join("\n");
  if (!submitted) return { content: [{ type: "text", text }], isError: text.startsWith(TOOL_ERROR_PREFIX), data: text };
  const outcome = {
    done: step.done,
    reward: step.reward,
    truncated: step.observation.truncated,
    messages: step.observation.messages,
    ...(step.observation.metrics ? { metrics: step.observation.metrics } : {}),
  };
  const said = step.done ? `${text ? `${text}\n` : ""}Episode finished. Reward: ${step.reward}` : text;
  return { content: [{ type: "text", text: said }], isError: false, data: outcome, structuredContent: outcome };
}

const CallToolMessage = z
  .object({ type: z.literal("call_tool"), tool_name: z.string().min(1).max(256), arguments: z.record(z.string(), z.unknown()).optional() })
  .strict();
const TextMessage = z.object({ message: z.string(), metadata: z.record(z.string(), z.unknown()).optional() }).strict();

/** What an OpenEnv client's step data asks for, beyond our own action. */
export type SpecialStep = { kind: "list_tools" } | { kind: "call_tool"; name: string; args: Record<string, unknown> } | { kind: "text"; action: Action };

/** Recognise MCPToolClient's and TextArena's step data; undefined: an ordinary action. */
export function specialStep(data: unknown): SpecialStep | undefined {
  if (!data || typeof data !== "object" || Array.isArray(data)) return undefined;
  const type = (data as { type?: unknown }).type;
  if (type === "list_tools") {
    if (Object.keys(data).length !== 1) throw new ApiError("VALIDATION_ERROR", 'list_tools takes no fields: send {"type": "list_tools"}');
    return { kind: "list_tools" };
  }
  if (type === "call_tool") {
    const m = CallToolMessage.safeParse(data);
    if (!m.success) throw new ApiError("VALIDATION_ERROR", "invalid call_tool action", zodIssues(m.error));
    return { kind: "call_tool", name: m.data.tool_name, args: m.data.arguments ?? {} };
  }
  if ("message" in data) {
    const m = TextMessage.safeParse(data);
    if (!m.success) throw new ApiError("VALIDATION_ERROR", "invalid text action", zodIssues(m.error));
    return { kind: "text", action: { content: m.data.message } };
  }
  return undefined;
}

/** Whether an episode of `env` has a tool `name` (its own, or our `submit`). */
export function hasEpisodeTool(env: Environment, name: string): boolean {
  return env.tools.some((t) => t.name === name) || (name === SUBMIT_TOOL && offersSubmit(env));
}

/** The episode's tool names, as an unknown tool's error lists them. */
function episodeToolNames(env: Environment): string[] {
  return [...env.tools.map((t) => t.name), ...(offersSubmit(env) ? [SUBMIT_TOOL] : [])];
}

/** OpenEnv's `ToolError`: `{error_type, message}`. */
export interface ToolError {
  error_type: ToolErrorType;
  message: string;
}

/**
 * Play one tool call (or a submit) on an episode: the step's result with OpenEnv's
 * CallToolObservation fields added. As OpenEnv's environments answer: a tool the episode does not
 * have is `error: {error_type: "tool_not_found"}` and takes no turn (nothing reaches the episode);
 * a tool that failed takes its turn (the model's call, counted in `num_tool_errors`) and is
 * `error: {error_type: "execution_error" | "invalid_args" | "timeout", message}` beside the
 * `result` (`isError`). OpenEnv's `call_tool` raises on either.
 */
export async function stepToolCall(
  env: Environment,
  host: EpisodeHost,
  episodeId: string,
  name: string,
  args: Record<string, unknown>,
  client: string | undefined,
  signal?: AbortSignal,
): Promise<StepResult> {
  if (!hasEpisodeTool(env, name)) {
    const state = await host.state(env, episodeId, client); // an unknown or foreign episode is that error first
    const error: ToolError = { error_type: "tool_not_found", message: unknownToolMessage(name, episodeToolNames(env)).slice(TOOL_ERROR_PREFIX.length + 1) };
    const observation = { messages: [], turn: state.step_count, truncated: false, tool_name: name, result: null, error };
    return { observation: observation as unknown as StepResult["observation"], reward: null, done: state.done === true, episode_id: episodeId };
  }
  const action = toolCallAction(env, name, args);
  const step = await host.step(env, episodeId, action, client, signal);
  const submitted = action.tool_calls === undefined;
  const result = mcpResultOfStep(name, step, submitted);
  const text = submitted ? "" : String(result.data);
  const type = toolErrorType(text);
  const error: ToolError | null = type ? { error_type: type, message: text.slice(TOOL_ERROR_PREFIX.length + 1) } : null;
  return { ...step, observation: { ...step.observation, tool_name: name, result, error } as StepResult["observation"] };
}

const SessionParams = z.object({ session_id: z.string().min(1).max(255) }).loose();
const CallParams = SessionParams.extend({ name: z.string().min(1).max(256), arguments: z.record(z.string(), z.unknown()).optional() });

/**
 * `POST B/mcp?session_id=EPISODE`: a standard MCP client (streamable HTTP) given that URL lists and
 * calls the episode's tools without knowing OpenEnv's `session_id` param (verifiers v1's harnesses
 * are such clients). The query names the session of `tools/list` and `tools/call`.
 */
export function withQuerySession(body: unknown, sessionId: string | undefined): unknown {
  if (!sessionId || !body || typeof body !== "object" || Array.isArray(body)) return body;
  const { method, params } = body as { method?: unknown; params?: unknown };
  if (method !== "tools/list" && method !== "tools/call") return body;
  const given = params && typeof params === "object" && !Array.isArray(params) ? params : {};
  return { ...body, params: { ...given, session_id: sessionId } };
}

/** Whether a JSON-RPC request is about an episode (OpenEnv's session methods, or a call naming its session). */
export function isEpisodeMcp(body: unknown): boolean {
  if (!body || typeof body !== "object") return false;
  const { method, params } = body as { method?: unknown; params?: unknown };
  if (method === "openenv/session/create" || method === "openenv/session/close") return true;
  return (method === "tools/list" || method === "tools/call") && !!params && typeof params === "object" && "session_id" in params;
}

/**
 * OpenEnv's production-mode MCP on episodes. `openenv/session/create` takes reset's fields as
 * params (all optional) and answers `{session_id, episode_id, observation}`: the session id is the
 * episode id, and the observation carries the prompt. `client`: who asks (client-id.ts): the
 * episode is that client's, kept in its share, as a reset's is; the other methods find only the
 * client's own sessions. `signal`: the caller gave up (an HTTP
 * client gone): its tool call is cancelled, as a step's is.
 */
export async function handleEpisodeMcp(env: Environment, host: EpisodeHost, body: unknown, client: string | undefined, signal?: AbortSignal): Promise<JsonRpcResponse> {
  const req = body as { id?: unknown; method: string; params?: unknown };
  const id: JsonRpcId = typeof req.id === "string" || typeof req.id === "number" ? req.id : null;
  if ((body as { jsonrpc?: unknown }).jsonrpc !== "2.0") return rpcError(id, RPC.INVALID_REQUEST, "invalid JSON-RPC 2.0 request");
  const params = req.params ?? {};
  try {
    switch (req.method) {
      case "openenv/session/create": {
        const reset = HttpResetRequestSchema.safeParse(params);
        if (!reset.success) return rpcError(id, RPC.INVALID_PARAMS, "openenv/session/create takes reset's fields as params", zodIssues(reset.error));
        const result = await host.reset(env, reset.data, client);
        return { jsonrpc: "2.0", id, result: { session_id: result.episode_id, ...result } };
      }
      case "openenv/session/close": {
        const p = SessionParams.safeParse(params);
        if (!p.success) return rpcError(id, RPC.INVALID_PARAMS, "Invalid params - 'session_id' is required");
        await host.close(env, p.data.session_id, client);
        return { jsonrpc: "2.0", id, result: { session_id: p.data.session_id, closed: true } };
      }
      case "tools/list": {
        const p = SessionParams.safeParse(params);
        if (!p.success) return rpcError(id, RPC.INVALID_PARAMS, "session_id must be a string");
        // An unknown session is an error, as in OpenEnv; another client's is unknown.
        if (!(await host.exists(env, p.data.session_id, client))) throw new ApiError("UNKNOWN_EPISODE", `no open episode ${p.data.session_id} in ${env.name}`);
        return { jsonrpc: "2.0", id, result: { tools: episodeTools(env) } };
      }
      case "tools/call": {
        const p = CallParams.safeParse(params);
        if (!p.success) return rpcError(id, RPC.INVALID_PARAMS, "tools/call needs params {name, arguments, session_id}", zodIssues(p.error));
        // OpenEnv's answer to a tool it does not have: invalid params, nothing played.
        if (!hasEpisodeTool(env, p.data.name)) {
          await host.state(env, p.data.session_id, client);
          return rpcError(id, RPC.INVALID_PARAMS, `Tool not found: ${p.data.name}`, { code: "TOOL_NOT_FOUND", error_type: "tool_not_found", tools: episodeToolNames(env) });
        }
        const step = await stepToolCall(env, host, p.data.session_id, p.data.name, p.data.arguments ?? {}, client, signal);
        const observation = step.observation as unknown as { result: Record<string, unknown> };
        return { jsonrpc: "2.0", id, result: { ...observation.result, _meta: { episode_id: step.episode_id, done: step.done, reward: step.reward } } };
      }
      default:
        return rpcError(id, RPC.METHOD_NOT_FOUND, `method ${JSON.stringify(req.method)} not found`);
    }
  } catch (err) {
    const e = toApiError(err);
    // The client's mistakes (unknown session, finished episode, bad arguments) are invalid params; ours are internal.
    const code = e.status >= 500 ? RPC.INTERNAL_ERROR : RPC.INVALID_PARAMS;
    return rpcError(id, code, e.message, { code: e.code });
  }
}
