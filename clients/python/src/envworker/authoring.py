"""Environments written in Python: the same model as TypeScript's ``defineEnvironment``.

An environment is a module (``env.py``) or package exposing ``environment`` (one
:class:`Environment`) or ``environments`` (a list of them). ``npx envworker serve path/to/env.py``
serves it beside the TypeScript environments: the server's own engine runs the episodes (reset,
step, ``/score``, MCP, the WebSocket, validate, eval); this module only describes the environment
and runs its functions, in a worker process the server supervises (``envworker.worker``).

Every function may be a plain function or ``async def``. Model-written code is never run here:
``sandbox.run(...)`` asks the server's sandbox (see docs/authoring.md, "Python environments").

Only the standard library is used, so the worker starts in any Python 3.10+.
"""

from __future__ import annotations

import dataclasses
import inspect
import random
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "Environment",
    "Example",
    "Reward",
    "Reply",
    "Tool",
    "tool",
    "GenerateContext",
    "Turn",
    "Sandbox",
    "RunResult",
    "ArgsError",
    "REWARD_INPUTS",
]

#: The keyword arguments a reward function may declare (it gets those it declares).
REWARD_INPUTS = ("prompt", "completion", "completion_text", "answer", "info", "state", "args", "sandbox")

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")  # the TypeScript rule (src/env/environment.ts)
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # OpenAI's rule for function names


@dataclass
class Example:
    """One task. ``prompt`` is the user message (a string) or whole messages (``[{"role", "content"}]``);
    the system prompt is added by the server. ``id`` is a stable id for reporting (default: the index)."""

    prompt: Union[str, List[Dict[str, Any]]]
    answer: str = ""
    info: Dict[str, Any] = field(default_factory=dict)
    id: Union[str, int, None] = None

    def to_json(self) -> Dict[str, Any]:
        if not isinstance(self.prompt, (str, list)):
            raise TypeError(f"Example.prompt must be a string or a list of messages, not {type(self.prompt).__name__}")
        if not isinstance(self.answer, str):
            raise TypeError(f"Example.answer must be a string, not {type(self.answer).__name__}")
        if not isinstance(self.info, dict):
            raise TypeError(f"Example.info must be a dict, not {type(self.info).__name__}")
        out: Dict[str, Any] = {"prompt": self.prompt, "answer": self.answer, "info": self.info}
        if self.id is not None:
            out["id"] = self.id
        return out


def _as_example(value: Any, where: str) -> Example:
    if isinstance(value, Example):
        return value
    if isinstance(value, Mapping) and "prompt" in value:
        return Example(**dict(value))
    raise TypeError(f"{where} must give Example(prompt=..., answer=...) objects, not {type(value).__name__}")


@dataclass
class Reply:
    """What ``respond`` returns: messages to append (a string is one user message) and whether the
    environment ends the episode."""

    messages: Union[str, List[Dict[str, Any]], None] = None
    done: bool = False


@dataclass
class RunResult:
    """A sandbox run's outcome (the server's ``RunResult``): ``ok`` is False when the code failed,
    timed out or ran out of memory; ``error`` then says how: ``{"name", "message", "stack"?}``,
    ``name`` the guest's error (``SyntaxError``, ...) or the host's (``TimeoutError``,
    ``MemoryLimitError``, ``OutputLimitError``, ``CancelledError``, and ``SandboxError`` when the
    sandbox itself could not run). None when ``ok``."""

    ok: bool
    result: Any = None
    stdout: str = ""
    stderr: str = ""
    error: Optional[Dict[str, Any]] = None
    elapsed_ms: float = 0.0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RunResult":
        return cls(
            ok=bool(data.get("ok")),
            result=data.get("result"),
            stdout=str(data.get("stdout") or ""),
            stderr=str(data.get("stderr") or ""),
            error=data.get("error"),
            elapsed_ms=float(data.get("elapsedMs") or 0.0),
        )


