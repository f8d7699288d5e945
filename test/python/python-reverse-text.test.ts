/**
 * reverse-text-py (envs/reverse-text/env.py, served by a Python worker) against reverse-text
 * (envs/reverse-text/index.ts), on one live server: the same prompts for the same seeds and args,
 * and the same reward and metrics, to the last bit, for several hundred completions scored through
 * POST /score (exact, partial, wrong, untagged, padded with every kind of whitespace, astral
 * characters, several turns, replies cut at 4,000 characters, answers refused as too long, and
 * pathological pairs on both sides of the comparison's step budget).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import evalTexts from "../../envs/reverse-text/data/eval.json" with { type: "json" };
import trainTexts from "../../envs/reverse-text/data/train.json" with { type: "json" };
import { PyRandom } from "../../src/pycompat/random.ts";
import type { Message } from "../../src/env/messages.ts";
import { request } from "../helpers/http.ts";
import { WORKER_PYTHON } from "../helpers/python-workers.ts";
import { spawnServe, type ServeProcess } from "../helpers/serve-process.ts";

let server: ServeProcess;

beforeAll(async () => {
  server = await spawnServe(["reverse-text", "./envs/reverse-text/env.py", "--port", "0"], WORKER_PYTHON);
}, 180_000);
afterAll(async () => {
  await server?.stop();
});

/** POST to the live server (test/helpers/http.ts). */
const post = (path: string, body: unknown) => request("POST", `${server.url}${path}`, body);

const reverse = (s: string) => Array.from(s).reverse().join("");
const tagged = (s: string) => `<reversed_text>${s}</reversed_text>`;
/** Whitespace JavaScript's trim and Python's strip disagree on, and some they agree on. */
const PADS = [" ", "\n\t", "\u00a0", "\ufeff", "\u2003", "\u3000", "\x1c", "\x85", "\u200b"];

/** Completions of every kind for `text`, drawn with `rng`. */
function completionsFor(text: string, rng: PyRandom): { completion: Message[]; answer: string }[] {
  const answer = reverse(text);
  const chars = Array.from(answer);
  const edit = (n: number) => {
    const out = [...chars];
    for (let k = 0; k < n && out.length > 0; k++) {
      const i = rng.randrange(out.length);
      const op = rng.randrange(3);
      if (op === 0) out.splice(i, 1);
      else if (op === 1) out.splice(i, 0, String.fromCodePoint(97 + rng.randrange(26)));
      else [out[i], out[(i + 1) % out.length]] = [out[(i + 1) % out.length]!, out[i]!];
    }
    return out.join("");
  };
  const pad = PADS[rng.randrange(PADS.length)]!;
  const one = (content: string | null): Message[] => [{ role: "assistant", content }];
  const texts: Message[][] = [
    one(tagged(answer)),
    one(tagged(edit(1 + rng.randrange(3)))),
    one(tagged(edit(5 + rng.randrange(20)))),
    one(tagged(text)),
    one(answer),
    one(`<reversed_text>${answer}`),
    one(`${pad}${tagged(`${pad}${answer}${pad}`)}${pad}`),
    one(`<think>${text}</think>${tagged(edit(2))}`),
    one(tagged(`${answer}🙂𝔘`)),
    one(tagged(answer.slice(0, Math.floor(answer.length / 2)))),
    [...one("let me think"), { role: "user", content: "go on" }, ...one(tagged(edit(1)))],
    [...one(tagged(answer)), { role: "user", content: "again" }, ...one("no tags now")],
    one(null),
    one(tagged(answer.repeat(Math.ceil(4500 / answer.length)))),
  ];
  return texts.map((completion) => ({ completion, answer }));
}

