"""verifiers loads envworker environments by the id ``envworker``, tested with the real package
(clients/python/requirements-trainers.txt) as its users call it, against a real envworker server
and a stdlib mock OpenAI-compatible server (_mock_openai.py):

* ``vf.load_environment("envworker", ...)`` then ``env.evaluate_sync(...)`` (legacy), for a
  single-turn, a multi-turn and a tool environment;
* the ``vf-eval envworker -a '{...}'`` command;
* rLLM's ``VerifiersWorkflow`` when ``rllm`` is installed;
* verifiers v1's loader (``taskset.id = "envworker"``).

Every reward verifiers records is checked against the server's: the rollout's assistant turns are
replayed on a fresh episode of the same example (the server is deterministic), and the episodes
the rollouts opened must all be closed. Skipped, with the reason printed, without verifiers.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _mock_openai import MockOpenAI  # noqa: E402
from _support import SRC, EnvworkerServer  # noqa: E402

import envworker  # noqa: E402
from envworker import EnvClient, EnvworkerError  # noqa: E402

from _support import trainer_missing  # noqa: E402
from envworker._verifiers import has_legacy, has_v1, verifiers_version  # noqa: E402

# verifiers itself: skipped without it, except in a trainers venv that pins it (there: an error).
VERIFIERS_MISSING = trainer_missing("verifiers", why="npm run test:trainers installs it")
VERSION = verifiers_version()
# The legacy API (load_environment, vf-eval -a) is 0.3.x's; 0.4.0 removed it (LegacyGoneTests).
MISSING = VERIFIERS_MISSING or ("" if has_legacy() else f"verifiers {VERSION} has no legacy API (0.4.0 removed it; LegacyGoneTests checks the error that says so)")
ENVS = ("reverse-text", "wordle", "math-tools")
API_KEY_VAR = "ENVWORKER_TEST_MOCK_KEY"


def setUpModule() -> None:
    global SERVER, URL, API
    if VERIFIERS_MISSING:
        print(f"\ntest_trainers_verifiers: skipped: {VERIFIERS_MISSING}", file=sys.stderr)
        return
    print(f"\ntest_trainers_verifiers: verifiers {VERSION} (legacy API: {'yes' if has_legacy() else 'no'}, v1: {'yes' if has_v1() else 'no'})", file=sys.stderr)
    os.environ[API_KEY_VAR] = "mock"
    SERVER = EnvworkerServer(*ENVS)
    URL = SERVER.start()
    API = MockOpenAI().__enter__()


def tearDownModule() -> None:
    if not VERIFIERS_MISSING:
        API.__exit__(None, None, None)
        SERVER.stop()


class OpenedEpisodes:
    """Records the episode of every EnvClient.reset in the process (the rollouts' own clients)."""

    def __enter__(self) -> List[str]:
        self.ids: List[str] = []
        self.original = EnvClient.reset
        ids = self.ids
        original = self.original

        def reset(client: EnvClient, *args: Any, **kwargs: Any) -> Any:
            result = original(client, *args, **kwargs)
            ids.append(result.episode_id)
            return result

        EnvClient.reset = reset  # type: ignore[method-assign]
        return ids

    def __exit__(self, *exc: Any) -> None:
        EnvClient.reset = self.original  # type: ignore[method-assign]


def _wire(message: Any) -> Dict[str, Any]:
    from envworker.verifiers_legacy import wire_message

    return wire_message(message)


def server_reward(env: str, example: str, completion: List[Any]) -> "tuple[float, bool]":
    """Replay a rollout's assistant turns on a fresh episode of its example: the server's reward
    for that conversation, and whether the episode ended (else: what /score gives it)."""
    turns = [_wire(m) for m in completion if _wire(m)["role"] == "assistant"]
    with EnvClient(URL, env) as client:
        result = client.reset(example=example)
        for turn in turns:
            if result.done:
                break
            result = client.step({k: v for k, v in turn.items() if k != "role"})
        if result.done:
            return float(result.reward or 0.0), True
    scored = envworker.score(URL, env, [{"example": example, "completion": [_wire(m) for m in completion]}])[0]
    return scored.reward, False


def assert_closed(test: unittest.TestCase, env: str, ids: List[str]) -> None:
    test.assertTrue(ids, "no episode was opened")
    with EnvClient(URL, env) as client:
        for eid in ids:
            with test.assertRaises(EnvworkerError, msg=f"episode {eid} is still open") as caught:
                client.state(eid)
            test.assertEqual(caught.exception.code, "UNKNOWN_EPISODE")


def client_config() -> Any:
    import verifiers as vf

    return vf.ClientConfig(api_base_url=API.url, api_key_var=API_KEY_VAR)


@unittest.skipIf(MISSING, f"needs {MISSING}")
class LegacyLoadEnvironmentTests(unittest.TestCase):
    def evaluate(self, name: str, n: int = 3, rollouts: int = 2, **kwargs: Any) -> "tuple[Any, List[Dict[str, Any]], List[str]]":
        import verifiers as vf

        with OpenedEpisodes() as ids:
            env = vf.load_environment("envworker", base_url=URL, env=name, num_examples=n, **kwargs)
            results = env.evaluate_sync(client=client_config(), model="mock-model", num_examples=n, rollouts_per_example=rollouts)
        outputs = results["outputs"] if isinstance(results, dict) else results.outputs
        self.assertEqual(len(outputs), n * rollouts)
        return env, outputs, ids

    def check_rewards(self, name: str, outputs: List[Dict[str, Any]], ended: bool = True) -> None:
        for o in outputs:
            self.assertIsNone(o.get("error"))
            expected, done = server_reward(name, o["info"]["example"], o["completion"])
            self.assertEqual(done, ended)
            self.assertAlmostEqual(o["reward"], expected, places=9)
            self.assertAlmostEqual(o["metrics"]["envworker_reward"], expected, places=9)

    def test_single_turn(self) -> None:
        env, outputs, ids = self.evaluate("reverse-text")
        self.assertEqual(type(env).__name__, "EnvworkerMultiTurnEnv")
        self.check_rewards("reverse-text", outputs)
        self.assertEqual([o["reward"] for o in outputs], [1.0] * 6)  # the mock reverses correctly
        self.assertIn("lcs_reward_func", outputs[0]["metrics"])  # each rubric function, recorded
        # The dataset is the server's prompts with references, never answers.
        row = env.get_dataset()[0]
        self.assertEqual(row["answer"], "")
        self.assertTrue(row["info"]["example"])
        assert_closed(self, "reverse-text", ids)

    def test_multi_turn(self) -> None:
        _, outputs, ids = self.evaluate("wordle")
        self.check_rewards("wordle", outputs)
        self.assertTrue(all(o["metrics"]["num_turns"] > 1 for o in outputs))
        assert_closed(self, "wordle", ids)

    def test_tool_environment(self) -> None:
        before = len(API.requests)
        _, outputs, ids = self.evaluate("math-tools", n=4, rollouts=1, args={"difficulty": "easy"})
        self.check_rewards("math-tools", outputs)
        # The episode's tools were the rollout's tool definitions, and the model's calls ran in the episode.
        sent = API.requests[before:]
        self.assertTrue(all({t["function"]["name"] for t in r.get("tools") or []} == {"calculator", "javascript"} for r in sent))
        called = [o for o in outputs if o["metrics"]["num_tool_calls"] >= 1]
        self.assertTrue(called, "the mock calls the calculator on Compute problems")
        for o in called:
            self.assertTrue(any(_wire(m)["role"] == "tool" for m in o["completion"]))
        assert_closed(self, "math-tools", ids)

    def test_a_rollout_cut_short_is_scored_by_score_and_closed(self) -> None:
        # verifiers stops after one turn: the game is not over, its last turn never reached the server.
        _, outputs, ids = self.evaluate("wordle", n=2, rollouts=1, max_turns=1)
        for o in outputs:
            self.assertEqual(o["stop_condition"], "max_turns_reached")
        self.check_rewards("wordle", outputs, ended=False)
        assert_closed(self, "wordle", ids)


@unittest.skipIf(MISSING, f"needs {MISSING}")
class VfEvalTests(unittest.TestCase):
    def test_vf_eval_envworker(self) -> None:
        vf_eval = Path(sys.executable).parent / "vf-eval"
        self.assertTrue(vf_eval.exists(), f"{vf_eval} missing")
        with tempfile.TemporaryDirectory() as out:
            env = dict(os.environ, PYTHONPATH=str(SRC))
            cmd = [str(vf_eval), "envworker", "-a", json.dumps({"base_url": URL, "env": "wordle"}), "-m", "mock-model", "-b", API.url, "-k", API_KEY_VAR,
                   "-n", "2", "-r", "2", "--disable-tui", "--save-results", "-o", out]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
            self.assertEqual(done.returncode, 0, done.stderr[-3000:])
            results = list(Path(out).rglob("results.jsonl"))
            self.assertEqual(len(results), 1, done.stderr[-3000:])
            rows = [json.loads(line) for line in results[0].read_text().splitlines() if line.strip()]
        self.assertEqual(len(rows), 4)
        for row in rows:
            info = row["info"] if isinstance(row["info"], dict) else json.loads(row["info"])
            expected, done_ = server_reward("wordle", info["example"], row["completion"])
            self.assertTrue(done_)
            self.assertAlmostEqual(row["reward"], expected, places=9)


# rLLM is not on PyPI (PyPI's "rllm" names no distribution): its checkout, from ENVWORKER_RLLM_SRC
# (a clone of rllm-org/rllm: the workflow is its examples/verifiers_env/workflow.py), else an
# installed rllm with that example on the path.
if os.environ.get("ENVWORKER_RLLM_SRC"):
    sys.path.insert(0, os.environ["ENVWORKER_RLLM_SRC"])


def _rllm_missing() -> str:
    try:
        found = importlib.util.find_spec("rllm") is not None and importlib.util.find_spec("examples.verifiers_env.workflow") is not None
    except ModuleNotFoundError:
        found = False
    return "" if found else "rllm cannot be installed from PyPI (no rllm distribution there): set ENVWORKER_RLLM_SRC to a checkout of rllm-org/rllm to run rLLM's own VerifiersWorkflow"


RLLM_MISSING = _rllm_missing()


@unittest.skipIf(MISSING, f"needs {MISSING}")
class RllmTests(unittest.TestCase):
    """rLLM's VerifiersWorkflow (examples/verifiers_env/workflow.py in rllm-org/rllm) runs
    ``vf_env.rollout(input, client, model, sampling_args)`` then ``vf_env.rubric.score_rollout(state)``
    and reads ``state["reward"]`` / ``state["metrics"]``: the same calls here, and the workflow
    itself when rllm is installed."""

    def test_the_calls_verifiers_workflow_makes(self) -> None:
        import asyncio

        import verifiers as vf

        env = vf.load_environment("envworker", base_url=URL, env="math-tools", num_examples=2, args={"difficulty": "easy"})
        row = dict(env.get_dataset()[0])

        async def run() -> Any:
            state = await env.rollout(input={"prompt": row["prompt"], "example_id": row["example_id"], "answer": row["answer"], "info": row["info"]},
                                      client=client_config(), model="mock-model", sampling_args={})
            await env.rubric.score_rollout(state)
            return state

        with OpenedEpisodes() as ids:
            state = asyncio.run(run())
        expected, done = server_reward("math-tools", row["info"]["example"], state["completion"])
        self.assertTrue(done)
        self.assertAlmostEqual(state["reward"], expected, places=9)
        self.assertIn("correct_answer", state["metrics"])
        assert_closed(self, "math-tools", ids)

    def test_verifiers_workflow(self) -> None:
        """rLLM's own VerifiersWorkflow with a scripted rollout engine (no model): it passes its own
        OpenAI-style client, a string task and score_sem, which envworker's environment takes; the
        episode's reward is the server's."""
        if RLLM_MISSING:
            print(f"\ntest_trainers_verifiers: rLLM's own VerifiersWorkflow skipped: {RLLM_MISSING}", file=sys.stderr)
            self.skipTest(RLLM_MISSING)
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        import verifiers as vf
        from examples.verifiers_env.workflow import VerifiersWorkflow  # type: ignore[import-not-found]
        from rllm.engine.rollout.rollout_engine import ModelOutput, RolloutEngine  # type: ignore[import-not-found]

        from _mock_openai import solving_policy

        turns: List[Dict[str, Any]] = []

        class ScriptedEngine(RolloutEngine):
            model = "mock-model"

            async def get_model_response(self, messages: List[Dict[str, Any]], application_id: str = "", tools: Any = None, **kwargs: Any) -> Any:
                reply = solving_policy([dict(m) for m in messages], tools or None)
                turns.append({"role": "assistant", "content": reply.get("content"), **({"tool_calls": reply["tool_calls"]} if reply.get("tool_calls") else {})})
                calls = [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in reply.get("tool_calls") or []]
                return ModelOutput(text=reply.get("content") or "", content=reply.get("content"), tool_calls=calls or None, finish_reason="tool_calls" if calls else "stop")

        for name, args in (("reverse-text", None), ("math-tools", {"difficulty": "easy"})):
            with self.subTest(env=name):
                env = vf.load_environment("envworker", base_url=URL, env=name, num_examples=3, **({"args": args} if args else {}))
                with ThreadPoolExecutor(2) as executor:
                    workflow = VerifiersWorkflow(rollout_engine=ScriptedEngine(), executor=executor, vf_env=env)
                    for k in range(3):
                        row = dict(env.get_dataset()[k])
                        turns.clear()
                        with OpenedEpisodes() as ids:
                            episode = asyncio.run(workflow.run(task={"prompt": row["prompt"], "example_id": row["example_id"], "answer": row["answer"], "info": row["info"]}, uid=f"t{k}:0"))
                        expected, done = server_reward(name, row["info"]["example"], list(turns))
                        self.assertTrue(done)
                        self.assertAlmostEqual(episode.trajectories[0].reward, expected, places=12)
                        self.assertEqual(episode.id, f"t{k}:0")
                        self.assertIn("envworker_reward", episode.metrics)
                        assert_closed(self, name, ids)


V1_MISSING = VERIFIERS_MISSING or ("" if has_v1() else f"verifiers {VERSION} has no verifiers.v1")


def v1_eval_script() -> Path:
    """verifiers v1's eval command in this venv: ``vf-eval`` from 0.4.0 on, ``eval`` in 0.3.x (the
    console script whose entry point is ``verifiers.v1.cli.eval.main:main``)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="console_scripts"):
        if ep.value.replace(" ", "") == "verifiers.v1.cli.eval.main:main":
            return Path(sys.executable).parent / ep.name
    raise AssertionError(f"verifiers {VERSION} has no console script for verifiers.v1.cli.eval.main")


@unittest.skipIf(VERIFIERS_MISSING or has_legacy(), "verifiers with its legacy API (0.3.x), or none")
class LegacyGoneTests(unittest.TestCase):
    """verifiers >= 0.4 has no legacy API: the legacy entry says so and names the v1 command."""

    def test_load_environment_names_the_v1_command(self) -> None:
        from envworker._verifiers import VerifiersVersionError

        with self.assertRaises(VerifiersVersionError) as caught:
            envworker.load_environment(URL, "reverse-text")
        message = str(caught.exception)
        self.assertIn(f"verifiers {VERSION} has no legacy API", message)
        self.assertIn("vf-eval envworker --env.taskset.base-url", message)
        self.assertIn("<0.4", message)
        with self.assertRaises(ImportError):
            importlib.import_module("envworker.verifiers_legacy")
        self.assertEqual(v1_eval_script().name, "vf-eval")


def replay_v1(env: str, example: str, nodes: List[Dict[str, Any]]) -> "tuple[float, bool]":
    """Replay a v1 trace on a fresh episode as it was played: each tool call of the agent was one
    MCP call (one step with that call, the tool name without the server prefix), each final reply
    a plain step."""
    with EnvClient(URL, env) as client:
        result = client.reset(example=example)
        for node in nodes:
            m = node["message"]
            if m.get("role") != "assistant" or result.done:
                continue
            calls = m.get("tool_calls") or []
            for call in calls:
                fn = call.get("function") or call
                name = str(fn["name"]).removeprefix("envworker_")
                result = client.step({"content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": name, "arguments": fn["arguments"]}}]})
            if not calls:
                result = client.step({"content": m.get("content") or ""})
        return float(result.reward or 0.0), result.done


@unittest.skipIf(V1_MISSING, f"needs {V1_MISSING}")
class V1Tests(unittest.TestCase):
    """verifiers v1: the loader resolves the id `envworker`, and its `eval` runs episodes."""

    def test_loader_resolves_the_taskset_and_env(self) -> None:
        from verifiers.v1.utils.loaders import environment_class, load_taskset, resolve_env_config, taskset_class

        self.assertEqual(taskset_class("envworker").__name__, "EnvworkerTaskset")
        self.assertEqual(environment_class("envworker").__name__, "EnvworkerEnv")
        config = resolve_env_config({"taskset": {"id": "envworker", "base_url": URL, "env": "reverse-text", "split": "eval", "num_examples": 3}})
        self.assertEqual(type(config).__name__, "EnvworkerEnvConfig")
        tasks = list(load_taskset(config.taskset))
        page = envworker.examples(URL, "reverse-text", split="eval", start=0, count=3)
        self.assertEqual([t.data.example for t in tasks], [e.example for e in page.examples])
        self.assertEqual(tasks[0].data.prompt[0].content if hasattr(tasks[0].data.prompt[0], "content") else tasks[0].data.prompt[0]["content"], page.examples[0].prompt[-1]["content"])
        self.assertEqual(tasks[0].data.system_prompt, page.examples[0].prompt[0]["content"])

    def test_eval_with_tools(self) -> None:
        """The v1 command as docs/trainers.md writes it, run by a shell (`vf-eval envworker ...` on
        0.4; on 0.3.x the script is `eval`, a shell builtin, so `env eval envworker ...`), on
        math-tools, as prime-rl's sources configure it: the tools reach the agent through the
        episode's MCP server and the trace's reward is the server's."""
        import shlex

        eval_cli = v1_eval_script()
        self.assertTrue(eval_cli.exists(), f"{eval_cli} missing")
        command = "vf-eval" if eval_cli.name == "vf-eval" else f"env {eval_cli.name}"
        with tempfile.TemporaryDirectory() as out:
            env = dict(os.environ, PYTHONPATH=str(SRC), PATH=f"{eval_cli.parent}{os.pathsep}{os.environ.get('PATH', '')}")
            args = ["envworker", "--env.taskset.base-url", URL, "--env.taskset.env", "math-tools", "--env.taskset.args", json.dumps({"difficulty": "easy"}),
                    "--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess",
                    "-m", "mock-model", "--client.base-url", API.url, "--client.api-key-var", API_KEY_VAR, "-n", "4", "-r", "1", "--no-push", "-o", out]
            cmd = ["bash", "-c", f"{command} {shlex.join(args)}"]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            logs = "".join(p.read_text() for p in Path(out).rglob("eval.log"))
            self.assertEqual(done.returncode, 0, done.stderr[-3000:] + logs[-3000:])
            rows = [json.loads(line) for p in Path(out).rglob("traces.jsonl") for line in p.read_text().splitlines() if line.strip()]
        traces = [tr for row in rows for tr in row["traces"]]
        self.assertEqual(len(traces), 4, logs[-3000:])
        called = 0
        for tr in traces:
            self.assertEqual(tr["errors"], [])
            self.assertIn("envworker_calculator", [t["name"] for t in tr["tools"]])
            reward = tr["rewards"]["envworker_reward"]["score"]
            expected, ended = replay_v1("math-tools", tr["task"]["data"]["example"], tr["nodes"])
            self.assertTrue(ended)
            self.assertAlmostEqual(reward, expected, places=9)
            called += tr["metrics"]["num_tool_calls"] >= 1
        self.assertGreater(called, 0, "the mock calls the calculator on Compute problems")
        # v1 logs each episode's tool server URL: every one of those episodes is closed.
        import re

        sessions = sorted(set(re.findall(r"session_id=([A-Za-z0-9_-]+)", logs)))
        self.assertEqual(len(sessions), 4, logs[-3000:])
        assert_closed(self, "math-tools", sessions)


if __name__ == "__main__":
    unittest.main()
