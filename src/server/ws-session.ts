/**
 * One OpenEnv WebSocket session: one episode per connection, messages reset/step/state/close/mcp,
 * replies `observation` / `state` / `mcp` / `error`. Platform-free: Node's socket and a Durable
 * Object's hibernatable socket both feed it text and send back what it returns.
 */
import type { Environment } from "../env/environment.ts";
import type { EpisodeHost } from "./episode-host.ts";
import { NotJsonError, parseClientJson } from "./client-json.ts";
import { ApiError, toApiError, type ErrorCode } from "../env/errors.ts";
import type { Services } from "../env/services.ts";
import { inlineEngine, type EnvEngine, type ScopeServices } from "./engine.ts";
import { ActionSchema, ResetRequestSchema, resetErrorMessage, WS_TYPES, WsMessageSchema } from "./protocol.ts";
import { zodIssues } from "../env/episode.ts";
import { episodeTools, handleEpisodeMcp, isEpisodeMcp, specialStep, stepToolCall } from "./mcp-episode.ts";

export type WsDataReply = { type: "observation" | "state" | "mcp" | "error"; data: unknown };
export type WsReply = WsDataReply | { type: "state"; json: string };

/** A reply as sent; `json`: data already made as JSON text (a state the host keeps made). */
export function wsReplyText(reply: WsReply): string {
  return "json" in reply ? `{"type":"${reply.type}","data":${reply.json}}` : JSON.stringify(reply);
}

/** OpenEnv's WSErrorCode set; our finer codes travel along as `reason`. */
const WS_CODE: Partial<Record<ErrorCode, string>> = {
  INVALID_JSON: "INVALID_JSON",
  UNKNOWN_TYPE: "UNKNOWN_TYPE",
  VALIDATION_ERROR: "VALIDATION_ERROR",
  PAYLOAD_TOO_LARGE: "VALIDATION_ERROR",
  CAPACITY_REACHED: "CAPACITY_REACHED",
  EXECUTION_ERROR: "EXECUTION_ERROR",
  OVERLOADED: "CAPACITY_REACHED",
  INTERNAL_ERROR: "EXECUTION_ERROR",
};

export function wsError(err: ApiError): WsDataReply {
  // `reason` is our finer code: the error's own reason when it has one (EXECUTION_ERROR's TIMEOUT).
  const data: Record<string, unknown> = { message: err.message, code: WS_CODE[err.code] ?? "SESSION_ERROR", reason: err.reason ?? err.code };
  if (err.code === "VALIDATION_ERROR" && err.details !== undefined) data.errors = err.details;
  if ((err.code === "CAPACITY_REACHED" || err.code === "OVERLOADED") && err.details && typeof err.details === "object") Object.assign(data, err.details);
  return { type: "error", data };
}

export interface WsSessionOptions {
  maxMessageBytes: number;
  /** Runs MCP tool calls (default: inline with `services`). */
  engine?: Pick<EnvEngine, "mcp">;
  services?: Services | ScopeServices;
  /** The episode this connection already plays (a hibernated Durable Object socket resuming). */
  episodeId?: string | undefined;
  /** Who the client is (client-id.ts): its episodes are kept in its share. */
  client?: string | undefined;
}

export class WsSession {
  private episodeId: string | undefined;
  private readonly engine: Pick<EnvEngine, "mcp">;
  /** The fairness key of this connection's stateless calls (MCP). */
  private readonly connectionKey = `ws:${crypto.randomUUID()}`;

  constructor(
    private readonly env: Environment,
    private readonly host: EpisodeHost,
    private readonly opts: WsSessionOptions,
  ) {
    this.episodeId = opts.episodeId;
    this.engine = opts.engine ?? inlineEngine(opts.services ?? {});
  }

  /** The episode this connection plays, if any. */
  get currentEpisodeId(): string | undefined {
    return this.episodeId;
  }

