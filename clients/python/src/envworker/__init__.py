"""Python client for envworker: RL environments for language models over HTTP.

No third-party dependencies. See docs/python-client.md in the envworker repository.
Environments are written in Python with :class:`Environment` (``envworker.authoring``) and
served by ``npx envworker serve env.py``. ``envworker.trl`` (import it explicitly) adapts environments to TRL's GRPOTrainer.

This module is also what verifiers loads for the environment id ``envworker``: verifiers v1
(``vf-eval envworker --env.taskset.base-url ...`` in verifiers 0.4, prime-rl) finds the taskset and
env classes (``EnvworkerTaskset``, ``EnvworkerEnv``) in ``__all__`` when verifiers is installed,
and verifiers 0.3.x's legacy ``vf.load_environment("envworker", base_url=..., env=...)`` calls
:func:`load_environment` (0.4 removed that API: it raises, naming the v1 command). Both import
verifiers only when used. ``envworker.skyrl`` and ``envworker.art`` serve SkyRL and ART.
"""

import importlib.util as _importlib_util
from typing import Any as _Any

from .client import EXAMPLES_LIMIT, GROUP_LIMIT, SCORE_BATCH_LIMIT, EnvClient, examples, list_envs, metadata, score, score_groups, to_action
from .errors import EnvworkerConnectionError, EnvworkerError
from .group import DEFAULT_EPS, group_advantages, run_group
# The authoring API (envworker.authoring), importable from here. Left out of __all__: verifiers
# v1 looks through __all__ for a taskset's classes, and these are not.
from .authoring import ArgsError, Environment, Example, GenerateContext, Reply, Reward, RunResult, Sandbox, SetupError, Tool, Turn, tool
from .types import EnvInfo, EpisodeResult, ExamplesPage, GroupResult, ListedExample, Observation, ScoreResult, State, StepResult

__version__ = "0.1.0"


def load_environment(base_url: str, env: str, split: "str | None" = None, args: "dict | None" = None, token: "str | None" = None, **kwargs: _Any) -> _Any:
    """verifiers' entry for the id ``envworker``: the envworker environment ``env`` at ``base_url``
    as a verifiers ``MultiTurnEnv`` (see :mod:`envworker.verifiers_legacy`; needs verifiers 0.3.x,
    whose legacy API 0.4.0 removed: there, the v1 taskset ``envworker`` is the entry, and this
    raises ``VerifiersVersionError`` naming its command)."""
    from ._verifiers import require_legacy

    require_legacy()
    from .verifiers_legacy import load_environment as _load

    return _load(base_url, env, split=split, args=args, token=token, **kwargs)


#: verifiers v1's plugin classes, exported lazily (importing them imports verifiers).
_V1_EXPORTS = ("EnvworkerTaskset", "EnvworkerEnv", "EnvworkerTask", "EnvworkerTasksetConfig", "EnvworkerEnvConfig", "EnvworkerData")


def __getattr__(name: str) -> _Any:
    if name in _V1_EXPORTS:
        from . import verifiers_v1

        return getattr(verifiers_v1, name)
    raise AttributeError(f"module 'envworker' has no attribute {name!r}")


__all__ = [
    "EnvClient",
    "EnvworkerError",
    "EnvworkerConnectionError",
    "StepResult",
    "Observation",
    "State",
    "ScoreResult",
    "EnvInfo",
    "EpisodeResult",
    "GroupResult",
    "score",
    "score_groups",
    "GROUP_LIMIT",
    "examples",
    "ListedExample",
    "ExamplesPage",
    "EXAMPLES_LIMIT",
    "list_envs",
    "metadata",
    "run_group",
    "group_advantages",
    "to_action",
    "SCORE_BATCH_LIMIT",
    "DEFAULT_EPS",
    "__version__",
    "load_environment",
]
# verifiers v1 finds a taskset's classes through `__all__`: listed when verifiers is there to load them.
if _importlib_util.find_spec("verifiers") is not None:
    __all__ += list(_V1_EXPORTS)
