/**
 * Hostile input against a real server (`envworker serve` in a child process): each row sends an
 * attack while a probe keeps playing reverse-text episodes, and checks that the attack got a
 * normal answer, every probe was served within a second, and the server is alive (RSS reported;
 * bounded where the attack is about memory). The harness is test/helpers/hostile.ts: a new row
 * is an attack function and its assertions.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { conversationChars } from "../../src/env/episode.ts";
import { PyRandom } from "../../src/pycompat/random.ts";
import { expectServed, startLiveServer, underAttack, type LiveServer } from "../helpers/hostile.ts";

const MAX_EPISODE_CHARS = 2_500_000;
const TOKEN = "hostile-test-token";

let server: LiveServer;
let tokenServer: LiveServer;

beforeAll(async () => {
  [server, tokenServer] = await Promise.all([
    // Bodies up to 4 MiB so that the attacks reach the environments (the default is 1 MiB), and
    // an episode budget of 2.5 M characters: two 1 M-character turns fit, the third does not.
    startLiveServer({ ENVWORKER_MAX_BODY_BYTES: String(4 << 20), ENVWORKER_MAX_EPISODE_CHARS: String(MAX_EPISODE_CHARS) }),
    startLiveServer({ ENVWORKER_TOKEN: TOKEN }),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.all([server?.stop(), tokenServer?.stop()]);
});

const json = (s: LiveServer, path: string, body: unknown) =>
  fetch(`${s.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...s.headers }, body: JSON.stringify(body) }).then(
    async (r) => ({ status: r.status, body: (await r.json()) as any }),
  );

/** `n` characters drawn (seeded) from `alphabet`. */
function randomText(seed: number, alphabet: string[], n: number): string {
  const rng = new PyRandom(seed);
  let s = "";
  for (let i = 0; i < n; i++) s += alphabet[rng.randrange(alphabet.length)];
  return s;
}

/** 120 distinct symbols: printable ASCII (no quote, backslash or angle brackets) plus Latin-1 letters. */
const SYMBOLS = (() => {
  const out: string[] = [];
  for (let c = 0x21; c < 0x7f; c++) if (!`"\\<>`.includes(String.fromCharCode(c))) out.push(String.fromCharCode(c));
  for (let c = 0xc0; out.length < 120; c++) out.push(String.fromCharCode(c));
  return out;
})();

