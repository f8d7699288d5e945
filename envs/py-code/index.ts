/**
 * py-code: write Python to a specification; hidden tests run in the Python sandbox and
 * the reward is the fraction passed. Half the tasks ask for a function (graded by assert
 * statements), half for a program reading stdin and writing stdout (graded on input/output
 * cases). Node only: it needs `Services.python` (harness.ts explains the grading and its threat
 * model).
 *
 * Single turn (maxTurns 1, no tools). The code is the last ```python/```py fenced block of the
 * reply (else the last unlabelled fenced block, else the whole reply). `respond` runs the tests
 * once and keeps the outcome in the state; stateless scoring runs them itself, once per item.
 *
 * Code-reward service: POST /envs/py-code/score with items whose `info.tests` holds the client's
 * own tests (assert statements or {input, output} cases) and optional `info.timeout_ms` per test
 * (capped at MAX_TEST_TIMEOUT_MS); no task id needed then.
 *
 * Rubric: `pass_rate` (1.0) = passed / tests; weight-0 metrics `all_passed`, `tests_passed`
 * (count), `tests_total`, `compile_error` (no code, a syntax error, or an exception while the code
 * loads), `timed_out` (some test hit its time limit), `out_of_memory`, `sandbox_error`.
 */
import { defineEnvironment, type Example, type JsonObject, type Message, type RewardInput, type Sandbox, stripThink, type TurnContext, z } from "envworker";
import { DEFAULT_TEST_TIMEOUT_MS, evaluatePython, type Evaluation, type TestSpec } from "./harness.ts";
import { TASKS, TASKS_BY_ID, taskTests, type PyTask } from "./tasks.ts";

export const SYSTEM_PROMPT =
  "You are an expert Python programmer. Write correct, efficient, self-contained Python 3 code using only the standard library. " +
  "Reply with the complete solution in a single ```python code block.";

/** Upper bound of a client's `info.timeout_ms` (per test). */
export const MAX_TEST_TIMEOUT_MS = 10_000;
/** Most tests one scored item may carry. */
export const MAX_CLIENT_TESTS = 200;

const args = z
  .object({
    kind: z.enum(["all", "function", "program"]).default("all").describe("Serve only function tasks (asserts) or program tasks (stdin/stdout)."),
    difficulty: z.enum(["all", "easy", "medium", "hard"]).default("all").describe("Serve only tasks of this difficulty."),
    feedback: z.boolean().default(false).describe("Append the test report as a final user message."),
    timeout_ms: z.number().int().min(100).max(MAX_TEST_TIMEOUT_MS).default(DEFAULT_TEST_TIMEOUT_MS).describe("Time limit of each hidden test."),
    system_prompt: z.string().nullable().default(SYSTEM_PROMPT).describe("The system prompt (null: none)."),
  })
  .strict();

export type PyCodeArgs = z.output<typeof args>;

export interface PyCodeInfo {
  [key: string]: unknown;
  task_id?: string;
  kind?: string;
  difficulty?: string;
  /** Client-supplied tests (stateless scoring): assert statements or stdin/stdout cases. */
  tests?: unknown;
  /** Client-supplied time limit per test (ms), capped at MAX_TEST_TIMEOUT_MS. */
  timeout_ms?: unknown;
}

const clientTests = z.union([
  z.array(z.string().min(1).max(20_000)).min(1).max(MAX_CLIENT_TESTS),
  z
    .array(z.object({ input: z.string().max(1 << 20), output: z.string().max(1 << 20) }).strict())
    .min(1)
    .max(MAX_CLIENT_TESTS),
]);
const clientTimeout = z.number().int().min(1).max(MAX_TEST_TIMEOUT_MS);

export function buildPrompt(task: PyTask): string {
  if (task.kind === "function") {
    return (
      `Write a Python function \`${task.name}\`.\n\n` +
      `\`\`\`python\n${task.signature}\n\`\`\`\n\n${task.description}\n\n` +
      `Examples:\n\`\`\`python\n${task.examples.join("\n")}\n\`\`\`\n\n` +
      `Reply with the complete code in one \`\`\`python code block. Define \`${task.name}\` at the top level (helpers and ` +
      "standard-library imports are fine); do not read input or print. Your function is run on hidden tests, including edge cases."
    );
  }
  const examples = task.examples.map((e) => `Input:\n\`\`\`\n${e.input}\`\`\`\nOutput:\n\`\`\`\n${e.output}\`\`\``).join("\n\n");
  return (
    `Write a Python program.\n\n${task.description}\n\n${examples}\n\n` +
    "Reply with the complete program in one ```python code block. It reads standard input and writes standard output " +
    "(only the answer: no prompts or extra text). It is run on hidden inputs, including edge cases."
  );
}

const CODE_LANGS = new Set(["python", "py", "python3"]);

