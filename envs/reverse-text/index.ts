/**
 * reverse-text: reverse a text character by character (a port of verifiers' `reverse_text`).
 *
 * Single turn. The system prompt asks for the answer in `<reversed_text>` tags; the reward is
 * difflib's Ratcliff–Obershelp ratio between the parsed answer and the text reversed by code
 * point (Python's `text[::-1]`). The original data (HF `PrimeIntellect/Reverse-Text-RL`) is not
 * available here, so the environment ships its own texts in `data/` (see README.md).
 */
import { codePointPrefix, defineEnvironment, type Example, parseAnswer, sequenceRatio, z } from "envworker";
import evalTexts from "./data/eval.json" with { type: "json" };
import trainTexts from "./data/train.json" with { type: "json" };

export const SYSTEM_PROMPT = "Reverse the text character-by-character. Put your answer in <reversed_text> tags.";

const TEXTS: Record<string, readonly string[]> = { train: trainTexts, eval: evalTexts };

/** Python's `s[::-1]`: reverse by code point (an astral character such as an emoji stays whole). */
export function reverseText(s: string): string {
  return Array.from(s).reverse().join("");
}

/** Number of whitespace-separated words (Python's `len(s.split())`). */
export function wordCount(s: string): number {
  const t = s.trim();
  return t === "" ? 0 : t.split(/\s+/).length;
}

const args = z
  .object({
    min_words: z.number().int().min(0).default(0).describe("Serve only texts with at least this many words."),
    max_words: z
      .number()
      .int()
      .min(1)
      .nullable()
      .default(null)
      .describe("Serve only texts with at most this many words (null: no limit)."),
    system_prompt: z
      .string()
      .nullable()
      .default(SYSTEM_PROMPT)
      .describe("The system prompt (null: none), as the original's `system_prompt` argument."),
  })
  .strict()
  .refine((a) => a.max_words === null || a.min_words <= a.max_words, {
    message: "min_words must be less than or equal to max_words",
    path: ["min_words"],
  });

type Args = z.output<typeof args>;

/**
 * The most code points the reward compares: about 10x the longest answer of the data (390).
 * difflib's work grows with the product of the lengths (a 240,000-character reply took seconds),
 * so the parsed reply is compared up to here, and an answer longer than this (only possible in
 * `POST /score`, where the client supplies it) is refused.
 */
export const MAX_COMPARED_CHARS = 4000;

/**
 * The most difflib steps one comparison may take (`maxWork` in src/pycompat/difflib.ts, about
 * 50 ms on an idle core). Lengths alone do not bound the work: pathological pairs of 4,000
 * symbols need ~100x more. Replies to the data's answers stay below it: text-like replies of
 * 4,000 characters need at most 0.14 M steps, floods of one character (4,000 spaces) 1.5 M;
 * past it the comparison is refused (reported, reward 0).
 */
export const MAX_COMPARE_STEPS = 5_000_000;

/**
 * `lcs_reward_func`: difflib ratio of the parsed `<reversed_text>` (missing: "") and the answer.
 * Identical to the original for replies up to `MAX_COMPARED_CHARS`; a longer reply is cut there.
 * Against an answer of the data (≤ 390 characters) such a reply scores at most 2·390/4390 ≈ 0.18
 * either way, cut or not.
 */
export function lcsReward(completion: Parameters<typeof parseAnswer>[0], answer: string): number {
  const parsed = codePointPrefix(parseAnswer(completion, "reversed_text") ?? "", MAX_COMPARED_CHARS);
  return sequenceRatio(parsed, answer, { maxLength: MAX_COMPARED_CHARS, maxWork: MAX_COMPARE_STEPS });
}

export default defineEnvironment({
  name: "reverse-text",
  description: "Reverse a text character by character; reward = difflib similarity to the exact reversal.",
  version: "0.1.0",
  documentationUrl: "https://github.com/PrimeIntellect-ai/verifiers/tree/main/environments/reverse_text",
  args,
  splits: ["train", "eval"],
  dataset({ args: a, split }: { args: Args; split: string }): Example[] {
    const texts = TEXTS[split] ?? [];
    const rows: Example[] = [];
    texts.forEach((text, i) => {
      const n = wordCount(text);
      if (n < a.min_words || (a.max_words !== null && n > a.max_words)) return;
      rows.push({ prompt: text, answer: reverseText(text), id: `${split}-${i}`, info: {} });
    });
    return rows;
  },
  systemPrompt: (a: Args) => a.system_prompt ?? undefined,
  maxTurns: 1,
  rubric: [
    {
      name: "lcs_reward_func",
      weight: 1.0,
      fn: ({ completion, answer }) => lcsReward(completion, answer),
    },
  ],
});
