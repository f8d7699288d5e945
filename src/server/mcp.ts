/**
 * MCP-flavoured JSON-RPC 2.0 as OpenEnv serves it at `POST /mcp` and in the WebSocket `mcp`
 * message: `tools/list` and `tools/call` on the environment's tools. Errors are JSON-RPC error
 * objects (HTTP 200), as OpenEnv's validator expects.
 */
import { z } from "zod";
import type { Environment } from "../env/environment.ts";
import type { Services } from "../env/services.ts";
import { callTool } from "../env/tool-dispatch.ts";

export type JsonRpcId = string | number | null;
export type JsonRpcResponse =
  | { jsonrpc: "2.0"; id: JsonRpcId; result: unknown }
  | { jsonrpc: "2.0"; id: JsonRpcId; error: { code: number; message: string; data?: unknown } };

export const RPC = { PARSE_ERROR: -32700, INVALID_REQUEST: -32600, METHOD_NOT_FOUND: -32601, INVALID_PARAMS: -32602, INTERNAL_ERROR: -32603 } as const;

const RequestSchema = z
  .object({
    jsonrpc: z.literal("2.0"),
    method: z.string(),
    params: z.record(z.string(), z.unknown()).optional(),
    id: z.union([z.string(), z.number(), z.null()]).optional(),
  })
  .strict();

const CallParams = z.object({ name: z.string(), arguments: z.record(z.string(), z.unknown()).optional() }).loose();

export function rpcError(id: JsonRpcId, code: number, message: string, data?: unknown): JsonRpcResponse {
  return { jsonrpc: "2.0", id, error: data === undefined ? { code, message } : { code, message, data } };
}

/** The MCP revision we answer `initialize` with when the client names none. */
const MCP_PROTOCOL_VERSION = "2025-06-18";

/**
 * One JSON-RPC message. Returns null for a notification (a valid request without an id, such as
 * MCP's `notifications/initialized`), which gets no response.
 */
export async function handleMcp(env: Environment, body: unknown, services: Services = {}): Promise<JsonRpcResponse | null> {
  const rawId = body && typeof body === "object" && "id" in body ? (body as { id: unknown }).id : null;
  const id: JsonRpcId = typeof rawId === "string" || typeof rawId === "number" ? rawId : null;
  const parsed = RequestSchema.safeParse(body);
  if (!parsed.success) return rpcError(id, RPC.INVALID_REQUEST, "invalid JSON-RPC 2.0 request", parsed.error.issues.map((i) => i.message));
  const req = parsed.data;
  if (req.id === undefined) return null;
  switch (req.method) {
    // The handshake of MCP clients: what we serve (tools) and who we are.
    case "initialize": {
      const asked = req.params?.protocolVersion;
      return {
        jsonrpc: "2.0",
        id,
        result: {
          protocolVersion: typeof asked === "string" ? asked : MCP_PROTOCOL_VERSION,
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: `envworker/${env.name}`, version: env.version },
        },
      };
    }
    case "ping":
      return { jsonrpc: "2.0", id, result: {} };
    case "tools/list":
      return { jsonrpc: "2.0", id, result: { tools: env.tools.map((t) => t.mcp) } };
    case "tools/call": {
      const p = CallParams.safeParse(req.params ?? {});
      if (!p.success) return rpcError(id, RPC.INVALID_PARAMS, "tools/call needs params {name, arguments}");
      const tool = env.tools.find((t) => t.name === p.data.name);
      if (!tool) return rpcError(id, RPC.INVALID_PARAMS, `unknown tool ${JSON.stringify(p.data.name)}`);
      // A failing tool is a result with isError (as MCP has it), not a protocol error.
      const outcome = await callTool(tool, p.data.arguments ?? {}, services);
      return { jsonrpc: "2.0", id, result: { content: [{ type: "text", text: outcome.content }], isError: !outcome.ok } };
    }
    default:
      return rpcError(id, RPC.METHOD_NOT_FOUND, `method ${JSON.stringify(req.method)} not found`);
  }
}
