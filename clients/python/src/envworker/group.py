"""GRPO groups: G episodes of the same example, played concurrently, with group-relative advantages."""

from __future__ import annotations

import math
import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from ._transport import DEFAULT_TIMEOUT, Transport
from .client import EnvClient, _env_path, _examples, _score_groups, to_action
from .types import EpisodeResult, GroupResult, ScoreResult

__all__ = ["run_group", "group_advantages", "DEFAULT_EPS"]

#: Added to the standard deviation before dividing, as TRL's GRPOTrainer does.
DEFAULT_EPS = 1e-4

Policy = Callable[[List[Dict[str, Any]]], Union[str, Mapping[str, Any]]]


def _mean_std(rewards: Sequence[float]) -> "tuple[float, float]":
    n = len(rewards)
    mean = math.fsum(rewards) / n
    # Sample standard deviation (Bessel's correction), as torch.std and TRL use; 0 for one reward.
    std = math.sqrt(math.fsum((r - mean) ** 2 for r in rewards) / (n - 1)) if n > 1 else 0.0
    return mean, std


def group_advantages(rewards: Sequence[float], normalize: str = "std", eps: float = DEFAULT_EPS) -> List[float]:
    """Group-relative advantages.

    * ``normalize="std"`` (GRPO, the default): ``(r - mean) / (std + eps)`` with the sample
      standard deviation of the group, as TRL's ``GRPOTrainer`` computes it
      (``scale_rewards=True``).
    * ``normalize="none"``: ``r - mean`` (Dr. GRPO: no std scaling).

    A group whose rewards are all equal gets all-zero advantages either way.
    """
    if normalize not in ("std", "none"):
        raise ValueError(f'normalize must be "std" or "none", got {normalize!r}')
    if not rewards:
        return []
    mean, std = _mean_std(rewards)
    if normalize == "none":
        return [r - mean for r in rewards]
    return [(r - mean) / (std + eps) for r in rewards]


def _play(
    base_url: str,
    env: str,
    policy: Policy,
    reset_kw: Dict[str, Any],
    token: Optional[str],
    timeout: Optional[float],
    reference: bool = False,
) -> "tuple[EpisodeResult, Optional[Dict[str, Any]]]":
    """One episode; with ``reference``, also what scoring its completion again takes (prompt,
    completion, and the answer and info the server reveals once the episode is done)."""
    with EnvClient(base_url, env, token=token, timeout=timeout) as client:
        result = client.reset(**reset_kw)
        messages: List[Dict[str, Any]] = list(result.observation.messages)
        prompt_length = len(messages)
        turns = 0
        while not result.done:
            action = to_action(policy(list(messages)))
            messages.append({"role": "assistant", **{k: v for k, v in action.items() if k != "metadata"}})
            result = client.step(action)
            messages.extend(result.observation.messages)
            turns += 1
        item: Optional[Dict[str, Any]] = None
        if reference:
            raw = client.state().raw
            item = {"prompt": messages[:prompt_length], "completion": messages[prompt_length:], "answer": raw.get("answer", ""), "info": raw.get("info") or {}}
            if reset_kw.get("args") is not None:
                item["args"] = dict(reset_kw["args"])
        episode = EpisodeResult(
            episode_id=result.episode_id,
            reward=float(result.reward or 0.0),
            advantage=0.0,
            messages=messages,
            turns=turns,
            truncated=result.observation.truncated,
            metrics=dict(result.observation.metrics or {}),
            info=result.observation.info,
        )
        return episode, item


def _has_group_rewards(base_url: str, env: str, args: Optional[Mapping[str, Any]], token: Optional[str], timeout: Optional[float]) -> bool:
    transport = Transport(base_url, token=token, timeout=timeout)
    try:
        page = _examples(transport, _env_path(env), count=0, args=dict(args) if args is not None else None)
        return any(r.get("group") for r in page.rubric)
    finally:
        transport.close()