class Sandbox:
    """The server's code sandbox, as environment functions see it. Code given here never runs in
    this process: the worker sends it to the server, which runs it in its confined sandboxes."""

    def __init__(self, runner: Optional[Callable[[Dict[str, Any]], Awaitable[Dict[str, Any]]]] = None) -> None:
        self._runner = runner

    async def run(
        self,
        code: str,
        lang: Literal["python", "javascript"] = "python",
        timeout_ms: Optional[int] = None,
        memory_mb: Optional[int] = None,
        stdin: Optional[str] = None,
    ) -> RunResult:
        if lang not in ("python", "javascript"):
            raise ValueError(f'lang must be "python" or "javascript", not {lang!r}')
        if not isinstance(code, str):
            raise TypeError("code must be a string")
        if self._runner is None:
            raise RuntimeError("no sandbox here: sandbox.run works in environments served by envworker (envworker serve env.py)")
        options: Dict[str, Any] = {}
        if timeout_ms is not None:
            options["timeoutMs"] = int(timeout_ms)
        if memory_mb is not None:
            options["memoryMb"] = int(memory_mb)
        if stdin is not None:
            options["stdin"] = str(stdin)
        return RunResult.from_json(await self._runner({"code": code, "lang": lang, "options": options}))


@dataclass
class GenerateContext:
    """What ``generate`` gets. ``rng`` is ``random.Random(seed)``, seeded with the episode seed: all
    randomness goes through it, so the same seed yields the same example."""

    rng: random.Random
    seed: int
    index: Optional[int]
    args: Any
    split: str


@dataclass
class Turn:
    """What ``respond`` gets after each model turn. ``state`` is the episode's state (a dict of
    plain JSON): mutate it, it is saved after the step."""

    messages: List[Dict[str, Any]]
    last_text: str
    turn: int
    answer: str
    info: Dict[str, Any]
    state: Dict[str, Any]
    args: Any
    sandbox: Sandbox


class ArgsError(ValueError):
    """Arguments that do not fit the environment's ``args`` dataclass."""


class SetupError(ImportError):
    """Raised while a module loads when something it needs is missing (a package, a file): the
    server shows its message alone, which should say what to run, not a traceback."""


# ---------------------------------------------------------------------------------------------
# Type hints as JSON Schema (args and tool parameters)


def _is_optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType) and type(None) in typing.get_args(tp)


def _schema_of(tp: Any, where: str) -> Dict[str, Any]:
    """The JSON Schema of a type hint: int, float, str, bool, None, Optional/Union, Literal, list[...],
    dict[str, ...] and Any."""
    if tp is Any:
        return {}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if tp is type(None) or tp is None:
        return {"type": "null"}
    origin = typing.get_origin(tp)
    targs = typing.get_args(tp)
    if origin is Literal:
        return {"enum": list(targs)}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema_of(t, where) for t in targs]}
    if origin in (list, List, Sequence, tuple, Tuple) or tp in (list, tuple):
        if origin in (tuple, Tuple) and not (len(targs) == 2 and targs[1] is Ellipsis):
            raise TypeError(f"{where}: use list[X] (or tuple[X, ...]), not {tp!r}")
        return {"type": "array", "items": _schema_of(targs[0], where) if targs else {}}
    if origin in (dict, Dict, Mapping) or tp is dict:
        if targs and targs[0] is not str:
            raise TypeError(f"{where}: dict keys must be str")
        return {"type": "object", "additionalProperties": _schema_of(targs[1], where) if targs else {}}
    raise TypeError(f"{where}: unsupported type {tp!r} (use int, float, str, bool, Optional, Literal, list[...], dict[str, ...])")


