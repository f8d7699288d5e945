"""The worker process that runs a Python environment's functions for an envworker server.

The server (src/node/python-envs/ in the envworker repository) starts it confined (an empty environment, a
read-only file system, no network unless the operator allows it, resource limits) as::

    python -I -B -c "...; import envworker.worker as w; w.main()" TARGET MAX_MESSAGE_BYTES

TARGET is a file (``env.py``), a folder (a package, or one holding ``env.py``) or an importable
module name. The module exposes ``environment`` or ``environments``.

Protocol: frames (_frames.py: a 256-byte JSON header with the body's length ``n``, then the body)
on the worker's original stdin/stdout. The environment's own ``print`` goes to stderr (fd 1 is
pointed there once the protocol has its own copy), so nothing it writes can be mistaken for a
message; stdin is /dev/null to it.

    worker -> server  hello {protocol, pid, envs: [spec, ...]}   once loaded
                      load-error {message}                       the module failed to load (then exit 1)
                      started id pid                             call `id`, running 50 ms, runs in child `pid` (its run clock)
                      done id {value} | failed id {type, message, traceback, too_large}
                      crashed id {reason, message}               the call's child died or broke the protocol
                      sandbox id sid {code, lang, options}       a call's sandbox.run, run by the server
    server -> worker  call id method {params}
                      sandbox-result id sid {result} | sandbox-error id sid {message}
                      kill id                                    the call's deadline passed, or its caller left

respond, rewards and tools run each in a child forked for the call (_call_fork.py): a call can
change nothing of another's. The server bounds every call with a deadline (a child past it is
killed; an inline call past it costs the process); when its stdin closes the process exits at once.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import traceback
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from . import _seccomp
from ._call_fork import CHILD_IN, ForkServer, child_frames
from ._frames import answer, encode, finite, frame, read_frame
from .authoring import Environment, Sandbox, SetupError, Turn, completion_text

PROTOCOL = 2


def load_target(target: str) -> List[Environment]:
    """The environments TARGET exposes (a file, a folder or a module name)."""
    if target.endswith(".py") or os.sep in target or os.path.exists(target):
        path = os.path.abspath(target)
        if os.path.isdir(path):
            if os.path.exists(os.path.join(path, "__init__.py")):
                sys.path.insert(0, os.path.dirname(path))
                module_name = os.path.basename(path)
            elif os.path.exists(os.path.join(path, "env.py")):
                sys.path.insert(0, path)
                module_name = "env"
            else:
                raise ImportError(f"{target}: a folder with neither __init__.py nor env.py")
        else:
            sys.path.insert(0, os.path.dirname(path))
            module_name = os.path.splitext(os.path.basename(path))[0]
    else:
        module_name = target
    module = importlib.import_module(module_name)
    found: Any
    if hasattr(module, "environments"):
        found = list(getattr(module, "environments"))
    elif hasattr(module, "environment"):
        found = [getattr(module, "environment")]
    else:
        raise ImportError(f"{target} exposes neither `environment` (an envworker.Environment) nor `environments` (a list of them)")
    if not found:
        raise ImportError(f"{target}: `environments` is empty")
    for i, env in enumerate(found):
        if not isinstance(env, Environment):
            raise TypeError(f"{target}: environments[{i}] is a {type(env).__name__}, not an envworker.Environment")
    names = [e.name for e in found]
    if len(set(names)) != len(names):
        raise ValueError(f"{target}: two environments have one name")
    return found


class Calls:
    """What a call does with its environment; the same code inline (in the fork server) and in a call's child."""

    def __init__(self, envs: List[Environment]) -> None:
        self.envs = {e.name: e for e in envs}

    async def run(self, method: str, p: Mapping[str, Any], sandbox: Sandbox) -> Any:
        env = self.envs.get(str(p.get("env")))
        if env is None:
            raise KeyError(f"no environment {p.get('env')!r} in this worker")
        args = env.parse_args(p.get("args") or {})
        if method == "dataset":
            return [e.to_json() for e in await env.examples(args, str(p["split"]))]
        if method == "generate":
            return (await env.example(int(p["seed"]), p.get("index"), args, str(p["split"]))).to_json()
        if method == "system_prompt":
            return await env.system_prompt_for(args)
        if method == "max_turns":
            return await env.max_turns_for(args)
        if method == "respond":
            state = dict(p.get("state") or {})
            turn = Turn(
                messages=list(p.get("messages") or []),
                last_text=str(p.get("last_text") or ""),
                turn=int(p.get("turn") or 0),
                answer=str(p.get("answer") or ""),
                info=dict(p.get("info") or {}),
                state=state,
                args=args,
                sandbox=sandbox,
            )
            r = await env.reply(turn)
            return {"messages": r.messages, "done": bool(r.done), "state": turn.state}
        if method == "reward":
            completion = list(p.get("completion") or [])
            inputs = {
                "prompt": list(p.get("prompt") or []),
                "completion": completion,
                "completion_text": completion_text(completion),
                "answer": str(p.get("answer") or ""),
                "info": dict(p.get("info") or {}),
                "state": dict(p.get("state") or {}),
                "args": args,
                "sandbox": sandbox,
            }
            return finite(await env.reward(str(p["name"]), inputs), f"reward {p['name']}")
        if method == "tool":
            return await env.call_tool(str(p["name"]), p.get("arguments") or {}, sandbox)
        raise ValueError(f"unknown method {method!r}")

    def inline(self, method: str, params: Any) -> Any:
        """A call run where it is asked (no sandbox: the forked methods have one)."""
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(self.run(method, params, Sandbox(None)))
        finally:
            loop.close()


