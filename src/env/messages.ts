/**
 * Chat messages as they travel between trainer and environment: OpenAI chat-completions shapes,
 * so a trainer can append them to its conversation without translation.
 */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface SystemMessage { role: "system"; content: string }
export interface UserMessage { role: "user"; content: string }
export interface AssistantMessage {
  role: "assistant";
  content: string | null;
  tool_calls?: ToolCall[];
  reasoning_content?: string;
}
export interface ToolMessage { role: "tool"; content: string; tool_call_id: string }

export type Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage;
/** What the environment says back: never an assistant turn. */
export type EnvMessage = UserMessage | ToolMessage | SystemMessage;

/** The model's turn as sent in a step: an assistant message without the role. */
export type Action = Omit<AssistantMessage, "role">;
