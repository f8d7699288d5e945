/**
 * math-tools: arithmetic and word problems generated from the episode seed, solved with tools.
 *
 * A tool environment in the spirit of verifiers' `math_python` (v0.1.3 ToolEnv variant): the model
 * has a `calculator` (a parser, no code runs) and a `javascript` sandbox (stateless: nothing
 * persists between calls) and gives its final answer in `\boxed{}`. The answer is read like
 * verifiers' `extract_boxed_answer` (last `\boxed{}`, the whole reply when there is none) and
 * compared numerically (src/env/math-answer.ts) with the exact answer.
 *
 * Rubric: `correct_answer` (1.0) and `boxed_answer` (0, a format metric), plus the automatic
 * tool metrics `num_turns`, `num_tool_calls`, `num_tool_errors`. An integer or fraction answer is
 * matched exactly (a decimal counts only if it equals it); `faithful: true` keeps the old
 * tolerance of 1e-9 as soon as either side is a decimal, which paid wrong integers (issue 39).
 */
import { calculatorTool, defineEnvironment, extractFinalAnswer, gradeReply, javascriptTool, lastAssistantText, pythonTool, z } from "envworker";
import { DIFFICULTIES, generateProblem, type Difficulty } from "./problems.ts";

export const SYSTEM_PROMPT =
  "Solve the math problem. Use the tools for the calculations: `calculator` evaluates an arithmetic expression, " +
  "`javascript` runs code (for loops, counting, or exact checks; variables do not persist between calls). " +
  "When you are done, reply without a tool call and give the final answer inside \\boxed{}, as a number only " +
  "(an integer, a decimal or a fraction such as 3/4).";

/** The system prompt of the `math-tools-python` variant (the `python` tool instead of `javascript`). */
export const PYTHON_SYSTEM_PROMPT =
  "Solve the math problem. Use the tools for the calculations: `calculator` evaluates an arithmetic expression, " +
  "`python` runs Python code (for loops, counting, or exact checks with fractions; variables do not persist between calls). " +
  "When you are done, reply without a tool call and give the final answer inside \\boxed{}, as a number only " +
  "(an integer, a decimal or a fraction such as 3/4).";

export const MAX_TURNS = 8;

function argsSchema(systemPrompt: string) {
  return z
    .object({
      difficulty: z
        .enum([...DIFFICULTIES, "mixed"])
        .default("mixed")
        .describe("Problem difficulty: easy (one or two integer steps), medium (fractions, percentages, multi-step word problems), hard (longer computations that reward code), or mixed (drawn per episode)."),
      system_prompt: z.string().nullable().default(systemPrompt).describe("The system prompt (null: none)."),
      faithful: z
        .boolean()
        .default(false)
        .describe("true: the old comparison (a relative tolerance of 1e-9 as soon as either side is a decimal), which pays a wrong integer written as a decimal; false: an integer or fraction answer is matched exactly."),
    })
    .strict();
}
const args = argsSchema(SYSTEM_PROMPT);

export type MathToolsArgs = z.output<typeof args>;

export interface MathToolsInfo {
  [key: string]: string;
  difficulty: Difficulty;
  kind: string;
}

/**
 * math-tools with `code: "javascript"` (the default environment) or `code: "python"` (the
 * `math-tools-python` variant: the `python` tool, Node only). Problems, answers and rubric are the
 * same; only the code tool and the system prompt's sentence about it differ.
 */
function createMathTools(code: "javascript" | "python") {
  const python = code === "python";
  return defineEnvironment({
    name: python ? "math-tools-python" : "math-tools",
    description: python
      ? "math-tools with a Python sandbox instead of JavaScript (Node only): problems from a seed, a calculator and a python tool; answer in \\boxed{}."
      : "Arithmetic and word problems from a seed, solved with a calculator and a JavaScript sandbox; answer in \\boxed{}.",
    version: "0.1.0",
    args: python ? argsSchema(PYTHON_SYSTEM_PROMPT) : args,
    generate: ({ rng, args: a }) => {
      const p = generateProblem(rng, a.difficulty);
      return {
        prompt: p.question,
        answer: p.answer,
        info: { difficulty: p.difficulty, kind: p.kind },
      };
    },
    systemPrompt: (a: MathToolsArgs) => a.system_prompt ?? undefined,
    maxTurns: MAX_TURNS,
    tools: [calculatorTool, python ? pythonTool : javascriptTool],
    rubric: [
      // Hardened by default (issue 39): an exact answer is matched exactly; `faithful` keeps the tolerance.
      { name: "correct_answer", weight: 1, fn: ({ completion, answer, args: a }) => gradeReply(lastAssistantText(completion), answer, { exactExpected: !a.faithful }) },
      { name: "boxed_answer", weight: 0, fn: ({ completion }) => extractFinalAnswer(lastAssistantText(completion), true) !== undefined },
    ],
  });
}

export default createMathTools("javascript");

/** The variant with the `python` tool (Node only: it needs `Services.python`). */
export const mathToolsPython = createMathTools("python");
