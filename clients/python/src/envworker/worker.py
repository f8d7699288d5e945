"""The worker process that runs a Python environment's functions for an envworker server.

The server (src/python/ in the envworker repository) starts it confined (an empty environment, a
read-only file system, no network unless the operator allows it, resource limits) as::

    python -I -B -c "...; import envworker.worker as w; w.main()" TARGET MAX_MESSAGE_BYTES

TARGET is a file (``env.py``), a folder (a package, or one holding ``env.py``) or an importable
module name. The module exposes ``environment`` or ``environments``.

Protocol: JSON lines on the worker's original stdin/stdout. The environment's own ``print`` goes to
stderr (fd 1 is pointed there once the protocol has its own copy), so nothing it writes can be
mistaken for a message; stdin is /dev/null to it.

    worker -> server  {"t":"hello","envs":[spec, ...]}          once loaded
                      {"t":"load-error","message":...}          the module failed to load (then exit 1)
                      {"t":"done","id":N,"value":...}
                      {"t":"failed","id":N,"error":{"type","message","traceback"}}
                      {"t":"sandbox","id":N,"sid":S,"code":...,"lang":...,"options":{...}}
    server -> worker  {"t":"call","id":N,"method":...,"params":{...}}
                      {"t":"sandbox-result","sid":S,"result":{...}} | {"t":"sandbox-error","sid":S,"message":...}

Calls run as asyncio tasks: an ``async def`` function waiting for a sandbox run lets others go on.
The server bounds every call with a deadline and kills the process past it; when its stdin closes
(the server went away) the process exits at once.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import math
import os
import sys
import threading
import traceback
from typing import Any, Dict, List, Mapping, Optional

from .authoring import Environment, Example, Sandbox, Turn, completion_text

PROTOCOL = 1


class TooLarge(Exception):
    pass


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


def _json_default(value: Any) -> Any:
    if isinstance(value, Example):
        return value.to_json()
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON (use numbers, strings, bools, None, lists and dicts)")


def _finite(value: Any, where: str) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} is {value}, not a finite number")
    return value


class Worker:
    def __init__(self, envs: List[Environment], out: Any, max_bytes: int) -> None:
        self.envs = {e.name: e for e in envs}
        self.out = out
        self.max_bytes = max_bytes
        self.next_sid = 1
        self.pending: Dict[int, "asyncio.Future[Dict[str, Any]]"] = {}
        self.tasks: set = set()

    def send(self, msg: Mapping[str, Any]) -> None:
        data = json.dumps(msg, default=_json_default, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        if len(data) > self.max_bytes:
            raise TooLarge(f"the reply is {len(data)} bytes, more than the {self.max_bytes} a message may have")
        self.out.write(data + b"\n")
        self.out.flush()

    def receive(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            return
        t = msg.get("t")
        if t == "call":
            task = asyncio.ensure_future(self.handle(msg))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif t in ("sandbox-result", "sandbox-error"):
            fut = self.pending.pop(msg.get("sid"), None)
            if fut is not None and not fut.done():
                if t == "sandbox-result":
                    fut.set_result(msg.get("result") or {})
                else:
                    fut.set_exception(RuntimeError(str(msg.get("message"))))

    def sandbox_for(self, call_id: int) -> Sandbox:
        async def runner(req: Dict[str, Any]) -> Dict[str, Any]:
            sid = self.next_sid
            self.next_sid += 1
            fut: "asyncio.Future[Dict[str, Any]]" = asyncio.get_running_loop().create_future()
            self.pending[sid] = fut
            self.send({"t": "sandbox", "id": call_id, "sid": sid, **req})
            return await fut

        return Sandbox(runner)

    async def handle(self, msg: Mapping[str, Any]) -> None:
        call_id = msg.get("id")
        try:
            value = await self.run(call_id, str(msg.get("method")), msg.get("params") or {})
            try:
                self.send({"t": "done", "id": call_id, "value": value})
            except (TypeError, ValueError) as err:
                raise TypeError(f"its value cannot be sent: {err}") from None
        except BaseException as err:  # an environment's error of any kind is its call's answer
            if isinstance(err, (KeyboardInterrupt, SystemExit)):
                os._exit(1)
            tb = traceback.format_exception(type(err), err, err.__traceback__)
            error = {"type": type(err).__name__, "message": str(err), "traceback": "".join(tb)[-4000:], "too_large": isinstance(err, TooLarge)}
            self.send({"t": "failed", "id": call_id, "error": error})

    async def run(self, call_id: Any, method: str, p: Mapping[str, Any]) -> Any:
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
        sandbox = self.sandbox_for(call_id)
        if method == "respond":
            state = dict(p.get("state") or {})
            messages = list(p.get("messages") or [])
            turn = Turn(
                messages=messages,
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
            return _finite(await env.reward(str(p["name"]), inputs), f"reward {p['name']}")
        if method == "tool":
            return await env.call_tool(str(p["name"]), p.get("arguments") or {}, sandbox)
        raise ValueError(f"unknown method {method!r}")


def main(argv: Optional[List[str]] = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    target = argv[0]
    max_bytes = int(argv[1]) if len(argv) > 1 else 64 * 1024 * 1024
    # The protocol keeps its own copies of stdin and stdout; the environment's print() goes to stderr
    # and its input() reads nothing.
    out = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    inp = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdout = sys.stderr

    def fail(message: str) -> None:
        out.write(json.dumps({"t": "load-error", "message": message[-8000:]}).encode() + b"\n")
        out.flush()
        os._exit(1)

    try:
        envs = load_target(target)
        specs = [e.spec() for e in envs]
    except BaseException as err:  # noqa: BLE001 (anything the author's module raises is its load error)
        fail("".join(traceback.format_exception(type(err), err, err.__traceback__)))
        return

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    worker = Worker(envs, out, max_bytes)
    try:
        worker.send({"t": "hello", "protocol": PROTOCOL, "envs": specs})
    except (TypeError, ValueError, TooLarge) as err:
        fail(f"the environments' description cannot be sent: {err}")

    def read() -> None:
        # A thread of its own: it notices the server going away (EOF) even while a call computes.
        for line in inp:
            loop.call_soon_threadsafe(worker.receive, line)
        os._exit(0)

    threading.Thread(target=read, name="envworker-stdin", daemon=True).start()
    loop.run_forever()


if __name__ == "__main__":
    main()
