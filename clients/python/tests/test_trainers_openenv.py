"""OpenEnv's own clients (openenv-core, clients/python/requirements-trainers.txt) against a real
envworker server: ``MCPToolClient`` over the WebSocket (``list_tools`` / ``call_tool`` as step
data) and in production mode (JSON-RPC sessions at ``B/mcp``) on math-tools, the ``submit`` tool
that ends an episode with its reward, and ``GenericEnvClient`` (including TextArena's
``{"message": ...}`` action); and both on Python environments (the package ``envworker init
--python`` makes, ``envs/reverse-text/env.py``, reasoning-gym's ``leg_counting`` where the workers'
interpreter has reasoning-gym), whose rewards equal ``POST /score``'s. Skipped, with the reason
printed, without openenv-core.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _support  # noqa: E402
from _support import EnvworkerServer  # noqa: E402

from envworker import EnvClient  # noqa: E402

from _support import trainer_missing  # noqa: E402

MISSING = trainer_missing("openenv-core", "openenv")


def _rpc_over_ws() -> bool:
    """Whether this OpenEnv's MCPToolClient makes its WebSocket calls as JSON-RPC on a session
    (openenv 0.10) rather than as call_tool steps (openenv-core 0.3)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("openenv-core")
        return False
    except PackageNotFoundError:
        return True


RPC_OVER_WS = None if MISSING else _rpc_over_ws()


def setUpModule() -> None:
    global SERVER, URL
    if MISSING:
        print(f"\ntest_trainers_openenv: skipped: {MISSING} (npm run test:trainers installs it)", file=sys.stderr)
        return
    SERVER = EnvworkerServer("math-tools", "reverse-text")
    URL = SERVER.start()


def tearDownModule() -> None:
    if not MISSING:
        SERVER.stop()


def compute_seed() -> "tuple[int, str]":
    """A math-tools seed whose problem is "Compute <expression>." (the calculator solves it)."""
    from envworker import examples

    page = examples(URL, "math-tools", start=0, count=200)
    for ex in page.examples:
        m = re.fullmatch(r"Compute (.+)\.", ex.prompt[-1]["content"])
        if m:
            return int(ex.seed), m.group(1)  # type: ignore[arg-type]
    raise AssertionError("no Compute problem in the first 200 seeds")


def server_state(episode_id: str) -> Any:
    with EnvClient(URL, "math-tools") as c:
        return c.state(episode_id)


@unittest.skipIf(MISSING, f"needs {MISSING}")
class MCPToolClientTests(unittest.TestCase):
    def test_websocket_mode(self) -> None:
        from openenv.core.mcp_client import MCPToolClient

        seed, expression = compute_seed()

        async def play() -> Any:
            async with MCPToolClient(base_url=f"{URL}/envs/math-tools") as env:
                tools = await env.list_tools()
                reset = await env.reset(seed=seed)
                value = await env.call_tool("calculator", expression=expression)
                outcome = await env.call_tool("submit", content=f"\\boxed{{{value}}}")
                state = await env.state()
                return tools, reset, value, outcome, state

        tools, reset, value, outcome, state = asyncio.run(play())
        self.assertEqual([t.name for t in tools], ["calculator", "javascript", "submit"])
        self.assertIn("expression", tools[0].input_schema["properties"])
        self.assertFalse(reset.done)
        # The call was the episode's tool call, graded like one; submit ended it with the server's reward.
        self.assertEqual(outcome["done"], True)
        self.assertEqual(outcome["reward"], 1.0)
        self.assertEqual(outcome["metrics"]["num_tool_calls"], 1.0)
        self.assertEqual(outcome["metrics"]["correct_answer"], 1.0)
        self.assertEqual(state.step_count, 2)

    def test_production_mode(self) -> None:
        from openenv.core.mcp_client import MCPToolClient

        seed, expression = compute_seed()

        async def play() -> Any:
            env = MCPToolClient(base_url=f"{URL}/envs/math-tools")
            env.use_production_mode = True
            try:
                tools = await env.list_tools()
                session = env._production_session_id
                value = await env.call_tool("calculator", expression=expression)
                bad = await env.call_tool("calculator", expression="1/")
                state_mid = server_state(session)
                outcome = await env.call_tool("submit", content="\\boxed{0.123456}")
                state_end = server_state(session)
            finally:
                await env.close()
            return tools, session, value, bad, state_mid, outcome, state_end

        tools, session, value, bad, state_mid, outcome, state_end = asyncio.run(play())
        self.assertEqual([t.name for t in tools], ["calculator", "javascript", "submit"])
        self.assertTrue(session)
        self.assertRegex(str(value), r"^-?[0-9.e+-]+$")
        self.assertTrue(str(bad).startswith("Error:"))
        self.assertEqual(state_mid.step_count, 2)
        self.assertFalse(state_mid.done)
        self.assertTrue(outcome["done"])
        self.assertEqual(outcome["reward"], state_end.reward)
        self.assertEqual(outcome["metrics"]["num_tool_calls"], 2.0)
        self.assertEqual(outcome["metrics"]["num_tool_errors"], 1.0)
        # close() ended the session: the episode is gone.
        from envworker import EnvworkerError

        with self.assertRaises(EnvworkerError):
            server_state(session)


