"""Testing an environment's functions without a server: the Python counterpart of
``envworker/testing``. A tool or a reward that runs code gets :class:`LocalSandbox`, which runs it
in envworker's own sandboxes (the same engines, limits and confinement a server uses) through
``envworker run-code``, one process a run; :func:`call_tool` and :func:`reward` call the
environment's functions as its worker does::

    from envworker.testing import LocalSandbox, call_tool, reward

    sandbox = LocalSandbox()                       # `npx envworker run-code` (ENVWORKER_RUN_CODE to change)
    assert call_tool(environment, "python", {"code": "print(6 * 7)"}, sandbox) == "42\\n"
    assert reward(environment, "passes", {"completion": completion, "answer": "42", "sandbox": sandbox}) == 1.0

A failed run comes back as a :class:`RunResult` with ``ok`` False, as on a server; a sandbox that
could not run at all (no envworker there, a broken install) raises, so a test never reads a silent 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import tempfile
from typing import Any, Dict, Mapping, Optional, Sequence

from .authoring import Environment, Sandbox, completion_text

#: The command that runs one sandboxed program (its code on stdin, one JSON line out).
DEFAULT_COMMAND = ("npx", "--no-install", "envworker", "run-code")


class LocalSandbox(Sandbox):
    """A sandbox for tests: each run is ``envworker run-code`` (``command``, else
    ``$ENVWORKER_RUN_CODE`` split as a shell would, else ``npx --no-install envworker run-code``)
    in ``cwd``, with the run's language, limits and stdin as its flags."""

    def __init__(self, command: Optional[Sequence[str]] = None, cwd: Optional[str] = None) -> None:
        self.command = list(command) if command is not None else (shlex.split(os.environ["ENVWORKER_RUN_CODE"]) if os.environ.get("ENVWORKER_RUN_CODE") else list(DEFAULT_COMMAND))
        self.cwd = cwd
        super().__init__(self._run)

    async def _run(self, req: Dict[str, Any]) -> Dict[str, Any]:
        options = req.get("options") or {}
        argv = [*self.command, "--lang", req["lang"]]
        if "timeoutMs" in options:
            argv += ["--timeout-ms", str(options["timeoutMs"])]
        if "memoryMb" in options:
            argv += ["--memory-mb", str(options["memoryMb"])]
        with tempfile.TemporaryDirectory() as tmp:
            if "stdin" in options:
                # In a file: `--stdin TEXT` would read a text that starts with @ as a file's name.
                with open(os.path.join(tmp, "stdin"), "w", encoding="utf-8") as f:
                    f.write(str(options["stdin"]))
                argv += ["--stdin", "@" + os.path.join(tmp, "stdin")]
            proc = await asyncio.create_subprocess_exec(
                *argv, "-", cwd=self.cwd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
            )
            out, err = await proc.communicate(req["code"].encode())
        lines = out.decode("utf-8", "replace").strip().splitlines()
        try:
            result = json.loads(lines[-1]) if lines else None
        except ValueError:
            result = None
        if proc.returncode not in (0, 1) or not isinstance(result, dict):
            why = err.decode("utf-8", "replace").strip().splitlines()[-3:]
            raise RuntimeError(f"the sandbox could not run ({shlex.join(argv)} exited {proc.returncode}): {' / '.join(why) or 'no output'}")
        return result


def call_tool(env: Environment, name: str, arguments: Mapping[str, Any], sandbox: Optional[Sandbox] = None) -> Any:
    """What tool ``name`` answers for ``arguments`` (with ``sandbox``, a :class:`LocalSandbox` by default)."""
    return asyncio.run(env.call_tool(name, arguments, sandbox if sandbox is not None else LocalSandbox()))


def reward(env: Environment, name: str, inputs: Mapping[str, Any]) -> float:
    """What reward function ``name`` gives for ``inputs``, filled in as the worker fills them:
    ``completion`` (the messages after the prompt; ``completion_text`` is its last assistant
    message's), ``answer``, ``prompt``, ``info``, ``state``, ``args`` (the defaults when not given)
    and ``sandbox`` (a :class:`LocalSandbox` when not given)."""
    completion = list(inputs.get("completion") or [])
    full = {
        "prompt": [],
        "completion": completion,
        "completion_text": completion_text(completion),
        "answer": "",
        "info": {},
        "state": {},
        "args": env.parse_args({}),
        **inputs,
    }
    if full.get("sandbox") is None:
        full["sandbox"] = LocalSandbox()
    return asyncio.run(env.reward(name, full))
