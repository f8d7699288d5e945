/**
 * Numeric answer checking for math environments: find the final answer in a reply
 * (`\boxed{...}`, as verifiers' `extract_boxed_answer`), read the number a person or a model
 * writes (fractions, LaTeX, thousands separators, percent signs, units) and compare numerically.
 *
 * Reading a number (`parseNumericAnswer`), after normalisation:
 * - wrappers are dropped: `$…$`, `\(…\)`, `\[…\]`, `\displaystyle`, `\left`/`\right`, spacing
 *   (`\!`, `\,`, `\;`, `\:`, `\ `, `~`, `\quad`), `\text{…}`/`\mathrm{…}`/`\textbf{…}`/`\mbox{…}`
 *   (their content is kept), currency signs (`\$`, `$`, `€`, `£`), outer parentheses;
 * - `x = 5`, `2 + 3 = 5` and `\pi \approx 3.14` are read as what follows the last `=`/`\approx`;
 * - a trailing unit made of letters (`12 apples`, `5\text{ cm}`, `3.5 km.`) is ignored (but not
 *   `pi`, `e`, `i`, `x`, ...: `2 pi` is not a number);
 * - numbers: `42`, `-3.5`, `.5`, `1e-3`, `1.5 \times 10^{3}`, `1,234,567` (commas only in groups
 *   of three), `1{,}234`;
 * - fractions: `3/4`, `-3/4`, `\frac{3}{4}`, `\dfrac`, `\tfrac`, `\frac34`, `-\frac{3}{4}`,
 *   `\frac{-3}{4}`, mixed numbers `2 1/2` and `2\frac{1}{2}` (= 5/2);
 * - a percent sign (`25%`, `25\%`) is allowed: see `numericEqual`.
 * Every number is read exactly, as a rational with BigInt numerator and denominator.
 *
 * Comparing (`numericEqual`): when both sides are written as integers or fractions the rationals
 * must be equal exactly; otherwise (a decimal on either side) the doubles must agree within a
 * relative tolerance of 1e-9 (absolute 1e-12 near zero). A side written with a percent sign may
 * mean either its number or a hundredth of it: `25%` equals both `25` and `0.25`.
 *
 * Matching a prediction to an expected answer (`answersMatch`, `gradeReply`): an expected answer
 * written exactly (an integer or a fraction) is compared exactly, whatever the prediction's form:
 * `42.0` and `4.2e1` equal 42, `2870166075540.0` does not equal 2870166078123 (a tolerance of 1e-9
 * would pay a wrong integer written as a decimal, issue 39). `exactExpected: false` restores the
 * symmetric rule above (math-tools' `faithful: true`).
 */
import type { Message } from "./messages.ts";
import { add, div, equal, mul, neg, rational, toNumber, type Rational } from "../math/rational.ts";
import { stripThink } from "./parsers.ts";

// --- extraction --------------------------------------------------------------------------------

const BOXED = "\\boxed{";

/** Index just past the brace that closes the one opened before `start`, or -1. */
function matchingBrace(s: string, start: number): number {
  let depth = 1;
  for (let i = start; i < s.length; i++) {
    const c = s[i];
    if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return i;
  }
  return -1;
}

/**
 * The content of the last `\boxed{...}` (braces balanced), or undefined when there is none or it
 * is not closed.
 */
export function lastBoxed(text: string): string | undefined {
  const start = text.lastIndexOf(BOXED);
  if (start === -1) return undefined;
  const from = start + BOXED.length;
  const end = matchingBrace(text, from);
  return end === -1 ? undefined : text.slice(from, end);
}

/**
 * verifiers' `extract_boxed_answer`: the content of the last `\boxed{...}`; the whole text when
 * there is no `\boxed{` or its braces do not close.
 */
export function extractBoxedAnswer(text: string): string {
  return lastBoxed(text) ?? text;
}

// --- reading numbers ---------------------------------------------------------------------------

