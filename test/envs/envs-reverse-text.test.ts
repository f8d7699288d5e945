/**
 * reverse-text through the engine (resetEpisode/stepEpisode), the rubric (scoreRubric) and
 * stateless scoring (scoreItems). Expected ratios were computed with CPython's
 * `difflib.SequenceMatcher(None, a, b).ratio()` when the tests were written.
 */
import { describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import evalTexts from "../../envs/reverse-text/data/eval.json" with { type: "json" };
import trainTexts from "../../envs/reverse-text/data/train.json" with { type: "json" };
import reverseTextEnv, { MAX_COMPARED_CHARS, reverseText, SYSTEM_PROMPT, wordCount } from "../../envs/reverse-text/index.ts";
import { sequenceRatio } from "../../src/pycompat/difflib.ts";
import { resetEpisode, stepEpisode } from "../../src/env/episode.ts";
import { ApiError } from "../../src/env/errors.ts";
import type { Message } from "../../src/env/messages.ts";
import { scoreRubric } from "../../src/env/rubric.ts";
import { scoreItems } from "../../src/server/score.ts";

const env = reverseTextEnv;

function score(completion: Message[], answer: string) {
  return scoreRubric(env.spec.rubric, { prompt: [], completion, answer, info: {}, state: {}, args: env.parseArgs({}) });
}
const reply = (content: string): Message[] => [{ role: "assistant", content }];

describe("reverse-text: definition and data", () => {
  it("is served from envs/index.ts as a single-turn environment", () => {
    expect(environments).toContain(env);
    expect(env.name).toBe("reverse-text");
    expect(env.maxTurns).toBe(1);
    expect(env.spec.respond).toBeUndefined();
    expect(env.splits).toEqual(["train", "eval"]);
    expect(env.spec.rubric.map((r) => [r.name, r.weight])).toEqual([["lcs_reward_func", 1.0]]);
  });

  it("ships ~200 train and ~40 eval distinct texts of 5-80 words", () => {
    expect(trainTexts.length).toBe(200);
    expect(evalTexts.length).toBe(40);
    const all = [...trainTexts, ...evalTexts];
    expect(new Set(all).size).toBe(all.length); // no duplicates, no train/eval overlap
    for (const t of all) {
      expect(wordCount(t)).toBeGreaterThanOrEqual(5);
      expect(wordCount(t)).toBeLessThanOrEqual(80);
      expect(t).toBe(t.trim());
    }
    expect(all.some((t) => /[éïñç]/.test(t))).toBe(true);
    expect(all.some((t) => /\p{Extended_Pictographic}/u.test(t))).toBe(true);
    expect(all.filter((t) => t.length >= 200).length).toBeGreaterThan(20); // long enough for autojunk
  });
});

describe("reverse-text: episodes", () => {
  it("builds the prompt: the exact system prompt, then the text; answer = text[::-1]", () => {
    const { state, result } = resetEpisode(env, "ep", { seed: 7 });
    expect(state.messages).toEqual([
      { role: "system", content: SYSTEM_PROMPT },
      { role: "user", content: "Electric cars are quiet enough that some are required to make artificial sounds at low speeds." },
    ]);
    expect(SYSTEM_PROMPT).toBe("Reverse the text character-by-character. Put your answer in <reversed_text> tags.");
    expect(state.answer).toBe(".sdeeps wol ta sdnuos laicifitra ekam ot deriuqer era emos taht hguone teiuq era srac cirtcelE");
    expect(state.example_id).toBe("train-82");
    expect(result.done).toBe(false);
    expect(result.reward).toBeNull();
  });

  it("is reproducible: same seed, same prompt; different seeds vary", () => {
    const prompt = (seed: number) => resetEpisode(env, "ep", { seed }).state.messages[1]!.content;
    expect(prompt(7)).toBe(prompt(7));
    const seen = new Set(Array.from({ length: 20 }, (_, s) => prompt(s)));
    expect(seen.size).toBeGreaterThan(10);
  });

  it("picks rows by index and split", () => {
    const { state } = resetEpisode(env, "ep", { index: 15, split: "eval" });
    expect(state.messages[1]!.content).toBe(evalTexts[15]);
    expect(() => resetEpisode(env, "ep", { index: 40, split: "eval" })).toThrow(ApiError);
    expect(() => resetEpisode(env, "ep", { split: "test" })).toThrow(ApiError);
  });

  it("reverses by code point: emoji stay whole", () => {
    const { state } = resetEpisode(env, "ep", { index: 45 });
    expect(state.messages[1]!.content).toContain("🎉");
    expect(state.answer).toBe(".rehtegot swen doog eht etarbelec dna 🎉 noon ta yrekab renroc eht ta teem s'teL");
    expect(reverseText("café 😂!")).toBe("!😂 éfac");
    expect(Array.from(state.answer).length).toBe(Array.from(trainTexts[45]!).length);
  });

  it("a gold answer ends the episode with reward exactly 1.0", async () => {
    const { state } = resetEpisode(env, "ep", { seed: 3 });
    const step = await stepEpisode(env, state, { content: `<reversed_text>\n${state.answer}\n</reversed_text>` });
    expect(step.result.done).toBe(true);
    expect(step.state.truncated).toBe(false);
    expect(step.result.reward).toBe(1.0);
    expect(step.result.observation.metrics).toEqual({ lcs_reward_func: 1.0 });
    expect(step.result.observation.messages).toEqual([]);
  });

  it("a wrong answer scores less; no tag scores 0", async () => {
    const { state } = resetEpisode(env, "ep", { seed: 3 });
    const echo = await stepEpisode(env, state, { content: `<reversed_text>${state.messages[1]!.content}</reversed_text>` });
    expect(echo.result.reward).toBeGreaterThan(0);
    expect(echo.result.reward).toBeLessThan(1);
    const untagged = await stepEpisode(env, state, { content: state.answer });
    expect(untagged.result.reward).toBe(0);
  });
});

describe("reverse-text: lcs_reward_func", () => {
  it("is difflib's ratio of the parsed tag and the answer", async () => {
    expect((await score(reply("<reversed_text>olleh!</reversed_text>"), "olleh")).reward).toBe(0.9090909090909091); // 2*5/11
    expect((await score(reply("<reversed_text>abd</reversed_text>"), "abc")).reward).toBe(0.6666666666666666); // 2*2/6
    expect((await score(reply("<reversed_text>  \n olleh \n\t</reversed_text>"), "olleh")).reward).toBe(1.0); // stripped
    expect((await score(reply("no tags at all"), "olleh")).reward).toBe(0.0); // missing -> "" -> ratio 0
  });

  it("reproduces difflib's autojunk on long answers", async () => {
    const text = trainTexts[4]!; // 390 characters: spaces and 'e' are "popular" in b
    const answer = reverseText(text);
    const wordsBackwards = answer.split(" ").reverse().join(" ");
    const r = await score(reply(`<reversed_text>${wordsBackwards}</reversed_text>`), answer);
    // CPython: 0.03076923076923077 (with autojunk=False it would be 0.1564102564102564).
    expect(r.reward).toBe(0.03076923076923077);
  });

  it("parses the newest assistant message that has the tag (XMLParser.parse_answer)", async () => {
    const completion: Message[] = [
      { role: "assistant", content: "<reversed_text>cba</reversed_text>" },
      { role: "user", content: "again" },
      { role: "assistant", content: "I give up." },
    ];
    expect((await score(completion, "cba")).reward).toBe(1.0);
    const newer: Message[] = [...completion, { role: "assistant", content: "<reversed_text>xyz</reversed_text>" }];
    expect((await score(newer, "cba")).reward).toBe(0.0);
    // First match within a message, raw content (a tag inside a think block counts).
    const think = "<think><reversed_text>abc</reversed_text></think><reversed_text>cba</reversed_text>";
    expect((await score(reply(think), "cba")).reward).toBe(0.3333333333333333);
  });

  it("limits: the cap is ~10x the longest answer; longer replies are cut, longer answers refused", async () => {
    const longest = Math.max(...[...trainTexts, ...evalTexts].map((t) => Array.from(t).length));
    expect(MAX_COMPARED_CHARS).toBeGreaterThanOrEqual(10 * longest);
    // Up to the cap: difflib's exact ratio (the reference's value).
    const answer = reverseText(trainTexts[4]!);
    const atCap = answer + "😀".repeat(MAX_COMPARED_CHARS - Array.from(answer).length);
    expect((await score(reply(`<reversed_text>${atCap}</reversed_text>`), answer)).reward).toBe(sequenceRatio(atCap, answer));
    // Past it: the reply is compared up to the cap.
    const past = atCap + "x".repeat(100_000);
    expect((await score(reply(`<reversed_text>${past}</reversed_text>`), answer)).reward).toBe(sequenceRatio(atCap, answer));
    // An answer longer than the cap (only a /score client can send one) is refused, scoring 0.
    const huge = "ab".repeat(MAX_COMPARED_CHARS);
    const [r] = await scoreItems(env, [{ completion: `<reversed_text>${huge}</reversed_text>`, answer: huge }]);
    expect(r!.reward).toBe(0);
    expect(r!.errors?.lcs_reward_func).toMatch(/SequenceTooLongError: .*more than the 4000 allowed/);
    // Within the length cap, a pathological pair (every other symbol changed in a periodic
    // text) is cut by the step budget: refused, scoring 0, instead of seconds of work.
    const sym = (i: number) => String.fromCodePoint(0x4e00 + i);
    const periodic = Array.from({ length: MAX_COMPARED_CHARS }, (_, i) => sym(i % 120)).join("");
    const holes = Array.from(periodic, (ch, i) => (i % 2 ? sym(500) : ch)).join("");
    const [p] = await scoreItems(env, [{ completion: `<reversed_text>${periodic}</reversed_text>`, answer: holes }]);
    expect(p!.reward).toBe(0);
    expect(p!.errors?.lcs_reward_func).toMatch(/SequenceWorkLimitError/);
  });

  it("scores statelessly (/score items)", async () => {
    const [a, b] = await scoreItems(env, [
      { completion: "<reversed_text>olleh</reversed_text>", answer: "olleh" },
      { completion: [{ role: "assistant", content: "<reversed_text>abd</reversed_text>" }], answer: "abc" },
    ]);
    expect(a!.reward).toBe(1.0);
    expect(b!.reward).toBe(0.6666666666666666);
  });
});

describe("reverse-text: args", () => {
  it("filters texts by word count", () => {
    const short = env.datasetFor(env.parseArgs({ max_words: 10 }), "train")!;
    const long = env.datasetFor(env.parseArgs({ min_words: 50 }), "train")!;
    expect(short.length).toBeGreaterThan(0);
    expect(long.length).toBeGreaterThan(0);
    for (const row of short) expect(wordCount(row.prompt as string)).toBeLessThanOrEqual(10);
    for (const row of long) expect(wordCount(row.prompt as string)).toBeGreaterThanOrEqual(50);
    expect(env.datasetFor(env.parseArgs({}), "train")!.length).toBe(200);
    const { state } = resetEpisode(env, "ep", { seed: 1, args: { min_words: 50 } });
    expect(wordCount(state.messages[1]!.content ?? "")).toBeGreaterThanOrEqual(50);
  });

  it("can drop or replace the system prompt", () => {
    expect(resetEpisode(env, "ep", { seed: 1, args: { system_prompt: null } }).state.messages.map((m) => m.role)).toEqual(["user"]);
    expect(resetEpisode(env, "ep", { seed: 1, args: { system_prompt: "Reverse it." } }).state.messages[0]).toEqual({
      role: "system",
      content: "Reverse it.",
    });
  });

  it("rejects invalid args", () => {
    expect(() => resetEpisode(env, "ep", { args: { min_words: 10, max_words: 5 } })).toThrow(ApiError);
    expect(() => resetEpisode(env, "ep", { args: { max_words: 0 } })).toThrow(ApiError);
    expect(() => resetEpisode(env, "ep", { args: { unknown: 1 } })).toThrow(ApiError);
  });
});
