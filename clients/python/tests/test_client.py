"""The client against a real envworker server (started here with Node)."""

from __future__ import annotations

import math
import os
import threading
import time
import unittest

from _support import EnvworkerServer, alphabet_sort_gold, reverse_text_gold

import envworker
from envworker import (
    EnvClient,
    EnvInfo,
    EnvworkerError,
    GroupResult,
    Observation,
    ScoreResult,
    State,
    StepResult,
    list_envs,
    metadata,
    run_group,
    score,
)


class ServerTestCase(unittest.TestCase):
    server: EnvworkerServer
    url: str

    @classmethod
    def setUpClass(cls) -> None:
        # ENVWORKER_TEST_URL runs these tests against a server already running (e.g. the
        # Workers build under `npm run dev`) instead of starting one.
        cls.server = EnvworkerServer("reverse-text", "alphabet-sort")
        cls.url = os.environ.get("ENVWORKER_TEST_URL", "").rstrip("/") or cls.server.start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def assertError(self, err: EnvworkerError, status: int, code: str) -> None:
        self.assertEqual((err.status, err.code), (status, code), str(err))
        self.assertIsInstance(err.message, str)
        self.assertTrue(err.message)

    def episode_gone(self, env: str, episode_id: str) -> bool:
        with EnvClient(self.url, env) as probe:
            try:
                probe.state(episode_id)
            except EnvworkerError as err:
                self.assertError(err, 404, "UNKNOWN_EPISODE")
                return True
        return False


