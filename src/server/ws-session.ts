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
  /**
   * Who the client is (client-id.ts): its token's or address's. Its episodes are its own (found
   * under it only) and kept in its share; its stateless MCP calls queue and run as that client's.
   */
  client?: string | undefined;
  /**
   * `B/ws?session_id=S`: the socket plays the client's existing episode S (OpenEnv's MCP clients
   * create it over HTTP first). A reset replaces S in place, keeping its id, so tool calls over
   * HTTP naming S play what the socket plays; closing the socket leaves S open (its owner closes
   * it with `openenv/session/close` or `POST B/close`).
   */
  attached?: string | undefined;
}

export class WsSession {
  private episodeId: string | undefined;
  private readonly engine: Pick<EnvEngine, "mcp">;
  /** The client this connection's calls run as (a connection without one, in process, is its own). */
  private readonly client: string | undefined;

  constructor(
    private readonly env: Environment,
    private readonly host: EpisodeHost,
    private readonly opts: WsSessionOptions,
  ) {
    this.episodeId = opts.episodeId ?? opts.attached;
    this.engine = opts.engine ?? inlineEngine(opts.services ?? {});
    this.client = opts.client;
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

  /** The connection is gone: free its episode (not an attached one: that belongs to its HTTP session). */
  async dispose(): Promise<void> {
    const id = this.episodeId;
    this.episodeId = undefined;
    if (id && this.opts.attached === undefined) await this.host.close(this.env, id, this.client).catch(() => undefined);
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
        const attached = this.opts.attached;
        if (attached !== undefined) {
          // The session's episode, reset in place under its own id.
          const result = await this.host.reset(this.env, { ...req.data, episode_id: attached, replace: true }, this.client);
          this.episodeId = attached;
          return { reply: { type: "observation", data: result } };
        }
        await this.dispose();
        const result = await this.host.reset(this.env, req.data, this.client);
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
          return { reply: { type: "observation", data: await stepToolCall(this.env, this.host, this.requireEpisode(), special.name, special.args, this.client) } };
        }
        if (special?.kind === "text") return { reply: { type: "observation", data: await this.host.step(this.env, this.requireEpisode(), special.action, this.client) } };
        const action = ActionSchema.safeParse(m.data);
        if (!action.success) throw new ApiError("VALIDATION_ERROR", "invalid action", zodIssues(action.error));
        const result = await this.host.step(this.env, this.requireEpisode(), action.data, this.client);
        return { reply: { type: "observation", data: result } };
      }
      case "state": {
        const id = this.requireEpisode();
        return { reply: this.host.stateJson ? { type: "state", json: await this.host.stateJson(this.env, id, this.client) } : { type: "state", data: await this.host.state(this.env, id, this.client) } };
      }
      case "mcp": {
        if (isEpisodeMcp(m.data)) return { reply: { type: "mcp", data: await handleEpisodeMcp(this.env, this.host, m.data, this.client) } };
        // Stateless, as over HTTP: queued and run as the client's (its sandbox hosts, its turn in
        // the fair queues), not as a client of the connection's own: twenty sockets of one address
        // are one client, not twenty.
        const response = await this.engine.mcp(this.env, m.data, this.client === undefined ? { key: this.connectionKey() } : { key: this.client, client: this.client });
        return response === null ? {} : { reply: { type: "mcp", data: response } };
      }
      case "close":
        await this.dispose();
        return { close: true };
    }
  }

  /** A connection without a client (in process): a fairness key of its own. */
  private connectionKey(): string {
    return (this.ownKey ??= `ws:${crypto.randomUUID()}`);
  }
  private ownKey: string | undefined;

  private requireEpisode(): string {
    if (!this.episodeId) throw new ApiError("UNKNOWN_EPISODE", "no episode on this connection: send a reset first");
    return this.episodeId;
  }
}
