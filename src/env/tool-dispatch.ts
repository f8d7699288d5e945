/**
 * Running the model's tool calls. Whatever goes wrong (arguments that are not JSON or fail the
 * schema, an unknown tool, a tool that throws or runs out of time) becomes a tool message telling
 * the model what was wrong, so the episode goes on. Error messages start with "Error:", which is
 * how the tool-error metric counts them.
 */
import type { ToolCall, ToolMessage } from "./messages.ts";
import type { Services } from "./services.ts";
import type { Tool } from "./define-tool.ts";

export const TOOL_ERROR_PREFIX = "Error:";

export interface ToolOutcome {
  ok: boolean;
  /** The text the model reads. */
  content: string;
}

function describeIssues(err: { issues: { path: PropertyKey[]; message: string }[] }): string {
  return err.issues.map((i) => (i.path.length ? `${i.path.map(String).join(".")}: ${i.message}` : i.message)).join("; ");
}

function render(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value) ?? "null";
}

/** Run one tool with validated arguments under its time limit. */
export async function callTool(tool: Tool, args: unknown, services: Services): Promise<ToolOutcome> {
  const parsed = tool.parameters.safeParse(args);
  if (!parsed.success) return { ok: false, content: `${TOOL_ERROR_PREFIX} invalid arguments for ${tool.name}: ${describeIssues(parsed.error)}` };
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`${tool.name} timed out after ${tool.timeoutMs} ms`));
    }, tool.timeoutMs);
  });
  try {
    const value = await Promise.race([Promise.resolve().then(() => tool.run(parsed.data, { ...services, signal: controller.signal })), timeout]);
    return { ok: true, content: render(value) };
  } catch (err) {
    return { ok: false, content: `${TOOL_ERROR_PREFIX} ${err instanceof Error ? err.message : String(err)}` };
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** Answer each tool call with a tool message carrying its id, in the order of the calls. */
export async function runToolCalls(tools: readonly Tool[], calls: readonly ToolCall[], services: Services): Promise<ToolMessage[]> {
  const byName = new Map(tools.map((t) => [t.name, t]));
  // Calls of one turn are independent: run them concurrently, answer in order.
  return Promise.all(
    calls.map(async (call): Promise<ToolMessage> => {
      const answer = (content: string): ToolMessage => ({ role: "tool", tool_call_id: call.id, content });
      const tool = byName.get(call.function.name);
      if (!tool) {
        return answer(`${TOOL_ERROR_PREFIX} unknown tool ${JSON.stringify(call.function.name)}; available tools: ${[...byName.keys()].join(", ")}`);
      }
      let args: unknown;
      try {
        args = call.function.arguments.trim() === "" ? {} : JSON.parse(call.function.arguments);
      } catch {
        return answer(`${TOOL_ERROR_PREFIX} the arguments of ${tool.name} are not valid JSON: ${call.function.arguments.slice(0, 200)}`);
      }
      return answer((await callTool(tool, args, services)).content);
    }),
  );
}
