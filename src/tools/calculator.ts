/**
 * The `calculator` tool: evaluate an arithmetic expression with the parser of
 * src/math/arith.ts (recursive descent, never eval/Function). The answer is the value as
 * people write it (at most 15 significant digits, so 0.1 + 0.2 gives 0.3); a syntax error or an
 * impossible operation (division by zero, the square root of a negative number) is a tool error.
 */
import { z } from "zod";
import { calculate, formatNumber, type EvalRules, type ParseOptions } from "../math/arith.ts";
import { defineTool, type Tool } from "../env/define-tool.ts";

export interface CalculatorToolOptions {
  /** Tool name (default "calculator"). */
  name?: string;
  /** What the parser accepts (default: everything, see arith.ts). */
  parse?: ParseOptions;
  /** How it evaluates (default: floating point). */
  rules?: EvalRules;
}

export const CALCULATOR_DESCRIPTION =
  "Evaluate an arithmetic expression and return its value. Supports numbers (3, 2.5, 1e6; no thousands separators), " +
  "+ - * / (also × ÷ −), ^ or ** for powers, % for modulo, parentheses, unary minus, the constants pi and e, and the functions " +
  "sqrt, abs, round(x) / round(x, digits), floor, ceil, min, max, log (base 10; log(x, base)), ln and exp. " +
  "Example: (3.5 + 2) * 4 ^ 2 / sqrt(16). Results are shown with up to 15 significant digits.";

export function createCalculatorTool(options: CalculatorToolOptions = {}): Tool {
  return defineTool({
    name: options.name ?? "calculator",
    description: CALCULATOR_DESCRIPTION,
    parameters: z.object({ expression: z.string().describe("The expression, e.g. (3.5 + 2) * 4 ^ 2 / sqrt(16)") }).strict(),
    timeoutMs: 1000,
    run({ expression }) {
      const r = calculate(expression, options.parse, options.rules);
      if (!r.ok) throw new Error(r.error);
      return formatNumber(r.value);
    },
  });
}

/** The `calculator` tool with every feature of the parser and floating-point evaluation. */
export const calculatorTool: Tool = createCalculatorTool();
