/**
 * A general arithmetic-expression parser and evaluator: recursive descent to an AST, then a tree
 * walk. It never executes code (no `eval`, no `Function`), so it is safe on any input: the input
 * length and the nesting depth are bounded, and every failure is a value or an `ArithSyntaxError`.
 *
 * Grammar (whitespace is allowed between tokens; features marked [opt] can be switched off with
 * `ParseOptions`):
 *
 *   expr    := term (("+" | "-") term)*                         left-associative
 *   term    := unary (("*" | "/" | "%") unary)*                 left-associative; "%" [opt modulo]
 *   unary   := ("-" | "+") unary | power                        [opt unary]
 *   power   := primary (("^" | "**") unary)?                    right-associative [opt power]
 *   primary := NUMBER | CONSTANT | FUNCTION "(" expr ("," expr)* ")" | "(" expr ")"
 *   NUMBER  := DIGITS ("." DIGITS?)? EXP? | "." DIGITS EXP?      decimals and EXP [opt decimals]
 *   EXP     := ("e" | "E") ("+" | "-")? DIGITS
 *   DIGITS  := [0-9]+                                            no thousands separators
 *   CONSTANT:= "pi" | "π" | "e"                                 [opt constants]
 *   FUNCTION:= sqrt | abs | round | floor | ceil | min | max | log | ln | exp   [opt functions]
 *
 * Because unary minus sits above `power`, `-2^2` is `-(2^2)` = -4 (the mathematical reading) and
 * `2^-1` is 0.5; `2^3^2` is `2^(3^2)` = 512. `%` is the modulo operator (never a percent sign).
 *
 * Operator spellings: `-` or `−` (U+2212); `*`, `×`, `·`, `⋅`; `/`, `÷`; `^` or `**`.
 * Identifiers are case-insensitive (`PI`, `Sqrt`). `π` is pi.
 *
 * Functions: `sqrt(x)`, `abs(x)`, `round(x)` (half away from zero) or `round(x, digits)`,
 * `floor(x)`, `ceil(x)`, `min(a, ...)`, `max(a, ...)`, `log(x)` (base 10) or `log(x, base)`,
 * `ln(x)` (natural), `exp(x)`.
 *
 * Evaluation (`EvalRules`) is in doubles by default; `integer: true` gives exact integer
 * arithmetic (division must be exact, results must be safe integers), and
 * `positiveIntermediates` rejects any step whose result is not > 0 — together with options that
 * disable decimals, unary signs, powers, modulo, functions and constants (and `operators` to
 * narrow the accepted spellings), that is the numbers game of Countdown (envs/countdown).
 */

export type BinaryOp = "+" | "-" | "*" | "/" | "%" | "^";
export type FunctionName = "sqrt" | "abs" | "round" | "floor" | "ceil" | "min" | "max" | "log" | "ln" | "exp";
export type ConstantName = "pi" | "e";

export type ArithNode =
  | { kind: "num"; value: number; text: string }
  | { kind: "const"; name: ConstantName }
  | { kind: "neg"; arg: ArithNode }
  | { kind: "bin"; op: BinaryOp; left: ArithNode; right: ArithNode }
  | { kind: "call"; name: FunctionName; args: ArithNode[] };

export interface ParseOptions {
  /** Decimal points and exponent notation in numbers (`1.5`, `.5`, `2e3`). Default true. */
  decimals?: boolean;
  /** Unary `-` and `+`. Default true. */
  unary?: boolean;
  /** `^` and `**`. Default true. */
  power?: boolean;
  /** `%` (modulo). Default true. */
  modulo?: boolean;
  /** Function calls: true (all), false (none) or the names allowed. Default true. */
  functions?: boolean | readonly FunctionName[];
  /** `pi`/`π` and `e`. Default true. */
  constants?: boolean;
  /**
   * The single characters read as binary operators (`+` and `-` also as unary signs), and which
   * operator each one spells. Any other character is an "unexpected character" error. Default
   * `OPERATORS` (every spelling listed in the module doc). `**` is always read as a power.
   */
  operators?: Readonly<Record<string, BinaryOp>>;
  /** Longest input in characters. Default 1000. */
  maxLength?: number;
  /** Deepest nesting (parentheses, unary signs, powers, calls). Default 64. */
  maxDepth?: number;
}

export const DEFAULT_MAX_LENGTH = 1000;
export const DEFAULT_MAX_DEPTH = 64;