@unittest.skipIf(MISSING, f"needs {MISSING}")
class ToolErrorTests(unittest.TestCase):
    """OpenEnv's tool errors: an unknown tool is `tool_not_found` (no turn used), a tool that failed
    its `error_type`; `call_tool` raises on both, as on OpenEnv's own environments."""

    def test_websocket(self) -> None:
        from openenv.core.mcp_client import MCPToolClient

        # openenv-core 0.3's WebSocket client steps with call_tool and reads the observation's
        # error; openenv 0.10's makes its calls as JSON-RPC on a session, where a failed tool is
        # MCP's isError result (what it returns) and an unknown one the production-mode error.
        steps = RPC_OVER_WS is False

        async def play() -> Any:
            async with MCPToolClient(base_url=f"{URL}/envs/math-tools") as env:
                await env.reset(seed=1)
                with self.assertRaisesRegex(RuntimeError, r"Tool 'nope' failed: (.*\(type: tool_not_found\)|Tool not found: nope)"):
                    await env.call_tool("nope", x=1)
                if steps:
                    with self.assertRaisesRegex(RuntimeError, r"\(type: execution_error\)"):
                        await env.call_tool("calculator", expression="1/")
                    with self.assertRaisesRegex(RuntimeError, r"\(type: invalid_args\)"):
                        await env.call_tool("calculator", nope="1")
                    return await env.state()
                self.assertTrue(str(await env.call_tool("calculator", expression="1/")).startswith("Error:"))
                return None

        state = asyncio.run(play())
        if steps:
            self.assertEqual(state.step_count, 2)  # the unknown tool took no turn

    def test_production_mode(self) -> None:
        from openenv.core.mcp_client import MCPToolClient

        async def play() -> Any:
            env = MCPToolClient(base_url=f"{URL}/envs/math-tools")
            env.use_production_mode = True
            try:
                await env.list_tools()
                with self.assertRaisesRegex(RuntimeError, "Tool 'nope' failed: Tool not found: nope"):
                    await env.call_tool("nope")
                return server_state(env._production_session_id)
            finally:
                await env.close()

        self.assertEqual(asyncio.run(play()).step_count, 0)


@unittest.skipIf(MISSING, f"needs {MISSING}")
class GenericEnvClientTests(unittest.TestCase):
    def test_message_action_and_tool_calls(self) -> None:
        from openenv import GenericEnvClient

        async def play() -> Any:
            async with GenericEnvClient(base_url=f"{URL}/envs/reverse-text") as env:
                reset = await env.reset(seed=3)
                text = reset.observation["messages"][-1]["content"]
                return await env.step({"message": f"<reversed_text>{text[::-1]}</reversed_text>"})

        result = asyncio.run(play())
        self.assertTrue(result.done)
        self.assertEqual(result.reward, 1.0)


# -- Python environments through OpenEnv's clients ------------------------------------------------

Messages = List[Dict[str, Any]]
#: A player: the prompt and the completion so far -> the model's next reply.
Policy = Callable[[Messages, Messages], str]


@dataclass
class Episode:
    prompt: Messages
    #: The model's replies and the environment's, in order (what POST /score takes).
    completion: Messages
    reward: float
    #: The server's GET B/state of the finished episode (its answer and info included).
    state: Dict[str, Any]
    #: The example reference reset's observation names (WebSocket only).
    example: Optional[str] = None


