/**
 * math-tools: arithmetic and word problems generated from the episode seed, solved with tools.
 *
 * A tool environment in the spirit of verifiers' `math_python` (v0.1.3 ToolEnv variant): the model
 * has a `calculator` (a parser, no code runs) and a `javascript` sandbox (stateless: nothing
 * persists between calls) and gives its final answer in `\boxed{}`. The answer is read like
 * verifiers' `extract_boxed_answer` (last `\boxed{}`, the whole reply when there is none) and
 * compared numerically (src/math/math-answer.ts) with the exact answer.
 *
 * Rubric: `correct_answer` (1.0) and `boxed_answer` (0, a format metric), plus the automatic
 * tool metrics `num_turns`, `num_tool_calls`, `num_tool_errors`.
 */
import { z } from "zod";
import { defineEnvironment } from "../../src/env/environment.ts";
import { extractFinalAnswer, gradeReply, lastAssistantText } from "../../src/math/math-answer.ts";
import { calculatorTool } from "../../src/tools/calculator.ts";
import { javascriptTool } from "../../src/tools/javascript.ts";
import { DIFFICULTIES, generateProblem, type Difficulty } from "./problems.ts";

export const SYSTEM_PROMPT =
  "Solve the math problem. Use the tools for the calculations: `calculator` evaluates an arithmetic expression, " +
  "`javascript` runs code (for loops, counting, or exact checks; variables do not persist between calls). " +
  "When you are done, reply without a tool call and give the final answer inside \\boxed{}, as a number only " +
  "(an integer, a decimal or a fraction such as 3/4).";

export const MAX_TURNS = 8;

const args = z
  .object({
    difficulty: z
      .enum([...DIFFICULTIES, "mixed"])
      .default("mixed")
      .describe("Problem difficulty: easy (one or two integer steps), medium (fractions, percentages, multi-step word problems), hard (longer computations that reward code), or mixed (drawn per episode)."),
    system_prompt: z.string().nullable().default(SYSTEM_PROMPT).describe("The system prompt (null: none)."),
  })
  .strict();

export type MathToolsArgs = z.output<typeof args>;

export interface MathToolsInfo {
  [key: string]: string;
  difficulty: Difficulty;
  kind: string;
}

export default defineEnvironment({
  name: "math-tools",
  description: "Arithmetic and word problems from a seed, solved with a calculator and a JavaScript sandbox; answer in \\boxed{}.",
  version: "0.1.0",
  args,
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
  tools: [calculatorTool, javascriptTool],
  rubric: [
    { name: "correct_answer", weight: 1, fn: ({ completion, answer }) => gradeReply(lastAssistantText(completion), answer) },
    { name: "boxed_answer", weight: 0, fn: ({ completion }) => extractFinalAnswer(lastAssistantText(completion), true) !== undefined },
  ],
});