describe("reverse-text-py scores exactly as reverse-text", () => {
  it("lists both", async () => {
    const envs = (await (await fetch(`${server.url}/envs`)).json()) as { envs: { name: string }[] };
    expect(envs.envs.map((e) => e.name).sort()).toEqual(["reverse-text", "reverse-text-py"]);
  });

  it("gives the same prompt for the same seed, split and args", async () => {
    const cases = [{ seed: 1 }, { seed: 77, split: "eval" }, { seed: 5, args: { min_words: 20, max_words: 30 } }, { seed: 9, index: 3, split: "eval", args: { system_prompt: null } }];
    for (const c of cases) {
      const ts = await post("/envs/reverse-text/reset", c);
      const py = await post("/envs/reverse-text-py/reset", c);
      expect(py.status).toBe(200);
      expect(py.body.observation.messages).toEqual(ts.body.observation.messages);
      // The same example (its reference names the environment, so it differs by that alone).
      const { example: _a, ...pyInfo } = py.body.observation.info;
      const { example: _b, ...tsInfo } = ts.body.observation.info;
      expect(pyInfo).toEqual(tsInfo);
    }
  });

  it("refuses the same bad args with a 400", async () => {
    for (const args of [{ min_words: 9, max_words: 3 }, { min_words: -1 }, { max_words: "x" }, { nope: 1 }]) {
      const ts = await post("/envs/reverse-text/reset", { args });
      const py = await post("/envs/reverse-text-py/reset", { args });
      expect([ts.status, py.status]).toEqual([400, 400]);
      expect(py.body.error.code).toBe("VALIDATION_ERROR");
    }
  });

  it("gives equal rewards and metrics on hundreds of completions", async () => {
    const rng = new PyRandom(2026);
    const items = [...evalTexts, ...trainTexts.slice(0, 20)].flatMap((t) => completionsFor(t, rng));
    expect(items.length).toBeGreaterThan(700);
    // An answer longer than the compared maximum is refused by both (reward 0, an error reported).
    items.push({ completion: [{ role: "assistant", content: tagged("x") }], answer: "y".repeat(4001) });
    // Pathological pairs (a periodic text against itself with every other symbol changed), on
    // both sides of the step budget: computed alike below it, refused alike above it.
    const sym = (i: number) => String.fromCodePoint(0x4e00 + i);
    // Each is a request of its own: one costs Python's difflib seconds (within the budget), and a
    // /score call of many such is bounded by the server's deadline per call (ENVWORKER_ENV_TIMEOUT_S).
    let refused = 0;
    for (const n of [400, 1000, 1600, 2400, 4000]) {
      const periodic = Array.from({ length: n }, (_, i) => sym(i % 120)).join("");
      const holes = Array.from(periodic, (ch, i) => (i % 2 ? sym(500) : ch)).join("");
      const item = { completion: [{ role: "assistant", content: tagged(periodic) }], answer: holes };
      const ts = await post("/envs/reverse-text/score", { items: [item] });
      const py = await post("/envs/reverse-text-py/score", { items: [item] });
      expect([ts.status, py.status]).toEqual([200, 200]);
      expect(py.body.results[0].reward, `pathological pair of ${n}`).toBe(ts.body.results[0].reward);
      expect(Boolean(py.body.results[0].errors)).toBe(Boolean(ts.body.results[0].errors));
      if (ts.body.results[0].errors?.lcs_reward_func?.includes("SequenceWorkLimitError")) refused++;
    }
    let exact = 0;
    let partial = 0;
    for (let i = 0; i < items.length; i += 256) {
      const batch = items.slice(i, i + 256);
      const ts = await post("/envs/reverse-text/score", { items: batch });
      const py = await post("/envs/reverse-text-py/score", { items: batch });
      expect([ts.status, py.status]).toEqual([200, 200]);
      for (let k = 0; k < batch.length; k++) {
        const a = ts.body.results[k];
        const b = py.body.results[k];
        expect(b.reward, `item ${i + k}: ${JSON.stringify(batch[k]).slice(0, 200)}`).toBe(a.reward);
        expect(b.metrics).toEqual(a.metrics);
        expect(Boolean(b.errors)).toBe(Boolean(a.errors));
        if (a.reward === 1) exact++;
        else if (a.reward > 0) partial++;
      }
    }
    // The comparison covers all three outcomes, not only one.
    expect(exact).toBeGreaterThan(50);
    expect(partial).toBeGreaterThan(300);
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThan(5);
  }, 300_000);
});