/** Arity of each function: [min, max] arguments. */
export const FUNCTIONS: Readonly<Record<FunctionName, readonly [number, number]>> = {
  sqrt: [1, 1],
  abs: [1, 1],
  round: [1, 2],
  floor: [1, 1],
  ceil: [1, 1],
  min: [1, 64],
  max: [1, 64],
  log: [1, 2],
  ln: [1, 1],
  exp: [1, 1],
};

export class ArithSyntaxError extends Error {
  constructor(
    readonly reason: string,
    readonly position: number,
  ) {
    super(`${reason} at position ${position}`);
    this.name = "ArithSyntaxError";
  }
}

/** Every operator spelling the parser knows (the default of `ParseOptions.operators`). */
export const OPERATORS: Readonly<Record<string, BinaryOp>> = {
  "+": "+",
  "-": "-",
  "\u2212": "-",
  "*": "*",
  "\u00d7": "*",
  "\u00b7": "*",
  "\u22c5": "*",
  "/": "/",
  "\u00f7": "/",
  "%": "%",
  "^": "^",
};

type Token =
  | { type: "num"; value: number; text: string; pos: number }
  | { type: "op"; op: BinaryOp; text: string; pos: number }
  | { type: "ident"; name: string; pos: number }
  | { type: "(" | ")" | "," | "end"; pos: number };

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9";
const isLetter = (c: string | undefined): boolean => c !== undefined && /[A-Za-z_\u03c0]/.test(c);

function tokenize(src: string, decimals: boolean, operators: Readonly<Record<string, BinaryOp>>): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (isDigit(c) || (c === "." && isDigit(src[i + 1]))) {
      const start = i;
      while (isDigit(src[i])) i++;
      if (src[i] === ".") {
        if (!decimals) throw new ArithSyntaxError("decimal numbers are not allowed", i);
        i++;
        while (isDigit(src[i])) i++;
      }
      if ((src[i] === "e" || src[i] === "E") && decimals) {
        // Exponent notation only when digits follow: "2e" and "2e+" are not numbers.
        let j = i + 1;
        if (src[j] === "+" || src[j] === "-") j++;
        if (isDigit(src[j])) {
          while (isDigit(src[j])) j++;
          i = j;
        }
      }
      const text = src.slice(start, i);
      const value = Number(text);
      if (!Number.isFinite(value)) throw new ArithSyntaxError("number too large", start);
      if (!decimals && !Number.isSafeInteger(value)) throw new ArithSyntaxError("number too large", start);
      tokens.push({ type: "num", value, text, pos: start });
      continue;
    }
    if (isLetter(c)) {
      const start = i;
      while (isLetter(src[i]) || isDigit(src[i])) i++;
      tokens.push({ type: "ident", name: src.slice(start, i).toLowerCase(), pos: start });
      continue;
    }
    if (c === "*" && src[i + 1] === "*") {
      tokens.push({ type: "op", op: "^", text: "**", pos: i });
      i += 2;
      continue;
    }
    const op = Object.hasOwn(operators, c) ? operators[c] : undefined;
    if (op) {
      tokens.push({ type: "op", op, text: c, pos: i });
      i++;
      continue;
    }
    if (c === "(" || c === ")" || c === ",") {
      tokens.push({ type: c, pos: i });
      i++;
      continue;
    }
    throw new ArithSyntaxError(`unexpected character ${JSON.stringify(c)}`, i);
  }
  tokens.push({ type: "end", pos: src.length });
  return tokens;
}

function describe(t: Token): string {
  switch (t.type) {
    case "num":
      return `number ${t.text}`;
    case "op":
      return `'${t.text}'`;
    case "ident":
      return `'${t.name}'`;
    case "end":
      return "end of expression";
    default:
      return `'${t.type}'`;
  }
}

