/**
 * alphabet-sort through the engine (resetEpisode/stepEpisode), the rubric (scoreRubric) and
 * stateless scoring. Expected numbers and sort orders were computed with CPython (difflib,
 * sorted(), json.dumps, float ** int) when the tests were written. The generated episodes were
 * also checked against a Python re-run of the original generator (same names, same
 * random.Random(seed) draws) for 1,200 seeds/arg sets, and the reward against the original's
 * `weighted_reward` on 3,000 random completions.
 */
import { describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { defaultMaxTurns } from "../../src/env/environment.ts";
import alphabetSortEnv, {
  alphabetSortReward,
  authorNames,
  buildEpisode,
  extractFirstName,
  extractLastName,
  MAX_COMPARED_CHARS,
  MAX_NAMES_BOUND,
  MAX_TURNS_BOUND,
  sortNames,
  type AlphabetSortArgs,
  type AlphabetSortInfo,
} from "../../envs/alphabet-sort/index.ts";
import { compareCodePoints, pyJsonDumps, pyPowInt, pyStrip } from "../../envs/shared/py.ts";
import { resetEpisode, stepEpisode, type EpisodeState } from "../../src/env/episode.ts";
import { ApiError } from "../../src/env/errors.ts";
import type { Message } from "../../src/env/messages.ts";
import { PyRandom } from "../../src/pycompat/random.ts";
import { sequenceRatio } from "../../src/pycompat/difflib.ts";
import { scoreRubric } from "../../src/env/rubric.ts";
import { scoreItems } from "../../src/server/score.ts";

const env = alphabetSortEnv;
const defaults = env.parseArgs({}) as AlphabetSortArgs;

const info = (s: EpisodeState) => s.info as unknown as AlphabetSortInfo;
const tagFor = (t: number) => (t === 0 ? "alphabetical_sorted" : "combined_alphabetical_sorted");
const gold = (i: AlphabetSortInfo, t: number) => `<${tagFor(t)}>\n${i.ground_truths[t]!.join("\n")}\n</${tagFor(t)}>`;

/** A tiny hand-made episode info: turn 0 = [AnnLee, BoKim]; turn 1 adds CyZhu. */
const tiny: AlphabetSortInfo = {
  follow_ups: ["(follow-up)"],
  turn_names: [["BoKim", "AnnLee"], ["CyZhu"]],
  ground_truths: [["AnnLee", "BoKim"], ["AnnLee", "BoKim", "CyZhu // new name!"]],
  num_turns: 2,
  sort_by_first: true,
  names_seed: 0,
};
const T0_GOLD = "<alphabetical_sorted>\nAnnLee\nBoKim\n</alphabetical_sorted>";
const T1_GOLD = "<combined_alphabetical_sorted>\nAnnLee\nBoKim\nCyZhu // new name!\n</combined_alphabetical_sorted>";

function conversation(...answers: (string | null)[]): Message[] {
  const out: Message[] = [];
  answers.forEach((a, t) => {
    if (t > 0) out.push({ role: "user", content: "next" });
    out.push({ role: "assistant", content: a });
  });
  return out;
}

async function reward(completion: Message[], inf: AlphabetSortInfo = tiny, args: object = {}) {
  const r = await scoreRubric(env.spec.rubric, {
    prompt: [],
    completion,
    answer: "",
    info: inf,
    state: {},
    args: env.parseArgs(args) as AlphabetSortArgs,
  });
  expect(r.errors).toBeUndefined();
  return r.reward;
}

describe("alphabet-sort: definition", () => {
  it("is served from envs/index.ts, multi-turn, one reward function", () => {
    expect(environments).toContain(env);
    expect(env.name).toBe("alphabet-sort");
    expect(env.spec.respond).toBeTypeOf("function");
    expect(env.spec.rubric.map((r) => [r.name, r.weight])).toEqual([["weighted_reward", 1.0]]);
    expect(defaults).toEqual({
      min_turns: 1,
      max_turns: 3,
      min_names_per_turn: 1,
      max_names_per_turn: 5,
      similarity_power: 4,
      power_per_turn: true,
    });
  });

  it("never truncates before num_turns: maxTurns is the args' max_turns (3 with the defaults, as GET /envs lists)", () => {
    expect(env.maxTurnsFor(env.parseArgs({}))).toBe(defaults.max_turns);
    expect(defaultMaxTurns(env)).toBe(3);
    expect(env.maxTurnsFor(env.parseArgs({ max_turns: 7 }))).toBe(7);
    expect(() => env.parseArgs({ max_turns: MAX_TURNS_BOUND })).not.toThrow();
    expect(() => resetEpisode(env, "ep", { args: { max_turns: MAX_TURNS_BOUND + 1 } })).toThrow(ApiError);
  });

  it("validates args like the original's asserts", () => {
    for (const bad of [
      { min_turns: 0 },
      { min_turns: 3, max_turns: 2 },
      { min_names_per_turn: 0 },
      { min_names_per_turn: 6 },
      { similarity_power: 1.5 },
      { power_per_turn: "yes" },
      { typo: 1 },
    ]) {
      expect(() => resetEpisode(env, "ep", { args: bad }), JSON.stringify(bad)).toThrow(ApiError);
    }
  });
});

describe("alphabet-sort: episodes", () => {
  it("seed 7: the exact first prompt (no system prompt)", () => {
    const { state } = resetEpisode(env, "ep", { seed: 7 });
    expect(state.messages).toEqual([
      {
        role: "user",
        content:
          "Sort these names in alphabetical order by FIRST name: RahulHills, CathrynSporer-Herzog, AnneBahringer-Rogahn, LeannRunte\n" +
          "\n" +
          "Use exactly this format:\n<alphabetical_sorted>\nName1\nName2\nName3\n</alphabetical_sorted>",
      },
    ]);
    expect(info(state)).toEqual({
      follow_ups: [],
      turn_names: [["LeannRunte", "RahulHills", "AnneBahringer-Rogahn", "CathrynSporer-Herzog"]],
      ground_truths: [["AnneBahringer-Rogahn", "CathrynSporer-Herzog", "LeannRunte", "RahulHills"]],
      num_turns: 1,
      sort_by_first: true,
      names_seed: 1390851128,
    });
    // The original's answer column, byte for byte as Python's json.dumps writes it.
    expect(state.answer).toBe(
      '{"ground_truths": [["AnneBahringer-Rogahn", "CathrynSporer-Herzog", "LeannRunte", "RahulHills"]], ' +
        '"turn_names": [["LeannRunte", "RahulHills", "AnneBahringer-Rogahn", "CathrynSporer-Herzog"]]}',
    );
  });

  it("seed 1: three turns, LAST-name sorting, follow-ups with the format block and threshold", () => {
    const { state } = resetEpisode(env, "ep", { seed: 1 });
    const i = info(state);
    expect(state.messages[0]!.content).toBe(
      "Sort these names in alphabetical order by LAST name: RusselRatke\n\n" +
        "Use exactly this format:\n<alphabetical_sorted>\nName1\nName2\nName3\nName4\n</alphabetical_sorted>",
    );
    expect(i.follow_ups).toEqual([
      "Now sort ALL of these names alphabetically by LAST name: TheaSchaden, DannyNikolaus, BabyWiegand\n\n" +
        "These are in addition to the prior list. Mark any NEW names (that weren't in the prior list) with `// new name!` at the end.\n\n" +
        "Use exactly this format:\n<combined_alphabetical_sorted>\nName1 // new name!\nName2 // new name!\n</combined_alphabetical_sorted>",
      "Now sort ALL of these names alphabetically by LAST name: GenevieveLowe\n\n" +
        "These are in addition to the prior list. Mark any NEW names (that weren't in the prior list) with `// new name!` at the end. Follow the same format as before.",
    ]);
    expect(i.ground_truths).toEqual([
      ["RusselRatke"],
      ["DannyNikolaus // new name!", "RusselRatke", "TheaSchaden // new name!", "BabyWiegand // new name!"],
      ["GenevieveLowe // new name!", "DannyNikolaus", "RusselRatke", "TheaSchaden", "BabyWiegand"],
    ]);
    expect(i.num_turns).toBe(3);
  });

  it("is reproducible: same seed, same episode; different seeds vary", () => {
    const a = resetEpisode(env, "a", { seed: 12345 }).state;
    const b = resetEpisode(env, "b", { seed: 12345 }).state;
    expect(b.messages).toEqual(a.messages);
    expect(b.info).toEqual(a.info);
    const prompts = new Set(Array.from({ length: 30 }, (_, s) => resetEpisode(env, "x", { seed: s }).state.messages[0]!.content));
    expect(prompts.size).toBe(30);
    // buildEpisode itself is a pure function of the rng state.
    expect(buildEpisode(new PyRandom(99), defaults)).toEqual(buildEpisode(new PyRandom(99), defaults));
  });

  it("respects the turn and name-count args; template counts are random, not the real counts", () => {
    const a = env.parseArgs({ min_turns: 2, max_turns: 4, min_names_per_turn: 2, max_names_per_turn: 3 }) as AlphabetSortArgs;
    let mismatchedTemplate = 0;
    for (let seed = 0; seed < 200; seed++) {
      const ex = buildEpisode(new PyRandom(seed), a);
      const i = ex.info!;
      expect(i.num_turns).toBeGreaterThanOrEqual(2);
      expect(i.num_turns).toBeLessThanOrEqual(4);
      expect(i.follow_ups.length).toBe(i.num_turns - 1);
      for (const names of i.turn_names) expect(names.length).toBeGreaterThanOrEqual(2);
      for (const names of i.turn_names) expect(names.length).toBeLessThanOrEqual(3);
      const k = (ex.prompt.match(/^Name\d+$/gm) ?? []).length;
      expect(k).toBeGreaterThanOrEqual(2);
      expect(k).toBeLessThanOrEqual(3);
      if (k !== i.turn_names[0]!.length) mismatchedTemplate++;
      for (const fu of i.follow_ups.slice(1)) expect(fu.endsWith(" Follow the same format as before.")).toBe(true);
    }
    expect(mismatchedTemplate).toBeGreaterThan(0);
  });

  it("marks exactly the names new in turn t >= 1 with ` // new name!` in the ground truth", () => {
    for (let seed = 0; seed < 100; seed++) {
      const i = buildEpisode(new PyRandom(seed), defaults).info!;
      const cumulative: string[] = [];
      i.turn_names.forEach((names, t) => {
        cumulative.push(...names);
        const gt = i.ground_truths[t]!;
        const bare = gt.map((l) => l.replace(/ \/\/ new name!$/, ""));
        expect(bare).toEqual(sortNames(cumulative, i.sort_by_first));
        const marked = gt.filter((l) => l.endsWith(" // new name!")).map((l) => l.replace(/ \/\/ new name!$/, ""));
        expect(new Set(marked)).toEqual(new Set(t === 0 ? [] : names));
      });
    }
  });

  it("generates distinct names with the capital split between first and last name", () => {
    const names = authorNames(42, 300);
    expect(new Set(names).size).toBe(300);
    expect(authorNames(42, 5)).toEqual(names.slice(0, 5)); // a prefix does not depend on the count
    for (const n of names) {
      expect(n).not.toContain(" ");
      expect(n[0]).toMatch(/\p{Lu}/u);
      expect(extractLastName(n)[0]).toMatch(/\p{Lu}/u);
      expect(extractFirstName(n) + extractLastName(n)).toBe(n);
    }
  });
});

describe("alphabet-sort: sorting is Python's sorted()", () => {
  it("splits at the first uppercase letter after index 0", () => {
    expect([extractFirstName("VladimirDrinfeld"), extractLastName("VladimirDrinfeld")]).toEqual(["Vladimir", "Drinfeld"]);
    expect([extractFirstName("JohnVanDyke"), extractLastName("JohnVanDyke")]).toEqual(["John", "VanDyke"]);
    expect([extractFirstName("deLaCruz"), extractLastName("deLaCruz")]).toEqual(["de", "LaCruz"]);
    expect([extractFirstName("madonna"), extractLastName("madonna")]).toEqual(["madonna", ""]);
    expect([extractFirstName(""), extractLastName("")]).toEqual(["", ""]);
  });

  it("compares by code point (uppercase before lowercase, no locale rules)", () => {
    // CPython: sorted(names, key=extract_first_name)
    expect(sortNames(["ZoeAdams", "adaBrown", "AdaBrown", "ÉmileZola", "EveStone"], true)).toEqual([
      "AdaBrown",
      "EveStone",
      "ZoeAdams",
      "adaBrown",
      "ÉmileZola",
    ]);
    // Astral code points sort after U+FF5E, unlike UTF-16 comparison.
    expect(sortNames(["A😀Lee", "A～Kim"], true)).toEqual(["A～Kim", "A😀Lee"]);
    expect("A😀" < "A～").toBe(true); // what a naive JS comparison would do
    expect(compareCodePoints("A😀", "A～")).toBe(1);
    expect(compareCodePoints("ab", "abc")).toBe(-1);
    expect(compareCodePoints("abc", "abc")).toBe(0);
  });

  it("is stable, and an empty last name sorts first", () => {
    // CPython: sorted(names, key=extract_last_name)
    const names = ["CySmith", "AnnSmith", "madonna", "BobSmith", "deLaCruz", "JohnVanDyke", "AnnaO'Keefe", "AnneBahringer-Rogahn"];
    expect(sortNames(names, false)).toEqual([
      "madonna",
      "AnneBahringer-Rogahn",
      "deLaCruz",
      "AnnaO'Keefe",
      "CySmith",
      "AnnSmith",
      "BobSmith",
      "JohnVanDyke",
    ]);
  });
});

describe("alphabet-sort: multi-turn flow", () => {
  it("replays the follow-ups and ends after num_turns answers; gold answers score exactly 1.0", async () => {
    let { state } = resetEpisode(env, "ep", { seed: 1 });
    const i = info(state);
    expect(i.num_turns).toBe(3);
    for (let t = 0; t < 3; t++) {
      const step = await stepEpisode(env, state, { content: `Here you go.\n\n${gold(i, t)}` });
      state = step.state;
      if (t < 2) {
        expect(step.result.done).toBe(false);
        expect(step.result.reward).toBeNull();
        expect(step.result.observation.messages).toEqual([{ role: "user", content: i.follow_ups[t] }]);
      } else {
        expect(step.result.done).toBe(true);
        expect(step.state.truncated).toBe(false);
        expect(step.result.observation.messages).toEqual([]); // the env never comments on answers
        expect(step.result.reward).toBe(1.0);
        expect(step.result.observation.metrics).toEqual({ weighted_reward: 1.0 });
      }
    }
    expect(state.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
    await expect(stepEpisode(env, state, { content: "more" })).rejects.toThrow(ApiError);
  });

  it("a single-turn episode ends after one answer", async () => {
    const { state } = resetEpisode(env, "ep", { seed: 7 });
    const step = await stepEpisode(env, state, { content: gold(info(state), 0) });
    expect(step.result.done).toBe(true);
    expect(step.result.reward).toBe(1.0);
  });

  it("runs the longest allowed episode to its end without truncation", async () => {
    let { state } = resetEpisode(env, "ep", { seed: 5, args: { min_turns: 10, max_turns: 10 } });
    const i = info(state);
    expect(i.num_turns).toBe(10);
    for (let t = 0; t < 10; t++) {
      const step = await stepEpisode(env, state, { content: gold(i, t) });
      state = step.state;
      expect(step.result.done).toBe(t === 9);
    }
    expect(state.truncated).toBe(false);
    expect(state.reward).toBe(1.0);
  });

  it("wrong answers are scored, not answered: the flow is the same", async () => {
    let { state } = resetEpisode(env, "ep", { seed: 1 });
    for (let t = 0; t < 3; t++) state = (await stepEpisode(env, state, { content: "I don't know." })).state;
    expect(state.done).toBe(true);
    expect(state.reward).toBe(0);
  });
});

describe("alphabet-sort: weighted_reward", () => {
  it("gold answers score 1.0, case and surrounding whitespace do not matter, blank lines are skipped", async () => {
    expect(await reward(conversation(T0_GOLD, T1_GOLD))).toBe(1.0);
    const messy = "<alphabetical_sorted>\n\n   ANNLEE \t\n\n bokim\n</alphabetical_sorted>";
    const messy1 = "<combined_alphabetical_sorted>annlee\nBOKIM\n  cyzhu // NEW NAME!  </combined_alphabetical_sorted>";
    expect(await reward(conversation(messy, messy1))).toBe(1.0);
  });

  it("takes the mean over turns of similarity**4", async () => {
    // Turn 0: pred "annlee" vs "annlee\nbokim": ratio 2*6/18 = 0.6666666666666666, **4 = 0.19753086419753083.
    const partial = "<alphabetical_sorted>\nAnnLee\n</alphabetical_sorted>";
    expect(await reward(conversation(partial, T1_GOLD))).toBe(0.5987654320987654); // (0.19753086419753083 + 1) / 2
    // Reversed order: "bokim\nannlee" vs "annlee\nbokim": ratio 0.5, **4 = 0.0625.
    const reversed = "<alphabetical_sorted>\nBoKim\nAnnLee\n</alphabetical_sorted>";
    expect(await reward(conversation(reversed, T1_GOLD))).toBe((0.0625 + 1) / 2);
    expect(await reward(conversation(partial, T1_GOLD), tiny, { similarity_power: 1 })).toBe((0.6666666666666666 + 1) / 2);
  });

  it("power_per_turn=false: (mean of raw similarities)**power", async () => {
    const partial = "<alphabetical_sorted>\nAnnLee\n</alphabetical_sorted>";
    expect(await reward(conversation(partial, T1_GOLD), tiny, { power_per_turn: false })).toBe(0.4822530864197529); // ((2/3 + 1) / 2) ** 4
  });

  it("a missing tag, a wrong tag or a missing turn scores 0 for that turn", async () => {
    expect(await reward(conversation("AnnLee\nBoKim", T1_GOLD))).toBe(0.5);
    // Turn 0 must use <alphabetical_sorted>, later turns <combined_alphabetical_sorted>.
    expect(await reward(conversation(T0_GOLD, "<alphabetical_sorted>\nAnnLee\nBoKim\nCyZhu // new name!\n</alphabetical_sorted>"))).toBe(0.5);
    expect(await reward(conversation(T0_GOLD))).toBe(0.5); // the second answer never came
    expect(await reward(conversation(null, T1_GOLD))).toBe(0.5); // a tool-call-only turn has no text
    expect(await reward([])).toBe(0);
    expect(await reward(conversation("<alphabetical_sorted></alphabetical_sorted>", "<combined_alphabetical_sorted>\n \n</combined_alphabetical_sorted>"))).toBe(0);
  });

  it("several tags: the last score only if every attempt strictly improves, else 0", async () => {
    const partial = "<alphabetical_sorted>\nAnnLee\n</alphabetical_sorted>";
    const reversed = "<alphabetical_sorted>\nBoKim\nAnnLee\n</alphabetical_sorted>";
    // 0.0625 -> 0.1975... -> 1.0: strictly improving, the last one counts.
    expect(await reward(conversation(`${reversed}\n${partial}\nwait:\n${T0_GOLD}`, T1_GOLD))).toBe(1.0);
    // Gold then a worse attempt: 0 for the turn.
    expect(await reward(conversation(`${T0_GOLD}\n${partial}`, T1_GOLD))).toBe(0.5);
    // The same answer twice does not strictly improve: 0 for the turn.
    expect(await reward(conversation(`${T0_GOLD}${T0_GOLD}`, T1_GOLD))).toBe(0.5);
    // An empty block scores 0, so an empty block followed by the gold one improves.
    expect(await reward(conversation(`<alphabetical_sorted></alphabetical_sorted>${T0_GOLD}`, T1_GOLD))).toBe(1.0);
  });

  it("matches tags non-greedily across lines (re.DOTALL)", async () => {
    const text = "<alphabetical_sorted>AnnLee\nBoKim</alphabetical_sorted> trailing </alphabetical_sorted>";
    expect(await reward(conversation(text, T1_GOLD))).toBe(1.0);
  });

  it("scores statelessly with the episode's info (/score)", async () => {
    const { state } = resetEpisode(env, "ep", { seed: 1 });
    const i = info(state);
    const completion: Message[] = [
      { role: "assistant", content: gold(i, 0) },
      { role: "user", content: i.follow_ups[0]! },
      { role: "assistant", content: gold(i, 1) },
      { role: "user", content: i.follow_ups[1]! },
      { role: "assistant", content: gold(i, 2) },
    ];
    const [full, partial, powered] = await scoreItems(env, [
      { completion, info: state.info },
      { completion: completion.slice(0, 3), info: state.info },
      { completion: T0_GOLD.replace("BoKim", "BoKam"), info: { ...tiny, num_turns: 1 }, args: { similarity_power: 2 } },
    ]);
    expect(full!.reward).toBe(1.0);
    expect(partial!.reward).toBe(2 / 3);
    // "annlee\nbokam" vs "annlee\nbokim": ratio 2*11/24 = 0.9166666666666666; **2 = 0.8402777777777777.
    expect(powered!.reward).toBe(0.8402777777777777);
  });

  it("limits: attempts are compared up to ~2x the longest ground truth; longer ground truths are refused", async () => {
    const widest = { ...defaults, min_turns: MAX_TURNS_BOUND, max_turns: MAX_TURNS_BOUND, min_names_per_turn: MAX_NAMES_BOUND, max_names_per_turn: MAX_NAMES_BOUND };
    let longest = 0;
    for (let seed = 0; seed < 6; seed++) {
      for (const gt of buildEpisode(new PyRandom(seed), widest).info!.ground_truths) longest = Math.max(longest, gt.join("\n").length);
    }
    expect(longest).toBeGreaterThan(5000);
    expect(MAX_COMPARED_CHARS).toBeGreaterThanOrEqual(2 * longest);
    // An attempt past the cap is compared up to the cap.
    const filler = "x".repeat(MAX_COMPARED_CHARS);
    const long = `<alphabetical_sorted>\nAnnLee\nBoKim\n${filler}${"y".repeat(50_000)}\n</alphabetical_sorted>`;
    const capped = `annlee\nbokim\n${filler}`.slice(0, MAX_COMPARED_CHARS);
    const expected = pyPowInt(sequenceRatio(capped, "annlee\nbokim"), 4);
    expect(expected).toBeGreaterThan(0);
    expect(await reward(conversation(long, T1_GOLD))).toBe((expected + 1) / 2);
    // A ground truth past the cap (only a /score client can send one) is refused: reward 0, reported.
    const huge = { ...tiny, ground_truths: [["Ann".repeat(MAX_COMPARED_CHARS)], tiny.ground_truths[1]!] };
    const [r] = await scoreItems(env, [{ completion: conversation(T0_GOLD, T1_GOLD), info: huge }]);
    expect(r!.reward).toBe(0);
    expect(r!.errors?.weighted_reward).toMatch(/SequenceTooLongError/);
    // Within the length cap, a pathological pair is cut by the step budget (reported, 0).
    const sym = (i: number) => String.fromCodePoint(0x4e00 + i);
    const periodic = Array.from({ length: 8000 }, (_, i) => sym(i % 120)).join("");
    const holes = Array.from(periodic, (ch, i) => (i % 2 ? sym(500) : ch)).join("");
    const [w] = await scoreItems(env, [
      { completion: [{ role: "assistant", content: `<alphabetical_sorted>\n${periodic}\n</alphabetical_sorted>` }], info: { ...tiny, num_turns: 1, ground_truths: [[holes]] } },
    ]);
    expect(w!.reward).toBe(0);
    expect(w!.errors?.weighted_reward).toMatch(/SequenceWorkLimitError/);
    // num_turns far past the turns given: the same mean, without a loop over empty turns.
    expect(await reward(conversation(T0_GOLD, T1_GOLD), { ...tiny, num_turns: 1e15 })).toBe(2 / 1e15);
  });

  it("reports an error (reward 0) when info is missing", async () => {
    const r = await scoreRubric(env.spec.rubric, { prompt: [], completion: [], answer: "", info: {}, state: {}, args: defaults });
    expect(r.reward).toBe(0);
    expect(r.errors?.weighted_reward).toMatch(/num_turns/);
    expect(() => alphabetSortReward([], { num_turns: 1 }, defaults)).toThrow(/ground_truths/);
  });
});

describe("alphabet-sort: Python helpers", () => {
  it("pyPowInt rounds like CPython where V8's pow does not", () => {
    const x = (2.0 * 94) / 241;
    expect(pyPowInt(x, 4)).toBe(0.370308112776701); // CPython: (2.0*94/241)**4
    expect(pyPowInt(0.6666666666666666, 4)).toBe(0.19753086419753083);
    expect(pyPowInt(0.5, 4)).toBe(0.0625);
    expect(pyPowInt(0.3, 0)).toBe(1);
    expect(pyPowInt(0, 4)).toBe(0);
    expect(pyPowInt(1, 100)).toBe(1);
    expect(pyPowInt(-0.5, 3)).toBe(-0.125);
    expect(pyPowInt(1e-200, 2)).toBe(0); // underflow
    expect(pyPowInt(3e-160, 2)).toBe(9e-320); // subnormal result, correctly rounded
  });

  it("pyJsonDumps writes what json.dumps writes", () => {
    expect(pyJsonDumps({ a: ["é😀\"\\\x7f\n", "x"], b: [1] })).toBe('{"a": ["\\u00e9\\ud83d\\ude00\\"\\\\\\u007f\\n", "x"], "b": [1]}');
  });

  it("pyStrip strips what str.strip() strips", () => {
    expect(pyStrip("\x1c abc \x85")).toBe("abc");
    expect(pyStrip("\ufeffabc")).toBe("\ufeffabc");
    expect(pyStrip(" \t\n")).toBe("");
  });
});