def _check(value: Any, tp: Any, path: str) -> Any:
    """``value`` as type ``tp`` (ints accepted for floats), or ArgsError: zod's rules for the same schema."""
    if tp is Any:
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
    elif tp is type(None) or tp is None:
        if value is None:
            return None
    else:
        origin = typing.get_origin(tp)
        targs = typing.get_args(tp)
        if origin is Literal:
            if any(value == t and type(value) is type(t) for t in targs):
                return value
            raise ArgsError(f"{path}: must be one of {list(targs)!r}")
        if origin in (Union, types.UnionType):
            for t in targs:
                try:
                    return _check(value, t, path)
                except ArgsError:
                    continue
        elif origin in (list, List, Sequence, tuple, Tuple) or tp in (list, tuple):
            if isinstance(value, list):
                item = targs[0] if targs else Any
                return [_check(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
        elif origin in (dict, Dict, Mapping) or tp is dict:
            if isinstance(value, dict) and all(isinstance(k, str) for k in value):
                item = targs[1] if targs else Any
                return {k: _check(v, item, f"{path}.{k}") for k, v in value.items()}
    raise ArgsError(f"{path}: expected {_type_name(tp)}, got {type(value).__name__}")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp).replace("typing.", "")


def _args_fields(args: Any) -> List[Tuple[str, Any, Any]]:
    """(name, type, default) of an args dataclass; every field needs a default, as in TypeScript."""
    if not (isinstance(args, type) and dataclasses.is_dataclass(args)):
        raise TypeError("args must be a @dataclass class whose fields all have defaults")
    hints = typing.get_type_hints(args)
    out = []
    for f in dataclasses.fields(args):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        else:
            raise TypeError(f"args field {f.name!r} needs a default (clients may leave any argument out)")
        out.append((f.name, hints[f.name], default))
    return out


def _first_paragraph(doc: Optional[str]) -> str:
    return (doc or "").strip().split("\n\n")[0].strip()


# ---------------------------------------------------------------------------------------------
# Calling the author's functions


async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A sync or async function's result."""
    out = fn(*args, **kwargs)
    if inspect.isawaitable(out):
        out = await out
    return out


def _accepted(fn: Callable[..., Any], offered: Sequence[str], where: str) -> Tuple[Tuple[str, ...], bool]:
    """The names among ``offered`` that ``fn`` declares, and whether it takes ``**kwargs`` (all of them)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError) as err:
        raise TypeError(f"{where}: cannot read its signature ({err})") from None
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    names = []
    for name, p in params.items():
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if name in offered:
            names.append(name)
        elif p.default is inspect.Parameter.empty:
            raise TypeError(f"{where}: parameter {name!r} is none of {', '.join(offered)}")
    return tuple(names), var_kw


class Reward:
    """A named reward function with a weight (0: a metric that is reported but does not count).

    ``fn`` gets the keyword arguments it declares among ``prompt``, ``completion`` (the messages after
    the prompt), ``completion_text`` (the last assistant message's text), ``answer``, ``info``,
    ``state``, ``args`` and ``sandbox``, and returns a float or a bool."""

    def __init__(self, name: str, fn: Callable[..., Any], weight: float = 1.0) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError("Reward needs a name (a non-empty string)")
        if not callable(fn):
            raise TypeError(f"Reward {name!r}: fn must be a function")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise TypeError(f"Reward {name!r}: weight must be a number")
        self.name = name
        self.fn = fn
        self.weight = float(weight)
        self._names, self._all = _accepted(fn, REWARD_INPUTS, f"reward {name}")

    async def score(self, inputs: Mapping[str, Any]) -> float:
        kwargs = dict(inputs) if self._all else {k: inputs[k] for k in self._names}
        value = await _call(self.fn, **kwargs)
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        if isinstance(value, (int, float)):
            return float(value)
        raise TypeError(f"reward {self.name} returned {value!r}, not a number or a bool")


class Tool:
    """A function the model may call (see :func:`tool`)."""

    def __init__(self, fn: Callable[..., Any], name: Optional[str] = None, description: Optional[str] = None, timeout_ms: int = 10_000) -> None:
        if not callable(fn):
            raise TypeError("tool(fn): fn must be a function")
        self.fn = fn
        self.name = name or fn.__name__
        if not _TOOL_NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match {_TOOL_NAME.pattern}")
        self.description = description if description is not None else _first_paragraph(fn.__doc__)
        if not self.description:
            raise ValueError(f"tool {self.name}: give a description (a docstring, or description=...): the model reads it")
        self.timeout_ms = int(timeout_ms)
        hints = typing.get_type_hints(fn)
        props: Dict[str, Any] = {}
        required: List[str] = []
        self._sandbox = False
        self._params: Dict[str, Any] = {}
        for pname, p in inspect.signature(fn).parameters.items():
            if pname == "sandbox":
                self._sandbox = True
                continue
            if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                continue
            tp = hints.get(pname, Any)
            self._params[pname] = tp
            schema = _schema_of(tp, f"tool {self.name}, parameter {pname}")
            if p.default is inspect.Parameter.empty:
                required.append(pname)
            else:
                schema["default"] = p.default
            props[pname] = schema
        self.parameters: Dict[str, Any] = {"type": "object", "properties": props, "required": required, "additionalProperties": False}

    async def call(self, arguments: Mapping[str, Any], sandbox: Sandbox) -> Any:
        kwargs = {k: _check(v, self._params.get(k, Any), k) for k, v in arguments.items() if k in self._params}
        if self._sandbox:
            kwargs["sandbox"] = sandbox
        return await _call(self.fn, **kwargs)


def tool(fn: Optional[Callable[..., Any]] = None, *, name: Optional[str] = None, description: Optional[str] = None, timeout_ms: int = 10_000) -> Any:
    """A tool from a function: its JSON Schema from the type hints, its description from the
    docstring. ``tool(fn)``, or as a decorator (``@tool`` / ``@tool(timeout_ms=5000)``). A parameter
    named ``sandbox`` gets the server's sandbox and is not shown to the model."""
    if fn is None:
        return lambda f: Tool(f, name=name, description=description, timeout_ms=timeout_ms)
    return Tool(fn, name=name, description=description, timeout_ms=timeout_ms)


# ---------------------------------------------------------------------------------------------


class Environment:
    """An environment: metadata, arguments with defaults, where examples come from (``dataset`` or
    ``generate``), the system prompt, the turn limit, the multi-turn rule (``respond``), tools and a
    rubric of weighted reward functions. See docs/authoring.md, "Python environments"."""

    def __init__(
        self,
        name: str,
        description: str = "",
        version: str = "0.1.0",
        *,
        args: Optional[type] = None,
        splits: Sequence[str] = ("train",),
        dataset: Optional[Callable[[Any, str], Any]] = None,
        generate: Optional[Callable[[GenerateContext], Any]] = None,
        system_prompt: Union[str, Callable[[Any], Optional[str]], None] = None,
        max_turns: Union[int, Callable[[Any], int]] = 1,
        respond: Optional[Callable[[Turn], Any]] = None,
        tools: Sequence[Tool] = (),
        rubric: Sequence[Reward] = (),
        author: Optional[str] = None,
        documentation_url: Optional[str] = None,
    ) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"environment name {name!r} must be lower-case kebab-case")
        if (dataset is None) == (generate is None):
            raise ValueError(f"{name}: give exactly one of dataset or generate")
        if not callable(max_turns) and (isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1):
            raise ValueError(f"{name}: max_turns must be a positive integer or a function of the args")
        if isinstance(splits, str) or not splits or not all(isinstance(s, str) and s for s in splits):
            raise ValueError(f'{name}: splits must be a list of split names, e.g. ("train", "eval")')
        rubric = list(rubric)
        if not rubric:
            raise ValueError(f'{name}: give a rubric: rubric=[Reward("correct", fn)] (at least one reward function)')
        for i, r in enumerate(rubric):
            if not isinstance(r, Reward):
                raise TypeError(f"{name}: rubric[{i}] must be a Reward(name, fn, weight)")
        if len({r.name for r in rubric}) != len(rubric):
            raise ValueError(f"{name}: duplicate reward function names")
        tools = [t if isinstance(t, Tool) else Tool(t) for t in tools]
        if len({t.name for t in tools}) != len(tools):
            raise ValueError(f"{name}: duplicate tool names")
        if system_prompt is not None and not isinstance(system_prompt, str) and not callable(system_prompt):
            raise TypeError(f"{name}: system_prompt must be a string or a function of the args")
        self.name = name
        self.description = description
        self.version = version
        self.author = author
        self.documentation_url = documentation_url
        self.args = args
        self._fields = _args_fields(args) if args is not None else []
        self.splits = tuple(splits)
        self.dataset = dataset
        self.generate = generate
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.respond = respond
        self.tools = tools
        self.rubric = rubric
        self._tools = {t.name: t for t in tools}
        self._rewards = {r.name: r for r in rubric}

    # -- arguments ---------------------------------------------------------------------------

    def args_schema(self) -> Dict[str, Any]:
        """The JSON Schema of the arguments (an object; unknown keys are refused)."""
        props = {}
        for fname, tp, default in self._fields:
            s = _schema_of(tp, f"{self.name}: args field {fname}")
            s["default"] = default
            props[fname] = s
        return {"type": "object", "properties": props, "additionalProperties": False}

    def parse_args(self, raw: Optional[Mapping[str, Any]] = None) -> Any:
        """``raw`` (a dict, as a client sends it) as the args dataclass, defaults filled in;
        ArgsError for unknown keys and values of the wrong type."""
        raw = dict(raw or {})
        known = {f for f, _, _ in self._fields}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ArgsError(f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}" + (f"; known: {', '.join(sorted(known))}" if known else ""))
        if self.args is None:
            return None
        values = {fname: _check(raw[fname], tp, fname) for fname, tp, _ in self._fields if fname in raw}
        try:
            return self.args(**values)
        except (ValueError, TypeError) as err:
            # A __post_init__ that checks the values (min <= max): the client's mistake, a 400.
            raise ArgsError(str(err)) from None

    def args_json(self, args: Any) -> Dict[str, Any]:
        return {} if args is None else dataclasses.asdict(args)

    # -- what the server asks -----------------------------------------------------------------

    def spec(self) -> Dict[str, Any]:
        """What the server's handshake needs to build its side of the environment."""
        return {
            "name": self.name,
            "description": self.description,
            "version": self.version,
            "author": self.author,
            "documentation_url": self.documentation_url,
            "args_schema": self.args_schema(),
            "splits": list(self.splits),
            "source": "dataset" if self.dataset is not None else "generate",
            # Static values are sent once; functions of the args are asked per args.
            "system_prompt": {"static": self.system_prompt} if not callable(self.system_prompt) else {"dynamic": True},
            "max_turns": {"static": self.max_turns} if not callable(self.max_turns) else {"dynamic": True},
            "multi_turn": self.respond is not None,
            "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters, "timeout_ms": t.timeout_ms} for t in self.tools],
            "rubric": [{"name": r.name, "weight": r.weight} for r in self.rubric],
        }

    async def examples(self, args: Any, split: str) -> List[Example]:
        rows = await _call(self.dataset, args, split)  # type: ignore[misc]
        if rows is None or isinstance(rows, (str, bytes, Mapping)):
            raise TypeError(f"{self.name}: dataset(args, split) must return a list of examples, not {type(rows).__name__}")
        return [_as_example(r, f"{self.name}: dataset(args, {split!r})") for r in rows]

    async def example(self, seed: int, index: Optional[int], args: Any, split: str) -> Example:
        ctx = GenerateContext(rng=random.Random(seed), seed=seed, index=index, args=args, split=split)
        return _as_example(await _call(self.generate, ctx), f"{self.name}: generate(ctx)")  # type: ignore[arg-type]

    async def system_prompt_for(self, args: Any) -> Optional[str]:
        p = self.system_prompt
        value = await _call(p, args) if callable(p) else p
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{self.name}: system_prompt(args) must return a string or None")
        return value

    async def max_turns_for(self, args: Any) -> int:
        m = self.max_turns
        n = await _call(m, args) if callable(m) else m
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{self.name}: max_turns(args) returned {n!r}, not a positive integer")
        return n

    async def reply(self, turn: Turn) -> Reply:
        if self.respond is None:
            raise RuntimeError(f"{self.name} has no respond")
        r = await _call(self.respond, turn)
        if r is None:
            return Reply()
        if isinstance(r, str):
            return Reply(messages=r)
        if isinstance(r, Mapping):
            return Reply(**dict(r))
        if not isinstance(r, Reply):
            raise TypeError(f"{self.name}: respond must return Reply(messages=..., done=...), not {type(r).__name__}")
        return r

    async def reward(self, name: str, inputs: Mapping[str, Any]) -> float:
        r = self._rewards.get(name)
        if r is None:
            raise KeyError(f"{self.name} has no reward function {name!r}")
        return await r.score(inputs)

    async def call_tool(self, name: str, arguments: Mapping[str, Any], sandbox: Sandbox) -> Any:
        t = self._tools.get(name)
        if t is None:
            raise KeyError(f"{self.name} has no tool {name!r}")
        return await t.call(arguments, sandbox)


def completion_text(completion: Sequence[Mapping[str, Any]]) -> str:
    """The last assistant message's text ("" when there is none): what most rewards parse."""
    for m in reversed(completion):
        if m.get("role") == "assistant":
            c = m.get("content")
            return c if isinstance(c, str) else ""
    return ""
