"""envworker environments in SkyRL (NovaSky-AI/SkyRL): a ``skyrl_gym`` text environment over HTTP.

SkyRL's generator makes one environment per rollout with ``skyrl_gym.make(env_class,
env_config=..., extras=...)`` (``extras``: the dataset row's columns besides ``prompt`` and
``env_class``), calls ``init(prompt)``, then ``step(model_output)`` until ``done``. This module
registers the class ``envworker`` with skyrl_gym (on import) and makes the dataset rows:

    from envworker import skyrl as eskyrl

    rows = eskyrl.dataset("http://127.0.0.1:8000", "wordle", count=512)   # prompt, env_class, env, example
    # skyrl-train: data.train_data = a parquet of those rows; environment.env_class = "envworker";
    # environment.skyrl_gym.envworker = {base_url: http://127.0.0.1:8000}

One rollout is one episode, reset by the row's example reference; each model output is the
episode's step (its text as the model's turn); the environment's reply is the next observation;
``reward`` is the episode's (0.0 before it ends); ``metadata`` carries the episode's metrics. The
episode is closed when the rollout is done (or ``close()``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from skyrl_gym.envs.registration import register, registry
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from ._rows import example_rows
from .client import DEFAULT_TIMEOUT, EnvClient
from .errors import EnvworkerError
from .types import StepResult

#: The ``env_class`` dataset rows name (``environment.env_class`` in skyrl-train's config).
ENV_CLASS = "envworker"


def _get(config: Any, key: str, default: Any = None) -> Any:
    """A key of a dict, an OmegaConf DictConfig or an attribute bag."""
    if config is None:
        return default
    if isinstance(config, Mapping):
        return config.get(key, default)
    getter = getattr(config, "get", None)
    if callable(getter):
        return getter(key, default)
    return getattr(config, key, default)


class EnvworkerTextEnv(BaseTextEnv):
    """A SkyRL text environment whose episodes are an envworker server's.

    ``env_config`` (skyrl-train's ``environment.skyrl_gym.envworker``): ``base_url``, and
    optionally ``env`` (the environment, when rows do not name it), ``token``, ``timeout``.
    ``extras`` (a dataset row's columns): ``example`` (a reference from :func:`dataset` or
    ``POST /examples``) and ``env``; without ``example``, ``seed`` / ``index`` / ``split`` / ``args``.
    """

    def __init__(self, env_config: Any = None, extras: Optional[Dict[str, Any]] = None) -> None:
        super().__init__()
        extras = dict(extras or {})
        base_url = _get(env_config, "base_url") or extras.get("base_url")
        env = extras.get("env") or _get(env_config, "env")
        if not base_url or not env:
            raise ValueError("the envworker SkyRL environment needs base_url (env_config) and env (the row's `env` column, or env_config)")
        self.client = EnvClient(str(base_url), str(env), token=_get(env_config, "token"), timeout=_get(env_config, "timeout", DEFAULT_TIMEOUT))
        self.extras = extras
        self.last: Optional[StepResult] = None
        self.max_turns = 10**9  # the server ends the episode at its own turn limit

    def init(self, prompt: List[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
        """Reset the row's episode: its prompt (the server's, system message included) and info."""
        x = self.extras
        if x.get("example"):
            result = self.client.reset(example=str(x["example"]))
        else:
            result = self.client.reset(seed=x.get("seed"), index=x.get("index"), split=x.get("split"), args=x.get("args"))
        self.last = result
        messages = [dict(m) for m in result.observation.messages] or list(prompt)
        return messages, {"episode_id": result.episode_id, "example": (result.observation.info or {}).get("example")}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """The model's output as its turn; the environment's reply as the next observation."""
        self.turns += 1
        result = self.client.step({"content": action})
        self.last = result
        observations = [{"role": "user" if m.get("role") == "tool" else str(m.get("role", "user")), "content": m.get("content") or ""} for m in result.observation.messages]
        metadata: Dict[str, Any] = {"episode_id": result.episode_id, "turn": result.observation.turn, "truncated": result.observation.truncated}
        if result.observation.metrics:
            metadata["metrics"] = dict(result.observation.metrics)
        if result.done:
            self.close()
        return BaseTextEnvStepOutput(observations=observations, reward=float(result.reward or 0.0), done=result.done, metadata=metadata, postprocessed_action=None)

    def get_metrics(self) -> Dict[str, Any]:
        """The episode's reward functions' values (once it is done), as SkyRL aggregates them."""
        return dict((self.last.observation.metrics or {}) if self.last is not None else {})

    def close(self) -> None:
        try:
            self.client.close()
        except EnvworkerError:
            pass


def dataset(base_url: str, env: str, *, split: Optional[str] = None, count: Optional[int] = None, seed: int = 0, args: Optional[Mapping[str, Any]] = None, token: Optional[str] = None) -> List[Dict[str, Any]]:
    """SkyRL dataset rows of an environment's examples: ``prompt`` (the messages), ``env_class``
    (``envworker``), ``env`` and ``example`` (the reference the rollout resets by); a dataset's
    first ``count`` rows (default all), a generated environment's ``count`` seeds from ``seed``
    (default 100). No answers: grading happens on the server."""
    rows, _ = example_rows(base_url, env, split=split, args=args, num_examples=count, seed=seed, token=token, timeout=DEFAULT_TIMEOUT)
    return [{"prompt": r["prompt"], "env_class": ENV_CLASS, "env": env, "example": r["info"]["example"]} for r in rows]


if ENV_CLASS not in registry:
    register(id=ENV_CLASS, entry_point="envworker.skyrl:EnvworkerTextEnv")
