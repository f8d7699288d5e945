"""envworker environments in NeMo Gym (NVIDIA-NeMo/Gym), through NeMo Gym's own OpenEnv resources
server (``resources_servers/openenv``): the environment class it loads by dotted path, which an
envworker user would otherwise write.

That server makes one environment object per rollout with ``env_class()`` (no arguments), calls
``reset(**reset_kwargs)`` at ``/seed_session``; for an MCP environment (``is_mcp: true``) it lists
the tools once with ``step(ListToolsAction())`` (each tool's ``name`` and ``input_schema`` becomes a
POST route the agent calls) and plays each call as ``step(CallToolAction(tool_name, arguments))``,
answering the agent ``{"result": obs.result, "error": obs.error}``; ``verify`` is the sum of the
steps' ``obs.reward``; ``close()`` ends it. Here each object is an envworker episode, played over
the server's MCP sessions (``B/mcp``, OpenEnv's production mode): ``reset`` starts it
(``openenv/session/create``; ``reset_kwargs``: ``seed``, ``index``, ``split``, ``args``), a call is
a step of it (``submit`` sends the model's plain reply, its final answer or game move), and the
reward comes once, on the step that ends the episode, so NeMo Gym's sum is the episode's reward.

A NeMo Gym config, with the server at ``ENVWORKER_URL`` (default ``http://127.0.0.1:8000``;
``ENVWORKER_TOKEN`` if it has one)::

    envworker_math_tools_resources_server:
      resources_servers:
        openenv:
          entrypoint: app.py
          env_class: "envworker.nemo_gym.math_tools"       # the environment's name, - as _
          action_class: "openenv.core.env_server.mcp_types.CallToolAction"
          is_mcp: true
          reset_kwargs: {split: train}

``envworker.nemo_gym.EnvworkerEnvironment`` is the environment named by ``ENVWORKER_ENV``. A
non-MCP config (``is_mcp: false``, ``action_class: "envworker.nemo_gym.Action"``) sends the body of
the agent's ``/step`` (``{"content": ...}``) as the model's reply.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from ._transport import DEFAULT_TIMEOUT, Transport
from .client import _env_path

#: The envworker server (its origin) and its token, from the environment of NeMo Gym's process.
URL_VAR, TOKEN_VAR, ENV_VAR = "ENVWORKER_URL", "ENVWORKER_TOKEN", "ENVWORKER_ENV"
DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass
class Tool:
    """A tool as NeMo Gym's adapter reads it (OpenEnv's ``Tool``: ``name``, ``description``, ``input_schema``)."""

    name: str
    description: str
    input_schema: Dict[str, Any]


@dataclass
class Observation:
    """What ``reset`` and ``step`` return: OpenEnv's observation fields NeMo Gym's adapter reads
    (``reward``, ``done``, ``tools``, ``tool_name``, ``result``, ``error``), and the episode's."""

    reward: Optional[float] = None
    done: bool = False
    messages: List[Dict[str, Any]] = field(default_factory=list)
    tools: Optional[List[Tool]] = None
    tool_name: Optional[str] = None
    result: Any = None
    error: Optional[str] = None
    metrics: Optional[Dict[str, Any]] = None
    metadata: Dict[str, Any] = field(default_factory=dict)

    def model_dump(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass
class Action:
    """The model's plain reply (``action_class`` of a non-MCP config): ``content``, or TextArena's ``message``."""

    content: Optional[str] = None
    message: Optional[str] = None


class EnvworkerEnvironment:
    """One envworker episode of the environment ``ENV`` (class attribute; here ``ENVWORKER_ENV``)."""

    ENV: Optional[str] = None

    def __init__(self) -> None:
        env = self.ENV or os.environ.get(ENV_VAR)
        if not env:
            raise ValueError(f"name the envworker environment: env_class 'envworker.nemo_gym.<name>', or {ENV_VAR}")
        self.env = env
        self.transport = Transport(os.environ.get(URL_VAR, DEFAULT_URL), token=os.environ.get(TOKEN_VAR) or None, timeout=DEFAULT_TIMEOUT)
        self.path = f"{_env_path(env)}/mcp"
        self.session_id: Optional[str] = None
        self._ids = 0

    def _rpc(self, method: str, params: Dict[str, Any]) -> Any:
        self._ids += 1
        answer = self.transport.post(self.path, {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}, idempotent=False)
        if "error" in answer:
            e = answer["error"]
            raise RuntimeError(f"{self.env}: {method}: {e.get('message')}")
        return answer["result"]

    def reset(self, **kwargs: Any) -> Observation:
        """Start the episode (a new one; the previous is closed): ``seed``, ``index``, ``split``,
        ``args`` or ``example`` choose it, as ``POST B/reset`` takes them."""
        self.close()
        params = {k: v for k, v in kwargs.items() if k in ("seed", "index", "split", "args", "example") and v is not None}
        created = self._rpc("openenv/session/create", params)
        self.session_id = created["session_id"]
        observation = created.get("observation") or {}
        return Observation(messages=list(observation.get("messages") or []), metadata={"episode_id": self.session_id, "info": observation.get("info")})

    def step(self, action: Any) -> Observation:
        """``ListToolsAction``: the episode's tools; a tool call (``tool_name``, ``arguments``): that
        call, as a step; anything else (``Action``): the model's plain reply, as ``submit``."""
        if self.session_id is None:
            raise RuntimeError("reset first: no episode")
        if type(action).__name__ == "ListToolsAction" or getattr(action, "type", None) == "list_tools":
            tools = self._rpc("tools/list", {"session_id": self.session_id})["tools"]
            return Observation(tools=[Tool(t["name"], t.get("description", ""), t.get("inputSchema") or {"type": "object", "properties": {}}) for t in tools])
        name = getattr(action, "tool_name", None)
        if name is None:
            text = getattr(action, "content", None)
            text = text if text is not None else getattr(action, "message", None)
            name, arguments = "submit", {"content": text or ""}
        else:
            # NeMo Gym's tool routes send every property of the tool's schema, null where the agent gave none.
            arguments = {k: v for k, v in dict(getattr(action, "arguments", None) or {}).items() if v is not None}
        result = self._rpc("tools/call", {"name": name, "arguments": arguments, "session_id": self.session_id})
        meta = result.get("_meta") or {}
        text = "\n".join(b.get("text", "") for b in result.get("content") or [] if isinstance(b, dict))
        data = result.get("data")
        return Observation(
            reward=meta.get("reward") if meta.get("done") else None,
            done=bool(meta.get("done")),
            messages=list(data.get("messages") or []) if isinstance(data, dict) else [],
            tool_name=name,
            result=text,
            error=text if result.get("isError") else None,
            metrics=data.get("metrics") if isinstance(data, dict) else None,
            metadata={"episode_id": self.session_id},
        )

    def close(self) -> None:
        """End the episode (once; a session already gone is fine)."""
        sid, self.session_id = self.session_id, None
        if sid is not None:
            try:
                self._rpc("openenv/session/close", {"session_id": sid})
            except Exception:
                pass

    def __del__(self) -> None:  # NeMo Gym closes what it verifies; an abandoned object frees its episode too
        try:
            self.close()
            self.transport.close()
        except Exception:
            pass


def __getattr__(name: str) -> Any:
    """``envworker.nemo_gym.<name>``: the environment class of the environment ``name`` (``_`` for ``-``)."""
    if name.startswith("_"):
        raise AttributeError(name)
    cls = type(name, (EnvworkerEnvironment,), {"ENV": name.replace("_", "-"), "__module__": __name__})
    globals()[name] = cls
    return cls