def _http(url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"content-type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=120) as res:
        return json.load(res)


def reverse_policy(transform: Callable[[str], str]) -> Policy:
    """One reply: the prompt's text reversed, then ``transform``ed, in the tags."""

    def policy(prompt: Messages, completion: Messages) -> str:
        return f"<reversed_text>{transform(prompt[-1]['content'][::-1])}</reversed_text>"

    return policy


def almost(reversed_text: str) -> str:
    """A partial answer: every fifth character dropped."""
    return "".join(c for i, c in enumerate(reversed_text) if i % 5 != 4)


def binary_search(prompt: Messages, completion: Messages) -> str:
    """guess-py (templates/python-env): halve the range on each "Higher." / "Lower."."""
    m = re.search(r"between 1 and (\d+)", prompt[-1]["content"])
    assert m, prompt
    lo, hi = 1, int(m.group(1))
    for mine, reply in zip(completion[0::2], completion[1::2]):
        guess = int(re.search(r"<guess>(\d+)</guess>", mine["content"]).group(1))  # type: ignore[union-attr]
        if reply["content"] == "Higher.":
            lo = guess + 1
        elif reply["content"] == "Lower.":
            hi = guess - 1
    return f"<guess>{(lo + hi) // 2}</guess>"


def answer_policy(answer: str) -> Policy:
    return lambda prompt, completion: f"I counted them.\n<answer>{answer}</answer>"


@unittest.skipIf(MISSING, f"needs {MISSING}")
class PythonEnvironmentTests(unittest.TestCase):
    """Python environments (served through Python workers) played through OpenEnv's
    ``GenericEnvClient`` and ``MCPToolClient`` (WebSocket; a tools-only client plays with the
    ``submit`` tool, which every environment offers): the package ``envworker init --python``
    makes (guess-py, multi-turn), ``envs/reverse-text/env.py`` (reverse-text-py, beside the
    TypeScript reverse-text: the same completions get the same rewards) and, where the workers'
    interpreter imports reasoning_gym, ``reasoning-gym:leg_counting``. Each episode's reward is
    ``POST B/score``'s for its completion."""

    url: str
    server: EnvworkerServer
    tmp: str
    reasoning_gym: bool

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp(prefix="envworker-openenv-py-")
        # The workers run as a user of their own when the server runs as root: it must read the package.
        os.chmod(cls.tmp, 0o755)
        package = os.path.join(cls.tmp, "guess-py")
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH")
        made = subprocess.run(
            [node, str(_support.REPO_ROOT / "bin" / "envworker.js"), "init", "--python", "guess-py", "--dir", package],
            cwd=_support.REPO_ROOT, capture_output=True, text=True, timeout=120,
        )
        if made.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise RuntimeError(f"envworker init --python failed ({made.returncode}):\n{made.stdout}{made.stderr}")
        extra_env = _support.python_workers_env()
        python = _support.worker_interpreter(extra_env)
        cls.reasoning_gym = _support.interpreter_imports(python, "reasoning_gym")
        envs = ["reverse-text", "./envs/reverse-text/env.py", package]
        if cls.reasoning_gym:
            envs.append("reasoning-gym:leg_counting")
        else:
            print(f"\ntest_trainers_openenv: reasoning-gym:leg_counting left out: the workers' interpreter ({python}) cannot import reasoning_gym", file=sys.stderr)
        cls.server = EnvworkerServer(*envs, extra_env=extra_env, start_timeout=300)
        try:
            cls.url = cls.server.start()
        except BaseException:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def base(self, env: str) -> str:
        return f"{self.url}/envs/{env}"

    def http_state(self, env: str, episode_id: str) -> Dict[str, Any]:
        return _http(f"{self.base(env)}/state?episode_id={urllib.parse.quote(episode_id)}")

    def score(self, env: str, item: Dict[str, Any]) -> float:
        return _http(f"{self.base(env)}/score", {"items": [item]})["results"][0]["reward"]

    def play_generic(self, env: str, seed: int, policy: Policy) -> Episode:
        """An episode through GenericEnvClient (the WebSocket, {"content": ...} actions)."""
        from openenv import GenericEnvClient

        async def play() -> Episode:
            async with GenericEnvClient(base_url=self.base(env)) as client:
                result = await client.reset(seed=seed)
                prompt = result.observation["messages"]
                example = result.observation["info"]["example"]
                completion: Messages = []
                while not result.done:
                    content = policy(prompt, completion)
                    result = await client.step({"content": content})
                    completion += [{"role": "assistant", "content": content}, *result.observation["messages"]]
                    self.assertLessEqual(len(completion), 40, "the episode did not end")
                state = await client.state()
                return Episode(prompt, completion, result.reward, self.http_state(env, state["episode_id"]), example)

        episode = asyncio.run(play())
        self.check_episode(env, episode)
        self.assertEqual(self.score(env, {"completion": episode.completion, "example": episode.example}), episode.reward)
        return episode

    def play_mcp(self, env: str, seed: int, policy: Policy) -> Episode:
        """An episode through MCPToolClient over the WebSocket: reset, then the replies as the
        ``submit`` tool's calls (the prompt from the server's state of the episode: OpenEnv's
        observation type there keeps no messages)."""
        from openenv.core.mcp_client import MCPToolClient

        async def play() -> Optional[Episode]:
            async with MCPToolClient(base_url=self.base(env)) as client:
                tools = [t.name for t in await client.list_tools()]
                if not tools:
                    return None
                self.assertIn("submit", tools)
                await client.reset(seed=seed)
                episode_id = (await client.state()).episode_id
                prompt = self.http_state(env, episode_id)["messages"]
                completion: Messages = []
                outcome: Dict[str, Any] = {"done": False}
                while not outcome["done"]:
                    content = policy(prompt, completion)
                    outcome = await client.call_tool("submit", content=content)
                    completion += [{"role": "assistant", "content": content}, *outcome["messages"]]
                    self.assertLessEqual(len(completion), 40, "the episode did not end")
                return Episode(prompt, completion, outcome["reward"], self.http_state(env, episode_id))

        episode = asyncio.run(play())
        if episode is None:
            self.skipTest(f"{env} lists no MCP tools")
        self.check_episode(env, episode)
        item = {"completion": episode.completion, "answer": episode.state["answer"], "info": episode.state.get("info") or {}}
        self.assertEqual(self.score(env, item), episode.reward)
        return episode

    def check_episode(self, env: str, episode: Episode) -> None:
        self.assertTrue(episode.state["done"])
        self.assertEqual(episode.state["env"], env)
        self.assertEqual(episode.state["messages"], episode.prompt + episode.completion)
        self.assertEqual(episode.state["reward"], episode.reward)
        self.assertIsInstance(episode.reward, (int, float))  # JSON's 1 is an int

    def test_served(self) -> None:
        names = sorted(e["name"] for e in _http(f"{self.url}/envs")["envs"])
        expected = ["guess-py", "reverse-text", "reverse-text-py"] + (["rg-leg-counting"] if self.reasoning_gym else [])
        self.assertEqual(names, sorted(expected))

    def test_init_python_package(self) -> None:
        """guess-py, multi-turn: "Higher." / "Lower." until the guess is right."""
        for seed in (1, 5, 2024):
            with self.subTest(seed=seed):
                ws = self.play_generic("guess-py", seed, binary_search)
                mcp = self.play_mcp("guess-py", seed, binary_search)
                self.assertEqual(ws.prompt, mcp.prompt)
                self.assertEqual(ws.completion, mcp.completion)
                self.assertEqual(ws.reward, mcp.reward)
                self.assertGreater(ws.reward, 0)
                self.assertGreater(len(ws.completion), 2)  # more than one turn
                self.assertEqual(ws.completion[-1]["content"], "Correct!")

    def test_reverse_text_py_scores_as_reverse_text(self) -> None:
        for seed in (3, 11):
            for name, transform in (("gold", lambda t: t), ("partial", almost), ("reversed twice", lambda t: t[::-1])):
                with self.subTest(seed=seed, completion=name):
                    policy = reverse_policy(transform)
                    py_ws = self.play_generic("reverse-text-py", seed, policy)
                    py_mcp = self.play_mcp("reverse-text-py", seed, policy)
                    ts_ws = self.play_generic("reverse-text", seed, policy)
                    ts_mcp = self.play_mcp("reverse-text", seed, policy)
                    self.assertEqual(py_ws.prompt, ts_ws.prompt)
                    self.assertEqual(py_ws.completion, ts_ws.completion)
                    self.assertEqual(py_ws.reward, ts_ws.reward)
                    self.assertEqual([py_mcp.reward, ts_mcp.reward], [py_ws.reward] * 2)
                    if name == "gold":
                        self.assertEqual(py_ws.reward, 1.0)
                    else:
                        self.assertGreater(py_ws.reward, 0.0)
                        self.assertLess(py_ws.reward, 1.0)

    def test_reasoning_gym_leg_counting(self) -> None:
        if not self.reasoning_gym:
            self.skipTest("the Python workers' interpreter cannot import reasoning_gym (set ENVWORKER_PYTHON to one that can, readable by others when run as root)")
        env = "rg-leg-counting"
        for seed in (1, 77):
            with self.subTest(seed=seed):
                # A wrong answer first: the finished episode's state has the gold answer.
                wrong = self.play_generic(env, seed, answer_policy("-1"))
                gold = str(wrong.state["answer"])
                self.assertLess(wrong.reward, 1.0)
                self.assertEqual(self.play_mcp(env, seed, answer_policy("-1")).reward, wrong.reward)
                self.assertEqual(self.play_generic(env, seed, answer_policy(gold)).reward, 1.0)
                self.assertEqual(self.play_mcp(env, seed, answer_policy(gold)).reward, 1.0)


if __name__ == "__main__":
    unittest.main()
