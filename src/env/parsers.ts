/**
 * Parsers as verifiers has them: XML-tag extraction (XMLParser) and think-block stripping
 * (ThinkParser / MaybeThinkParser). Reward functions use these so that a model's answer is read
 * the same way it is read in the Python ecosystem.
 */
import type { Message } from "./messages.ts";

/**
 * Content of the first `<tag>…</tag>` in `text`, trimmed; undefined when the tag is absent.
 * Same result as verifiers' regex `<tag>\s*(.*?)\s*</tag>` (DOTALL), found by string search:
 * that regex backtracks in cubic time on an opening tag followed by much whitespace and no
 * closing tag (3,000 spaces took 13 s), which a model's reply can trigger.
 */
export function extractTag(text: string, tag: string): string | undefined {
  const open = `<${tag}>`;
  const start = text.indexOf(open);
  if (start === -1) return undefined;
  // If the first opening tag has no closing tag after it, no later one has either.
  const end = text.indexOf(`</${tag}>`, start + open.length);
  return end === -1 ? undefined : text.slice(start + open.length, end).trim();
}

/**
 * Every `<tag>…</tag>` block's raw inner text, in order: what `re.findall("<tag>(.*?)</tag>",
 * DOTALL)` returns, by string search (linear, where the regex is quadratic on unclosed tags).
 */
export function extractAllTags(text: string, tag: string): string[] {
  const open = `<${tag}>`;
  const close = `</${tag}>`;
  const out: string[] = [];
  for (let at = text.indexOf(open); at !== -1; at = text.indexOf(open, at)) {
    const end = text.indexOf(close, at + open.length);
    if (end === -1) break;
    out.push(text.slice(at + open.length, end));
    at = end + close.length;
  }
  return out;
}

/**
 * `XMLParser.parse_answer(completion)`: the field from the newest assistant message that has it.
 * A plain string completion is parsed directly.
 */
export function parseAnswer(completion: string | readonly Message[], field: string): string | undefined {
  if (typeof completion === "string") return extractTag(completion, field);
  for (let i = completion.length - 1; i >= 0; i--) {
    const m = completion[i]!;
    if (m.role !== "assistant" || !m.content) continue;
    const value = extractTag(m.content, field);
    if (value !== undefined) return value;
  }
  return undefined;
}

/**
 * Think-block stripping as MaybeThinkParser does it: keep what follows the last `</think>`
 * (trimmed); text without a think block passes unchanged.
 */
export function stripThink(text: string): string {
  const end = text.lastIndexOf("</think>");
  return end === -1 ? text : text.slice(end + "</think>".length).trim();
}