export interface NumericAnswer {
  /** The exact value of what was written (a percent sign is not applied: `25%` is 25). */
  exact: Rational;
  /** The same as a double. */
  value: number;
  /** How it was written: `integer` (42, 1,234), `fraction` (3/4, \frac{3}{4}, 2 1/2) or `decimal` (0.75, 1e3). */
  form: "integer" | "fraction" | "decimal";
  /** Written with a percent sign. */
  percent: boolean;
}

/** Longest text read as a number: longer inputs are not answers. */
const MAX_ANSWER_LENGTH = 2000;
/** Largest decimal exponent accepted (1e400 is read exactly, 1e100000 is not read). */
const MAX_EXPONENT = 1000;

const UNSIGNED = String.raw`(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+`;
const DECIMAL_RE = new RegExp(String.raw`^(${UNSIGNED})(?:[eE]([+-]?\d+))?$`);
const SCI_RE = new RegExp(String.raw`^(${UNSIGNED})\s*(?:\*|×|\\times|\\cdot)\s*10\s*\^\s*\{?\s*([+-]?\d+)\s*\}?$`);

/** An unsigned decimal (with optional exponent) to an exact rational. */
function readUnsigned(text: string): { r: Rational; decimal: boolean } | undefined {
  const t = text.trim();
  const m = DECIMAL_RE.exec(t) ?? SCI_RE.exec(t);
  if (!m) return undefined;
  const body = m[1]!.replace(/,/g, "");
  const exponent = m[2] === undefined ? 0 : Number(m[2]);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > MAX_EXPONENT) return undefined;
  const [intPart = "", fracPart = ""] = body.split(".");
  const digits = BigInt((intPart + fracPart).replace(/^0+(?=\d)/, "") || "0");
  let r = rational(digits, 10n ** BigInt(fracPart.length));
  if (exponent > 0) r = mul(r, rational(10n ** BigInt(exponent)));
  if (exponent < 0) r = div(r, rational(10n ** BigInt(-exponent)));
  return { r, decimal: body.includes(".") || m[2] !== undefined };
}

/** A signed decimal: leading `-`, `+` or `−`. */
function readSigned(text: string): { r: Rational; decimal: boolean } | undefined {
  const t = text.trim();
  const sign = /^[-+\u2212]/.exec(t);
  const u = readUnsigned(sign ? t.slice(1) : t);
  if (!u) return undefined;
  return sign && sign[0] !== "+" ? { r: neg(u.r), decimal: u.decimal } : u;
}

/** Replace `\cmd{content}` (innermost first) by ` content `. */
function unwrapCommands(s: string, names: readonly string[]): string {
  const re = new RegExp(String.raw`\\(?:${names.join("|")})\s*\{([^{}]*)\}`, "g");
  for (let i = 0; i < 10; i++) {
    const next = s.replace(re, " $1 ");
    if (next === s) break;
    s = next;
  }
  return s;
}

/** LaTeX and prose wrappers off, spacing normalised (see the module comment). */
export function normalizeAnswerText(text: string): string {
  let s = text.trim();
  s = s.replace(/^\\\(|\\\)$/g, "").replace(/^\\\[|\\\]$/g, "");
  s = s.replace(/\\displaystyle|\\left|\\right/g, "");
  s = unwrapCommands(s, ["text", "textbf", "textit", "textrm", "mathrm", "mathbf", "mathit", "mbox", "operatorname", "boxed"]);
  s = s.replace(/\{,\}/g, ",");
  s = s.replace(/\\[!,;: ]|\\q?quad\b|~/g, "");
  s = s.replace(/\\%/g, "%").replace(/\\\$/g, "").replace(/[$€£]/g, "");
  s = s.replace(/\s+/g, " ").trim();
  // "x = 5", "2 + 3 = 5", "\pi \approx 3.14": the value is what follows the last relation.
  // (Found with lastIndexOf: a regex with a negative lookahead for "no later relation" is
  // quadratic in the number of "=" signs.)
  const after = Math.max(...["=", "\\approx", "\u2248"].map((r) => {
    const i = s.lastIndexOf(r);
    return i === -1 ? -1 : i + r.length;
  }));
  if (after !== -1) s = s.slice(after).trim();
  return s;
}

