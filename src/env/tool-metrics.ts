/**
 * Tool-use metrics, reported (weight 0) on every tool environment. They are computed from the
 * messages, so stateless scoring of a finished conversation reports them too.
 */
import type { Message } from "./messages.ts";
import type { RubricEntry } from "./rubric.ts";
import { TOOL_ERROR_PREFIX } from "./tool-dispatch.ts";

const count = (messages: readonly Message[], f: (m: Message) => number) => messages.reduce((n, m) => n + f(m), 0);

export const toolMetrics: readonly RubricEntry<any, any>[] = [
  { name: "num_turns", weight: 0, fn: ({ completion }) => count(completion, (m) => (m.role === "assistant" ? 1 : 0)) },
  { name: "num_tool_calls", weight: 0, fn: ({ completion }) => count(completion, (m) => (m.role === "assistant" ? (m.tool_calls?.length ?? 0) : 0)) },
  {
    name: "num_tool_errors",
    weight: 0,
    fn: ({ completion }) => count(completion, (m) => (m.role === "tool" && m.content.startsWith(TOOL_ERROR_PREFIX) ? 1 : 0)),
  },
];
