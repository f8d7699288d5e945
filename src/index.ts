/**
 * `envworker`: the environment author's API. Everything a module that default-exports
 * `defineEnvironment({...})` needs; serving is in `envworker/node` and `envworker/workers`, unit
 * testing in `envworker/testing`. What is not exported here (or there) is internal.
 */

// zod, re-exported: an environment's args schema and envworker then share one copy of zod.
export { z } from "zod";

// Defining environments and tools.
export {
  defineEnvironment,
  type EnvReply,
  type Environment,
  type EnvironmentSpec,
  type Example,
  type ExampleSource,
  type GenerateContext,
  type TurnContext,
} from "./env/environment.ts";
export { defineTool, type McpTool, type OpenAITool, type Tool, type ToolContext, type ToolSpec } from "./env/define-tool.ts";
export type { GroupRewardFunction, RewardFunction, RewardInput, RubricEntry, RubricScore } from "./env/rubric.ts";

// Judged rewards: a reward function asks the operator's judge model.
export {
  defineJudge,
  fillTemplate,
  JudgeError,
  JUDGE_REASON_MAX_CHARS,
  labelledValues,
  yesNoVerdict,
  type Judge,
  type JudgeErrorCode,
  type JudgeInput,
  type JudgeMessage,
  type JudgeReply,
  type JudgeRequest,
  type JudgeService,
  type JudgeSpec,
  type JudgeSummary,
} from "./env/judge.ts";
export type { Action, AssistantMessage, EnvMessage, JsonObject, JsonValue, Message, SystemMessage, ToolCall, ToolMessage, UserMessage } from "./env/messages.ts";
export type { Services } from "./env/services.ts";
export type { Observation, StepResult } from "./env/episode.ts";

// Reading the model's replies.
export { extractAllTags, extractTag, parseAnswer, stripThink } from "./env/parsers.ts";

// CPython-identical helpers: the seeded generator and difflib's ratio.
export { PyRandom } from "./pycompat/random.ts";
export { codePointPrefix, matchingBlocks, SequenceMatcher, sequenceRatio } from "./pycompat/difflib.ts";

// Math answers and arithmetic.
export {
  answersMatch,
  extractBoxedAnswer,
  extractFinalAnswer,
  gradeReply,
  lastAssistantText,
  lastBoxed,
  parseNumericAnswer,
  type CompareOptions,
  type GradeOptions,
  type NumericAnswer,
} from "./env/math-answer.ts";
export { calculate, type EvalResult as ArithResult, type ParseOptions as ArithOptions } from "./math/arith.ts";
// The arithmetic parser and evaluator (countdown's rules are options of it), and exact rationals.
export * as arith from "./math/arith.ts";
export * as rational from "./math/rational.ts";

// Built-in tools, and the sandbox they (and code rewards) run in.
export { calculatorTool, createCalculatorTool, createJavascriptTool, javascriptTool, type CalculatorToolOptions, type JavascriptToolOptions } from "./tools/builtin.ts";
export { createPythonTool, pythonTool } from "./tools/python.ts";
export type { RunOptions, RunResult, Sandbox } from "./sandbox/types.ts";
// TypeScript to JavaScript (types stripped), as the sandbox does with TypeScript input.
export { stripTypes } from "./sandbox/typescript.ts";
