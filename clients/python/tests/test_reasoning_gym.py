"""envworker.catalogs.reasoning_gym against reasoning-gym itself.

* parity: for 20 datasets, 50 seeds each, the catalog's prompt, answer and reward (with
  ``faithful: true``: reasoning-gym's formula where the catalog hardens one) equal reasoning-gym's own (``create_dataset``, ``extract_answer``, ``score_answer``, computed in a process
  that never imports envworker) on the gold answer, another item's answer, partial answers, an answer
  after a retracted one, no tags and an empty block;
* every served dataset builds with its default args, draws an item at the lowest and highest seed
  it reaches, and its reward on the gold answer is reasoning-gym's (1.0 but for the datasets whose
  items have no single gold answer);
* args are the config's, refused as the config refuses them; a client's info names an item and
  nothing else; a model's answer never runs as code; the same seed is the same task in another
  process with the same hash seed.

Skipped, with the reason printed, where reasoning-gym is not installed (failed instead in the
trainers venv, which pins it: scripts/trainers-venv.sh).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import SRC, trainer_missing  # noqa: E402

MISSING = trainer_missing("reasoning-gym", "reasoning_gym", why="envworker.catalogs.reasoning_gym serves its datasets")
HERE = Path(__file__).resolve().parent

#: The parity sample: plain string answers, numbers, answers reasoning-gym parses with eval or
#: sympy (guarded here), JSON answers, datasets whose tasks depend on string hashing or are built
#: at a size of their own, one whose score_answer raises on a wrong answer, one with no gold answer.
PARITY = [
    ("basic_arithmetic", {}),
    ("leg_counting", {}),
    ("chain_sum", {"min_terms": 3, "max_terms": 5}),
    ("countdown", {}),
    ("n_queens", {}),
    ("spiral_matrix", {}),
    ("binary_matrix", {}),
    ("string_insertion", {}),
    ("number_sorting", {}),
    ("simple_integration", {}),
    ("polynomial_multiplication", {}),
    ("word_sorting", {"transformation": "uppercase"}),
    ("gsm_symbolic", {}),
    ("list_functions", {}),
    ("prime_factorization", {}),
    ("knights_knaves", {}),
    ("letter_counting", {}),
    ("caesar_cipher", {}),
    ("game_of_life", {}),
    ("rubiks_cube", {}),
]
SEEDS = [3 + 7919 * i for i in range(50)]

#: Datasets whose items carry no single gold answer (``answer`` is None: any valid solution scores).
NO_GOLD = {"boxnet", "graph_color", "propositional_logic", "rubiks_cube", "rush_hour"}


def _side(mode: str, job: Dict[str, Any], hash_seed: str = "0") -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run([sys.executable, str(HERE / "_rg_reference.py"), mode, str(out)], input=json.dumps(job), capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise AssertionError(f"_rg_reference.py {mode} failed:\n{proc.stderr[-4000:]}")
        return json.loads(out.read_text())


def setUpModule() -> None:
    global catalog
    if MISSING:
        print(f"\ntest_reasoning_gym: skipped: {MISSING}", file=sys.stderr)
        return
    from envworker.catalogs import reasoning_gym as catalog  # noqa: F811


def _env(dataset: str) -> Any:
    return next(e for e in catalog.environments if e.name == catalog.env_name(dataset))


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def _reward(env: Any, text: str, info: Any, args: Any) -> float:
    return _run(env.reward("score_answer", {"completion_text": text, "info": info, "args": args}))


@unittest.skipIf(MISSING, MISSING)
class Parity(unittest.TestCase):
    def test_rewards_equal_reasoning_gyms_own(self) -> None:
        job = {"size": {d: catalog.SIZES.get(d, catalog.VIRTUAL_SIZE) for d, _ in PARITY}, "cases": [{"dataset": d, "args": a, "seeds": SEEDS} for d, a in PARITY]}
        ours = _side("catalog", job)
        theirs = _side("rg", job)
        compared = 0
        for (dataset, args), mine, ref in zip(PARITY, ours, theirs):
            self.assertEqual(len(mine), len(SEEDS))
            for seed, a, b in zip(SEEDS, mine, ref):
                where = f"{dataset} {args} seed {seed}"
                self.assertEqual(a["prompt"], b["prompt"], where)
                self.assertEqual(a["answer"], b["answer"], where)
                self.assertEqual(a["scores"], b["scores"], where)
                compared += len(a["scores"])
            # The sample means something: the gold answer scores 1 and some completion less.
            if dataset not in NO_GOLD:
                self.assertTrue(all(r["scores"][0] == 1.0 for r in mine), dataset)
            self.assertTrue(any(min(r["scores"]) < 1.0 for r in mine), dataset)
        self.assertEqual(compared, len(PARITY) * len(SEEDS) * 7)


@unittest.skipIf(MISSING, MISSING)
class EveryDataset(unittest.TestCase):
    def test_the_catalog_serves_every_dataset_that_builds(self) -> None:
        import reasoning_gym

        registry = set(reasoning_gym.factory.DATASETS)
        self.assertGreaterEqual(len(catalog.environments), 100)
        self.assertEqual(set(catalog.SERVED) | set(catalog.NOT_SERVED), registry)
        self.assertEqual(set(catalog.NOT_SERVED), {"composite"})  # it mixes datasets it is given
        self.assertEqual(len({e.name for e in catalog.environments}), len(catalog.environments))

    def test_each_builds_draws_and_scores_its_gold_answer(self) -> None:
        import reasoning_gym
        from reasoning_gym.utils import extract_answer

        for served in catalog.SERVED.values():
            env = _env(served.dataset)
            args = env.parse_args({})
            with self.subTest(dataset=served.dataset):
                ds = reasoning_gym.create_dataset(served.dataset, seed=0, size=served.size)
                for seed in (11, served.size - 1):  # a low and the highest item the seeds reach
                    ex = _run(env.example(seed, None, args, "train"))
                    self.assertEqual(ex.info, {"dataset": served.dataset, "index": seed})
                    entry = ds[seed]
                    self.assertEqual(ex.prompt, entry["question"])
                    text = f"<answer>{ex.answer}</answer>"
                    got = _reward(env, text, ex.info, args)
                    self.assertEqual(got, float(ds.score_answer(extract_answer(text), entry)))
                    if served.dataset not in NO_GOLD:
                        self.assertEqual(got, 1.0)
                    # index= asks for an item directly.
                    self.assertEqual(_run(env.example(0, seed, args, "train")).prompt, ex.prompt)
                self.assertEqual(env.spec()["system_prompt"], {"static": reasoning_gym.utils.SYSTEM_PROMPTS["default"]})


@unittest.skipIf(MISSING, MISSING)
class Args(unittest.TestCase):
    def test_args_are_the_config_fields_with_their_defaults(self) -> None:
        schema = _env("basic_arithmetic").args_schema()
        props = schema["properties"]
        self.assertNotIn("seed", props)
        self.assertNotIn("size", props)
        self.assertEqual(props["min_terms"], {"type": "integer", "default": 2})
        self.assertEqual(props["format_style"]["enum"], ["simple", "natural"])
        self.assertFalse(schema["additionalProperties"])
        # An enum, a date and a tuple of strings, as JSON.
        self.assertEqual(_env("word_sorting").args_schema()["properties"]["transformation"]["enum"], ["lowercase", "uppercase", "original", "randomcase"])
        self.assertEqual(_env("time_intervals").args_schema()["properties"]["min_date"], {"type": "string", "default": "1900-01-01"})
        self.assertEqual(_env("countdown").args_schema()["properties"]["operators"], {"type": "array", "items": {"type": "string"}, "default": ["+", "-", "*", "/"]})
        self.assertNotIn("data_file", _env("spell_backward").args_schema()["properties"])
        json.dumps([e.spec() for e in catalog.environments])  # every schema and default is JSON

    def test_args_reach_the_dataset(self) -> None:
        env = _env("word_sorting")
        upper = _run(env.example(5, None, env.parse_args({"transformation": "uppercase"}), "train"))
        self.assertEqual(upper.answer, upper.answer.upper())
        env = _env("time_intervals")
        args = env.parse_args({"min_date": "2001-02-03", "max_date": "2001-12-31", "task_types": ["date"]})
        self.assertIn(" 2001 ", _run(env.example(5, None, args, "train")).prompt)

    def test_refused_args_are_args_errors(self) -> None:
        from envworker.authoring import ArgsError

        env = _env("basic_arithmetic")
        for bad in ({"nope": 1}, {"min_terms": "two"}, {"min_terms": 5, "max_terms": 2}, {"format_style": "fancy"}, {"seed": 1}):
            with self.subTest(args=bad), self.assertRaises(ArgsError):
                env.parse_args(bad)
        with self.assertRaisesRegex(ArgsError, "ISO date"):
            _env("time_intervals").parse_args({"min_date": "yesterday"})
        with self.assertRaisesRegex(ArgsError, "static_font"):
            _env("figlet_font").parse_args({"static_font": "/etc/passwd"})


@unittest.skipIf(MISSING, MISSING)
class Scoring(unittest.TestCase):
    def test_a_clients_info_names_an_item_and_nothing_else(self) -> None:
        env = _env("leg_counting")
        args = env.parse_args({})
        ex = _run(env.example(42, None, args, "train"))
        gold = f"<answer>{ex.answer}</answer>"
        # Metadata of the client's own is ignored: the item is drawn again from (args, index).
        forged = {**ex.info, "answer": "0", "metadata": {"total_legs": 0}, "question": "x"}
        self.assertEqual(_reward(env, gold, forged, args), 1.0)
        self.assertEqual(_reward(env, "<answer>0</answer>", forged, args), 0.0)
        for info in ({}, {"dataset": "basic_arithmetic", "index": 42}, {"dataset": "leg_counting", "index": -1}, {"dataset": "leg_counting", "index": 2**40}, {"dataset": "leg_counting", "index": True}, {"dataset": "leg_counting", "index": "7"}):
            with self.subTest(info=info), self.assertRaises(ValueError):
                _reward(env, gold, info, args)
        # The same example scores the same from a cold cache (another worker would draw it again).
        catalog._entries.items.clear()
        catalog._datasets.items.clear()
        self.assertEqual(_reward(env, gold, ex.info, args), 1.0)

    def test_a_models_answer_never_runs_as_code(self) -> None:
        from envworker.catalogs import _answer_guard

        payload = "__import__('os').environ.__setitem__('RG_CANARY', '1')"
        answers = [payload, f"[{payload}]", f"[[{payload}]]", f"({payload})", f"1 + {payload}", f"x**2 + {payload}", "Symbol('x').__class__", "sin.__globals__", "(lambda: 1)()", "[x for x in ()]"]
        os.environ.pop("RG_CANARY", None)
        for served in catalog.SERVED.values():
            env = _env(served.dataset)
            args = env.parse_args({})
            info = _run(env.example(1, None, args, "train")).info
            for answer in answers:
                _reward(env, f"<answer>{answer}</answer>", info, args)
                self.assertNotIn("RG_CANARY", os.environ, f"{served.dataset} ran {answer!r}")
        # What the guards refuse and what they let through, directly.
        self.assertEqual(_answer_guard.literal_eval_guarded("[[1, 0], (2, -3)]"), [[1, 0], (2, -3)])
        for bad in (payload, "[1 + 1]", "x", "(2).__class__"):
            with self.subTest(answer=bad), self.assertRaises(ValueError):
                _answer_guard.literal_eval_guarded(bad)
        from reasoning_gym.games import countdown

        self.assertEqual(float(countdown.parse_expr("(3 + 5) * 2 - 1")), 15.0)
        for bad in ("9**9**9**9", "2**100001", "((x**100)**100)**100", payload, "sin(1).func", "Float('1', 500)", "Integer(x)"):
            with self.subTest(answer=bad), self.assertRaises(ValueError):
                countdown.parse_expr(bad)

    def test_the_same_seed_is_the_same_task_in_another_process(self) -> None:
        # Both sides drawn in processes of their own with one hash seed: equal for every dataset.
        # With two hash seeds only HASH_DEPENDENT datasets may differ (the list is complete).
        datasets = sorted(catalog.SERVED)
        job = {"size": {d: catalog.SIZES.get(d, catalog.VIRTUAL_SIZE) for d in datasets}, "cases": [{"dataset": d, "args": {}, "seeds": [5, 123456]} for d in datasets]}
        first = _side("rg", job, "0")
        again = _side("catalog", job, "0")
        other = _side("rg", job, "1")
        for dataset, a, b, c in zip(datasets, first, again, other):
            self.assertEqual([r["prompt"] for r in a], [r["prompt"] for r in b], dataset)
            if dataset not in catalog.HASH_DEPENDENT:
                self.assertEqual([r["prompt"] for r in a], [r["prompt"] for r in c], f"{dataset} depends on the hash seed: add it to HASH_DEPENDENT")


class Missing(unittest.TestCase):
    def test_without_reasoning_gym_the_error_says_what_to_install(self) -> None:
        # A Python where `import reasoning_gym` fails, as in an interpreter that lacks it.
        code = (
            "import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'reasoning_gym' or name.startswith('reasoning_gym.'):\n"
            "            raise ModuleNotFoundError(\"No module named 'reasoning_gym'\", name='reasoning_gym')\n"
            "sys.meta_path.insert(0, Block())\n"
            f"sys.path.insert(0, {str(SRC)!r})\n"
            "import envworker.catalogs.reasoning_gym\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn(f"reasoning-gym is not installed in {sys.executable}", proc.stderr)
        self.assertIn("SetupError", proc.stderr)  # shown as its message alone by the worker
        self.assertIn("ENVWORKER_PYTHON", proc.stderr)
        # pip into this Python where it may install; else (PEP 668) a venv every user can read.
        self.assertIn(f"{sys.executable} -m pip install reasoning-gym" if sys.prefix != sys.base_prefix else "reasoning-gym", proc.stderr)

    @unittest.skipIf(MISSING, MISSING)
    def test_the_hint_never_says_pip_into_a_python_that_refuses_it(self) -> None:
        import shutil
        import sysconfig
        from unittest import mock

        stdlib = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, stdlib)
        with mock.patch.object(sysconfig, "get_path", lambda name: stdlib), mock.patch.object(sys, "prefix", sys.base_prefix):
            plain = catalog.install_hint("/opt/py/bin/python")
            open(os.path.join(stdlib, "EXTERNALLY-MANAGED"), "w").close()
            managed = catalog.install_hint("/usr/bin/python3")
        self.assertIn("`/opt/py/bin/python -m pip install reasoning-gym`", plain)
        self.assertNotIn("-m pip install", managed)
        self.assertIn("`/usr/bin/python3 -m venv /opt/envworker-python && /opt/envworker-python/bin/pip install reasoning-gym`", managed)
        self.assertIn("export ENVWORKER_PYTHON=/opt/envworker-python/bin/python", managed)

if __name__ == "__main__":
    unittest.main()
