"""The Open Reward Standard (src/server/ors.ts) with its own clients, against a real envworker server:

* ORS's client (``ors-sdk``: ``ors.client.ORS``) lists an environment's splits, tasks and tools and
  plays sessions of reverse-text, wordle and math-tools; every reward it is given equals the
  server's for the same example over OpenEnv's HTTP routes;
* TRL's ``trl.experimental.openreward.OpenRewardSpec`` (the OpenReward SDK underneath) builds its
  dataset, environment factory and reward function from the server, and its rollouts' rewards are
  the server's;
* a conformance test plays the same examples through OpenEnv's WebSocket (``GenericEnvClient``),
  envworker's HTTP (``EnvClient``), MCP (``MCPToolClient``, production mode) and ORS, and gets the
  same rewards.

Skipped, with the reason printed, where a client is not installed (failed instead in a trainers
venv that pins it).
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
import unittest
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import REPO_ROOT, EnvworkerServer, reverse_text_gold, trainer_missing  # noqa: E402

from envworker import EnvClient  # noqa: E402

ORS_MISSING = trainer_missing("ors-sdk", "ors", "aiohttp")
OPENREWARD_MISSING = trainer_missing("openreward", "openreward", why="the OpenReward SDK, under TRL's trl.experimental.openreward")
TRL_MISSING = OPENREWARD_MISSING or trainer_missing("trl", "trl", "datasets")
OPENENV_MISSING = trainer_missing("openenv-core", "openenv")
ENVS = ("reverse-text", "wordle", "math-tools")


SKIPPED_ALL = bool(ORS_MISSING and TRL_MISSING)


def setUpModule() -> None:
    global SERVER, URL
    if SKIPPED_ALL:
        print(f"\ntest_trainers_ors: skipped: {ORS_MISSING}; {TRL_MISSING}", file=sys.stderr)
        return
    SERVER = EnvworkerServer(*ENVS)
    URL = SERVER.start()


def tearDownModule() -> None:
    if not SKIPPED_ALL:
        SERVER.stop()


# -- a scripted policy: the text of the model's next plain reply, or a tool call -------------------


def policy(env: str, prompt: List[Dict[str, Any]], history: List[str]) -> Tuple[str, Dict[str, Any]]:
    """(tool, input) of the next ORS call: reverse-text's gold answer, math-tools' calculator on a
    "Compute X." problem then its result, wordle's guesses from a fixed list."""
    user = next(m["content"] for m in reversed(prompt) if m["role"] == "user")
    if env == "reverse-text":
        return "submit", {"content": reverse_text_gold(prompt)}
    if env == "math-tools":
        m = re.fullmatch(r"Compute (.+)\.", user.strip())
        if m and not history:
            return "calculator", {"expression": m.group(1)}
        return "submit", {"content": f"\\boxed{{{history[-1].strip() if history else 0}}}"}
    guesses = ["crane", "slate", "pious", "dumpy", "bough", "witch"]
    return "submit", {"content": f"<guess>[{guesses[len(history) % len(guesses)]}]</guess>"}