class ChildCall:
    """One forked call: its sandbox runs go to the fork server as frames, their results come back on fd 0."""

    def __init__(self, max_bytes: int, send: Callable[[Dict[str, Any], bytes], None]) -> None:
        self.max_bytes = max_bytes
        self.send = send
        self.next_sid = 1
        self.pending: Dict[int, "asyncio.Future[Dict[str, Any]]"] = {}

    def sandbox(self) -> Sandbox:
        async def runner(req: Dict[str, Any]) -> Dict[str, Any]:
            sid = self.next_sid
            self.next_sid += 1
            fut: "asyncio.Future[Dict[str, Any]]" = asyncio.get_running_loop().create_future()
            self.pending[sid] = fut
            self.send({"t": "sandbox", "sid": sid}, encode(req, self.max_bytes))
            return await fut

        return Sandbox(runner)

    def receive(self) -> None:
        try:
            fields, body = read_frame(CHILD_IN, self.max_bytes)
        except EOFError:
            os._exit(1)  # the fork server is gone
        fut = self.pending.pop(fields.get("sid"), None)  # type: ignore[arg-type]
        if fut is None or fut.done():
            return
        msg = json.loads(body) if body else {}
        if fields.get("t") == "sandbox-result":
            fut.set_result(msg.get("result") or {})
        else:
            fut.set_exception(RuntimeError(str(msg.get("message"))))


def run_child(calls: Calls, max_bytes: int) -> Callable[[Optional[Tuple[str, bytearray]]], None]:
    seccomp = _seccomp.Prepared()

    def run(first: Optional[Tuple[str, bytearray]]) -> None:
        seccomp.install()
        child = ChildCall(max_bytes, child_frames())
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        if first is None:  # a spare: ready before its call comes
            fields, raw = read_frame(CHILD_IN, max_bytes)
            method, body = str(fields.get("method")), bytearray(raw)
        else:
            method, body = first
        params = json.loads(bytes(body)) if body else {}
        loop.add_reader(CHILD_IN, child.receive)
        t, data = answer(lambda: loop.run_until_complete(calls.run(method, params, child.sandbox())), max_bytes)
        child.send({"t": t}, data)
        sys.stderr.flush()
        os._exit(0)

    return run


def main(argv: Optional[List[str]] = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    target = argv[0]
    max_bytes = int(argv[1]) if len(argv) > 1 else 64 * 1024 * 1024
    # The protocol keeps its own copies of stdin and stdout; the environment's print() goes to stderr
    # and its input() reads nothing.
    out_fd = os.dup(1)
    in_fd = os.dup(0)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdout = sys.stderr

    def fail(message: str) -> None:
        os.write(out_fd, frame({"t": "load-error"}, json.dumps({"message": message[-8000:]}).encode()))
        os._exit(1)

    try:
        envs = load_target(target)
        specs = [e.spec() for e in envs]
        hello = encode({"protocol": PROTOCOL, "pid": os.getpid(), "envs": specs}, max_bytes)
    except SetupError as err:
        fail(str(err))  # it says what to run: a traceback would bury that
        return
    except BaseException as err:  # noqa: BLE001 (anything the author's module raises is its load error)
        fail("".join(traceback.format_exception(type(err), err, err.__traceback__)))
        return
    calls = Calls(envs)
    server = ForkServer(in_fd, out_fd, max_bytes, calls.inline, run_child(calls, max_bytes))
    server.send({"t": "hello"}, hello)
    server.serve()


if __name__ == "__main__":
    main()
