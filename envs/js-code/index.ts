/**
 * js-code: write a JavaScript (or TypeScript) function to a specification; hidden unit tests run
 * in the platform's sandbox and the reward is the fraction passed.
 *
 * Single turn (maxTurns 1, no tools). The code is the last ```js/```javascript/```ts/```typescript
 * fenced block of the reply (else the last unlabelled fenced block, else the whole reply); it runs
 * on the hidden tests' arguments in ONE sandbox run, and the outputs it reports are compared with
 * the expected values here, outside the run (harness.ts explains the harness and its threat model).
 * `respond` runs the tests once, keeps the outcome in the episode state (`state.evaluation`) and,
 * with `feedback: true`, appends a report as a final user message; the rubric reads the outcome
 * from the state (stateless scoring runs the tests itself, once per scored item).
 *
 * Rubric: `pass_rate` (1.0) = passed / hidden tests; weight-0 metrics `all_passed`, and flags that
 * explain a zero: `load_error` (no code, a syntax error, a throw while loading, no function of
 * the right name), `timed_out`, `out_of_memory`, `sandbox_error` (no sandbox or a host failure).
 */
import { defineEnvironment, type Example, type JsonObject, type Message, type RewardInput, type Sandbox, stripThink, type TurnContext, z } from "envworker";
import { DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_MS, evaluateSolution, type Evaluation, type TestFailure } from "./harness.ts";
import { normaliseOutput } from "../py-code/harness.ts";
import { TASKS, TASKS_BY_ID, type CodeTask, type TestCase } from "./tasks.ts";

export const LANGUAGES = ["javascript", "typescript"] as const;
export type Language = (typeof LANGUAGES)[number];

export const SYSTEM_PROMPT =
  "You are an expert programmer. Write correct, efficient, self-contained code. " +
  "Reply with the complete solution in a single fenced code block.";

const args = z
  .object({
    language: z.enum(LANGUAGES).default("javascript").describe("The language the prompt asks for (TypeScript is type-stripped before running)."),
    difficulty: z.enum(["all", "easy", "medium", "hard"]).default("all").describe("Serve only tasks of this difficulty."),
    category: z
      .enum(["all", "string", "array", "math", "parsing", "data-structure"])
      .default("all")
      .describe("Serve only tasks of this category."),
    feedback: z.boolean().default(false).describe("Append the test report as a final user message."),
    timeout_ms: z.number().int().min(100).max(30_000).default(DEFAULT_TIMEOUT_MS).describe("Time limit of the test run (all tests together)."),
    system_prompt: z.string().nullable().default(SYSTEM_PROMPT).describe("The system prompt (null: none)."),
  })
  .strict();

export type JsCodeArgs = z.output<typeof args>;

export interface JsCodeInfo {
  [key: string]: string;
  task_id: string;
  function_name: string;
  difficulty: string;
  category: string;
}

const call = (task: CodeTask, c: TestCase): string => `${task.name}(${c.args.map((a) => JSON.stringify(a)).join(", ")})`;

export function buildPrompt(task: CodeTask, language: Language): string {
  const lang = language === "typescript" ? "TypeScript" : "JavaScript";
  const fence = language === "typescript" ? "typescript" : "javascript";
  const examples = task.examples.map((c) => `${call(task, c)}\n// => ${JSON.stringify(c.expected)}`).join("\n\n");
  return (
    `Write a ${lang} function \`${task.name}\`.\n\n` +
    `Signature${language === "javascript" ? " (types for reference)" : ""}:\n\`\`\`ts\n${task.signature}\n\`\`\`\n\n` +
    `${task.description}\n\n` +
    `Examples:\n\`\`\`${fence}\n${examples}\n\`\`\`\n\n` +
    `Reply with the complete function in one \`\`\`${fence} code block. Define \`${task.name}\` at the top level ` +
    "(helper functions are fine); do not use imports, exports, timers or I/O, and do not print anything. " +
    "Your function is run on hidden tests, including edge cases."
  );
}

const CODE_LANGS = new Set(["js", "javascript", "mjs", "ts", "typescript", "jsx", "tsx"]);
const TS_LANGS = new Set(["ts", "typescript", "tsx"]);

export interface ExtractedCode {
  code: string;
  /** The fence said TypeScript. */
  typescript: boolean;
  /** Where the code came from. */
  source: "labelled_block" | "unlabelled_block" | "whole_reply";
}

/**
 * The code of a reply: think blocks stripped, then the last fenced block labelled
 * js/javascript/ts/typescript (or mjs/jsx/tsx), else the last unlabelled fenced block, else the
 * whole reply. An unterminated last fence (a cut-off reply) counts up to the end of the text.
 */
