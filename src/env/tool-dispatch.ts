/**
 * Running the model's tool calls. Whatever goes wrong (arguments that are not JSON or fail the
 * schema, an unknown tool, a tool that throws or runs out of time) becomes a tool message telling
 * the model what was wrong, so the episode goes on. Error messages start with "Error:", which is
 * how the tool-error metric counts them.
 */
import type { ToolCall, ToolMessage } from "./messages.ts";
import { withSandbox, type Services } from "./services.ts";
import type { Tool } from "./define-tool.ts";
import { anySignal } from "../sched/signals.ts";
import { DEFAULT_LIMITS, type RunOptions, type RunResult, type Sandbox } from "../sandbox/types.ts";

export const TOOL_ERROR_PREFIX = "Error:";

/**
 * OpenEnv's categories of a tool call that failed (`ToolErrorType` in openenv's mcp_types.py): what
 * its `CallToolObservation.error.error_type` says, and what its `call_tool` raises on.
 */
export type ToolErrorType = "tool_not_found" | "invalid_args" | "timeout" | "execution_error";

/** The answer to a call of a tool the environment does not have. */
export function unknownToolMessage(name: string, available: readonly string[]): string {
  return `${TOOL_ERROR_PREFIX} unknown tool ${JSON.stringify(name)}; available tools: ${available.join(", ")}`;
}

/**
 * The category of a tool's answer, from the error texts this module writes; undefined when the
 * answer is not an error. Anything a tool threw is an execution error.
 */
export function toolErrorType(content: string): ToolErrorType | undefined {
  if (!content.startsWith(TOOL_ERROR_PREFIX)) return undefined;
  const rest = content.slice(TOOL_ERROR_PREFIX.length + 1);
  if (rest.startsWith("unknown tool ")) return "tool_not_found";
  if (rest.startsWith("invalid arguments for ") || /^the arguments of \S+ are not valid JSON/.test(rest)) return "invalid_args";
  if (/^\S+ timed out after \d+ ms$/.test(rest)) return "timeout";
  return "execution_error";
}

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

/**
 * A clock that stops while the tool waits for a sandbox slot: a tool's time limit counts its own
 * work, never time spent queued behind other episodes' runs (the sandbox bounds each run itself).
 */
function pausableTimer(limitMs: number, onExpire: () => void) {
  let remaining = limitMs;
  let since = performance.now();
  let paused = 0;
  /** The wall-clock spans charged so far, merged (see charge). */
  const charged = new Spans();
  const fire = () => {
    timer = undefined;
    remaining = Infinity; // fired once, never again
    onExpire();
  };
  let timer: ReturnType<typeof setTimeout> | undefined = setTimeout(fire, limitMs);
  return {
    pause() {
      if (paused++ > 0 || timer === undefined) return;
      clearTimeout(timer);
      timer = undefined;
      remaining -= performance.now() - since;
    },
    resume() {
      if (--paused > 0 || remaining === Infinity) return;
      // Used up by a run (charge): the tool is out of time before its code sees the run's result.
      if (remaining <= 0) return fire();
      since = performance.now();
      timer = setTimeout(fire, Math.max(0, remaining));
    },
    stop() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      remaining = Infinity;
    },
    /**
     * While paused: counts a sandbox run that started at `startedAt` and ran `ms` on the run clock,
     * as the span [startedAt, startedAt + ms]. Spans of runs that overlapped (a tool's concurrent
     * runs) count once. Anchored at the run's start, not its end: on a busy machine a run's waits
     * for a CPU push its end later by a different amount for each of several concurrent runs, and
     * spans anchored at their ends then stopped overlapping (three 2 s runs at once cost a tool
     * ~5 s at load ~15), while runs started together still start together.
     */
    charge(ms: number, startedAt: number) {
      if (paused === 0 || remaining === Infinity) return;
      remaining -= charged.add(startedAt, startedAt + Math.max(0, ms));
    },
    /** Time left (while paused: exact). */
    remaining() {
      return paused > 0 ? remaining : remaining - (performance.now() - since);
    },
  };
}

type ToolClock = ReturnType<typeof pausableTimer>;

/** A union of intervals on a line, kept merged: `add` returns how much of the new one was not in it yet. */
class Spans {
  /** Disjoint, sorted by start. */
  private spans: [number, number][] = [];

  add(from: number, to: number): number {
    if (!(to > from)) return 0;
    let covered = 0;
    let start = from;
    let end = to;
    const kept: [number, number][] = [];
    for (const [a, b] of this.spans) {
      if (b < from || a > to) {
        kept.push([a, b]);
        continue;
      }
      covered += Math.min(b, to) - Math.max(a, from);
      start = Math.min(start, a);
      end = Math.max(end, b);
    }
    kept.push([start, end]);
    kept.sort((x, y) => x[0] - y[0]);
    this.spans = kept;
    return to - from - covered;
  }
}