def _score_together(base_url: str, env: str, items: List[Dict[str, Any]], token: Optional[str], timeout: Optional[float]) -> List[ScoreResult]:
    transport = Transport(base_url, token=token, timeout=timeout)
    try:
        return _score_groups(transport, _env_path(env), [items])[0]
    finally:
        transport.close()


def run_group(
    base_url: str,
    env: str,
    policy: Policy,
    group_size: int,
    seed: Optional[int] = None,
    index: Optional[int] = None,
    *,
    split: Optional[str] = None,
    args: Optional[Mapping[str, Any]] = None,
    max_concurrency: Optional[int] = None,
    normalize: str = "std",
    eps: float = DEFAULT_EPS,
    token: Optional[str] = None,
    timeout: Optional[float] = DEFAULT_TIMEOUT,
    score_group: Optional[bool] = None,
) -> GroupResult:
    """Play ``group_size`` episodes of one example and compute group-relative advantages.

    Every episode is reset with the same ``seed`` (chosen at random here when not given, and
    reported in ``GroupResult.seed``), ``index``, ``split`` and ``args``, so all of them get
    the same prompt. ``policy(messages)`` is called with the conversation so far (a fresh list
    of OpenAI-style message dicts, prompt included) and returns the model's turn: a ``str`` or
    an assistant-message dict (see :func:`envworker.to_action`). Multi-turn environments call
    it once per turn until the episode is done.

    Episodes run in threads, at most ``max_concurrency`` at once (default: all), each with its
    own :class:`EnvClient` (connection), and are closed on the server when they end. The policy
    is therefore called from several threads at once. If any episode fails, the first error is
    raised once all have finished.

    Group rewards: when the environment has reward functions that score a group together
    (``score_group=None`` asks the server; ``True``/``False`` force it), the finished group is
    scored once more as a whole (``POST /score`` with ``groups``): each episode's ``reward`` and
    ``metrics`` are then the group's, which its group functions computed from all the
    completions (the other functions score each completion statelessly, as ``/score`` does; a
    judge's answers come from the server's cache). ``info`` gets ``judge`` and ``reward_errors``
    from that scoring.

    Advantages: see :func:`group_advantages` (``normalize="std"`` or ``"none"``).
    """
    if not isinstance(group_size, int) or group_size < 1:
        raise ValueError("group_size must be a positive integer")
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError("max_concurrency must be a positive integer")
    if normalize not in ("std", "none"):
        raise ValueError(f'normalize must be "std" or "none", got {normalize!r}')
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    # EnvClient.reset leaves out what is None: every episode of the group gets the same reset.
    reset_kw: Dict[str, Any] = {"seed": seed, "index": index, "split": split, "args": args}

    if score_group is None:
        score_group = _has_group_rewards(base_url, env, args, token, timeout)

    workers = min(group_size, max_concurrency or group_size)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="envworker-group") as pool:
        futures = [pool.submit(_play, base_url, env, policy, reset_kw, token, timeout, score_group) for _ in range(group_size)]
    errors = [f.exception() for f in futures if f.exception() is not None]
    if errors:
        raise errors[0]  # type: ignore[misc]
    played = [f.result() for f in futures]
    episodes = [e for e, _ in played]
    if score_group:
        scores = _score_together(base_url, env, [item for _, item in played if item is not None], token, timeout)
        for e, s in zip(episodes, scores):
            e.reward = s.reward
            e.metrics = dict(s.metrics)
            info = {k: v for k, v in (e.info or {}).items() if k not in ("judge", "reward_errors")}
            info.update(s.info or {})
            if s.errors:
                info["reward_errors"] = s.errors
            e.info = info or None

    rewards = [e.reward for e in episodes]
    advantages = group_advantages(rewards, normalize=normalize, eps=eps)
    for e, a in zip(episodes, advantages):
        e.advantage = a
    mean, std = _mean_std(rewards)
    return GroupResult(
        rewards=rewards,
        advantages=advantages,
        episodes=episodes,
        mean=mean,
        std=std,
        seed=seed,
        index=index,
    )
