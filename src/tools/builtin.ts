/**
 * Built-in tools environments can offer as they are (or configure with the factories):
 *
 * | tool         | needs        | what it does                                                    |
 * | ------------ | ------------ | --------------------------------------------------------------- |
 * | `javascript` | `ctx.sandbox`| runs JavaScript/TypeScript in the sandbox (javascript.ts)       |
 * | `calculator` | nothing      | evaluates arithmetic with a parser, never eval (calculator.ts)  |
 */
import { calculatorTool } from "./calculator.ts";
import { javascriptTool } from "./javascript.ts";
import type { Tool } from "../env/define-tool.ts";

export { calculatorTool, createCalculatorTool, CALCULATOR_DESCRIPTION, type CalculatorToolOptions } from "./calculator.ts";
export { createJavascriptTool, javascriptTool, JAVASCRIPT_DEFAULTS, type JavascriptToolOptions } from "./javascript.ts";

/** Every built-in tool by name, with default settings. */
export const builtinTools: Readonly<Record<"javascript" | "calculator", Tool>> = Object.freeze({
  javascript: javascriptTool,
  calculator: calculatorTool,
});
