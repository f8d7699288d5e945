"""NeMo Gym with no glue: ``envworker.nemo_gym``'s environment classes, loaded and played the way
NeMo Gym's own OpenEnv resources server (``resources_servers/openenv/app.py`` in nemo-gym 0.7.0,
``OpenEnvResourcesServer``) loads and plays an ``env_class``, against a real envworker server.

nemo-gym cannot be installed here: every release needs Python 3.12 (0.1–0.3) or 3.13.14 and
later (0.5–0.7), and this project's machines have 3.11. So ``NemoGymOpenEnvServer`` below
reproduces that server's calls to the environment, line by line from its source (cited per
method), with OpenEnv's real action classes (openenv-core) where they are installed; the test of
the real server runs where nemo_gym imports. Every reward equals the server's.
"""

from __future__ import annotations

import importlib
import re
import sys
import unittest
from pathlib import Path
from typing import Any, Dict, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import EnvworkerServer, reverse_text_gold, trainer_missing  # noqa: E402

import envworker  # noqa: E402
from envworker import EnvClient  # noqa: E402

OPENENV_MISSING = trainer_missing("openenv-core", "openenv", why="OpenEnv's CallToolAction, NeMo Gym's action_class for MCP environments")
NEMO_MISSING = trainer_missing("nemo-gym", "nemo_gym", why="every nemo-gym release needs Python 3.12 (0.1-0.3) or >= 3.13.14 (0.5-0.7)")


def setUpModule() -> None:
    global SERVER, URL
    SERVER = EnvworkerServer("math-tools", "reverse-text")
    URL = SERVER.start()


def tearDownModule() -> None:
    SERVER.stop()


def _import_class(dotted_path: str) -> type:
    """resources_servers/openenv/app.py, _import_class."""
    module_path, class_name = dotted_path.rsplit(".", 1)
    return getattr(importlib.import_module(module_path), class_name)


class NemoGymOpenEnvServer:
    """NeMo Gym's OpenEnvResourcesServer (resources_servers/openenv/app.py, nemo-gym 0.7.0): its
    calls to the environment class, without its web server (a session is a key here)."""

    def __init__(self, env_class: str, action_class: str, is_mcp: bool, reset_kwargs: Optional[Dict[str, Any]] = None) -> None:
        # model_post_init
        self.env_class = _import_class(env_class)
        self.action_class = _import_class(action_class)
        self.reset_kwargs = reset_kwargs or {}
        self.sessions: Dict[str, Dict[str, Any]] = {}
        self.tools: Dict[str, Any] = {}
        if is_mcp:
            # _register_mcp_endpoints: a temporary environment lists the tools, one POST route each.
            from openenv.core.env_server.mcp_types import ListToolsAction

            temp_env = self.env_class()
            temp_env.reset()
            obs = temp_env.step(ListToolsAction())
            if hasattr(temp_env, "close"):
                temp_env.close()
            self.tools = {tool.name: tool for tool in obs.tools}

    def seed_session(self, sid: str) -> None:
        """seed_session: a new environment, reset with the configured reset_kwargs only."""
        env = self.env_class()
        initial_obs = env.reset(**self.reset_kwargs)
        self.sessions[sid] = {"env": env, "accumulated_reward": float(initial_obs.reward) if initial_obs.reward is not None else 0.0, "done": initial_obs.done, "step_count": 0}

    def call_tool(self, sid: str, tool_name: str, body: Dict[str, Any]) -> Dict[str, Any]:
        """_make_mcp_handler's handler: the body is the tool's pydantic model (_schema_to_pydantic:
        every property, None where not given), dumped."""
        schema = self.tools[tool_name].input_schema
        dumped = {name: body.get(name) for name in schema.get("properties", {})}
        session = self.sessions.get(sid)
        if session is None:
            return {"error": "No active session. Call /seed_session first.", "result": None}
        if session["done"]:
            return {"error": "Episode has ended.", "result": None}
        try:
            obs = session["env"].step(self.action_class(tool_name=tool_name, arguments=dumped))
        except Exception as e:
            return {"error": str(e), "result": None}
        if obs.reward is not None:
            session["accumulated_reward"] += float(obs.reward)
        session["step_count"] += 1
        session["done"] = obs.done
        result = obs.result if hasattr(obs, "result") else None
        error = str(obs.error) if hasattr(obs, "error") and obs.error else None
        return {"result": result, "error": error}

    def step(self, sid: str, body: Dict[str, Any]) -> Dict[str, Any]:
        """_handle_step (a non-MCP environment)."""
        session = self.sessions[sid]
        if session["done"]:
            return {"error": "Episode has ended.", "result": None}
        obs = session["env"].step(self.action_class(**body))
        if obs.reward is not None:
            session["accumulated_reward"] += float(obs.reward)
        session["step_count"] += 1
        session["done"] = obs.done
        return obs.model_dump()

    def verify(self, sid: str) -> float:
        """verify: the summed reward; the environment closed."""
        session = self.sessions.pop(sid, None)
        if session is None:
            return 0.0
        if hasattr(session["env"], "close"):
            session["env"].close()
        return session["accumulated_reward"]


