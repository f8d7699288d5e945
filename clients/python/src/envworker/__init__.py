"""Python client for envworker: RL environments for language models over HTTP.

No third-party dependencies. See docs/python-client.md in the envworker repository.
``envworker.trl`` (import it explicitly) adapts environments to TRL's GRPOTrainer.
"""

from .client import EXAMPLES_LIMIT, GROUP_LIMIT, SCORE_BATCH_LIMIT, EnvClient, examples, list_envs, metadata, score, score_groups, to_action
from .errors import EnvworkerConnectionError, EnvworkerError
from .group import DEFAULT_EPS, group_advantages, run_group
from .types import EnvInfo, EpisodeResult, Example, ExamplesPage, GroupResult, Observation, ScoreResult, State, StepResult

__version__ = "0.1.0"

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
    "Example",
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
]
