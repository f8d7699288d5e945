"""One side of the reasoning-gym parity test (test_reasoning_gym.py), run as a process of its own.

    python _rg_reference.py rg       reasoning-gym alone: create_dataset, extract_answer, score_answer
    python _rg_reference.py catalog  envworker's catalog: the environments' generate and reward

reads a job from stdin (``{"size": {dataset: N}, "cases": [{"dataset", "args", "seeds"}]}``) and
writes, per case, each seed's prompt, answer and the scores of the completions :func:`completions`
makes from the gold answer and another item's. The ``rg`` side never imports envworker, so the
guarded eval of envworker.catalogs._answer_guard is not in it: its scores are reasoning-gym's own.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path
from typing import Any, Dict, List


def completions(gold: str, other: str) -> List[str]:
    """What a model might write: the gold answer, a wrong one, partial ones, an answer after a
    retracted one (the last block counts), no tags, an empty block."""
    return [
        f"Let me work it out step by step.\n<answer>{gold}</answer>",
        f"<answer>{other}</answer>",
        f"<answer>The answer is {gold}.</answer>",
        f"<answer>{gold[: len(gold) // 2]}</answer>",
        f"<answer>{other}</answer> No, wait.\n<answer>{gold}</answer>",
        gold,
        "<answer></answer>",
    ]


def run_rg(job: Dict[str, Any]) -> List[Any]:
    import reasoning_gym
    from reasoning_gym.utils import extract_answer

    out = []
    for case in job["cases"]:
        name = case["dataset"]
        n = job["size"][name]
        args = dict(case["args"])
        if "transformation" in args:  # word_sorting's config takes its enum, not the enum's value
            from reasoning_gym.algorithmic.word_sorting import TextTransformation

            args["transformation"] = TextTransformation(args["transformation"])
        ds = reasoning_gym.create_dataset(name, seed=0, size=n, **args)
        rows = []
        def item(i: int) -> Dict[str, Any]:
            # The catalog's rule (reasoning_gym.global_seed): the global random seeded per item.
            random.seed(f"{name}:{i}")
            return ds[i]

        for seed in case["seeds"]:
            entry = item(seed % n)
            gold = "" if entry["answer"] is None else str(entry["answer"])
            other = item((seed + 1) % n)["answer"]
            scores = []
            for text in completions(gold, "" if other is None else str(other)):
                try:
                    scores.append(float(ds.score_answer(extract_answer(text), entry)))
                except Exception:  # noqa: BLE001 (the catalog scores an answer that raises as 0)
                    scores.append(0.0)
            rows.append({"prompt": entry["question"], "answer": gold, "scores": scores})
        out.append(rows)
    return out


def run_catalog(job: Dict[str, Any]) -> List[Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from envworker.catalogs import reasoning_gym as catalog

    out = []
    for case in job["cases"]:
        env = next(e for e in catalog.environments if e.name == catalog.env_name(case["dataset"]))
        # faithful: reasoning-gym's own score_answer where the catalog hardens one (the parity
        # compared is of the formula; the hardened scorers have tests of their own).
        args = env.parse_args({**case["args"], "faithful": True})
        rows = []
        for seed in case["seeds"]:
            ex = asyncio.run(env.example(seed, None, args, "train"))
            other = asyncio.run(env.example(seed + 1, None, args, "train")).answer
            scores = [asyncio.run(env.reward("score_answer", {"completion_text": text, "info": ex.info, "args": args})) for text in completions(ex.answer, other)]
            rows.append({"prompt": ex.prompt, "answer": ex.answer, "scores": scores})
        out.append(rows)
    return out


if __name__ == "__main__":
    job = json.load(sys.stdin)
    result = run_rg(job) if sys.argv[1] == "rg" else run_catalog(job)
    sys.stdout.flush()
    # The result goes to a file descriptor of its own: some datasets print while they generate.
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(result, f)