  /** Handle one client message. `close: true` asks the caller to close the socket. */
  async handle(raw: string): Promise<{ reply?: WsReply; close?: boolean }> {
    try {
      return await this.dispatch(raw);
    } catch (err) {
      return { reply: wsError(toApiError(err)) };
    }
  }

  /** The connection is gone: free its episode. */
  async dispose(): Promise<void> {
    const id = this.episodeId;
    this.episodeId = undefined;
    if (id) await this.host.close(this.env, id).catch(() => undefined);
  }

  private async dispatch(raw: string): Promise<{ reply?: WsReply; close?: boolean }> {
    if (raw.length > this.opts.maxMessageBytes) {
      throw new ApiError("PAYLOAD_TOO_LARGE", `message exceeds ${this.opts.maxMessageBytes} bytes`);
    }
    let json: unknown;
    try {
      json = parseClientJson(raw);
    } catch (err) {
      throw err instanceof NotJsonError ? new ApiError("INVALID_JSON", "message is not valid JSON") : err;
    }
    const type = json && typeof json === "object" ? (json as { type?: unknown }).type : undefined;
    if (typeof type !== "string" || !(WS_TYPES as readonly string[]).includes(type)) {
      throw new ApiError("UNKNOWN_TYPE", `unknown message type ${JSON.stringify(type)}; expected one of ${WS_TYPES.join(", ")}`);
    }
    const msg = WsMessageSchema.safeParse(json);
    if (!msg.success) throw new ApiError("VALIDATION_ERROR", `invalid ${type} message`, zodIssues(msg.error));
    const m = msg.data;
    switch (m.type) {
      case "reset": {
        const req = ResetRequestSchema.safeParse(m.data ?? {});
        if (!req.success) throw new ApiError("VALIDATION_ERROR", resetErrorMessage(req.error, "invalid reset data", false), zodIssues(req.error));
        await this.dispose();
        const result = await this.host.reset(this.env, req.data, this.opts.client);
        this.episodeId = result.episode_id;
        return { reply: { type: "observation", data: result } };
      }
      case "step": {
        // OpenEnv's MCPToolClient (list_tools, call_tool) and TextArena's text action (mcp-episode.ts).
        const special = specialStep(m.data);
        if (special?.kind === "list_tools") {
          return { reply: { type: "observation", data: { observation: { tools: episodeTools(this.env), messages: [] }, reward: null, done: false, episode_id: this.episodeId ?? null } } };
        }
        if (special?.kind === "call_tool") {
          return { reply: { type: "observation", data: await stepToolCall(this.env, this.host, this.requireEpisode(), special.name, special.args) } };
        }
        if (special?.kind === "text") return { reply: { type: "observation", data: await this.host.step(this.env, this.requireEpisode(), special.action) } };
        const action = ActionSchema.safeParse(m.data);
        if (!action.success) throw new ApiError("VALIDATION_ERROR", "invalid action", zodIssues(action.error));
        const result = await this.host.step(this.env, this.requireEpisode(), action.data);
        return { reply: { type: "observation", data: result } };
      }
      case "state": {
        const id = this.requireEpisode();
        return { reply: this.host.stateJson ? { type: "state", json: await this.host.stateJson(this.env, id) } : { type: "state", data: await this.host.state(this.env, id) } };
      }
      case "mcp": {
        if (isEpisodeMcp(m.data)) return { reply: { type: "mcp", data: await handleEpisodeMcp(this.env, this.host, m.data, this.opts.client) } };
        const response = await this.engine.mcp(this.env, m.data, { key: this.episodeId ?? this.connectionKey });
        return response === null ? {} : { reply: { type: "mcp", data: response } };
      }
      case "close":
        await this.dispose();
        return { close: true };
    }
  }

  private requireEpisode(): string {
    if (!this.episodeId) throw new ApiError("UNKNOWN_EPISODE", "no episode on this connection: send a reset first");
    return this.episodeId;
  }
}
