"""envworker environments in ART (OpenPipe's Agent Reinforcement Trainer): the rollout function an
ART user would otherwise write.

ART trains on ``art.Trajectory`` objects that the user's rollout function returns, generated with
the model's own OpenAI-compatible client (``model.openai_client()``)::

    import art
    from envworker import art as eart

    groups = await art.gather_trajectory_groups(
        eart.group(model, "http://127.0.0.1:8000", "wordle", example=ex.example, size=8)
        for ex in envworker.examples("http://127.0.0.1:8000", "wordle", count=16).examples
    )
    await model.train(groups)

One rollout is one episode: reset by the example reference (or seed / index / split / args); each
of the model's turns (its content and tool calls) is a step; the environment's reply is appended;
the trajectory's ``messages_and_choices`` are the conversation with the model's turns as its
``Choice`` objects (what ART trains on), ``tools`` the episode's tools, ``reward`` the episode's
(a rollout cut short by ``max_turns`` is scored by ``POST /score`` on its conversation),
``metrics`` each reward function's value, ``metadata`` the example and episode. The episode is
always closed.
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Mapping, Optional

import art

from .client import EnvClient, score
from .errors import EnvworkerError

__all__ = ["rollout", "group"]


def _action(message: Any) -> Dict[str, Any]:
    """The model's message (an OpenAI ``ChatCompletionMessage``) as the step's action."""
    action: Dict[str, Any] = {"content": message.content}
    if message.tool_calls:
        action["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments or ""}} for c in message.tool_calls]
    return action


async def rollout(
    model: Any,
    base_url: str,
    env: str,
    *,
    example: Optional[str] = None,
    seed: Optional[int] = None,
    index: Optional[int] = None,
    split: Optional[str] = None,
    args: Optional[Mapping[str, Any]] = None,
    token: Optional[str] = None,
    max_turns: Optional[int] = None,
    sampling: Optional[Mapping[str, Any]] = None,
) -> "art.Trajectory":
    """Play one episode of ``env`` with ``model`` (an ``art.Model``: its ``openai_client()`` and
    inference name) and return it as an ``art.Trajectory`` with the server's reward.
    ``sampling``: extra ``chat.completions.create`` arguments (temperature, max_tokens, ...)."""
    client = EnvClient(base_url, env, token=token)
    openai = model.openai_client()
    name = model.get_inference_name()
    try:
        if example is not None:
            result = await asyncio.to_thread(client.reset, example=example)
        else:
            result = await asyncio.to_thread(client.reset, seed=seed, index=index, split=split, args=dict(args) if args is not None else None)
        messages: List[Dict[str, Any]] = [dict(m) for m in result.observation.messages]
        tools = result.observation.tools or None
        ref = (result.observation.info or {}).get("example") or example
        trajectory = art.Trajectory(messages_and_choices=list(messages), tools=tools, reward=0.0, metadata={"env": env, "example": ref or "", "episode_id": result.episode_id})
        turns = 0
        while not result.done and (max_turns is None or turns < max_turns):
            completion = await openai.chat.completions.create(model=name, messages=messages, **({"tools": tools} if tools else {}), **dict(sampling or {}))
            choice = completion.choices[0]
            trajectory.messages_and_choices.append(choice)
            action = _action(choice.message)
            result = await asyncio.to_thread(client.step, action)
            turns += 1
            messages.append({"role": "assistant", **action})
            replies = [dict(m) for m in result.observation.messages]
            messages.extend(replies)
            trajectory.messages_and_choices.extend(replies)
        if result.done:
            reward, metrics = float(result.reward or 0.0), dict(result.observation.metrics or {})
        else:  # cut short by max_turns: the rubric on the conversation so far
            start = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
            scored = (await asyncio.to_thread(score, base_url, env, [{"example": ref, "completion": messages[start:]}], token))[0]
            reward, metrics = float(scored.reward), dict(scored.metrics)
        trajectory.reward = reward
        trajectory.metrics.update({k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))})
        trajectory.metrics["turns"] = turns
        return trajectory.finish()
    finally:
        try:
            await asyncio.to_thread(client.close)
        except EnvworkerError:
            pass


async def group(model: Any, base_url: str, env: str, *, example: str, size: int, **kwargs: Any) -> "art.TrajectoryGroup":
    """``size`` rollouts of one example (a GRPO group), concurrently, as an ``art.TrajectoryGroup``."""
    trajectories = await asyncio.gather(*(rollout(model, base_url, env, example=example, **kwargs) for _ in range(size)))
    return art.TrajectoryGroup(trajectories)