class EpisodeTests(ServerTestCase):
    def test_discovery(self) -> None:
        envs = list_envs(self.url)
        self.assertTrue(all(isinstance(e, EnvInfo) for e in envs))
        by_name = {e.name: e for e in envs}
        self.assertIn("reverse-text", by_name)
        self.assertIn("alphabet-sort", by_name)
        rt = by_name["reverse-text"]
        self.assertEqual(rt.url, "/envs/reverse-text")
        self.assertEqual(rt.max_turns, 1)
        self.assertIn("train", rt.splits)
        meta = metadata(self.url, "reverse-text")
        self.assertEqual(meta["name"], "reverse-text")
        self.assertIsInstance(meta["description"], str)
        self.assertEqual(meta["version"], rt.version)
        with EnvClient(self.url + "/", "alphabet-sort") as env:
            self.assertEqual(env.metadata()["name"], "alphabet-sort")
            self.assertEqual(env.url, self.url + "/envs/alphabet-sort")

    def test_reverse_text_episode(self) -> None:
        env = EnvClient(self.url, "reverse-text")
        reset = env.reset(seed=11)
        self.assertIsInstance(reset, StepResult)
        self.assertIsInstance(reset.observation, Observation)
        self.assertIsNone(reset.reward)
        self.assertFalse(reset.done)
        self.assertEqual(env.episode_id, reset.episode_id)
        self.assertGreaterEqual(len(reset.episode_id), 22)
        obs = reset.observation
        self.assertEqual([m["role"] for m in obs.messages], ["system", "user"])
        self.assertEqual((obs.turn, obs.truncated, obs.metrics, obs.tools), (0, False, None, None))
        self.assertEqual(obs.info["seed"], 11)
        self.assertEqual(obs.info["split"], "train")

        step = env.step(reverse_text_gold(obs.messages))
        self.assertEqual((step.reward, step.done, step.episode_id), (1.0, True, reset.episode_id))
        self.assertEqual(step.observation.metrics, {"lcs_reward_func": 1.0})
        self.assertEqual(step.observation.messages, [])
        self.assertEqual(step.observation.turn, 1)
        self.assertIs(env.last, step)

        state = env.state()
        self.assertIsInstance(state, State)
        self.assertEqual((state.episode_id, state.step_count, state.done, state.reward), (reset.episode_id, 1, True, 1.0))
        self.assertEqual([m["role"] for m in state.messages], ["system", "user", "assistant"])
        self.assertEqual((state.env, state.seed, state.split), ("reverse-text", 11, "train"))
        self.assertEqual(state.raw["step_count"], 1)

        self.assertTrue(env.close())
        self.assertIsNone(env.episode_id)
        self.assertFalse(env.close())  # nothing open: a no-op
        self.assertTrue(self.episode_gone("reverse-text", reset.episode_id))

    def test_wrong_answers_score_below_one(self) -> None:
        with EnvClient(self.url, "reverse-text") as env:
            r = env.reset(seed=11)
            text = r.observation.messages[-1]["content"]
            self.assertLess(env.step(f"<reversed_text>{text}</reversed_text>").reward, 1.0)
            env.reset(seed=12)
            self.assertEqual(env.step("no tags at all").reward, 0.0)

    def test_reset_options(self) -> None:
        with EnvClient(self.url, "alphabet-sort") as env:
            a = env.reset(seed=1234).observation.messages
            b = env.reset(seed=1234).observation.messages
            c = env.reset(seed=1235).observation.messages
            self.assertEqual(a, b)
            self.assertNotEqual(a, c)
        with EnvClient(self.url, "reverse-text") as env:
            d = env.reset(index=3, split="eval")
            e = env.reset(index=3, split="eval", seed=99)
            self.assertEqual(d.observation.messages, e.observation.messages)
            self.assertEqual((d.observation.info["index"], d.observation.info["split"]), (3, "eval"))
            no_system = env.reset(seed=1, args={"system_prompt": None})
            self.assertEqual([m["role"] for m in no_system.observation.messages], ["user"])
            custom = f"py-client-{time.time_ns()}"
            self.assertEqual(env.reset(episode_id=custom).episode_id, custom)
            with EnvClient(self.url, "reverse-text") as other:
                with self.assertRaises(EnvworkerError) as cm:
                    other.reset(episode_id=custom)
                self.assertError(cm.exception, 409, "EPISODE_EXISTS")
                self.assertIsNone(other.episode_id)

    def test_reset_closes_the_previous_episode(self) -> None:
        with EnvClient(self.url, "reverse-text") as env:
            first = env.reset(seed=1).episode_id
            second = env.reset(seed=2).episode_id
            self.assertNotEqual(first, second)
            self.assertTrue(self.episode_gone("reverse-text", first))
            self.assertFalse(env.state().done)

    def test_alphabet_sort_multi_turn_gold(self) -> None:
        for seed in (1, 2, 3):
            with EnvClient(self.url, "alphabet-sort") as env:
                result = env.reset(seed=seed)
                history = list(result.observation.messages)
                turns = 0
                while not result.done:
                    answer = alphabet_sort_gold(history)
                    history.append({"role": "assistant", "content": answer})
                    result = env.step({"role": "assistant", "content": answer})
                    history.extend(result.observation.messages)
                    turns += 1
                self.assertTrue(1 <= turns <= 3)
                self.assertEqual(result.observation.turn, turns)
                self.assertFalse(result.observation.truncated)
                self.assertEqual(result.reward, 1.0)
                self.assertEqual(env.state().messages, history)

    def test_actions(self) -> None:
        with EnvClient(self.url, "reverse-text") as env:
            env.reset(seed=3)
            call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            # tool_calls alone: content is sent as null. reverse-text has no tools: reward 0.
            result = env.step({"tool_calls": [call]})
            self.assertEqual((result.done, result.reward), (True, 0.0))
            self.assertEqual(env.state().messages[-1], {"role": "assistant", "content": None, "tool_calls": [call]})
        self.assertEqual(envworker.to_action("x"), {"content": "x"})
        self.assertEqual(envworker.to_action({"role": "assistant", "content": "x"}), {"content": "x"})
        with self.assertRaises(TypeError):
            envworker.to_action(3)  # type: ignore[arg-type]

    def test_errors(self) -> None:
        # unknown environment
        with EnvClient(self.url, "no-such-env") as env:
            with self.assertRaises(EnvworkerError) as cm:
                env.reset()
            self.assertError(cm.exception, 404, "UNKNOWN_ENV")
        with self.assertRaises(EnvworkerError) as cm:
            metadata(self.url, "no-such-env")
        self.assertError(cm.exception, 404, "UNKNOWN_ENV")
        with self.assertRaises(EnvworkerError) as cm:
            score(self.url, "no-such-env", [{"completion": "x"}])
        self.assertError(cm.exception, 404, "UNKNOWN_ENV")

        with EnvClient(self.url, "reverse-text") as env:
            # bad args: str(err) names the offending key (not only .details)
            with self.assertRaises(EnvworkerError) as cm:
                env.reset(args={"max_wordz": 3})
            self.assertError(cm.exception, 400, "VALIDATION_ERROR")
            self.assertRegex(str(cm.exception), r"^400 VALIDATION_ERROR: invalid args for reverse-text \(.*max_wordz")
            # no episode yet: a usage error, not a request
            with self.assertRaises(RuntimeError):
                env.step("x")
            # unknown episode
            with self.assertRaises(EnvworkerError) as cm:
                env.state("not-an-episode")
            self.assertError(cm.exception, 404, "UNKNOWN_EPISODE")
            env.episode_id = "not-an-episode"
            with self.assertRaises(EnvworkerError) as cm:
                env.step("x")
            self.assertError(cm.exception, 404, "UNKNOWN_EPISODE")
            self.assertFalse(env.close())  # the server does not know it: nothing closed

            r = env.reset(seed=4)
            # bad actions: 400 VALIDATION_ERROR with the schema's issues; the episode goes on
            for bad in ({"content": 3}, {"content": "a", "foo": 1}, {"role": "user", "content": "a"}, {}):
                with self.assertRaises(EnvworkerError) as cm:
                    env.step(bad)
                self.assertError(cm.exception, 400, "VALIDATION_ERROR")
                self.assertIsInstance(cm.exception.details, list)
                self.assertIn("path", cm.exception.details[0])
            self.assertEqual(env.state().step_count, 0)
            # step after done
            self.assertEqual(env.step(reverse_text_gold(r.observation.messages)).reward, 1.0)
            with self.assertRaises(EnvworkerError) as cm:
                env.step("again")
            self.assertError(cm.exception, 409, "EPISODE_DONE")
            # bad reset input
            for kw in ({"seed": -1}, {"split": "nope"}, {"index": 10_000_000}, {"args": {"nope": 1}}):
                with self.assertRaises(EnvworkerError) as cm:
                    env.reset(**kw)
                self.assertError(cm.exception, 400, "VALIDATION_ERROR")
        self.assertTrue(issubclass(EnvworkerError, Exception))

    def test_context_manager_closes_the_episode(self) -> None:
        with EnvClient(self.url, "reverse-text") as env:
            self.assertIs(env.__enter__(), env)
            episode_id = env.reset(seed=5).episode_id
        self.assertIsNone(env.episode_id)
        self.assertTrue(self.episode_gone("reverse-text", episode_id))

        # An exception in the block propagates; the episode is closed all the same.
        with self.assertRaises(KeyError):
            with EnvClient(self.url, "alphabet-sort") as env:
                episode_id = env.reset(seed=6).episode_id
                raise KeyError("boom")
        self.assertTrue(self.episode_gone("alphabet-sort", episode_id))

    def test_keep_alive(self) -> None:
        env = EnvClient(self.url, "reverse-text")
        try:
            r = env.reset(seed=7)
            port = env._transport._conn.sock.getsockname()[1]  # type: ignore[union-attr]
            env.state()
            env.metadata()
            env.step(reverse_text_gold(r.observation.messages))
            env.state()
            self.assertEqual(env.connections_opened, 1)
            self.assertEqual(env._transport._conn.sock.getsockname()[1], port)  # type: ignore[union-attr]
            env.close()  # closes the connection too; the client stays usable
            env.reset(seed=8)
            self.assertEqual(env.connections_opened, 2)
        finally:
            env.close()

    def test_one_client_shared_by_threads(self) -> None:
        with EnvClient(self.url, "reverse-text") as env:
            env.reset(seed=9)
            errors = []

            def poll() -> None:
                try:
                    for _ in range(10):
                        self.assertEqual(env.state().step_count, 0)
                except BaseException as err:  # pragma: no cover - reported below
                    errors.append(err)

            threads = [threading.Thread(target=poll) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(errors, [])
            self.assertEqual(env.connections_opened, 1)


class GroupAndScoreTests(ServerTestCase):
    def test_run_group_advantages(self) -> None:
        lock = threading.Lock()
        calls = {"n": 0, "active": 0, "max_active": 0}

        def policy(messages):
            # Deterministic over the group: the first two calls answer right, the rest wrong.
            with lock:
                calls["n"] += 1
                right = calls["n"] <= 2
                calls["active"] += 1
                calls["max_active"] = max(calls["max_active"], calls["active"])
            time.sleep(0.05)
            with lock:
                calls["active"] -= 1
            return reverse_text_gold(messages) if right else "no tags"

        group = run_group(self.url, "reverse-text", policy, group_size=4, seed=21, max_concurrency=2)
        self.assertIsInstance(group, GroupResult)
        self.assertEqual(calls["n"], 4)
        self.assertLessEqual(calls["max_active"], 2)
        self.assertEqual(group.seed, 21)
        self.assertEqual(sorted(group.rewards), [0.0, 0.0, 1.0, 1.0])
        self.assertEqual(group.mean, 0.5)
        self.assertAlmostEqual(group.std, math.sqrt(1 / 3), places=12)
        scale = 0.5 / (math.sqrt(1 / 3) + 1e-4)
        for r, a, e in zip(group.rewards, group.advantages, group.episodes):
            self.assertAlmostEqual(a, scale if r == 1.0 else -scale, places=12)
            self.assertEqual((e.reward, e.advantage, e.turns), (r, a, 1))
            self.assertEqual([m["role"] for m in e.messages], ["system", "user", "assistant"])
        self.assertAlmostEqual(sum(group.advantages), 0.0, places=12)
        # the same prompt for every episode, distinct episodes, all closed
        self.assertEqual(len({e.messages[1]["content"] for e in group.episodes}), 1)
        self.assertEqual(len({e.episode_id for e in group.episodes}), 4)
        for e in group.episodes:
            self.assertTrue(self.episode_gone("reverse-text", e.episode_id))

    def test_run_group_mean_only_and_multi_turn(self) -> None:
        seen = []

        def gold(messages):
            seen.append(len(messages))
            return alphabet_sort_gold(messages)

        group = run_group(self.url, "alphabet-sort", gold, group_size=3, seed=5, normalize="none")
        self.assertEqual(group.rewards, [1.0, 1.0, 1.0])
        self.assertEqual(group.advantages, [0.0, 0.0, 0.0])
        turns = {e.turns for e in group.episodes}
        self.assertEqual(len(turns), 1)  # same example, same number of turns
        self.assertEqual(len(seen), 3 * turns.pop())

        counter = iter(range(100))
        lock = threading.Lock()

        def varied(messages):
            with lock:
                i = next(counter)
            return reverse_text_gold(messages) if i == 0 else "no tags"

        g = run_group(self.url, "reverse-text", varied, group_size=4, index=2, normalize="none")
        self.assertEqual(sorted(g.rewards), [0.0, 0.0, 0.0, 1.0])
        self.assertEqual(sorted(g.advantages), [-0.25, -0.25, -0.25, 0.75])
        self.assertEqual(g.index, 2)
        self.assertIsInstance(g.seed, int)

    def test_run_group_errors(self) -> None:
        def broken(messages):
            raise ValueError("policy failed")

        with self.assertRaises(ValueError):
            run_group(self.url, "reverse-text", broken, group_size=2, seed=1)
        with self.assertRaises(EnvworkerError) as cm:
            run_group(self.url, "no-such-env", lambda m: "x", group_size=2)
        self.assertError(cm.exception, 404, "UNKNOWN_ENV")
        with self.assertRaises(ValueError):
            run_group(self.url, "reverse-text", lambda m: "x", group_size=0)
        with self.assertRaises(ValueError):
            run_group(self.url, "reverse-text", lambda m: "x", group_size=2, normalize="batch")

    def test_score(self) -> None:
        items = [
            {"completion": "<reversed_text>olleh</reversed_text>", "answer": "olleh"},
            {"completion": [{"role": "assistant", "content": "<reversed_text>hello</reversed_text>"}], "answer": "olleh"},
            {"completion": "nothing", "answer": "olleh", "prompt": "hello", "info": {"k": 1}},
        ]
        results = score(self.url, "reverse-text", items)
        self.assertTrue(all(isinstance(r, ScoreResult) for r in results))
        self.assertEqual([r.reward for r in results], [1.0, 0.4, 0.0])
        self.assertEqual(results[0].metrics, {"lcs_reward_func": 1.0})
        self.assertIsNone(results[0].errors)
        self.assertEqual(score(self.url, "reverse-text", []), [])
        with EnvClient(self.url, "reverse-text") as env:
            self.assertEqual([r.reward for r in env.score(items)], [1.0, 0.4, 0.0])
        with self.assertRaises(EnvworkerError) as cm:
            score(self.url, "reverse-text", [{"answer": "no completion"}])
        self.assertError(cm.exception, 400, "VALIDATION_ERROR")

    def test_score_splits_large_batches(self) -> None:
        n = envworker.SCORE_BATCH_LIMIT + 6
        items = [{"completion": f"<reversed_text>{'ab' if i % 2 else 'ba'}</reversed_text>", "answer": "ba"} for i in range(n)]
        results = score(self.url, "reverse-text", items)
        self.assertEqual(len(results), n)
        self.assertEqual([r.reward for r in results[-4:]], [1.0, 0.5, 1.0, 0.5])


class TokenTests(unittest.TestCase):
    """A server started with ENVWORKER_TOKEN: the client's ``token`` is what lets it in."""

    TOKEN = "python-client-test-token"

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = EnvworkerServer("reverse-text", extra_env={"ENVWORKER_TOKEN": cls.TOKEN})
        cls.url = cls.server.start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def test_token_opens_and_its_absence_closes(self) -> None:
        with self.assertRaises(EnvworkerError) as ctx:
            list_envs(self.url)
        self.assertEqual((ctx.exception.status, ctx.exception.code), (401, "UNAUTHORIZED"))
        self.assertEqual([e.name for e in list_envs(self.url, token=self.TOKEN)], ["reverse-text"])
        with EnvClient(self.url, "reverse-text", token=self.TOKEN) as env:
            result = env.reset(seed=1)
            self.assertFalse(result.done)
        with EnvClient(self.url, "reverse-text", token="wrong") as env:
            with self.assertRaises(EnvworkerError) as ctx:
                env.reset(seed=1)
            self.assertEqual(ctx.exception.code, "UNAUTHORIZED")


if __name__ == "__main__":
    unittest.main()
