/**
 * Replies built to trip super-linear parsing (regex backtracking on unclosed tags, long runs of
 * spaces, thousands of "=" signs): every environment must score and step them. A quadratic parser
 * takes minutes on these 200 KB inputs and blocks the whole server meanwhile, so the test's own
 * timeout is what fails; no wall-clock threshold is asserted.
 */
import { describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { resetEpisode, stepEpisode } from "../../src/env/episode.ts";
import { scoreItems } from "../../src/server/score.ts";
import { extractAllTags, extractTag } from "../../src/env/parsers.ts";

const N = 200_000;
const REPLIES: Record<string, string> = {
  "opening tags followed by spaces": ["<guess>", "<answer>", "<reversed_text>", "<alphabetical_sorted>", "```js\n", "\\boxed{", "<think>"]
    .map((t) => t + " ".repeat(N / 7))
    .join(""),
  "many unclosed opening tags": "<guess>".repeat(N / 14) + "<answer>".repeat(N / 16),
  "many fences": "```\n".repeat(N / 4),
  "many boxes": "\\boxed{".repeat(N / 7),
  "many relations": "= 1 ".repeat(N / 4),
  "deep parentheses": "(".repeat(N),
  "a long list": "a, ".repeat(N / 3),
  "arrows": "hat -> ".repeat(N / 7),
};

describe("adversarial replies", () => {
  for (const env of environments) {
    it(`${env.name}: scores and steps every adversarial reply`, async () => {
      for (const text of Object.values(REPLIES)) {
        const [score] = await scoreItems(env, [{ completion: text, answer: "x", info: {} }]);
        expect(Number.isFinite(score!.reward)).toBe(true);
        const { state } = resetEpisode(env, "adv", { seed: 1 });
        const r = await stepEpisode(env, state, { content: text });
        expect(r.result.episode_id).toBe("adv");
      }
    }, 60_000);
  }

  it("extracts tags like verifiers' regex, by string search", () => {
    expect(extractTag("x <a>  one </a> <a>two</a>", "a")).toBe("one");
    expect(extractTag("<a> unclosed <a>two</a>", "a")).toBe("unclosed <a>two");
    expect(extractTag("<a>" + " ".repeat(N), "a")).toBeUndefined();
    expect(extractAllTags("<a>1</a><a>\n2\n</a><a>3", "a")).toEqual(["1", "\n2\n"]);
    expect(extractAllTags("<a>".repeat(N / 3), "a")).toEqual([]);
  });
});