def replay(env: str, example: str, calls: List[Tuple[str, Dict[str, Any]]]) -> Tuple[float, bool]:
    """The same calls on a fresh episode of the example, over OpenEnv's HTTP routes (envworker's
    stateful ones): a tool call is a turn with that call, submit a plain reply."""
    with EnvClient(URL, env) as client:
        result = client.reset(example=example)
        for name, args in calls:
            if result.done:
                break
            if name == "submit":
                result = client.step({"content": args["content"]})
            else:
                import json

                result = client.step({"content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        return float(result.reward or 0.0), result.done


def play_ors(session: Any, env: str) -> Tuple[float, bool, List[Tuple[str, Dict[str, Any]]]]:
    """Play one ORS session to its end with the policy: (reward, finished, the calls made)."""
    blocks = session.get_prompt()
    prompt = [{"role": (b.detail or {}).get("role", "user"), "content": b.text} for b in blocks]
    history: List[str] = []
    calls: List[Tuple[str, Dict[str, Any]]] = []
    for _ in range(14):
        name, args = policy(env, prompt, history)
        out = session.call_tool(name, args)
        calls.append((name, args))
        history.append("".join(b.text for b in out.blocks))
        if out.finished:
            return float(out.reward), True, calls
        if name == "submit" and env != "wordle":
            break
    return 0.0, False, calls



@unittest.skipIf(ORS_MISSING, f"needs {ORS_MISSING}")
class OrsClientTests(unittest.TestCase):
    def test_catalog(self) -> None:
        from ors.client import ORS

        with ORS(base_url=URL) as client:
            env = client.environment("reverse-text")
            self.assertIn("train", env.list_splits())
            n = env.num_tasks("train")
            self.assertGreater(n, 10)
            task = env.get_task("train", 2)
            self.assertEqual(task.task_spec["index"], 2)
            self.assertTrue(task.task_spec["example"].startswith("ex1."))
            self.assertEqual([t.task_spec["index"] for t in env.get_task_range("train", 0, 3)], [0, 1, 2])
            self.assertEqual(len(env.list_tasks("train")), n)
            tools = client.environment("math-tools").list_tools()
            self.assertEqual([t.name for t in tools], ["calculator", "javascript", "submit"])
            self.assertIn("expression", tools[0].input_schema["properties"])
            openai_tools = client.environment("math-tools").list_tools(format="openai")
            self.assertEqual(openai_tools[0]["name"], "calculator")

    def test_every_environment_plays_with_the_servers_rewards(self) -> None:
        from ors.client import ORS

        with ORS(base_url=URL) as client:
            for name in ENVS:
                env = client.environment(name)
                for index in range(3):
                    with self.subTest(env=name, index=index):
                        task = env.get_task("train", index)
                        # By split and index (ORS's client sends no environment name then), and by the task.
                        for how in ("index", "task"):
                            session = env.session(split="train", index=index) if how == "index" else env.session(task=task)
                            with session as s:
                                reward, finished, calls = play_ors(s, name)
                            self.assertTrue(finished, f"{name} #{index} ({how}) did not finish: {calls}")
                            expected, done = replay(name, task.task_spec["example"], calls)
                            self.assertTrue(done)
                            self.assertAlmostEqual(reward, expected, places=12)
                if name == "reverse-text":
                    self.assertEqual(reward, 1.0)

    def test_unknown_tool_and_finished_episode_are_tool_call_errors(self) -> None:
        from ors.client import ORS
        from ors.client._types import ToolCallError

        with ORS(base_url=URL) as client:
            env = client.environment("math-tools")
            with env.session(split="train", index=0) as s:
                with self.assertRaisesRegex(ToolCallError, "tool_not_found"):
                    s.call_tool("nope", {})
                failed = s.call_tool("calculator", {"expression": "1/"})
                self.assertEqual(failed.metadata["error"]["error_type"], "execution_error")
                self.assertTrue(s.call_tool("submit", {"content": "\\boxed{0}"}).finished)
                with self.assertRaisesRegex(ToolCallError, "EPISODE_DONE"):
                    s.call_tool("submit", {"content": "again"})


@unittest.skipIf(ORS_MISSING, f"needs {ORS_MISSING}")
class OrsLongCallTests(unittest.TestCase):
    """A tool call longer than ORS's client waits on a silent stream (30 s of socket reads): the
    server's stream says it is alive meanwhile, and the client gets the call's answer."""

    @classmethod
    def setUpClass(cls) -> None:
        # The tool sleeps in an environment thread: past the default 30 s deadline of a call.
        fixture = REPO_ROOT / "test" / "fixtures" / "ors-slow-env.ts"
        cls.server = EnvworkerServer(str(fixture), extra_env={"ENVWORKER_ENV_TIMEOUT_S": "120"})
        cls.url = cls.server.start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def test_a_call_of_35_s_is_answered(self) -> None:
        from ors.client import ORS

        with ORS(base_url=self.url) as client:
            env = client.environment("slow-tools")
            with env.session(split="train", index=0) as s:
                started = time.monotonic()
                out = s.call_tool("wait", {"ms": 35_000})
                self.assertGreaterEqual(time.monotonic() - started, 35)
                self.assertEqual(out.blocks[0].text, "waited 35000 ms")
                self.assertFalse(out.finished)


@unittest.skipIf(TRL_MISSING, f"needs {TRL_MISSING}")
class TrlOpenRewardTests(unittest.TestCase):
    """TRL's OpenReward integration against a server of one environment (its base URL reaches the
    server's default environment: the first, here the only one)."""

    def test_spec_rollouts_have_the_servers_rewards(self) -> None:
        from trl.experimental.openreward import OpenRewardSpec

        import os

        server = EnvworkerServer("reverse-text")
        url = server.start()
        # The OpenReward SDK talks to environments at OPENREWARD_SESSION_URL (else at
        # sessions.<the base URL's host>, its platform's layout).
        saved = os.environ.get("OPENREWARD_SESSION_URL")
        os.environ["OPENREWARD_SESSION_URL"] = url
        try:
            spec = OpenRewardSpec(url, num_tasks=4)
            dataset = spec.train_dataset
            self.assertEqual(len(dataset), 4)
            self.assertEqual(dataset[1]["task_index"], 1)
            factory = spec.environment_factory
            rewards = []
            expected = []
            environments = []
            for row in dataset:
                env = factory()
                prompt_text = env.reset(**row)
                self.assertIn("Reverse", prompt_text)
                text = prompt_text.rsplit("\n", 1)[-1]
                answer = f"<reversed_text>{text[::-1][:-2]}</reversed_text>"
                env.submit(content=answer)
                self.assertTrue(env.finished)
                environments.append(env)
                expected.append(replay_on(url, "reverse-text", row["example"], answer))
            rewards = spec.reward_funcs(environments=environments)
            for env in environments:
                env._close()
            self.assertEqual(len(rewards), 4)
            for got, want in zip(rewards, expected):
                self.assertAlmostEqual(got, want, places=12)
            self.assertTrue(all(0 < r < 1 for r in rewards), rewards)
        finally:
            if saved is None:
                os.environ.pop("OPENREWARD_SESSION_URL", None)
            else:
                os.environ["OPENREWARD_SESSION_URL"] = saved
            server.stop()


def replay_on(url: str, env: str, example: str, answer: str) -> float:
    with EnvClient(url, env) as client:
        client.reset(example=example)
        return float(client.step(answer).reward or 0.0)


@unittest.skipIf(ORS_MISSING or OPENENV_MISSING, f"needs {ORS_MISSING or OPENENV_MISSING}")
class ConformanceTests(unittest.TestCase):
    """The same examples over OpenEnv's WebSocket, envworker's HTTP, MCP (production mode) and ORS:
    the same rewards."""

    def test_same_examples_same_rewards_over_every_protocol(self) -> None:
        from ors.client import ORS

        with ORS(base_url=URL) as client:
            for name in ENVS:
                env = client.environment(name)
                for index in range(2):
                    with self.subTest(env=name, index=index):
                        task = env.get_task("train", index)
                        example = task.task_spec["example"]
                        with env.session(task=task) as s:
                            ors_reward, finished, calls = play_ors(s, name)
                        self.assertTrue(finished)
                        rewards = {
                            "ors": ors_reward,
                            "http": replay(name, example, calls)[0],
                            "ws": asyncio.run(play_ws(name, task.task_spec, calls)),
                            "mcp": asyncio.run(play_mcp(name, example, calls)),
                        }
                        self.assertEqual(len(set(rewards.values())), 1, rewards)


async def play_ws(env: str, spec: Dict[str, Any], calls: List[Tuple[str, Dict[str, Any]]]) -> float:
    """OpenEnv's GenericEnvClient over the WebSocket: reset to the task's example by its split and
    row (a dataset) or seed (a generator), as the task spec says; each call a step (submit:
    TextArena's {"message"}, a tool: MCP's call_tool step)."""
    from openenv import GenericEnvClient

    where = {"split": spec["split"], **({"index": spec["index"]} if spec["index"] is not None else {"seed": spec["seed"]})}
    async with GenericEnvClient(base_url=f"{URL}/envs/{env}") as client:
        result = await client.reset(**where)
        for name, args in calls:
            if result.done:
                break
            data = {"message": args["content"]} if name == "submit" else {"type": "call_tool", "tool_name": name, "arguments": args}
            result = await client.step(data)
        return float(result.reward or 0.0)


async def play_mcp(env: str, example: str, calls: List[Tuple[str, Dict[str, Any]]]) -> float:
    """OpenEnv's MCPToolClient in production mode: a session per episode (created by the
    reference), each call a tools/call; submit's result carries the reward."""
    from openenv.core.mcp_client import MCPToolClient

    client = MCPToolClient(base_url=f"{URL}/envs/{env}")
    client.use_production_mode = True
    try:
        client._production_session_id = (await client._production_mcp_request("openenv/session/create", {"example": example}))["result"]["session_id"]
        outcome: Any = None
        for name, args in calls:
            outcome = await client.call_tool(name, **args)
        return float(outcome["reward"] or 0.0)
    finally:
        await client.close()


if __name__ == "__main__":
    unittest.main()
