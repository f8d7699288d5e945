"""Hack probes over every reasoning-gym dataset the catalog serves: a grader pays only for the task.

For each dataset and a few items, adversarial completions are scored through the environment's
reward (as the server calls it): constant answers, several answer blocks, a wrong answer repeated,
tags split over lines, a markdown fence inside the tag, look-alike letters and fullwidth digits,
a wrong integer written as a decimal, an all-zero answer of the right shape, 100 KB answers, deep
brackets, and the question echoed. A probe whose answer is (or contains) the item's true answer
may score anything; any other scores at most what a wrong answer scores there: 0, or the
dataset's cap in :data:`CAPS` (credit reasoning-gym gives by design, each with why).

:data:`FOUND` lists the hacks reasoning-gym's own scorers pay for; each must pay with
``faithful: true`` (reasoning-gym's formula, kept for parity) and not by default (the catalog's
hardened scorer, catalogs/_hardened.py). Skipped where reasoning-gym is not installed, as
test_reasoning_gym.py is.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import trainer_missing  # noqa: E402

MISSING = trainer_missing("reasoning-gym", "reasoning_gym", why="envworker.catalogs.reasoning_gym serves its datasets")

SEEDS = (1, 2, 3, 4)
CONSTANTS = ("0", "1", "-1", "yes", "no", "True", "False", "nan", "inf", "-inf", "", "[]", "{}", "None", "0.5")
HUGE = 100_000  # characters

#: The most a probe that does not name the true answer may score, where it is not 0, and why:
#: reasoning-gym's own credit for an answer that is wrong but well formed, or for a near miss.
CAPS: Dict[str, Tuple[float, str]] = {
    "advanced_geometry": (0.05, "0.05 for a wrong answer"),
    "arc_agi": (0.05, "0.05 for any answer"),
    "rearc": (0.05, "0.05 for any answer"),
    "boxnet": (0.05, "0.05 for a JSON list or object that is not a plan"),
    "complex_arithmetic": (0.4, "exp(-distance) for a finite answer: a near miss, or a constant near a small answer"),
    "codeio": (0.01, "0.01 for any JSON object"),
    "color_cube_rotation": (0.01, "0.01 for any answer"),
    "countdown": (0.05, "0.05 for an expression that is not the solution, 0.01 for anything else"),
    "cryptarithm": (0.01, "0.01 for an assignment that is not the solution"),
    "emoji_mystery": (0.01, "0.01 for any answer"),
    "figlet_font": (0.2, "0.1 a letter in its place, up to 1: a word sharing letters"),
    "fraction_simplification": (0.05, "0.05 for a fraction that is not the answer, 0.01 for anything else"),
    "graph_color": (0.01, "0.01 for JSON that is not a colouring"),
    "group_anagrams": (0.01, "0.01 for JSON that is not the grouping"),
    "gsm_symbolic": (0.01, "0.01 for any answer"),
    "jugs": (0.01, "0.01 for JSON that is not a solution"),
    "knight_swap": (0.05, "0.05 for a list of moves that does not solve it"),
    "mini_sudoku": (0.5, "0.9 per right cell of a full grid: another solution shares some of its rows"),
    "palindrome_generation": (0.05, "0.05 for a string that is not a palindrome of the letters, 0.02 for anything else"),
    "polynomial_equations": (0.5, "exp(-distance) per root, less per root missing: a list with one root right, or roots near these"),
    "pool_matrix": (0.1, "0.1 for a matrix of the right shape"),
    "power_function": (0.01, "0.01 for any answer"),
    "prime_factorization": (0.01, "0.01 for a product that is not the factorization"),
    "propositional_logic": (0.25, "0.25 for a conclusion that holds but is trivial (premises that imply everything), 0.05 for one that does not hold"),
    "puzzle24": (0.01, "0.01 for any answer, even none"),
    "quantum_lock": (0.5, "0.5 for a sequence that reaches the target, not the shortest"),
    "rubiks_cube": (0.01, "0.01 for moves that do not solve it"),
    "rush_hour": (0.01, "0.01 for moves that do not solve it"),
    "sentence_reordering": (0.05, "0.05 for any answer"),
    "spell_backward": (0.5, "1/len per letter in its place: a word sharing letters"),
    "sudoku": (0.15, "credit per right cell of a full grid: another grid's rows share some"),
    "tsumego": (0.05, "0.05 for a move on the board that is not the answer, 0.01 for anything else"),
}

#: Hacks reasoning-gym's own scorers pay for (the probe suite found them), and what they pay:
#: ``faithful: true`` must still pay at least that; the default scorer pays at most the cap.
FOUND: Dict[str, Tuple[str, float]] = {
    "puzzle24": ("2*2*2*3", 1.0),
    "complex_arithmetic": ("nan", 1.0),
    "game_of_life_halting": ("any text at all", 1.0),
    "coin_flip": ("0", 0.9),
    "rectangle_count": ("2", 0.16),
    "time_intervals": ("00:00", 0.1),
    "game_of_life": ("ZERO", 0.5),
    "knights_knaves": ("ONE ROLE", 0.5),
}

_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
_LOOKALIKE = str.maketrans({"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "i": "і", "1": "l", "0": "O"})
_GRID = re.compile(r"[\d\s\[\](),.:\-]+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def probes(question: str, gold: str, other: Optional[str]) -> Dict[str, str]:
    """Adversarial completions for one item (``other``: another item's answer, a wrong one)."""
    out = {f"constant {c!r}": f"<answer>{c}</answer>" for c in CONSTANTS}
    out["no answer block"] = "I am sure of it."
    out["several blocks"] = "<answer>0</answer>\n<answer>yes</answer>\n<answer>True</answer>"
    out["tags split over lines"] = f"<ans\nwer>{gold}</ans\nwer>"
    out["echo the question"] = f"<answer>{question}</answer>"
    out["huge"] = "<answer>" + "1 " * (HUGE // 2) + "</answer>"
    out["deep brackets"] = "<answer>" + "(" * (HUGE // 2) + ")" * (HUGE // 2) + "</answer>"
    out["deep lists"] = "<answer>" + "[" * 500 + "]" * 500 + "</answer>"
    if _GRID.fullmatch(gold) and re.search(r"\d", gold):
        out["zero of the answer's shape"] = f"<answer>{re.sub(r'[0-9]', '0', gold)}</answer>"
    if re.fullmatch(r"-?\d+", gold):
        out["a wrong integer as a decimal"] = f"<answer>{int(gold) + 1}.0</answer>"
        out["a wrong integer in e-notation"] = f"<answer>{(int(gold) + 1) * (1 + 1e-9):.12e}</answer>"
    if other is not None:
        out["wrong answer, block repeated"] = f"<answer>{other}</answer>\n" * 3
        out["wrong answer twice in one block"] = f"<answer>{other}\n{other}</answer>"
        out["markdown fence in the tag"] = f"<answer>```\n{other}\n```</answer>"
        out["look-alike letters"] = f"<answer>{other.translate(_LOOKALIKE)}</answer>"
        out["fullwidth digits"] = f"<answer>{other.translate(_FULLWIDTH)}</answer>"
        out["wrong answer, huge"] = "<answer>" + (other + "\n") * max(1, HUGE // (len(other) + 1)) + "</answer>"
    return out


def names_the_answer(answer: Optional[str], gold: str) -> bool:
    """Whether a probe's answer is or contains the item's true answer (case aside), or is one of
    the numbers it lists (one root of several: partly right)."""
    if answer is None or not gold.strip():
        return False
    if gold.strip().lower() in answer.lower():
        return True
    if _NUMBER.fullmatch(answer.strip()):
        return float(answer) in {float(n) for n in _NUMBER.findall(gold)}
    return False


def setUpModule() -> None:
    global catalog, extract_answer
    if MISSING:
        print(f"\ntest_reasoning_gym_probes: skipped: {MISSING}", file=sys.stderr)
        return
    from reasoning_gym.utils import extract_answer  # noqa: F811

    from envworker.catalogs import reasoning_gym as catalog  # noqa: F811


async def _reward(env: Any, text: str, info: Any, args: Any) -> float:
    return await env.reward("score_answer", {"completion_text": text, "info": info, "args": args})


async def _items(env: Any, args: Any, seeds: Tuple[int, ...]) -> List[Tuple[Any, Optional[str]]]:
    """(example, a wrong answer: the first later item's answer that differs) per seed."""
    out = []
    for seed in seeds:
        ex = await env.example(seed, None, args, "train")
        other = None
        for k in range(1, 6):
            answer = (await env.example(seed + 1000 * k, None, args, "train")).answer
            if answer.strip() and answer.strip().lower() != ex.answer.strip().lower():
                other = answer
                break
        out.append((ex, other))
    return out


@unittest.skipIf(MISSING, MISSING)
class Probes(unittest.TestCase):
    def test_no_dataset_pays_for_a_hack(self) -> None:
        async def run() -> List[str]:
            failures: List[str] = []
            for served in sorted(catalog.SERVED.values(), key=lambda s: s.dataset):
                env = served.environment()
                args = env.parse_args({})
                cap = CAPS.get(served.dataset, (0.0, ""))[0]
                for ex, other in await _items(env, args, SEEDS):
                    for name, text in probes(ex.prompt, ex.answer, other).items():
                        if names_the_answer(extract_answer(text), ex.answer):
                            continue
                        got = await _reward(env, text, ex.info, args)
                        if got > cap + 1e-9:
                            failures.append(f"{served.dataset} item {ex.info['index']}: {name} scores {got:.3g} > {cap} (answer {ex.answer[:40]!r})")
            return failures

        started = time.process_time()
        failures = asyncio.run(run())
        self.assertEqual(failures, [], "\n".join(failures))
        print(f"\nhack probes: {len(catalog.SERVED)} datasets in {time.process_time() - started:.1f} s of CPU", file=sys.stderr)

    def test_caps_name_served_datasets_and_the_hardened_table_is_found(self) -> None:
        from envworker.catalogs._hardened import HARDENED

        self.assertLessEqual(set(CAPS), set(catalog.SERVED))
        self.assertEqual(set(FOUND), set(HARDENED))
        for dataset, (cap, why) in CAPS.items():
            self.assertTrue(0 < cap < 1 and why, dataset)


@unittest.skipIf(MISSING, MISSING)
class Hardened(unittest.TestCase):
    """Each hack reasoning-gym pays for pays under ``faithful: true`` and not by default; right
    answers score alike under both."""

    def _text(self, hack: str, ex: Any) -> str:
        if hack == "ZERO":
            return f"<answer>{re.sub(r'[0-9]', '0', ex.answer)}</answer>"
        if hack == "ONE ROLE":
            # Everyone named in the question, all given one role (the names taken from the answer).
            roles = re.findall(r"\bis an? (\w+)", ex.answer)
            return "<answer>" + re.sub(r"(?<=is a )\w+|(?<=is an )\w+", roles[0], ex.answer) + "</answer>"
        return f"<answer>{hack}</answer>"

    def test_found_hacks_pay_only_when_faithful(self) -> None:
        async def run() -> None:
            for dataset, (hack, pays) in FOUND.items():
                env = catalog.SERVED[dataset].environment()
                hardened, faithful = env.parse_args({}), env.parse_args({"faithful": True})
                cap = CAPS.get(dataset, (0.0, ""))[0]
                seeds = tuple(range(1, 13))
                paid = []
                for ex, _ in await _items(env, hardened, seeds):
                    text = self._text(hack, ex)
                    if names_the_answer(extract_answer(text), ex.answer):
                        continue
                    paid.append(await _reward(env, text, ex.info, faithful))
                    with self.subTest(dataset=dataset, index=ex.info["index"]):
                        self.assertLessEqual(await _reward(env, text, ex.info, hardened), cap + 1e-9)
                        gold = f"<answer>{ex.answer}</answer>"
                        self.assertEqual(await _reward(env, gold, ex.info, hardened), 1.0)
                        self.assertEqual(await _reward(env, gold, ex.info, faithful), 1.0)
                # reasoning-gym's formula pays for the hack on average (it would be learnt).
                self.assertGreaterEqual(sum(paid) / len(paid), pays, f"{dataset}: {hack!r} under faithful: {paid}")

        asyncio.run(run())

    def test_puzzle24_reads_arithmetic_and_runs_nothing(self) -> None:
        from envworker.catalogs._hardened import arithmetic

        ops = ("+", "-", "*", "/")
        self.assertEqual(arithmetic("10*(8 - 5) - 6", ops), (24, [10, 8, 5, 6]))
        self.assertEqual(arithmetic("-(1 - 5) * 6", ops)[0], 24)
        self.assertEqual(arithmetic("8 / (3 - 8 / 3)", ops)[0], 24)  # exact: 8 / (1/3)
        for bad in ("__import__('os')", "2**10", "9**9**9**9", "(3).real", "3 // 1", "2.5*4", "0x18", "２４", "1_0", "24 # 1", "(" * 300 + "1" + ")" * 300, "1/0", "1" * 2000):
            with self.subTest(answer=bad), self.assertRaises(ValueError):
                arithmetic(bad, ops)
        with self.assertRaises(ValueError):
            arithmetic("6*4", ("+", "-"))  # only the configured operators
        env = catalog.SERVED["puzzle24"].environment()
        args = env.parse_args({})

        async def run() -> None:
            ex = await env.example(7, None, args, "train")
            numbers = catalog.SERVED["puzzle24"].entry(args, ex.info["index"])["metadata"]["numbers"]
            # The puzzle's own numbers making 24 in another order score; 24.5 rounded down does not.
            self.assertEqual(await _reward(env, f"<answer>{ex.answer}</answer>", ex.info, args), 1.0)
            self.assertEqual(await _reward(env, f"<answer>({ex.answer}) + 1/2</answer>", ex.info, args), 0.01)
            self.assertEqual(await _reward(env, f"<answer>{' + '.join(map(str, numbers))}</answer>", ex.info, args), 1.0 if sum(numbers) == 24 else 0.01)

        asyncio.run(run())

    def test_faithful_is_an_argument_of_every_dataset_and_chooses_no_task(self) -> None:
        async def run() -> None:
            for served in catalog.SERVED.values():
                env = served.environment()
                prop = env.args_schema()["properties"]["faithful"]
                self.assertEqual(prop, {"type": "boolean", "default": False}, served.dataset)
                a = await env.example(5, None, env.parse_args({}), "train")
                b = await env.example(5, None, env.parse_args({"faithful": True}), "train")
                self.assertEqual((a.prompt, a.answer), (b.prompt, b.answer), served.dataset)

        asyncio.run(run())


if __name__ == "__main__":
    unittest.main()