def compute_seeds(n: int) -> "list[tuple[int, str]]":
    page = envworker.examples(URL, "math-tools", start=0, count=200)
    found = []
    for ex in page.examples:
        m = re.fullmatch(r"Compute ([^.]+)\.", ex.prompt[-1]["content"])
        if m:
            found.append((int(ex.seed), m.group(1)))  # type: ignore[arg-type]
    return found[:n]


@unittest.skipIf(OPENENV_MISSING, f"needs {OPENENV_MISSING}")
class McpEnvironmentTests(unittest.TestCase):
    def test_tools_calls_and_verify_give_the_servers_reward(self) -> None:
        import os

        os.environ["ENVWORKER_URL"] = URL
        seeds = compute_seeds(3)
        self.assertEqual(len(seeds), 3)
        for seed, expression in seeds:
            with self.subTest(seed=seed):
                server = NemoGymOpenEnvServer("envworker.nemo_gym.math_tools", "openenv.core.env_server.mcp_types.CallToolAction", True, {"seed": seed})
                self.assertEqual(sorted(server.tools), ["calculator", "javascript", "submit"])
                self.assertIn("expression", server.tools["calculator"].input_schema["properties"])
                server.seed_session("s")
                value = server.call_tool("s", "calculator", {"expression": expression})
                self.assertIsNone(value["error"])
                bad = server.call_tool("s", "calculator", {"expression": "1/"})
                self.assertTrue(bad["error"].startswith("Error:"))
                done = server.call_tool("s", "submit", {"content": f"\\boxed{{{value['result']}}}"})
                self.assertIn("Reward: 1", done["result"])
                episode = server.sessions["s"]["env"].session_id
                reward = server.verify("s")
                # The same turns on a fresh episode over OpenEnv's HTTP routes.
                with EnvClient(URL, "math-tools") as client:
                    client.reset(seed=seed)
                    client.step({"content": None, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "calculator", "arguments": f'{{"expression": "{expression}"}}'}}]})
                    client.step({"content": None, "tool_calls": [{"id": "b", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "1/"}'}}]})
                    expected = client.step(f"\\boxed{{{value['result']}}}").reward
                self.assertEqual(reward, expected)
                self.assertEqual(reward, 1.0)
                with EnvClient(URL, "math-tools") as client, self.assertRaises(Exception):  # verify closed it
                    client.state(episode)


class TextEnvironmentTests(unittest.TestCase):
    def test_plain_replies_give_the_servers_reward(self) -> None:
        import os

        os.environ["ENVWORKER_URL"] = URL
        for seed in (1, 2):
            server = NemoGymOpenEnvServer("envworker.nemo_gym.reverse_text", "envworker.nemo_gym.Action", False, {"seed": seed})
            server.seed_session("s")
            with EnvClient(URL, "reverse-text") as client:
                messages = client.reset(seed=seed).observation.messages
                answer = reverse_text_gold(messages)[:-3] + "x>"
                expected = client.step(answer).reward
            out = server.step("s", {"content": answer})
            self.assertTrue(out["done"])
            self.assertEqual(server.verify("s"), expected)


@unittest.skipIf(NEMO_MISSING, f"needs {NEMO_MISSING}")
class RealNemoGymTests(unittest.TestCase):
    def test_its_openenv_resources_server_loads_the_class(self) -> None:
        app = importlib.import_module("resources_servers.openenv.app")
        self.assertTrue(hasattr(app, "OpenEnvResourcesServer"))
        self.assertTrue(issubclass(_import_class("envworker.nemo_gym.math_tools"), envworker.nemo_gym.EnvworkerEnvironment))  # type: ignore[attr-defined]


if __name__ == "__main__":
    unittest.main()
