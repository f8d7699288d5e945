"""OpenEnv's own clients (openenv-core, clients/python/requirements-trainers.txt) against a real
envworker server: ``MCPToolClient`` over the WebSocket (``list_tools`` / ``call_tool`` as step
data) and in production mode (JSON-RPC sessions at ``B/mcp``) on math-tools, the ``submit`` tool
that ends an episode with its reward, and ``GenericEnvClient`` (including TextArena's
``{"message": ...}`` action). Skipped, with the reason printed, without openenv-core.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

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


if __name__ == "__main__":
    unittest.main()