describe("hostile input against a live server", () => {
  it("word-chain: a reply of two 30,000-letter words gets its normal result at once", async () => {
    const first = "ab".repeat(15_000);
    const second = `${first}s`; // one letter longer: a valid link, were they words
    const outcome = await underAttack(server, async () => {
      // faithful: the reference's rewards, which check every pair of the reply (the hardened default
      // starts at the task's word, absent here, and reads nothing after it).
      const reset = await json(server, "/envs/word-chain/reset", { index: 0, args: { faithful: true } });
      return json(server, "/envs/word-chain/step", { episode_id: reset.body.episode_id, action: { content: `${first}, ${second}` } });
    }, { warmUp: () => json(server, "/envs/word-chain/score", { items: [{ completion: "hat, hot", info: { starting_word: "hat" } }] }) });
    expectServed("word-chain 2 × 30,000 letters", outcome);
    const step = outcome.result;
    expect(step.status).toBe(200);
    expect(step.body.done).toBe(true);
    // Neither is a dictionary word: no chain, no valid link, one invalid link.
    expect(step.body.observation.metrics).toEqual({ longest_valid_chain_from_start: 0, total_valid_links: 0, total_invalid_links: 1 });
    expect(step.body.reward).toBeCloseTo(-0.005, 12);
  });

  it("/score with client info shaped to make scoring costly: refused or bounded", async () => {
    const T0 = "<alphabetical_sorted>\nAnnLee\n</alphabetical_sorted>";
    const attempt = `<alphabetical_sorted>\n${randomText(4, SYMBOLS, 200_000)}\n</alphabetical_sorted>`;
    // Caseless symbols (alphabet-sort lower-cases both sides), each rare enough not to be junk.
    const cjk = (i: number) => String.fromCodePoint(0x4e00 + i);
    const periodic = Array.from({ length: 8000 }, (_, i) => cjk(i % 120)).join("");
    const holes = Array.from(periodic, (ch, i) => (i % 2 ? cjk(500) : ch)).join("");
    const outcome = await underAttack(server, () =>
      Promise.all([
        // A 200,000-symbol attempt against a 200,000-symbol ground truth, and num_turns of 10^15.
        json(server, "/envs/alphabet-sort/score", {
          items: [
            { completion: [{ role: "assistant", content: attempt }], info: { num_turns: 1, ground_truths: [[randomText(5, SYMBOLS, 200_000)]] } },
            { completion: [{ role: "assistant", content: T0 }], info: { num_turns: 1e15, ground_truths: [["AnnLee"]] } },
            // Within the length cap, a pathological pair: a periodic text and a copy with holes.
            { completion: [{ role: "assistant", content: `<alphabetical_sorted>\n${periodic}\n</alphabetical_sorted>` }], info: { num_turns: 1, ground_truths: [[holes]] } },
          ],
        }),
        // A group of 50,000 members (4 distinct words repeated) that the guess matches as a set:
        // removing it from a 50,000-word board would compare every pair.
        json(server, "/envs/word-groups/score", {
          items: [
            {
              completion: "<guess>A, B, C, D</guess>",
              info: {
                groups: [
                  { group: "G0", level: 0, members: Array.from({ length: 50_000 }, (_, i) => "ABCD"[i % 4]) },
                  ...[1, 2, 3].map((g) => ({ group: `G${g}`, level: 0, members: ["E", "F", "G", "H"].map((w) => `${w}${g}`) })),
                ],
              },
            },
          ],
        }),
      ]),
      {
        warmUp: () =>
          Promise.all([
            json(server, "/envs/alphabet-sort/score", { items: [{ completion: [{ role: "assistant", content: T0 }], info: { num_turns: 1, ground_truths: [["AnnLee"]] } }] }),
            json(server, "/envs/word-groups/score", { items: [{ completion: "x", answer: JSON.stringify([1, 2, 3, 4].map((g) => ({ group: `G${g}`, level: 0, members: ["A", "B", "C", "D"].map((w) => w + g) }))) }] }),
          ]),
      },
    );
    expectServed("/score with hostile info", outcome);
    const [as, wg] = outcome.result;
    expect(as.status).toBe(200);
    expect(as.body.results[0].errors.weighted_reward).toMatch(/SequenceTooLongError/);
    expect(as.body.results[1].reward).toBe(1 / 1e15);
    expect(as.body.results[2].errors.weighted_reward).toMatch(/SequenceWorkLimitError/);
    expect(wg.status).toBe(200);
    expect(wg.body.results[0].errors.success_reward).toMatch(/4 groups, each/);
  });

  it("reverse-text /score: a 240,000-character completion and answer of 120 distinct symbols", async () => {
    expect(new Set(SYMBOLS).size).toBe(120);
    const completion = `<reversed_text>${randomText(1, SYMBOLS, 240_000)}</reversed_text>`;
    const answer = randomText(2, SYMBOLS, 240_000);
    const shortAnswer = randomText(3, SYMBOLS, 390);
    // Within the length cap, a pathological pair: a periodic text and a copy with every other
    // symbol changed (uncapped: one matching block per symbol, each found by a scan of the rest).
    const periodic = Array.from({ length: 4000 }, (_, i) => SYMBOLS[i % 120]).join("");
    const holes = Array.from(periodic, (ch, i) => (i % 2 ? "\u00fe" : ch)).join("");
    const outcome = await underAttack(
      server,
      () =>
        json(server, "/envs/reverse-text/score", {
          items: [{ completion, answer }, { completion, answer: shortAnswer }, { completion: `<reversed_text>${periodic}</reversed_text>`, answer: holes }],
        }),
      { warmUp: () => json(server, "/envs/reverse-text/score", { items: [{ completion: "<reversed_text>ab</reversed_text>", answer: "ba" }] }) },
    );
    expectServed("reverse-text /score 240,000 characters", outcome);
    const res = outcome.result;
    expect(res.status).toBe(200);
    const [both, longReply, pathological] = res.body.results;
    expect(pathological.reward).toBe(0);
    expect(pathological.errors.lcs_reward_func).toMatch(/SequenceWorkLimitError/);
    // An answer past the cap is refused (reported, scores 0); a long reply is compared up to the cap.
    expect(both.reward).toBe(0);
    expect(both.errors.lcs_reward_func).toMatch(/SequenceTooLongError/);
    expect(longReply.errors).toBeUndefined();
    expect(longReply.reward).toBeGreaterThan(0);
    expect(longReply.reward).toBeLessThan(2 * 390 / (4000 + 390) + 1e-12);
  });

  it("word-groups: 1 M characters of reasoning_content per turn count against the episode budget (413, episode kept)", async () => {
    const reasoning = "r".repeat(1_000_000);
    const outcome = await underAttack(server, async () => {
      const reset = await json(server, "/envs/word-groups/reset", { seed: 3 });
      const id = reset.body.episode_id as string;
      const steps = [];
      for (let i = 0; i < 4; i++) steps.push(await json(server, "/envs/word-groups/step", { episode_id: id, action: { content: "hmm", reasoning_content: reasoning } }));
      return { id, steps };
    }, { warmUp: () => json(server, "/envs/word-groups/reset", { seed: 1 }) });
    expectServed("word-groups reasoning_content 4 × 1 M", outcome, { maxRssGrowthMiB: 256 });
    const { id, steps } = outcome.result;
    expect(steps.map((s) => s.status)).toEqual([200, 200, 413, 413]);
    for (const refused of steps.slice(2)) {
      expect(refused.body.error.code).toBe("PAYLOAD_TOO_LARGE");
      expect(refused.body.error.message).toMatch(new RegExp(`more than ${MAX_EPISODE_CHARS} characters`));
    }
    // The episode is kept as it was after the second turn, and still playable.
    const state = await fetch(`${server.url}/envs/word-groups/state?episode_id=${id}`).then((r) => r.json() as Promise<any>);
    expect(state.step_count).toBe(2);
    expect(state.done).toBe(false);
    const next = await json(server, "/envs/word-groups/step", { episode_id: id, action: { content: "<guess>A, B, C, D</guess>" } });
    expect(next.status).toBe(200);
    expect(next.body.observation.messages[0].content).toMatch(/Incorrect/);
  });

  it("/examples at its maximum count from three clients at once: answered, others served", async () => {
    const base = "/envs/alphabet-sort/examples";
    const outcome = await underAttack(
      server,
      () => Promise.all([0, 1, 2].map((k) => json(server, base, { start: k * 1000, count: 1000 }))),
      // The first call builds alphabet-sort's data: ordinary use, not the attack.
      { warmUp: () => json(server, base, { count: 1 }) },
    );
    expectServed("/examples × 3 at count 1000", outcome);
    for (const r of outcome.result) {
      expect(r.status).toBe(200);
      expect(r.body.examples).toHaveLength(1000);
    }
    // alphabet-sort generates its examples: consecutive seeds from `start`, none missing.
    for (const [k, r] of outcome.result.entries()) expect(r.body.examples.map((e: { seed: number }) => e.seed)).toEqual(Array.from({ length: 1000 }, (_, i) => k * 1000 + i));
    expect((await json(server, base, { count: 1001 })).status).toBe(400);
  });

  it("JSON nested 100,000 deep in a reset's args, an MCP request and a WebSocket message: refused 400, the server up", async () => {
    // Before, the reset killed the server: the structured clone that hands a call to an
    // environment thread recursed once per level and overflowed the stack in a setImmediate.
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    const post = (path: string, body: string) =>
      fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const outcome = await underAttack(server, async () => {
      const ws = new WebSocket(`${server.url.replace("http", "ws")}/envs/reverse-text/ws`);
      await new Promise((done) => ws.once("open", done));
      ws.send(`{"type":"reset","data":{"args":{"a":${deep}}}}`);
      const wsReply = await new Promise<any>((done) => ws.once("message", (m) => done(JSON.parse(String(m)))));
      ws.close();
      return {
        reset: await post("/envs/reverse-text/reset", `{"args":{"a":${deep}}}`),
        step: await post("/envs/reverse-text/step", `{"episode_id":"x","action":{"content":"x","tool_calls":${deep}}}`),
        score: await post("/envs/reverse-text/score", `{"items":[{"completion":${deep},"answer":"x"}]}`),
        mcp: await post("/envs/math-tools/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"a":${deep}}}`),
        wsReply,
      };
    });
    expectServed("JSON nested 100,000 deep", outcome);
    const refused = { code: "VALIDATION_ERROR", message: "JSON nested deeper than 100 levels of arrays and objects" };
    for (const r of [outcome.result.reset, outcome.result.step, outcome.result.score]) expect(r).toEqual({ status: 400, body: { error: refused } });
    expect(outcome.result.mcp).toEqual({ status: 200, body: { jsonrpc: "2.0", id: null, error: { code: -32600, message: refused.message } } });
    expect(outcome.result.wsReply).toMatchObject({ type: "error", data: { reason: "VALIDATION_ERROR", message: refused.message } });
    // 100 levels in all is still taken: a reset's args nested 98 deep under {"args":{...}}.
    const ok = `{"args":{"a":${"[".repeat(98)}${"]".repeat(98)}}}`;
    expect((await post("/envs/reverse-text/reset", ok)).body.error?.message ?? "").not.toContain("nested");
  });

  it("HEAD /health with a token configured: 200 without the token (load-balancer checks); other routes still need it", async () => {
    const outcome = await underAttack(tokenServer, async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await fetch(`${tokenServer.url}/health`, { method: "HEAD" })).status);
      const protectedHead = (await fetch(`${tokenServer.url}/envs`, { method: "HEAD" })).status;
      const withToken = (await fetch(`${tokenServer.url}/envs`, { method: "HEAD", headers: tokenServer.headers })).status;
      return { statuses, protectedHead, withToken };
    });
    expectServed("HEAD /health with a token", outcome);
    expect(outcome.result.statuses).toEqual(Array(20).fill(200));
    expect(outcome.result.protectedHead).toBe(401);
    expect(outcome.result.withToken).toBe(200);
  });
});

describe("episode size counting (ENVWORKER_MAX_EPISODE_CHARS)", () => {
  it("counts every stored field of a turn", () => {
    expect(
      conversationChars([
        { role: "user", content: "12345" },
        { role: "assistant", content: null, reasoning_content: "abc", tool_calls: [{ id: "call_1", type: "function", function: { name: "calc", arguments: '{"x":1}' } }] },
        { role: "tool", content: "42", tool_call_id: "call_1" },
      ]),
    ).toBe(5 + 3 + ("call_1".length + "function".length + "calc".length + '{"x":1}'.length) + 2 + "call_1".length);
  });
});
