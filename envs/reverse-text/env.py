"""reverse-text-py: the Python port of reverse-text (index.ts beside it), served by envworker.

    npx envworker serve ./envs/reverse-text/env.py

Same data (data/*.json), prompt, args and reward as the TypeScript environment, so the two score
every completion alike (test/python/python-reverse-text.test.ts compares them). The reward is difflib's
ratio, which Python has natively (the TypeScript one is src/pycompat/difflib.ts).
"""

import bisect
import difflib
import json
import os
from dataclasses import dataclass
from typing import Optional

from envworker import ArgsError, Environment, Example, Reward

SYSTEM_PROMPT = "Reverse the text character-by-character. Put your answer in <reversed_text> tags."
HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = {split: json.load(open(os.path.join(HERE, "data", f"{split}.json"), encoding="utf-8")) for split in ("train", "eval")}

#: The most code points compared (index.ts MAX_COMPARED_CHARS): difflib's work grows with the
#: product of the lengths, so the parsed reply is cut here and a longer answer is refused.
MAX_COMPARED_CHARS = 4000

#: The most difflib steps one comparison may take (index.ts MAX_COMPARE_STEPS, counted as
#: src/pycompat/difflib.ts counts them): lengths alone do not bound the work, and a pathological
#: pair of 4,000 characters took Python's difflib 16 s here. Past it the comparison is refused
#: (reported, reward 0), exactly where the TypeScript one refuses it.
MAX_COMPARE_STEPS = 5_000_000

#: What JavaScript's String.prototype.trim removes, which index.ts uses where verifiers' regex has
#: \s: stripping exactly these keeps the two ports equal on every reply (Python's str.strip()
#: would also remove \x1c-\x1f and \x85, and keep \ufeff).
JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


@dataclass
class Args:
    min_words: int = 0
    max_words: Optional[int] = None
    system_prompt: Optional[str] = SYSTEM_PROMPT

    def __post_init__(self) -> None:
        if self.min_words < 0:
            raise ArgsError("min_words must be at least 0")
        if self.max_words is not None and self.max_words < 1:
            raise ArgsError("max_words must be at least 1 (or null)")
        if self.max_words is not None and self.min_words > self.max_words:
            raise ArgsError("min_words must be less than or equal to max_words")


def dataset(args: Args, split: str):
    rows = []
    for i, text in enumerate(TEXTS.get(split, [])):
        n = len(text.split())
        if n < args.min_words or (args.max_words is not None and n > args.max_words):
            continue
        rows.append(Example(prompt=text, answer=text[::-1], id=f"{split}-{i}"))
    return rows


def extract_tag(text: str, tag: str) -> Optional[str]:
    """The first <tag>...</tag>'s content, stripped (verifiers' XMLParser, by string search)."""
    start = text.find(f"<{tag}>")
    if start == -1:
        return None
    end = text.find(f"</{tag}>", start + len(tag) + 2)
    return None if end == -1 else text[start + len(tag) + 2 : end].strip(JS_WHITESPACE)


def parse_answer(completion, tag: str) -> Optional[str]:
    """The tag from the newest assistant message that has it."""
    for m in reversed(completion):
        if m.get("role") != "assistant" or not m.get("content"):
            continue
        value = extract_tag(m["content"], tag)
        if value is not None:
            return value
    return None


class SequenceWorkLimitError(RuntimeError):
    pass


class BoundedMatcher(difflib.SequenceMatcher):
    """difflib's matcher with the step budget of src/pycompat/difflib.ts: before each element of
    `a` that find_longest_match scans, the steps so far must be within the budget; each element
    costs one step plus one per index of `b` it visits (those in [blo, bhi)). Results within the
    budget are difflib's own."""

    def __init__(self, a: str, b: str, max_work: int) -> None:
        self.steps = 0
        self.max_work = max_work
        super().__init__(None, a, b)

    def find_longest_match(self, alo=0, ahi=None, blo=0, bhi=None):
        ahi = len(self.a) if ahi is None else ahi
        bhi = len(self.b) if bhi is None else bhi
        for i in range(alo, ahi):
            if self.steps > self.max_work:
                raise SequenceWorkLimitError(f"difflib: the comparison needs more than {self.max_work} steps (pathological input)")
            js = self.b2j.get(self.a[i], ())
            self.steps += 1 + bisect.bisect_left(js, bhi) - bisect.bisect_left(js, blo)
        return super().find_longest_match(alo, ahi, blo, bhi)


def lcs_reward_func(completion, answer: str) -> float:
    if len(answer) > MAX_COMPARED_CHARS:
        raise ValueError(f"the answer has {len(answer)} characters, more than the {MAX_COMPARED_CHARS} compared")
    parsed = (parse_answer(completion, "reversed_text") or "")[:MAX_COMPARED_CHARS]
    if parsed == answer:
        return 1.0  # difflib's ratio of equal strings, without its work (as the TypeScript one)
    return BoundedMatcher(parsed, answer, MAX_COMPARE_STEPS).ratio()


environment = Environment(
    name="reverse-text-py",
    description="Reverse a text character by character; reward = difflib similarity to the exact reversal (the Python port of reverse-text).",
    version="0.1.0",
    documentation_url="https://github.com/PrimeIntellect-ai/verifiers/tree/main/environments/reverse_text",
    args=Args,
    splits=("train", "eval"),
    dataset=dataset,
    system_prompt=lambda args: args.system_prompt,
    max_turns=1,
    rubric=[Reward("lcs_reward_func", lcs_reward_func, weight=1.0)],
)
