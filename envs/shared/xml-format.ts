/**
 * verifiers' `XMLParser(fields).get_format_reward_func()`, ported from
 * `verifiers/parsers/xml_parser.py` (identical in the 2025 and current sources).
 *
 * For each assistant message of the completion (content `null` counts as ""):
 *   score = 0.4 · (field sets present / number of field sets)   if at least one field parses
 *         + 0.2                                                  "proper spacing" (see below)
 *         + 0.2 · [content.strip() starts with `<f>` for an alternative f of the FIRST field set]
 *         + 0.2 · [content.strip() ends with `</f>` for an alternative f of the LAST field set]
 * and the reward is the mean over the assistant messages (0 when there are none).
 *
 * A field "parses" when the XMLParser regex `<f>\s*(.*?)\s*</f>` (DOTALL) matches; a field set
 * counts as present when one of its alternatives parses OR merely has an opening or closing tag
 * in the text (but the 0.4 term needs at least one parsed field). The spacing check compares the
 * stripped and unstripped parses, which use the same regex, so it never fails: every message gets
 * the 0.2, even an empty one. That is the reference behaviour and is kept.
 */
import { extractTag, type Message } from "envworker";
import { pyStrip } from "./py.ts";


/** A field: a tag name, or alternatives whose first element is canonical. */
export type XmlField = string | readonly string[];

function alternatives(field: XmlField): readonly string[] {
  return typeof field === "string" ? [field] : field;
}

function parses(content: string, tag: string): boolean {
  return extractTag(content, tag) !== undefined;
}

/** The format score of one message's text. */
export function xmlFormatScore(content: string, fields: readonly XmlField[]): number {
  if (fields.length === 0) throw new Error("XMLParser needs at least one field");
  let hasAnyField = false;
  let present = 0;
  for (const field of fields) {
    let fieldSetPresent = false;
    for (const alt of alternatives(field)) {
      if (parses(content, alt)) {
        hasAnyField = true;
        fieldSetPresent = true;
      } else if (content.includes(`<${alt}>`) || content.includes(`</${alt}>`)) {
        fieldSetPresent = true;
      }
    }
    if (fieldSetPresent) present++;
  }
  const stripped = pyStrip(content);
  const starts = alternatives(fields[0]!).some((alt) => stripped.startsWith(`<${alt}>`));
  const ends = alternatives(fields[fields.length - 1]!).some((alt) => stripped.endsWith(`</${alt}>`));
  let score = 0;
  if (hasAnyField) score += 0.4 * (present / fields.length);
  score += 0.2; // has_correct_spacing: always true (see the module comment)
  if (starts) score += 0.2;
  if (ends) score += 0.2;
  return score;
}

/** `format_reward_func(completion)`: mean format score over the assistant messages. */
export function xmlFormatReward(completion: readonly Message[], fields: readonly XmlField[]): number {
  const scores = completion.filter((m) => m.role === "assistant").map((m) => xmlFormatScore(m.content ?? "", fields));
  if (scores.length === 0) return 0;
  return scores.reduce((a, b) => a + b, 0) / scores.length;
}
