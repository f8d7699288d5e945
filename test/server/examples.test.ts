/**
 * `POST B/examples` and grading by example reference: prompts leave the server, answers and
 * hidden tests never do; a reference is re-derived on the server, so a forged or stale one is a
 * 400; every input is bounded. Runs the real Node server (src/node/server.ts) with a sandbox, because
 * js-code's hidden tests run in it when an item is scored by reference.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import jsCode from "../../envs/js-code/index.ts";
import { REFERENCE } from "../../envs/js-code/reference.ts";
import { TASKS } from "../../envs/js-code/tasks.ts";
import mathTools from "../../envs/math-tools/index.ts";
import reverseText from "../../envs/reverse-text/index.ts";
import wordle from "../../envs/wordle/index.ts";
import { PyRandom } from "../../src/pycompat/random.ts";
import { startServer } from "../../src/node/server.ts";
import { createSandbox } from "../../src/sandbox/index.ts";
import type { Sandbox } from "../../src/sandbox/types.ts";
import { MAX_EXAMPLES, MAX_REFERENCE_CHARS } from "../../src/server/protocol.ts";
import { get, post } from "../helpers/http.ts";

const b64 = (s: string) => Buffer.from(s).toString("base64url");
const unb64 = (s: string) => Buffer.from(s, "base64url").toString("utf8");
const decode = (ref: string) => JSON.parse(unb64(ref.slice("ex1.".length)));
const encode = (obj: unknown) => "ex1." + b64(JSON.stringify(obj));
const fence = (code: string) => "```javascript\n" + code + "\n```";

/** The secret of a wordle example, computed here from the environment's own generator. */
function wordleSecret(seed: number): string {
  return wordle.spec.generate!({ rng: new PyRandom(seed), seed, args: wordle.parseArgs({}), split: "train", index: undefined }).answer!;
}