const FRAC_RE = /^\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}$/;
const FRAC_SHORT_RE = /^\\[dt]?frac\s*(\d)\s*(\d)$/;
const MIXED_LATEX_RE = /^(\d+)\s*\\[dt]?frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}$/;
const MIXED_RE = /^(\d+) (\d+)\s*\/\s*(\d+)$/;

/** The core value without sign handling of the whole (fractions read their own signs). */
function readCore(s: string): { r: Rational; form: NumericAnswer["form"] } | undefined {
  let m = FRAC_RE.exec(s);
  if (m) {
    const a = readSigned(m[1]!);
    const b = readSigned(m[2]!);
    if (!a || !b || b.r.num === 0n) return undefined;
    return { r: div(a.r, b.r), form: a.decimal || b.decimal ? "decimal" : "fraction" };
  }
  m = FRAC_SHORT_RE.exec(s);
  if (m) {
    if (m[2] === "0") return undefined;
    return { r: rational(BigInt(m[1]!), BigInt(m[2]!)), form: "fraction" };
  }
  m = MIXED_LATEX_RE.exec(s) ?? MIXED_RE.exec(s);
  if (m) {
    const den = BigInt(m[3]!);
    if (den === 0n) return undefined;
    return { r: add(rational(BigInt(m[1]!)), rational(BigInt(m[2]!), den)), form: "fraction" };
  }
  const slash = s.indexOf("/");
  if (slash !== -1) {
    const a = readSigned(s.slice(0, slash));
    const b = readSigned(s.slice(slash + 1));
    if (!a || !b || b.r.num === 0n) return undefined;
    return { r: div(a.r, b.r), form: a.decimal || b.decimal ? "decimal" : "fraction" };
  }
  const d = readSigned(s);
  if (!d) return undefined;
  return { r: d.r, form: d.decimal ? "decimal" : "integer" };
}

function readValue(s: string): { r: Rational; form: NumericAnswer["form"]; percent: boolean } | undefined {
  s = s.trim();
  // Outer parentheses: "(3/4)", "-(3/4)".
  let negate = false;
  for (let i = 0; i < 4; i++) {
    const m = /^([-+\u2212]?)\s*\((.*)\)$/.exec(s);
    if (!m || m[2]!.includes("(")) break;
    if (m[1] === "-" || m[1] === "\u2212") negate = !negate;
    s = m[2]!.trim();
  }
  let percent = false;
  if (s.endsWith("%")) {
    percent = true;
    s = s.slice(0, -1).trim();
  }
  // A sign in front of a LaTeX fraction or a mixed number: "-\frac{3}{4}", "-2 1/2".
  const sign = /^([-+\u2212])\s*(?=\\|\d+ \d)/.exec(s);
  if (sign) {
    s = s.slice(sign[0].length);
    if (sign[1] !== "+") negate = !negate;
  }
  const core = readCore(s);
  if (!core) return undefined;
  return { r: negate ? neg(core.r) : core.r, form: core.form, percent };
}

/** Trailing words that are mathematics, not units: "2 pi" is not 2. */
const NOT_UNITS = new Set(["pi", "e", "i", "x", "y", "z", "n", "k", "sqrt", "inf", "infinity"]);

/**
 * Read a numeric answer (see the module comment); undefined when the text is not a single number.
 */
export function parseNumericAnswer(text: string): NumericAnswer | undefined {
  if (text.length > MAX_ANSWER_LENGTH) return undefined;
  let s = normalizeAnswerText(text);
  let v = readValue(s.replace(/\.$/, ""));
  if (!v) {
    // A trailing unit: letters (and spaces/dots between words) after the number.
    const m = /^(.*?[\d}%)])\s*([A-Za-z][A-Za-z .]*)$/.exec(s);
    if (m && m[1] !== undefined && !NOT_UNITS.has(m[2]!.trim().toLowerCase())) {
      s = m[1];
      v = readValue(s);
    }
  }
  if (!v) return undefined;
  return { exact: v.r, value: toNumber(v.r), form: v.form, percent: v.percent };
}