/** Parse an expression (see the module grammar). Throws `ArithSyntaxError`. */
export function parse(src: string, options: ParseOptions = {}): ArithNode {
  const decimals = options.decimals ?? true;
  const unary = options.unary ?? true;
  const power = options.power ?? true;
  const modulo = options.modulo ?? true;
  const constants = options.constants ?? true;
  const fnOption = options.functions ?? true;
  const allowedFunctions = new Set<string>(fnOption === true ? Object.keys(FUNCTIONS) : fnOption === false ? [] : fnOption);
  const maxLength = options.maxLength ?? DEFAULT_MAX_LENGTH;
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  const operators = options.operators ?? OPERATORS;

  if (typeof src !== "string") throw new ArithSyntaxError("the expression must be a string", 0);
  if (src.length > maxLength) throw new ArithSyntaxError(`expression longer than ${maxLength} characters`, maxLength);
  const tokens = tokenize(src, decimals, operators);
  let k = 0;
  let depth = 0;
  const peek = (): Token => tokens[k]!;
  const enter = (pos: number) => {
    if (++depth > maxDepth) throw new ArithSyntaxError(`expression nested deeper than ${maxDepth} levels`, pos);
  };

  /** A comma where no argument list is open: most likely a thousands separator. */
  const commaHint = (t: Token): string => (t.type === "," ? " (commas only separate function arguments: write 1234, not 1,234)" : "");

  function expect(type: ")", what: string): void {
    const t = peek();
    if (t.type !== type) throw new ArithSyntaxError(`expected ${what}, found ${describe(t)}${commaHint(t)}`, t.pos);
    k++;
  }

  function primary(): ArithNode {
    const t = peek();
    if (t.type === "num") {
      k++;
      return { kind: "num", value: t.value, text: t.text };
    }
    if (t.type === "(") {
      k++;
      enter(t.pos);
      const e = expr();
      expect(")", "')'");
      depth--;
      return e;
    }
    if (t.type === "ident") {
      k++;
      const name = t.name === "\u03c0" ? "pi" : t.name;
      if (peek().type === "(") {
        if (!(name in FUNCTIONS)) throw new ArithSyntaxError(`unknown function '${t.name}'`, t.pos);
        if (!allowedFunctions.has(name)) throw new ArithSyntaxError(`function '${name}' is not allowed`, t.pos);
        const open = peek();
        k++;
        enter(open.pos);
        const args: ArithNode[] = [expr()];
        while (peek().type === ",") {
          k++;
          args.push(expr());
        }
        const close = peek();
        if (close.type !== ")") throw new ArithSyntaxError(`expected ')' or ',', found ${describe(close)}`, close.pos);
        k++;
        depth--;
        const [min, max] = FUNCTIONS[name as FunctionName];
        if (args.length < min || args.length > max) {
          const want = min === max ? `${min}` : max >= 64 ? `at least ${min}` : `${min} or ${max}`;
          throw new ArithSyntaxError(`${name} takes ${want} argument${want === "1" ? "" : "s"}, got ${args.length}`, t.pos);
        }
        return { kind: "call", name: name as FunctionName, args };
      }
      if (name === "pi" || name === "e") {
        if (!constants) throw new ArithSyntaxError(`constant '${name}' is not allowed`, t.pos);
        return { kind: "const", name };
      }
      if (name in FUNCTIONS) throw new ArithSyntaxError(`expected '(' after ${name}`, peek().pos);
      throw new ArithSyntaxError(`unknown name '${t.name}'`, t.pos);
    }
    if (t.type === "op" && (t.op === "-" || t.op === "+")) throw new ArithSyntaxError(`unary ${t.text} is not allowed`, t.pos);
    if (t.type === "end") throw new ArithSyntaxError("unexpected end of expression", t.pos);
    throw new ArithSyntaxError(`unexpected ${describe(t)}`, t.pos);
  }

  function powerExpr(): ArithNode {
    const base = primary();
    const t = peek();
    if (t.type === "op" && t.op === "^") {
      if (!power) throw new ArithSyntaxError(`'${t.text}' is not allowed`, t.pos);
      k++;
      enter(t.pos);
      const exponent = unaryExpr(); // right-associative, and "2^-1" is allowed
      depth--;
      return { kind: "bin", op: "^", left: base, right: exponent };
    }
    return base;
  }

  function unaryExpr(): ArithNode {
    const t = peek();
    if (unary && t.type === "op" && (t.op === "-" || t.op === "+")) {
      k++;
      enter(t.pos);
      const arg = unaryExpr();
      depth--;
      return t.op === "-" ? { kind: "neg", arg } : arg;
    }
    return powerExpr();
  }

  function term(): ArithNode {
    let left = unaryExpr();
    for (let t = peek(); t.type === "op" && (t.op === "*" || t.op === "/" || t.op === "%"); t = peek()) {
      if (t.op === "%" && !modulo) throw new ArithSyntaxError("'%' is not allowed", t.pos);
      k++;
      left = { kind: "bin", op: t.op, left, right: unaryExpr() };
    }
    return left;
  }

  function expr(): ArithNode {
    let left = term();
    for (let t = peek(); t.type === "op" && (t.op === "+" || t.op === "-"); t = peek()) {
      k++;
      left = { kind: "bin", op: t.op, left, right: term() };
    }
    return left;
  }

  const e = expr();
  const rest = peek();
  if (rest.type !== "end") throw new ArithSyntaxError(`unexpected ${describe(rest)}${commaHint(rest)}`, rest.pos);
  return e;
}