describe("POST B/examples and score by reference", () => {
  let sandbox: Sandbox;
  let server: { url: string; close(): Promise<void> };
  beforeAll(async () => {
    sandbox = createSandbox("isolated-vm");
    server = await startServer([reverseText, wordle, jsCode, mathTools], { port: 0 }, { sandbox });
  });
  afterAll(async () => {
    await server?.close();
    await sandbox?.dispose();
  });
  const B = (env: string) => `${server.url}/envs/${env}`;

  it("lists a dataset's prompts exactly as a reset gives them, in pages, with its size", async () => {
    const page = await post(`${B("reverse-text")}/examples`, { split: "eval", start: 3, count: 4 });
    expect(page.status).toBe(200);
    expect(page.body.total).toBe(reverseText.datasetFor(reverseText.parseArgs({}), "eval")!.length);
    expect(page.body.rubric).toEqual([{ name: "lcs_reward_func", weight: 1 }]);
    expect(page.body.tools).toBeUndefined();
    expect(page.body.examples.map((e: { index: number }) => e.index)).toEqual([3, 4, 5, 6]);
    for (const ex of page.body.examples) {
      expect(Object.keys(ex).sort()).toEqual(["example", "example_id", "index", "prompt", "seed", "split"]);
      const reset = await post(`${B("reverse-text")}/reset`, { split: "eval", index: ex.index });
      expect(ex.prompt).toEqual(reset.body.observation.messages);
      expect(ex.prompt[0].role).toBe("system");
      // The reset reports the same reference for the example it chose.
      expect(reset.body.observation.info.example).toBe(ex.example);
      await post(`${B("reverse-text")}/close`, { episode_id: reset.body.episode_id });
    }
    const end = await post(`${B("reverse-text")}/examples`, { split: "eval", start: page.body.total - 1, count: 10 });
    expect(end.body.examples).toHaveLength(1);
    const past = await post(`${B("reverse-text")}/examples`, { start: 10_000 });
    expect(past.status).toBe(200);
    expect(past.body.examples).toEqual([]);
    // Seeds on a dataset pick the rows a reset(seed) picks; the reference names the row.
    const bySeed = await post(`${B("reverse-text")}/examples`, { seeds: [3] });
    const seeded = await post(`${B("reverse-text")}/reset`, { seed: 3 });
    expect(bySeed.body.examples[0].index).toBe(seeded.body.observation.info.index);
    expect(bySeed.body.examples[0].example).toBe(seeded.body.observation.info.example);
    expect(Object.keys(decode(bySeed.body.examples[0].example))).not.toContain("n");
    await post(`${B("reverse-text")}/close`, { episode_id: seeded.body.episode_id });
    const meta = await post(`${B("reverse-text")}/examples`, { count: 0 });
    expect(meta.body).toMatchObject({ examples: [], total: 200 });
  });

  it("lists a generator's examples by seed (total null), the same prompts as reset(seed)", async () => {
    const r = await post(`${B("wordle")}/examples`, { seeds: [7, 123456789], args: { word_length: 6 } });
    expect(r.status).toBe(200);
    expect(r.body.total).toBeNull();
    expect(r.body.rubric.map((x: { name: string }) => x.name)).toEqual(["correct_answer", "partial_answer", "length_bonus", "format_reward", "game_reward"]);
    for (const ex of r.body.examples) {
      const reset = await post(`${B("wordle")}/reset`, { seed: ex.seed, args: { word_length: 6 } });
      expect(ex.prompt).toEqual(reset.body.observation.messages);
      expect(ex.index).toBeNull();
      await post(`${B("wordle")}/close`, { episode_id: reset.body.episode_id });
    }
    const consecutive = await post(`${B("wordle")}/examples`, { start: 40, count: 3 });
    expect(consecutive.body.examples.map((e: { seed: number }) => e.seed)).toEqual([40, 41, 42]);
    const tools = await post(`${B("math-tools")}/examples`, { count: 1 });
    expect(tools.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(["calculator", "javascript"]);
  });

  it("never sends answers or hidden tests; js-code is graded against them on the server", async () => {
    const r = await post(`${B("js-code")}/examples`, { count: MAX_EXAMPLES });
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(TASKS.length);
    const text = JSON.stringify(r.body);
    let leaked = 0;
    for (const task of TASKS) {
      for (const t of task.tests) {
        if (task.examples.some((e) => JSON.stringify(e) === JSON.stringify(t))) continue;
        // A hidden test as the prompt shows its examples: the call, then its expected result.
        const shown = `${task.name}(${t.args.map((a) => JSON.stringify(a)).join(", ")})\n// => ${JSON.stringify(t.expected)}`;
        // (as it appears in the JSON text)
        leaked += Number(text.includes(JSON.stringify(shown).slice(1, -1)));
      }
    }
    expect(leaked).toBe(0);
    // The shown examples are in the listing (so the check above would see a hidden one).
    const first = TASKS[0]!.examples[0]!;
    expect(text).toContain(JSON.stringify(`${TASKS[0]!.name}(${first.args.map((a) => JSON.stringify(a)).join(", ")})\n// => ${JSON.stringify(first.expected)}`).slice(1, -1));
    for (const ex of r.body.examples) {
      expect(Object.keys(decode(ex.example)).sort()).toEqual(["e", "h", "i", "s"]);
    }
    const fizz = r.body.examples.find((e: { example_id: string }) => e.example_id === "fizzbuzz");
    expect(fizz).toBeDefined();
    const gold = REFERENCE.fizzbuzz!.code;
    const scored = await post(`${B("js-code")}/score`, {
      items: [
        { example: fizz.example, completion: fence(gold) },
        { example: fizz.example, completion: fence(gold.replace('i % 15 === 0 ? "FizzBuzz" : ', "")) },
        { example: fizz.example, completion: "no code" },
      ],
    });
    expect(scored.status).toBe(200);
    const [full, partial, none] = scored.body.results;
    expect(full.reward).toBe(1);
    expect(partial.reward).toBeGreaterThan(0);
    expect(partial.reward).toBeLessThan(1);
    expect(none.reward).toBe(0);
  });

  it("grades a multi-turn completion by reference against the server's secret", async () => {
    const ex = (await post(`${B("wordle")}/examples`, { seeds: [11] })).body.examples[0];
    const secret = wordleSecret(11);
    const won = await post(`${B("wordle")}/score`, {
      items: [
        { example: ex.example, completion: [{ role: "assistant", content: `<guess>[${secret}]</guess>` }] },
        { example: ex.example, completion: "<guess>[zzzzz]</guess>" },
        // By answer, as before: both kinds in one batch.
        { answer: secret, completion: `<guess>[${secret}]</guess>` },
      ],
    });
    expect(won.status).toBe(200);
    expect(won.body.results[0].metrics.correct_answer).toBe(1);
    expect(won.body.results[1].metrics.correct_answer).toBe(0);
    expect(won.body.results[2].metrics.correct_answer).toBe(1);
  });

  it("resets by reference; the reference carries split, index or seed, and args", async () => {
    const ex = (await post(`${B("wordle")}/examples`, { seeds: [99], args: { word_length: 7 } })).body.examples[0];
    const reset = await post(`${B("wordle")}/reset`, { example: ex.example });
    expect(reset.status).toBe(200);
    expect(reset.body.observation.messages).toEqual(ex.prompt);
    expect(reset.body.observation.info).toMatchObject({ seed: 99, example: ex.example });
    await post(`${B("wordle")}/close`, { episode_id: reset.body.episode_id });
    const both = await post(`${B("wordle")}/reset`, { example: ex.example, seed: 1 });
    expect(both.status).toBe(400);
    expect(both.body.error.code).toBe("VALIDATION_ERROR");
  });

  it("refuses forged, garbled, stale and foreign references with 400", async () => {
    const rt = (await post(`${B("reverse-text")}/examples`, { count: 1 })).body.examples[0].example as string;
    const wd = (await post(`${B("wordle")}/examples`, { seeds: [1] })).body.examples[0].example as string;
    const ok = decode(rt);
    const forged: [string, string][] = [
      ["garbage", "not a reference"],
      ["no prefix", rt.slice(4)],
      ["bad base64", "ex1.%%%"],
      ["not JSON", "ex1." + b64("{")],
      ["unknown key", encode({ ...ok, answer: "x" })],
      ["both index and seed", encode({ ...ok, n: 3 })],
      ["another environment's", wd],
      ["out of range", encode({ ...ok, i: 99_999 })],
      ["changed example", encode({ ...ok, i: 1 })],
      ["bad fingerprint", encode({ ...ok, h: "0000000000000000" })],
      ["unknown split", encode({ ...ok, s: "test" })],
      ["invalid args", encode({ ...ok, a: { nope: 1 } })],
      ["too long", "ex1." + "A".repeat(MAX_REFERENCE_CHARS)],
    ];
    for (const [what, ref] of forged) {
      const score = await post(`${B("reverse-text")}/score`, { items: [{ example: ref, completion: "x" }] });
      expect([what, score.status, score.body.error?.code]).toEqual([what, 400, "VALIDATION_ERROR"]);
      const reset = await post(`${B("reverse-text")}/reset`, { example: ref });
      expect([what, reset.status, reset.body.error?.code]).toEqual([what, 400, "VALIDATION_ERROR"]);
    }
    // One bad reference fails the batch, naming the item.
    const mixed = await post(`${B("reverse-text")}/score`, { items: [{ example: rt, completion: "x" }, { example: wd, completion: "x" }] });
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.message).toContain("items[1].example");
  });

  it("validates and bounds the listing request", async () => {
    const bad: [string, unknown][] = [
      ["count over the cap", { count: MAX_EXAMPLES + 1 }],
      ["negative start", { start: -1 }],
      ["too many seeds", { seeds: Array.from({ length: MAX_EXAMPLES + 1 }, (_, i) => i) }],
      ["empty seeds", { seeds: [] }],
      ["seed out of range", { seeds: [-1] }],
      ["seeds with start", { seeds: [1], start: 2 }],
      ["unknown key", { answer: true }],
      ["unknown split", { split: "nope" }],
      ["invalid args", { args: { max_words: "many" } }],
      ["unknown arg", { args: { x: "y" } }],
    ];
    for (const [what, body] of bad) {
      const r = await post(`${B("reverse-text")}/examples`, body);
      expect([what, r.status, r.body.error?.code]).toEqual([what, 400, "VALIDATION_ERROR"]);
    }
    const wordleArgs = await post(`${B("wordle")}/examples`, { seeds: [1], args: { system_prompt: "y".repeat(MAX_REFERENCE_CHARS) } });
    expect([wordleArgs.status, wordleArgs.body.error?.code]).toEqual([400, "VALIDATION_ERROR"]);
    // Such args still reset an episode; it just has no reference.
    const longReset = await post(`${B("wordle")}/reset`, { seed: 1, args: { system_prompt: "y".repeat(MAX_REFERENCE_CHARS) } });
    expect(longReset.status).toBe(200);
    expect(longReset.body.observation.info.example).toBeUndefined();
    await post(`${B("wordle")}/close`, { episode_id: longReset.body.episode_id });
    const json = await post(`${B("reverse-text")}/examples`, "{oops");
    expect([json.status, json.body.error.code]).toEqual([400, "INVALID_JSON"]);
    const method = await get(`${B("reverse-text")}/examples`);
    expect([method.status, method.headers.get("allow")]).toEqual([405, "POST"]);
    const unknown = await post(`${server.url}/envs/nope/examples`, {});
    expect(unknown.status).toBe(404);
    // An empty body is the defaults: the first page.
    const empty = await post(`${B("reverse-text")}/examples`, "");
    expect(empty.status).toBe(200);
    expect(empty.body.examples).toHaveLength(100);
  });

  it("is in the OpenAPI document", async () => {
    const doc = await get(`${B("wordle")}/openapi.json`);
    expect(doc.body.paths["/examples"].post.requestBody.content["application/json"].schema.properties).toHaveProperty("seeds");
    expect(doc.body.paths["/reset"].post.requestBody.content["application/json"].schema.properties).toHaveProperty("example");
    expect(doc.body.paths["/score"].post.requestBody.content["application/json"].schema.properties.items.items.properties).toHaveProperty("example");
  });
});