// --- comparing ---------------------------------------------------------------------------------

export interface CompareOptions {
  /** Relative tolerance for decimals (default 1e-9). */
  relTol?: number;
  /** Absolute tolerance, for values near zero (default 1e-12). */
  absTol?: number;
  /**
   * `answersMatch` only: an expected answer written as an integer or a fraction is matched exactly,
   * so the tolerances apply only when the expected answer is itself a decimal (default true).
   * false: they apply as soon as either side is a decimal.
   */
  exactExpected?: boolean;
}

const HUNDRED: Rational = { num: 100n, den: 1n };

function readings(a: NumericAnswer): Rational[] {
  return a.percent ? [a.exact, div(a.exact, HUNDRED)] : [a.exact];
}

/** Numeric equality of two read answers (see the module comment). */
export function numericEqual(a: NumericAnswer, b: NumericAnswer, options: CompareOptions = {}): boolean {
  return equalReadings(a, b, a.form !== "decimal" && b.form !== "decimal", options);
}

/** Some reading of `a` equals some reading of `b`: exactly when `exact`, else within the tolerances. */
function equalReadings(a: NumericAnswer, b: NumericAnswer, exact: boolean, options: CompareOptions): boolean {
  const relTol = options.relTol ?? 1e-9;
  const absTol = options.absTol ?? 1e-12;
  for (const x of readings(a)) {
    for (const y of readings(b)) {
      if (equal(x, y)) return true;
      if (exact) continue;
      const u = toNumber(x);
      const v = toNumber(y);
      if (Math.abs(u - v) <= Math.max(relTol * Math.max(Math.abs(u), Math.abs(v)), absTol)) return true;
    }
  }
  return false;
}

/** Text compared when the expected answer is not a number: wrappers and all spaces off. */
function canonicalText(s: string): string {
  return normalizeAnswerText(s).replace(/\s+/g, "").replace(/\.$/, "").toLowerCase();
}

/**
 * Does `predicted` (an extracted answer) match `expected`? Numbers are compared numerically; an
 * expected answer that is not a number is compared as normalised text.
 */
export function answersMatch(predicted: string, expected: string, options: CompareOptions = {}): boolean {
  const e = parseNumericAnswer(expected);
  if (!e) return canonicalText(predicted) !== "" && canonicalText(predicted) === canonicalText(expected);
  const p = parseNumericAnswer(predicted);
  if (p === undefined) return false;
  // An exact expected answer is matched exactly (see the module comment).
  const exact = e.form !== "decimal" && (options.exactExpected !== false || p.form !== "decimal");
  return equalReadings(p, e, exact, options);
}

export interface GradeOptions extends CompareOptions {
  /** Require a `\boxed{}` (default false: like verifiers, a reply without one is read whole). */
  strict?: boolean;
}

/**
 * The text of the last assistant message of a completion ("" when there is none, or when that
 * message only called tools): the final answer is what the model said last.
 */
export function lastAssistantText(completion: string | readonly Message[]): string {
  if (typeof completion === "string") return completion;
  for (let i = completion.length - 1; i >= 0; i--) {
    const m = completion[i]!;
    if (m.role === "assistant") return typeof m.content === "string" ? m.content : "";
  }
  return "";
}

/**
 * The extracted final answer of a reply: think blocks stripped, then the last `\boxed{}` (the
 * whole reply when there is none, unless `strict`).
 */
export function extractFinalAnswer(reply: string, strict = false): string | undefined {
  const text = stripThink(reply);
  return strict ? lastBoxed(text) : extractBoxedAnswer(text);
}

/** 1 when the reply's final answer equals `expected` (numerically), else 0. */
export function gradeReply(reply: string, expected: string, options: GradeOptions = {}): 0 | 1 {
  const answer = extractFinalAnswer(reply, options.strict);
  return answer !== undefined && answersMatch(answer, expected, options) ? 1 : 0;
}
