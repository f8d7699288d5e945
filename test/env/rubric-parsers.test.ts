import { describe, expect, it } from "vitest";
import { extractAllTags, extractTag, parseAnswer, stripThink } from "../../src/env/parsers.ts";
import { scoreRubric } from "../../src/env/rubric.ts";

describe("parsers (verifiers semantics)", () => {
  it("extracts the first tag, trimmed, across lines", () => {
    expect(extractTag("a <x>\n  hi there \n</x> <x>second</x>", "x")).toBe("hi there");
    expect(extractTag("none", "x")).toBeUndefined();
    expect(extractTag("<x></x>", "x")).toBe("");
    expect(extractAllTags("<x>1</x><x>\n2\n</x>", "x")).toEqual(["1", "\n2\n"]);
  });

  it("reads the answer from the newest assistant message that has the tag", () => {
    const completion = [
      { role: "assistant" as const, content: "<a>first</a>" },
      { role: "user" as const, content: "<a>user's</a>" },
      { role: "assistant" as const, content: "no tag" },
    ];
    expect(parseAnswer(completion, "a")).toBe("first");
    expect(parseAnswer("<a> s </a>", "a")).toBe("s");
    expect(parseAnswer([], "a")).toBeUndefined();
  });

  it("strips think blocks like MaybeThinkParser", () => {
    expect(stripThink("<think>a</think> b <think>c</think>  answer ")).toBe("answer");
    expect(stripThink("plain ")).toBe("plain ");
  });
});

describe("rubric", () => {
  const input = { prompt: [], completion: [], answer: "", info: {}, state: {}, args: {} };
  it("sums weighted rewards; weight 0 is a metric", async () => {
    const s = await scoreRubric(
      [
        { name: "a", fn: () => 0.5, weight: 2 },
        { name: "b", fn: () => true },
        { name: "m", fn: async () => 7, weight: 0 },
      ],
      input,
    );
    expect(s).toEqual({ reward: 2, metrics: { a: 0.5, b: 1, m: 7 } });
  });
});
