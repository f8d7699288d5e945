"""SkyRL and ART with no glue, against a real envworker server, with the real packages:

* SkyRL: ``skyrl_gym.make("envworker", env_config=..., extras=row)`` (what SkyRL's generator
  does per rollout) for rows of ``envworker.skyrl.dataset``, then ``init`` and ``step`` until done;
* ART: ``envworker.art.rollout(model, ...)`` plays an episode with an ``art.Model``'s OpenAI client
  (a stdlib mock server here) and returns an ``art.Trajectory``; ``envworker.art.group`` a
  ``TrajectoryGroup`` of one example.

Every reward equals the server's for the same example and turns. Skipped, saying why, without the
packages (failed instead in a trainers venv that pins them).
"""

from __future__ import annotations

import asyncio
import sys
import unittest
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _mock_openai import MockOpenAI, solving_policy  # noqa: E402
from _support import EnvworkerServer, trainer_missing  # noqa: E402

from envworker import EnvClient  # noqa: E402

SKYRL_MISSING = trainer_missing("skyrl-gym", "skyrl_gym")
ART_MISSING = trainer_missing("openpipe-art", "art")  # found, not imported: see art_rollouts
ENVS = ("reverse-text", "wordle", "math-tools")


def setUpModule() -> None:
    global SERVER, URL, API
    if SKYRL_MISSING and ART_MISSING:
        print(f"\ntest_trainers_skyrl_art: skipped: {SKYRL_MISSING}; {ART_MISSING}", file=sys.stderr)
        return
    SERVER = EnvworkerServer(*ENVS)
    URL = SERVER.start()
    API = MockOpenAI().__enter__()


def tearDownModule() -> None:
    if not (SKYRL_MISSING and ART_MISSING):
        API.__exit__(None, None, None)
        SERVER.stop()


def replay(env: str, example: str, turns: List[Dict[str, Any]]) -> "tuple[float, bool]":
    """The same model turns on a fresh episode of the example: the server's reward."""
    with EnvClient(URL, env) as client:
        result = client.reset(example=example)
        for turn in turns:
            if result.done:
                break
            result = client.step({k: v for k, v in turn.items() if k != "role"})
        return float(result.reward or 0.0), result.done


@unittest.skipIf(SKYRL_MISSING, f"needs {SKYRL_MISSING}")
class SkyRLTests(unittest.TestCase):
    def test_rollouts_as_skyrl_generator_makes_them(self) -> None:
        import skyrl_gym

        from envworker import skyrl as eskyrl

        for name in ("reverse-text", "wordle"):
            rows = eskyrl.dataset(URL, name, count=3)
            self.assertEqual(len(rows), 3)
            for row in rows:
                with self.subTest(env=name, example=row["example"][:24]):
                    self.assertEqual(row["env_class"], "envworker")
                    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
                    env = skyrl_gym.make(row["env_class"], env_config={"base_url": URL}, extras=extras)
                    chat, info = env.init(row["prompt"])
                    self.assertEqual(chat, row["prompt"])
                    turns: List[Dict[str, Any]] = []
                    done, reward = False, 0.0
                    while not done:
                        reply = solving_policy(chat, None)
                        turns.append({"content": reply["content"]})
                        out = env.step(reply["content"])
                        chat = chat + [{"role": "assistant", "content": reply["content"]}] + out["observations"]
                        done, reward = out["done"], out["reward"]
                        self.assertLess(len(turns), 20)
                    expected, ended = replay(name, row["example"], turns)
                    self.assertTrue(ended)
                    self.assertAlmostEqual(reward, expected, places=12)
                    self.assertIn(next(iter(env.get_metrics())), env.get_metrics())
                    with EnvClient(URL, name) as client, self.assertRaises(Exception):  # closed when it ended
                        client.state(info["episode_id"])
            if name == "reverse-text":
                self.assertEqual(reward, 1.0)


def art_rollouts(what: str, cases: Any) -> Dict[str, Any]:
    """ART's rollouts, played in a child process (_art_rollouts.py): importing art patches
    transformers process-wide, which would break the TRL tests that run in this one."""
    import json
    import subprocess

    done = subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "_art_rollouts.py"), URL, API.url, what, json.dumps(cases)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError(done.stderr[-4000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


@unittest.skipIf(ART_MISSING, f"needs {ART_MISSING}")
class ArtTests(unittest.TestCase):
    def test_rollout_is_a_trajectory_with_the_servers_reward(self) -> None:
        import envworker

        cases = [(name, ex.example) for name, page in (
            ("reverse-text", envworker.examples(URL, "reverse-text", count=3)),
            ("wordle", envworker.examples(URL, "wordle", count=2)),
            ("math-tools", envworker.examples(URL, "math-tools", seeds=[0, 1, 2, 3], args={"difficulty": "easy"})),
        ) for ex in page.examples]
        called = 0
        for (name, example), t in zip(cases, art_rollouts("rollouts", cases)["trajectories"]):
            with self.subTest(env=name, example=example[:24]):
                self.assertTrue(t["is_trajectory"], t["type"])
                self.assertTrue(t["turns"])
                called += any("tool_calls" in turn for turn in t["turns"])
                expected, ended = replay(name, example, t["turns"])
                self.assertTrue(ended)
                self.assertAlmostEqual(t["reward"], expected, places=12)
                self.assertEqual(t["metadata"]["example"], example)
                self.assertEqual(t["metrics"]["turns"], len(t["turns"]))
                if name == "math-tools":
                    self.assertEqual(t["tools"][0], "calculator")
        self.assertGreater(called, 0, "the mock calls the calculator on Compute problems")

    def test_group_plays_one_example(self) -> None:
        import envworker

        ex = envworker.examples(URL, "reverse-text", count=1).examples[0]
        group = art_rollouts("group", ["reverse-text", ex.example, 3])
        self.assertTrue(group["is_group"])
        self.assertEqual([t["reward"] for t in group["trajectories"]], [1.0, 1.0, 1.0])
        self.assertEqual({t["metadata"]["example"] for t in group["trajectories"]}, {ex.example})


if __name__ == "__main__":
    unittest.main()