export function extractCode(reply: string): ExtractedCode {
  const text = stripThink(reply);
  const re = /^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n([\s\S]*?)(?:^[ \t]*```[ \t]*$|(?![\s\S]))/gm;
  let labelled: ExtractedCode | undefined;
  let unlabelled: ExtractedCode | undefined;
  for (const m of text.matchAll(re)) {
    const lang = (m[1] ?? "").toLowerCase();
    const code = (m[2] ?? "").replace(/\n$/, "");
    if (CODE_LANGS.has(lang)) labelled = { code, typescript: TS_LANGS.has(lang), source: "labelled_block" };
    else if (lang === "") unlabelled = { code, typescript: false, source: "unlabelled_block" };
  }
  return labelled ?? unlabelled ?? { code: text.trim(), typescript: false, source: "whole_reply" };
}

function lastAssistantText(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "assistant") return m.content ?? "";
  }
  return "";
}

function taskFor(info: Partial<JsCodeInfo> | undefined, answer: string): CodeTask {
  const id = info?.task_id ?? answer;
  const task = TASKS_BY_ID.get(id);
  if (!task) throw new Error(`unknown js-code task ${JSON.stringify(id)}`);
  return task;
}

/** Run the hidden tests on the model's reply. */
export function evaluateReply(sandbox: Sandbox | undefined, task: CodeTask, reply: string, a: Pick<JsCodeArgs, "language" | "timeout_ms">): Promise<Evaluation> {
  const extracted = extractCode(reply);
  return evaluateSolution(sandbox, task, extracted.code, {
    typescript: extracted.typescript || a.language === "typescript",
    timeoutMs: a.timeout_ms,
    memoryMb: DEFAULT_MEMORY_MB,
  });
}

/** Most tests one scored item may carry in `info.tests`. */
export const MAX_CLIENT_TESTS = 200;

const clientCallTests = z
  .array(z.object({ args: z.array(z.json()), expected: z.json() }).strict())
  .min(1)
  .max(MAX_CLIENT_TESTS);
const clientStdioTests = z
  .array(z.object({ input: z.string().max(1 << 20), output: z.string().max(1 << 20) }).strict())
  .min(1)
  .max(MAX_CLIENT_TESTS);

/**
 * Grade against the client's own `info.tests` (stateless scoring): either calls
 * `[{"args": [...], "expected": ...}]` of the function `info.function_name` (the same harness as
 * the shipped tasks), or programs `[{"input", "output"}]` that read the global `stdin` and print
 * with console.log (stdout compared line by line, trailing whitespace ignored). `info.timeout_ms`
 * (1–30,000) is the time limit of the call-test run, or of each program run.
 */
async function evaluateClientTests(sandbox: Sandbox | undefined, info: Record<string, unknown>, reply: string, a: Pick<JsCodeArgs, "language" | "timeout_ms">): Promise<Evaluation> {
  let timeoutMs = a.timeout_ms;
  if (info.timeout_ms !== undefined) {
    const t = z.number().int().min(1).max(30_000).safeParse(info.timeout_ms);
    if (!t.success) throw new Error("info.timeout_ms must be an integer in [1, 30000]");
    timeoutMs = t.data;
  }
  const extracted = extractCode(reply);
  const typescript = extracted.typescript || a.language === "typescript";
  const calls = clientCallTests.safeParse(info.tests);
  if (calls.success) {
    const name = info.function_name;
    if (typeof name !== "string" || !/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name)) throw new Error("info.function_name (a JavaScript identifier) is required with call tests");
    const task: CodeTask = { id: "client", name, signature: "", description: "", difficulty: "easy", category: "string", examples: [], tests: calls.data as TestCase[] };
    return evaluateSolution(sandbox, task, extracted.code, { typescript, timeoutMs, memoryMb: DEFAULT_MEMORY_MB });
  }
  const programs = clientStdioTests.safeParse(info.tests);
  if (!programs.success) throw new Error(`info.tests must be 1-${MAX_CLIENT_TESTS} {"args", "expected"} calls or {"input", "output"} cases`);
  const tests = programs.data;
  const total = tests.length;
  if (extracted.code.trim() === "") return { passed: 0, total, status: "no_code", message: "the reply contains no code", failures: [] };
  if (!sandbox) return { passed: 0, total, status: "sandbox_error", message: "no sandbox available", failures: [] };
  let passed = 0;
  let status: Evaluation["status"] = "ok";
  const failures: TestFailure[] = [];
  const errors = new Set<string>();
  for (let i = 0; i < total; i++) {
    const t = tests[i]!;
    const r = await sandbox.run(extracted.code, { stdin: t.input, ts: typescript, timeoutMs, memoryMb: DEFAULT_MEMORY_MB, maxOutputBytes: 1 << 20 });
    const ok = r.ok && !r.truncated && normaliseOutput(r.stdout).join("\n") === normaliseOutput(t.output).join("\n");
    if (ok) passed++;
    else {
      if (!r.ok) errors.add(r.error?.name ?? "Error");
      if (r.error?.name === "TimeoutError") status = "timeout";
      else if (r.error?.name === "MemoryLimitError" && status === "ok") status = "memory";
      if (failures.length < 5) failures.push({ test: i, input: JSON.stringify(t.input).slice(0, 200), expected: JSON.stringify(t.output).slice(0, 200), got: JSON.stringify(r.ok ? r.stdout : `${r.error?.name}: ${r.error?.message}`).slice(0, 200) });
    }
  }
  if (passed === 0 && errors.size === 1 && errors.has("SyntaxError")) status = "load_error";
  return { passed, total, status, message: passed === total ? null : `${total - passed} of ${total} tests failed`, failures };
}

/** The report appended with `feedback: true`. */
export function formatReport(e: Evaluation): string {
  const lines = [`Hidden tests: ${e.passed}/${e.total} passed.`];
  if (e.status !== "ok" && e.message) lines.push(e.message);
  for (const f of e.failures) lines.push(`Test ${f.test + 1} failed: input ${f.input}, expected ${f.expected}, got ${f.got}`);
  return lines.join("\n");
}

// Stateless scoring runs the tests once per scored item, shared by the rubric's functions.
const pending = new WeakMap<object, Promise<Evaluation>>();

function evaluationOf(input: RewardInput<JsCodeInfo, JsCodeArgs>): Promise<Evaluation> {
  const stored = input.state.evaluation as Evaluation | undefined;
  if (stored && typeof stored === "object" && typeof stored.passed === "number") return Promise.resolve(stored);
  let p = pending.get(input);
  if (!p) {
    const info = (input.info ?? {}) as Record<string, unknown>;
    const reply = lastAssistantText(input.completion);
    p = info.tests !== undefined ? evaluateClientTests(input.sandbox, info, reply, input.args) : evaluateReply(input.sandbox, taskFor(input.info, input.answer), reply, input.args);
    pending.set(input, p);
  }
  return p;
}

const flag = (status: Evaluation["status"] | readonly Evaluation["status"][]) => async (input: RewardInput<JsCodeInfo, JsCodeArgs>) => {
  const e = await evaluationOf(input);
  return (typeof status === "string" ? [status] : status).includes(e.status) ? 1 : 0;
};

export default defineEnvironment({
  name: "js-code",
  description: "Write a JavaScript/TypeScript function to a specification; hidden unit tests run in a sandbox; reward = fraction passed.",
  version: "0.1.0",
  args,
  dataset: ({ args: a }: { args: JsCodeArgs }): Example<JsCodeInfo>[] =>
    TASKS.filter((task) => (a.difficulty === "all" || task.difficulty === a.difficulty) && (a.category === "all" || task.category === a.category)).map(
      (task) => ({
        id: task.id,
        prompt: buildPrompt(task, a.language),
        answer: task.id,
        info: { task_id: task.id, function_name: task.name, difficulty: task.difficulty, category: task.category },
      }),
    ),
  systemPrompt: (a: JsCodeArgs) => a.system_prompt ?? undefined,
  maxTurns: 1,
  async respond(ctx: TurnContext<JsCodeInfo, JsCodeArgs>) {
    const e = await evaluateReply(ctx.sandbox, taskFor(ctx.info, ctx.answer), ctx.lastText, ctx.args);
    ctx.state.evaluation = e as unknown as JsonObject;
    return { done: true, ...(ctx.args.feedback ? { messages: formatReport(e) } : {}) };
  },
  rubric: [
    { name: "pass_rate", weight: 1, fn: async (input) => ((e) => (e.total === 0 ? 0 : e.passed / e.total))(await evaluationOf(input)) },
    { name: "all_passed", weight: 0, fn: async (input) => ((e) => e.total > 0 && e.passed === e.total)(await evaluationOf(input)) },
    { name: "load_error", weight: 0, fn: flag(["no_code", "load_error"]) },
    { name: "timed_out", weight: 0, fn: flag("timeout") },
    { name: "out_of_memory", weight: 0, fn: flag("memory") },
    { name: "sandbox_error", weight: 0, fn: flag("sandbox_error") },
  ],
});
