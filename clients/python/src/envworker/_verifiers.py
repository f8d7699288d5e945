"""Which verifiers API is installed, and the error that names the right entry when it is the wrong one.

verifiers 0.3.x ships two APIs: the legacy one (``vf.load_environment``, ``vf-eval ENV -a '{...}'``,
``MultiTurnEnv``) and v1 (``verifiers.v1``: tasksets, the ``eval`` script, prime-rl). verifiers 0.4.0
removed the legacy one and named the v1 script ``vf-eval``. envworker serves both: the v1 taskset
(:mod:`envworker.verifiers_v1`) on 0.3.1 and later, ``load_environment`` on 0.3.x only.
"""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError, version

#: The v1 command, as a shell runs it on verifiers >= 0.4 (0.3.x names the script ``eval``, a
#: shell builtin: ``env eval ...`` runs the script).
V1_COMMAND = (
    "vf-eval envworker --env.taskset.base-url http://127.0.0.1:8000 --env.taskset.env NAME "
    "--env.agent.harness.id null --env.agent.runtime.type subprocess -m MODEL --client.base-url URL"
)


class VerifiersVersionError(ImportError):
    """The installed verifiers does not have the API that was asked for."""


def verifiers_version() -> "str | None":
    try:
        return version("verifiers")
    except PackageNotFoundError:
        return None


def has_legacy() -> bool:
    """verifiers' legacy API (``vf.load_environment``, ``MultiTurnEnv``): 0.3.x."""
    return importlib.util.find_spec("verifiers") is not None and importlib.util.find_spec("verifiers.legacy") is not None


def has_v1() -> bool:
    """verifiers v1 (tasksets; prime-rl's orchestrator): 0.3.x and 0.4+."""
    return importlib.util.find_spec("verifiers") is not None and importlib.util.find_spec("verifiers.v1") is not None


def require_legacy() -> None:
    """Raise :class:`VerifiersVersionError`, naming what to do instead, unless the legacy API is there."""
    if has_legacy():
        return
    installed = verifiers_version()
    if installed is None:
        raise VerifiersVersionError(
            "envworker.load_environment needs verifiers 0.3.x (pip install 'envworker[verifiers-legacy]'); "
            f"on verifiers >= 0.4 use the v1 taskset instead: {V1_COMMAND}"
        )
    raise VerifiersVersionError(
        f"verifiers {installed} has no legacy API (vf.load_environment, MultiTurnEnv, vf-eval -a): 0.4.0 removed it. "
        f"envworker's entry on verifiers >= 0.4 is the v1 taskset `envworker`: {V1_COMMAND} "
        "(prime-rl: env.taskset.id = \"envworker\"). For load_environment keep verifiers>=0.3.1,<0.4."
    )