export interface EvalRules {
  /**
   * Exact integer arithmetic: a division must leave no remainder, a power needs a non-negative
   * integer exponent, every value must be a safe integer (|x| < 2^53), and constants and the
   * functions sqrt/log/ln/exp are refused. Default false (double-precision floats).
   */
  integer?: boolean;
  /** Every intermediate (and the final) result of an operator must be > 0. Default false. */
  positiveIntermediates?: boolean;
}

export type EvalResult = { ok: true; value: number } | { ok: false; error: string };

class EvalError extends Error {}

/** `round(x)` half away from zero; `round(x, d)` to d decimal places (d an integer in [-15, 15]). */
function roundHalfAway(x: number, digits = 0): number {
  if (!Number.isInteger(digits) || digits < -15 || digits > 15) throw new EvalError("round: digits must be an integer between -15 and 15");
  if (digits === 0) return Math.sign(x) * Math.round(Math.abs(x));
  const abs = Math.abs(x);
  if (String(abs).includes("e")) return Math.sign(x) * (Math.round(abs * 10 ** digits) / 10 ** digits);
  // Go through the decimal string so that round(1.005, 2) is 1.01 as written, not 1.00.
  const shifted = Number(`${abs}e${digits}`);
  if (!(shifted < 1e21)) return x; // already more precise than 15 significant digits can show
  return Math.sign(x) * Number(`${Math.round(shifted)}e${-digits}`);
}

/**
 * Evaluate an AST. Errors (division by zero, a non-exact integer division, a negative square
 * root, an overflow, a rule broken) come back as `{ok: false, error}` with a readable message.
 */
export function evaluate(ast: ArithNode, rules: EvalRules = {}): EvalResult {
  const integer = rules.integer ?? false;
  const positive = rules.positiveIntermediates ?? false;
  // Numbers in messages: exact in integer arithmetic (a safe integer can have 16 digits), else
  // without float noise.
  const fmt = integer ? (x: number): string => String(x) : formatNumber;

  function check(v: number, what: () => string): number {
    if (Number.isNaN(v)) throw new EvalError(`${what()} is not a number`);
    if (!Number.isFinite(v)) throw new EvalError(`${what()} overflows`);
    if (integer && !Number.isSafeInteger(v)) throw new EvalError(Number.isInteger(v) ? "result too large" : `${what()} is not a whole number`);
    if (Object.is(v, -0)) return 0;
    return v;
  }

  function binary(op: BinaryOp, a: number, b: number): number {
    switch (op) {
      case "+":
        return a + b;
      case "-":
        return a - b;
      case "*":
        return a * b;
      case "/":
        if (b === 0) throw new EvalError("division by zero");
        if (integer && a % b !== 0) throw new EvalError(`${fmt(a)} / ${fmt(b)} is not exact`);
        return a / b;
      case "%":
        if (b === 0) throw new EvalError("modulo by zero");
        // Floored modulo: the result has the sign of the divisor (as in Python and mathematics).
        return a - b * Math.floor(a / b);
      case "^":
        if (integer && !(Number.isInteger(b) && b >= 0)) throw new EvalError("a power needs a non-negative whole exponent");
        if (a === 0 && b < 0) throw new EvalError("division by zero");
        if (a < 0 && !Number.isInteger(b)) throw new EvalError(`${fmt(a)} ^ ${fmt(b)} is not a real number`);
        return a ** b;
    }
  }

  function call(name: FunctionName, xs: number[]): number {
    const x = xs[0]!;
    if (integer && (name === "sqrt" || name === "log" || name === "ln" || name === "exp")) {
      throw new EvalError(`${name} is not allowed in integer arithmetic`);
    }
    switch (name) {
      case "sqrt":
        if (x < 0) throw new EvalError("square root of a negative number");
        return Math.sqrt(x);
      case "abs":
        return Math.abs(x);
      case "round":
        return roundHalfAway(x, xs[1]);
      case "floor":
        return Math.floor(x);
      case "ceil":
        return Math.ceil(x);
      case "min":
        return Math.min(...xs);
      case "max":
        return Math.max(...xs);
      case "log": {
        if (x <= 0) throw new EvalError("logarithm of a number that is not positive");
        if (xs.length === 1) return Math.log10(x);
        const base = xs[1]!;
        if (base <= 0 || base === 1) throw new EvalError("logarithm base must be positive and not 1");
        return Math.log(x) / Math.log(base);
      }
      case "ln":
        if (x <= 0) throw new EvalError("logarithm of a number that is not positive");
        return Math.log(x);
      case "exp":
        return Math.exp(x);
    }
  }

  function go(node: ArithNode): number {
    switch (node.kind) {
      case "num":
        return check(node.value, () => node.text);
      case "const":
        if (integer) throw new EvalError(`constant ${node.name} is not allowed in integer arithmetic`);
        return node.name === "pi" ? Math.PI : Math.E;
      case "neg": {
        const v = check(-go(node.arg), () => "negation");
        if (positive && v <= 0) throw new EvalError(`-(${fmt(-v)}) = ${fmt(v)} is not positive`);
        return v;
      }
      case "bin": {
        const a = go(node.left);
        const b = go(node.right);
        const v = check(binary(node.op, a, b), () => `${fmt(a)} ${node.op} ${fmt(b)}`);
        if (positive && v <= 0) throw new EvalError(`${fmt(a)} ${node.op} ${fmt(b)} = ${fmt(v)} is not positive`);
        return v;
      }
      case "call": {
        const xs = node.args.map(go);
        const v = check(call(node.name, xs), () => `${node.name}(${xs.map(fmt).join(", ")})`);
        if (positive && v <= 0) throw new EvalError(`${node.name}(${xs.map(fmt).join(", ")}) = ${fmt(v)} is not positive`);
        return v;
      }
    }
  }

  try {
    return { ok: true, value: go(ast) };
  } catch (err) {
    if (err instanceof EvalError) return { ok: false, error: err.message };
    if (err instanceof RangeError) return { ok: false, error: "expression too deep" };
    throw err;
  }
}

