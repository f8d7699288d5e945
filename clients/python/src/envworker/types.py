"""Result types: small dataclasses over the server's JSON.

Messages, tool schemas, metrics and info stay plain dicts and lists (OpenAI chat format), so
they can go straight into a chat template or back to the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

__all__ = ["Observation", "StepResult", "State", "ScoreResult", "EnvInfo", "EpisodeResult", "GroupResult", "ListedExample", "ExamplesPage"]

Message = Dict[str, Any]


@dataclass
class Observation:
    """What to append to the conversation.

    After ``reset``: ``messages`` is the whole prompt (system message included) and ``tools``
    the OpenAI tool schemas (``None`` when the environment has none). After ``step``:
    ``messages`` is the environment's reply (user or tool messages; empty when the episode
    ended without one). ``metrics`` (each reward function's value) is set when the episode is
    done; ``info`` carries ``seed``/``split``/``index``/``example_id`` after reset and
    ``reward_errors`` when a reward function failed.
    """

    messages: List[Message]
    turn: int = 0
    truncated: bool = False
    metrics: Optional[Dict[str, float]] = None
    info: Optional[Dict[str, Any]] = None
    tools: Optional[List[Dict[str, Any]]] = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Observation":
        return cls(
            messages=list(data.get("messages") or []),
            turn=int(data.get("turn", 0)),
            truncated=bool(data.get("truncated", False)),
            metrics=data.get("metrics"),
            info=data.get("info"),
            tools=data.get("tools"),
        )


@dataclass
class StepResult:
    """The answer to ``reset`` and ``step``: ``reward`` is ``None`` until ``done``."""

    observation: Observation
    reward: Optional[float]
    done: bool
    episode_id: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "StepResult":
        reward = data.get("reward")
        return cls(
            observation=Observation.from_json(data.get("observation") or {}),
            reward=None if reward is None else float(reward),
            done=bool(data.get("done", False)),
            episode_id=str(data.get("episode_id", "")),
        )


@dataclass
class State:
    """``GET /state``: the episode as the server holds it. ``messages`` is the whole
    conversation so far; ``raw`` is the JSON as received (it may carry more fields)."""

    episode_id: str
    step_count: int
    done: bool
    truncated: bool = False
    reward: Optional[float] = None
    metrics: Optional[Dict[str, float]] = None
    messages: List[Message] = field(default_factory=list)
    env: Optional[str] = None
    seed: Optional[int] = None
    split: Optional[str] = None
    index: Optional[int] = None
    example_id: Any = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "State":
        reward = data.get("reward")
        return cls(
            episode_id=str(data.get("episode_id")),
            step_count=int(data.get("step_count", 0)),
            done=bool(data.get("done", False)),
            truncated=bool(data.get("truncated", False)),
            reward=None if reward is None else float(reward),
            metrics=data.get("metrics"),
            messages=list(data.get("messages") or []),
            env=data.get("env"),
            seed=data.get("seed"),
            split=data.get("split"),
            index=data.get("index"),
            example_id=data.get("example_id"),
            raw=dict(data),
        )


@dataclass
class ScoreResult:
    """One item of ``POST /score``: the rubric's weighted ``reward``, each reward function's
    value in ``metrics`` (with ``judge_*`` costs when a judge was asked), and ``errors``
    (function name → message, ``CODE: message`` for a judge's failure) when some failed."""

    reward: float
    metrics: Dict[str, float]
    errors: Optional[Dict[str, str]] = None
    #: What reward functions left: ``judge`` (function name → the judge model's answer) for judged rewards.
    info: Optional[Dict[str, Any]] = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ScoreResult":
        return cls(reward=float(data["reward"]), metrics=dict(data.get("metrics") or {}), errors=data.get("errors"), info=data.get("info"))


@dataclass
class EnvInfo:
    """One entry of ``GET /envs``. ``url`` is the path of the environment's base URL."""

    name: str
    description: str
    version: str
    max_turns: Optional[int] = None
    splits: List[str] = field(default_factory=list)
    url: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "EnvInfo":
        return cls(
            name=str(data["name"]),
            description=str(data.get("description", "")),
            version=str(data.get("version", "")),
            max_turns=data.get("max_turns"),
            splits=list(data.get("splits") or []),
            url=str(data.get("url", "")),
        )


@dataclass
class EpisodeResult:
    """One episode of a group played by :func:`envworker.run_group`."""

    episode_id: str
    reward: float
    advantage: float
    #: The whole conversation: prompt, then the policy's turns and the environment's replies.
    messages: List[Message]
    #: Model turns taken.
    turns: int
    truncated: bool
    metrics: Dict[str, float] = field(default_factory=dict)
    #: The observation ``info`` of the last step (``reward_errors`` when a reward function failed).
    info: Optional[Dict[str, Any]] = None


@dataclass
class GroupResult:
    """A GRPO group: ``rewards[i]`` and ``advantages[i]`` belong to ``episodes[i]``."""

    rewards: List[float]
    advantages: List[float]
    episodes: List[EpisodeResult]
    mean: float
    std: float
    #: The seed every episode of the group was reset with.
    seed: int
    index: Optional[int] = None


@dataclass
class ListedExample:
    """One entry of ``POST /examples``: the prompt (system message included, as a reset gives
    it) and ``example``, the reference that ``/score`` items and ``reset(example=...)`` take.
    ``index`` is the dataset row (``None`` for a generated environment), ``seed`` the seed of a
    generated example (``None`` for a dataset)."""

    prompt: List[Message]
    example: str
    split: str
    index: Optional[int] = None
    seed: Optional[int] = None
    example_id: Any = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ListedExample":
        return cls(
            prompt=list(data["prompt"]),
            example=str(data["example"]),
            split=str(data["split"]),
            index=data.get("index"),
            seed=data.get("seed"),
            example_id=data.get("example_id"),
        )


@dataclass
class ExamplesPage:
    """The answer to ``POST /examples``: ``total`` is the dataset's size (``None`` for a
    generated environment); ``rubric`` the reward functions (``{"name", "weight"}``) whose values
    ``metrics`` will carry; ``tools`` the OpenAI tool schemas (``None`` without tools)."""

    examples: List[ListedExample]
    total: Optional[int]
    rubric: List[Dict[str, Any]] = field(default_factory=list)
    tools: Optional[List[Dict[str, Any]]] = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ExamplesPage":
        return cls(
            examples=[ListedExample.from_json(e) for e in data.get("examples") or []],
            total=data.get("total"),
            rubric=list(data.get("rubric") or []),
            tools=data.get("tools"),
        )
