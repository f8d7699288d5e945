"""envworker environments as a verifiers v1 taskset and env: what ``vf-eval envworker`` (verifiers
0.4; the script is ``eval`` in 0.3.x) and prime-rl's orchestrator load for the taskset id
``envworker`` (``[[orchestrator.train.source]] env.taskset.id = "envworker"``). Tested with
verifiers 0.3.1 and 0.4.0.

verifiers v1 imports the module named by the id and takes the ``Taskset`` and ``Env`` subclasses
listed in its ``__all__`` (``verifiers/v1/utils/loaders.py``): :mod:`envworker` lists
:class:`EnvworkerTaskset` and :class:`EnvworkerEnv` there when verifiers is installed. Config:
``base_url``, ``env``, ``split``, ``args`` (the environment's arguments), ``token``,
``num_examples`` and ``seed`` (a generated environment's seeds).

One task is one example (its prompt and reference, from ``POST /examples``); one rollout is one
episode, reset by the reference. :class:`EnvworkerEnv` plays the environment's side: each
assistant reply is a step, the environment's reply is the next user turn, and ``done`` ends the
rollout. A tool environment's tools reach the agent as an MCP server, ``B/mcp?session_id=EPISODE``:
every call is a step of the episode, run and graded there. The reward is the episode's
(``envworker_reward``, weight 1), each reward function a metric; a rollout v1 ends early is scored
by ``POST /score`` on the episode's conversation. The episode is always closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, Dict, List, Optional

import verifiers.v1 as vf
from verifiers.v1.mcp.launch import SharedToolServer

from ._content import content_text
from ._rows import example_rows
from .client import EnvClient, score
from .errors import EnvworkerError
from .types import StepResult

#: The name the episode's reward is recorded under.
REWARD_NAME = "envworker_reward"
#: The MCP server name of a tool environment's tools.
TOOL_SERVER = "envworker"


class EnvworkerData(vf.TaskData):
    base_url: str
    env: str
    example: str
    token: Optional[str] = None


class EnvworkerTasksetConfig(vf.TasksetConfig):
    base_url: str = ""
    """The envworker server, e.g. http://127.0.0.1:8000."""
    env: str = ""
    """The environment's name (GET /envs lists them)."""
    split: Optional[str] = None
    args: Optional[Dict[str, Any]] = None
    """The environment's own arguments."""
    token: Optional[str] = None
    num_examples: Optional[int] = None
    """A dataset's first rows (default: all); a generated environment's seeds (default 100)."""
    seed: int = 0
    """A generated environment's first seed."""



class EnvworkerTask(vf.Task[EnvworkerData]):
    pass


class EnvworkerTaskset(vf.Taskset[EnvworkerTask, EnvworkerTasksetConfig]):
    def load(self) -> Iterator[EnvworkerTask]:
        c = self.config
        if not c.base_url or not c.env:
            # Checked here, not in a config validator: v1 validates the bare `{id}` first.
            raise ValueError("the envworker taskset needs base_url and env (--env.taskset.base-url, --env.taskset.env)")
        rows, _ = example_rows(c.base_url, c.env, split=c.split, args=c.args, num_examples=c.num_examples, seed=c.seed, token=c.token, timeout=None)
        for idx, row in enumerate(rows):
            prompt = row["prompt"]
            system = "\n\n".join(m["content"] for m in prompt if m.get("role") == "system") or None
            yield EnvworkerTask(
                EnvworkerData(
                    idx=idx,
                    name=f"{c.env}#{idx}",
                    prompt=[m for m in prompt if m.get("role") != "system"],
                    system_prompt=system,
                    base_url=c.base_url,
                    env=c.env,
                    example=row["info"]["example"],
                    token=c.token,
                ),
                c.task,
            )


class EnvworkerEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig()
    """The policy playing the episodes (`env.agent.*`, as prime-rl's single-agent sources)."""


def _text(message: Any) -> str:
    return content_text(getattr(message, "content", None)) or ""


def _final_reply(messages: List[Any]) -> Optional[str]:
    """The segment's last assistant message when it calls no tool: the model's turn to send."""
    for m in reversed(messages):
        if getattr(m, "role", None) == "assistant":
            return None if getattr(m, "tool_calls", None) else _text(m)
    return None


class EnvworkerEnv(vf.Env[EnvworkerEnvConfig]):
    async def run(self, task: EnvworkerTask, agents: Any) -> None:
        data = task.data
        client = EnvClient(data.base_url, data.env, token=data.token)
        result: StepResult = await asyncio.to_thread(client.reset, example=data.example)
        episode = result.episode_id
        tools: Dict[str, SharedToolServer] = {}
        if result.observation.tools:
            tools[TOOL_SERVER] = SharedToolServer(url=f"{client.url}/mcp?session_id={episode}", local=True, external=True)
        try:
            async with agents.agent.interaction(task, tools=tools) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    state = await asyncio.to_thread(client.state)
                    if state.done:  # a tool call ended it (the server's turn limit)
                        break
                    reply = _final_reply(segment.messages)
                    if reply is None:
                        interaction.trace.stop("no_reply")
                        break
                    result = await asyncio.to_thread(client.step, {"content": reply})
                    if result.done:
                        break
                    segment = await interaction.turn([{"role": m["role"], "content": m.get("content") or ""} for m in result.observation.messages])
                trace = interaction.trace
                final = await asyncio.to_thread(self._outcome, client, data.example)
                trace.record_reward(REWARD_NAME, final["reward"], 1.0)
                trace.record_metrics(final["metrics"])
        finally:
            try:
                await asyncio.to_thread(client.close)
            except EnvworkerError:
                pass

    @staticmethod
    def _outcome(client: EnvClient, example: str) -> Dict[str, Any]:
        """The episode's reward and metrics; for one that has not ended, ``/score`` on its conversation."""
        state = client.state()
        if state.done:
            return {"reward": float(state.reward or 0.0), "metrics": dict(state.metrics or {})}
        messages = state.messages
        start = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
        completion = messages[start:] or [{"role": "assistant", "content": ""}]
        scored = score(client.base_url, client.env, [{"example": example, "completion": completion}])[0]
        return {"reward": float(scored.reward), "metrics": dict(scored.metrics)}