/** Parse and evaluate in one go; a syntax error comes back as `{ok: false}` too. */
export function calculate(src: string, options: ParseOptions = {}, rules: EvalRules = {}): EvalResult {
  let ast: ArithNode;
  try {
    ast = parse(src, options);
  } catch (err) {
    if (err instanceof ArithSyntaxError) return { ok: false, error: `syntax error: ${err.message}` };
    throw err;
  }
  return evaluate(ast, rules);
}

/**
 * A number as people write it: at most 15 significant digits, so float noise disappears
 * (0.1 + 0.2 → "0.3"), integers in full up to 1e21, exponent notation beyond.
 */
export function formatNumber(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (Object.is(x, -0) || x === 0) return "0";
  const rounded = Number(x.toPrecision(15));
  return String(rounded);
}

/** The number literals of an expression, left to right. */
export function literals(ast: ArithNode): number[] {
  switch (ast.kind) {
    case "num":
      return [ast.value];
    case "const":
      return [];
    case "neg":
      return literals(ast.arg);
    case "bin":
      return [...literals(ast.left), ...literals(ast.right)];
    case "call":
      return ast.args.flatMap(literals);
  }
}

const PREC: Record<BinaryOp, number> = { "+": 1, "-": 1, "*": 2, "/": 2, "%": 2, "^": 4 };
const NEG_PREC = 3;

function precedence(node: ArithNode): number {
  if (node.kind === "bin") return PREC[node.op];
  if (node.kind === "neg") return NEG_PREC;
  return 5;
}

/**
 * Render with the fewest parentheses that keep the tree, so that `parse(render(ast))` gives the
 * same tree back (with ASCII operators: `+ - * / % ^`).
 */
export function render(ast: ArithNode): string {
  switch (ast.kind) {
    case "num":
      return ast.text;
    case "const":
      return ast.name;
    case "call":
      return `${ast.name}(${ast.args.map(render).join(", ")})`;
    case "neg": {
      const inner = render(ast.arg);
      // -(2^2) is "-2 ^ 2"; keep parentheses for anything that binds looser than a power.
      return precedence(ast.arg) >= PREC["^"] ? `-${inner}` : `-(${inner})`;
    }
    case "bin": {
      const p = PREC[ast.op];
      const left = render(ast.left);
      const right = render(ast.right);
      if (ast.op === "^") {
        // Left operand: only a primary may stand there unparenthesised (a power binds right).
        const l = precedence(ast.left) > PREC["^"] ? left : `(${left})`;
        // Right operand: a unary or a power is fine ("2 ^ -1", "2 ^ 3 ^ 2").
        const r = precedence(ast.right) >= NEG_PREC ? right : `(${right})`;
        return `${l} ^ ${r}`;
      }
      const l = precedence(ast.left) < p ? `(${left})` : left;
      const r = precedence(ast.right) <= p ? `(${right})` : right;
      return `${l} ${ast.op} ${r}`;
    }
  }
}