/** The last ```python/```py block, else the last unlabelled block, else the whole reply (think blocks stripped). */
export function extractCode(reply: string): string {
  const text = stripThink(reply);
  const re = /^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n([\s\S]*?)(?:^[ \t]*```[ \t]*$|(?![\s\S]))/gm;
  let labelled: string | undefined;
  let unlabelled: string | undefined;
  for (const m of text.matchAll(re)) {
    const lang = (m[1] ?? "").toLowerCase();
    const code = (m[2] ?? "").replace(/\n$/, "");
    if (CODE_LANGS.has(lang)) labelled = code;
    else if (lang === "") unlabelled = code;
  }
  return labelled ?? unlabelled ?? text.trim();
}

function lastAssistantText(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "assistant") return m.content ?? "";
  }
  return "";
}

/** The tests and time limit to grade with: the client's `info.tests` if given, else the task's hidden tests. */
export function testsFor(info: PyCodeInfo | undefined, answer: string, a: Pick<PyCodeArgs, "timeout_ms">): { spec: TestSpec; timeoutMs: number } {
  if (info?.tests !== undefined) {
    const parsed = clientTests.safeParse(info.tests);
    if (!parsed.success) {
      throw new Error(`info.tests must be 1-${MAX_CLIENT_TESTS} assert statements (strings) or {"input", "output"} objects: ${parsed.error.issues[0]?.message ?? "invalid"}`);
    }
    let timeoutMs = a.timeout_ms;
    if (info.timeout_ms !== undefined) {
      const t = clientTimeout.safeParse(info.timeout_ms);
      if (!t.success) throw new Error(`info.timeout_ms must be an integer in [1, ${MAX_TEST_TIMEOUT_MS}]`);
      timeoutMs = t.data;
    }
    const tests = parsed.data;
    const spec: TestSpec = typeof tests[0] === "string" ? { kind: "assert", tests: tests as string[] } : { kind: "stdio", tests: tests as { input: string; output: string }[] };
    return { spec, timeoutMs };
  }
  const id = typeof info?.task_id === "string" ? info.task_id : answer;
  const task = TASKS_BY_ID.get(id);
  if (!task) throw new Error(`unknown py-code task ${JSON.stringify(id)} (give info.task_id, or your own info.tests)`);
  return { spec: taskTests(task), timeoutMs: a.timeout_ms };
}

/** Run the tests on the model's reply. */
export function evaluateReply(python: Sandbox | undefined, info: PyCodeInfo | undefined, answer: string, reply: string, a: Pick<PyCodeArgs, "timeout_ms">): Promise<Evaluation> {
  const { spec, timeoutMs } = testsFor(info, answer, a);
  return evaluatePython(python, extractCode(reply), spec, { timeoutMs });
}

/** The report appended with `feedback: true`. */
export function formatReport(e: Evaluation): string {
  const lines = [`Hidden tests: ${e.passed}/${e.total} passed.`];
  if (e.status !== "ok" && e.message) lines.push(e.message);
  for (const f of e.failures) lines.push(`Test ${f.test + 1} failed: ${f.reason}`);
  return lines.join("\n");
}

const pending = new WeakMap<object, Promise<Evaluation>>();

function evaluationOf(input: RewardInput<PyCodeInfo, PyCodeArgs>): Promise<Evaluation> {
  const stored = input.state.evaluation as Evaluation | undefined;
  if (stored && typeof stored === "object" && typeof stored.passed === "number") return Promise.resolve(stored);
  let p = pending.get(input);
  if (!p) {
    p = evaluateReply(input.python, input.info, input.answer, lastAssistantText(input.completion), input.args);
    pending.set(input, p);
  }
  return p;
}

const metric = (fn: (e: Evaluation) => number | boolean) => async (input: RewardInput<PyCodeInfo, PyCodeArgs>) => fn(await evaluationOf(input));

export default defineEnvironment({
  name: "py-code",
  description: "Write a Python function (assert tests) or program (stdin/stdout tests); hidden tests run in a Python sandbox; reward = fraction passed. Node only.",
  version: "0.1.0",
  args,
  dataset: ({ args: a }: { args: PyCodeArgs }): Example<PyCodeInfo>[] =>
    TASKS.filter((t) => (a.kind === "all" || t.kind === a.kind) && (a.difficulty === "all" || t.difficulty === a.difficulty)).map((task) => ({
      id: task.id,
      prompt: buildPrompt(task),
      answer: task.id,
      info: { task_id: task.id, kind: task.kind, difficulty: task.difficulty },
    })),
  systemPrompt: (a: PyCodeArgs) => a.system_prompt ?? undefined,
  maxTurns: 1,
  async respond(ctx: TurnContext<PyCodeInfo, PyCodeArgs>) {
    const e = await evaluateReply(ctx.python, ctx.info, ctx.answer, ctx.lastText, ctx.args);
    ctx.state.evaluation = e as unknown as JsonObject;
    return { done: true, ...(ctx.args.feedback ? { messages: formatReport(e) } : {}) };
  },
  rubric: [
    { name: "pass_rate", weight: 1, fn: metric((e) => (e.total === 0 ? 0 : e.passed / e.total)) },
    { name: "all_passed", weight: 0, fn: metric((e) => e.total > 0 && e.passed === e.total) },
    { name: "tests_passed", weight: 0, fn: metric((e) => e.passed) },
    { name: "tests_total", weight: 0, fn: metric((e) => e.total) },
    { name: "compile_error", weight: 0, fn: metric((e) => e.status === "no_code" || e.status === "compile_error") },
    { name: "timed_out", weight: 0, fn: metric((e) => e.timeouts > 0) },
    { name: "out_of_memory", weight: 0, fn: metric((e) => e.memoryErrors > 0) },
    { name: "sandbox_error", weight: 0, fn: metric((e) => e.status === "sandbox_error") },
  ],
});