/**
 * The tool's view of the sandbox: its runs are cancelled with the tool (time up, caller gone), and
 * the tool's clock stops while a run is in the sandbox. A run counts on the tool's clock for the
 * time it ran (its elapsedMs, on the run clock: src/sched/run-delay.ts), not for its wait for a
 * slot or for a CPU on a busy machine; it may not run longer than the tool has left.
 */
function toolSandbox(sandbox: Sandbox, signal: AbortSignal, clock: ToolClock): Sandbox {
  return {
    kind: sandbox.kind,
    run: async (code: string, options: RunOptions = {}): Promise<RunResult> => {
      clock.pause();
      const left = Math.max(1, Math.floor(clock.remaining()));
      const timeoutMs = Math.min(options.timeoutMs ?? DEFAULT_LIMITS.timeoutMs, left);
      let startedAt: number | undefined;
      try {
        const result = await sandbox.run(code, {
          ...options,
          timeoutMs,
          signal: anySignal(signal, options.signal),
          onStart: () => {
            startedAt = performance.now();
            options.onStart?.();
          },
        });
        // Stopped at the tool's remaining time: the tool's time is up (whatever the run measured).
        const toolTimeUp = timeoutMs === left && result.error?.name === "TimeoutError";
        clock.charge(toolTimeUp ? Infinity : result.elapsedMs, startedAt ?? performance.now() - result.elapsedMs);
        return result;
      } catch (err) {
        if (startedAt !== undefined) clock.charge(performance.now() - startedAt, startedAt);
        throw err;
      } finally {
        clock.resume();
      }
    },
    dispose: async () => {},
  };
}

/**
 * Run one tool with validated arguments under its time limit. The limit counts the tool's own
 * time: waiting for a sandbox slot does not count (the sandbox enforces each run's limit from its
 * start). When the time is up, or `callerSignal` aborts, the tool's signal aborts and its sandbox
 * runs are dropped from the queue or stopped.
 */
export async function callTool(tool: Tool, args: unknown, services: Services, callerSignal?: AbortSignal): Promise<ToolOutcome> {
  const parsed = tool.parameters.safeParse(args);
  if (!parsed.success) return { ok: false, content: `${TOOL_ERROR_PREFIX} invalid arguments for ${tool.name}: ${describeIssues(parsed.error)}` };
  const controller = new AbortController();
  let expire!: (err: Error) => void;
  const timeout = new Promise<never>((_, reject) => (expire = reject));
  const clock = pausableTimer(tool.timeoutMs, () => {
    const err = new Error(`${tool.name} timed out after ${tool.timeoutMs} ms`);
    controller.abort(err);
    expire(err);
  });
  const onCallerAbort = () => {
    const err = new Error(`${tool.name} was cancelled: ${describeReason(callerSignal?.reason)}`);
    controller.abort(err);
    expire(err);
  };
  if (callerSignal?.aborted) onCallerAbort();
  else callerSignal?.addEventListener("abort", onCallerAbort, { once: true });
  // Every code sandbox the tool may use: its runs stop the tool's clock while they wait their turn.
  const ctx = {
    ...services,
    signal: controller.signal,
    sandbox: toolSandbox(withSandbox(services).sandbox, controller.signal, clock),
    python: services.python && toolSandbox(services.python, controller.signal, clock),
  };
  try {
    const value = await Promise.race([Promise.resolve().then(() => tool.run(parsed.data, ctx)), timeout]);
    return { ok: true, content: render(value) };
  } catch (err) {
    return { ok: false, content: `${TOOL_ERROR_PREFIX} ${err instanceof Error ? err.message : String(err)}` };
  } finally {
    clock.stop();
    callerSignal?.removeEventListener("abort", onCallerAbort);
  }
}

function describeReason(reason: unknown): string {
  return reason instanceof Error ? reason.message : typeof reason === "string" ? reason : "its caller gave up";
}

/** Answer each tool call with a tool message carrying its id, in the order of the calls. */
export async function runToolCalls(tools: readonly Tool[], calls: readonly ToolCall[], services: Services, signal?: AbortSignal): Promise<ToolMessage[]> {
  const byName = new Map(tools.map((t) => [t.name, t]));
  // Calls of one turn are independent: run them concurrently, answer in order.
  return Promise.all(
    calls.map(async (call): Promise<ToolMessage> => {
      const answer = (content: string): ToolMessage => ({ role: "tool", tool_call_id: call.id, content });
      const tool = byName.get(call.function.name);
      if (!tool) {
        return answer(unknownToolMessage(call.function.name, [...byName.keys()]));
      }
      let args: unknown;
      try {
        args = call.function.arguments.trim() === "" ? {} : JSON.parse(call.function.arguments);
      } catch {
        return answer(`${TOOL_ERROR_PREFIX} the arguments of ${tool.name} are not valid JSON: ${call.function.arguments.slice(0, 200)}`);
      }
      return answer((await callTool(tool, args, services, signal)).content);
    }),
  );
}
