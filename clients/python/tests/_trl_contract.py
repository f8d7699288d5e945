"""What TRL's GRPOTrainer does with reward functions and environment classes, reimplemented in
the few lines the adapters depend on, so the contract tests run without TRL installed.

Sources (TRL 1.13, ``trl/trainer/grpo_trainer.py``; transformers ``utils/chat_template_utils.py``):

* ``GRPOTrainer.__init__``: ``environments = [environment_factory() for _ in range(generation_batch_size)]``;
  for each, ``inspect.getmembers(environment, predicate=inspect.ismethod)``: ``reset`` is required
  and not a tool, ``_``-prefixed names are skipped, ``get_reward`` is reserved (environment-owned
  reward, huggingface/trl#6238); every other method is a tool, in ``_async_tool_dicts`` when
  ``asyncio.iscoroutinefunction(tool)`` else ``_sync_tool_dicts``, keyed by ``tool.__name__``;
  the tools reach the chat template, which turns callables into schemas with ``get_json_schema``.
* ``_generate_and_score_completions``: ``observation = environment.reset(**row)`` for each row
  (the row includes ``prompt``); a string is appended to ``prompt[-1]["content"]``.
* ``_tool_call_loop``: ``sync_tool_dict[name](**arguments)``, or the async one awaited on the
  trainer's daemon event loop (``asyncio.run_coroutine_threadsafe(...).result()``); an exception
  becomes ``{"error": str(e)}``; the result is the tool message
  ``{"role": "tool", "name": name, "content": str(result)}``.
* ``_calculate_rewards``: ``reward_kwargs`` = every column but ``prompt``/``completion``/
  ``completion_ids``, one list per column, plus ``trainer_state``, ``log_extra``, ``log_metric``
  and ``environments``; sync functions are called in order, coroutine functions are gathered on
  the loop; each is called ``f(prompts=..., completions=..., completion_ids=..., **reward_kwargs)``;
  ``None`` becomes NaN; names come from ``f.__name__``.
* ``get_json_schema``: the regular expressions and type mapping below are transformers'.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import re
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple, Union, get_args, get_origin, get_type_hints

# -- transformers.utils.chat_template_utils.get_json_schema (the parts tools depend on) -----

description_re = re.compile(r"^(.*?)[\n\s]*(Args:|Returns:|Raises:|\Z)", re.DOTALL)
args_re = re.compile(r"\n\s*Args:\n\s*(.*?)[\n\s]*(Returns:|Raises:|\Z)", re.DOTALL)
args_split_re = re.compile(
    r"""
(?:^|\n)  # Match the start of the args block, or a newline
\s*(\w+):\s*  # Capture the argument name and strip spacing
(.*?)\s*  # Capture the argument description, which can span multiple lines, and strip trailing spacing
(?=\n\s*\w+:|\Z)  # Stop when you hit the next argument or the end of the block
""",
    re.DOTALL | re.VERBOSE,
)
returns_re = re.compile(r"\n\s*Returns:\n\s*(.*?)[\n\s]*(Raises:|\Z)", re.DOTALL)


class SchemaError(Exception):
    pass


def _schema_type(hint: Any) -> Dict[str, Any]:
    mapping = {int: {"type": "integer"}, float: {"type": "number"}, str: {"type": "string"}, bool: {"type": "boolean"}, Any: {}}
    return dict(mapping.get(hint, {"type": "object"}))


def _parse_type_hint(hint: Any) -> Dict[str, Any]:
    origin, args = get_origin(hint), get_args(hint)
    if origin is None:
        return _schema_type(hint)
    if origin is Union:
        subtypes = [_parse_type_hint(t) for t in args if t is not type(None)]
        if len(subtypes) == 1:
            out = subtypes[0]
        elif all(isinstance(s.get("type"), str) for s in subtypes):
            out = {"type": sorted(s["type"] for s in subtypes)}
        else:
            out = {"anyOf": subtypes}
        if type(None) in args:
            out["nullable"] = True
        return out
    if origin is list:
        return {"type": "array", "items": _parse_type_hint(args[0])} if args else {"type": "array"}
    if origin is dict:
        out = {"type": "object"}
        if len(args) == 2:
            out["additionalProperties"] = _parse_type_hint(args[1])
        return out
    raise SchemaError(f"cannot parse type hint {hint!r}")


def get_json_schema(func: Callable[..., Any]) -> Dict[str, Any]:
    doc = inspect.getdoc(func)
    if not doc:
        raise SchemaError(f"{func.__name__} has no docstring")
    doc = doc.strip()
    description = description_re.search(doc)
    args_block = args_re.search(doc)
    main_doc = description.group(1).strip() if description else None
    params: Dict[str, str] = {}
    if args_block:
        block = "\n".join(line for line in args_block.group(1).strip().split("\n") if line.strip())
        params = {m[0]: re.sub(r"\s*\n+\s*", " ", m[1].strip()) for m in args_split_re.findall(block)}
    hints = get_type_hints(func)
    signature = inspect.signature(func)
    required = []
    for name, param in signature.parameters.items():
        if param.annotation is inspect.Parameter.empty:
            raise SchemaError(f"argument {name} of {func.__name__} has no type hint")
        if param.default is inspect.Parameter.empty:
            required.append(name)
    properties = {name: _parse_type_hint(hint) for name, hint in hints.items()}
    properties.pop("return", None)
    for name, schema in properties.items():
        if name not in params:
            raise SchemaError(f"the docstring of {func.__name__} has no description for {name!r}")
        desc = params[name]
        choices = re.search(r"\(choices:\s*(.*?)\)\s*$", desc, flags=re.IGNORECASE)
        if choices:
            schema["enum"] = [c.strip() for c in json.loads(choices.group(1))]
            desc = choices.string[: choices.start()].strip()
        schema["description"] = desc
    parameters: Dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    return {"type": "function", "function": {"name": func.__name__, "description": main_doc, "parameters": parameters}}


def json_schema(func: Callable[..., Any]) -> Dict[str, Any]:
    """transformers' own get_json_schema when it is installed, else the copy above."""
    try:
        from transformers.utils import get_json_schema as real  # type: ignore[import-not-found]
    except Exception:
        return get_json_schema(func)
    return real(func)


# -- GRPOTrainer's environment and reward plumbing ----------------------------------------------

RESERVED = ("reset", "get_reward")


class FakeTrainer:
    """The parts of GRPOTrainer that touch ``environment_factory`` and ``reward_funcs``."""

    def __init__(self, environment_factory: Optional[Callable[[], Any]], generation_batch_size: int, reward_funcs: Optional[List[Callable[..., Any]]] = None) -> None:
        self.environments: Optional[List[Any]] = None
        self.sync_tools: List[Dict[str, Callable[..., Any]]] = [{} for _ in range(generation_batch_size)]
        self.async_tools: List[Dict[str, Callable[..., Any]]] = [{} for _ in range(generation_batch_size)]
        self.tools: List[Callable[..., Any]] = []
        if environment_factory is not None:
            self.environments = [environment_factory() for _ in range(generation_batch_size)]
            for i, environment in enumerate(self.environments):
                has_reset = False
                methods = []
                for name, member in inspect.getmembers(environment, predicate=inspect.ismethod):
                    if name == "reset":
                        has_reset = True
                    elif name not in RESERVED and not name.startswith("_"):
                        methods.append(member)
                if not has_reset:
                    raise ValueError("environment has no reset")
                for tool in methods:
                    (self.async_tools if asyncio.iscoroutinefunction(tool) else self.sync_tools)[i][tool.__name__] = tool
                if i == 0:
                    self.tools = methods
        self.reward_funcs = list(reward_funcs or [])
        if self.environments and hasattr(self.environments[0], "get_reward"):
            self.reward_names = [f.__name__ for f in self.reward_funcs] + [type(self.environments[0]).__name__]
        else:
            self.reward_names = [f.__name__ for f in self.reward_funcs]
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.metrics_logged: List[Tuple[str, float]] = []
        self.extra_logged: List[Tuple[str, list]] = []

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    def tool_schemas(self) -> List[Dict[str, Any]]:
        return [json_schema(t) for t in self.tools]

    def reset(self, inputs: List[Dict[str, Any]]) -> List[List[Dict[str, Any]]]:
        prompts = [row["prompt"] for row in inputs]
        assert self.environments is not None
        for prompt, environment, reset_kwargs in zip(prompts, self.environments, inputs):
            observation = environment.reset(**reset_kwargs)
            if observation is None:
                continue
            prompt[-1]["content"] += observation
        return prompts

    def call_tool(self, index: int, name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
        """One tool call of rollout ``index``, as the tool message TRL appends."""
        try:
            if name in self.sync_tools[index]:
                result: Any = self.sync_tools[index][name](**arguments)
            elif name in self.async_tools[index]:
                result = asyncio.run_coroutine_threadsafe(self.async_tools[index][name](**arguments), self.loop).result()
            else:
                raise ValueError(f"Tool {name} not found.")
        except Exception as e:  # noqa: BLE001 - as TRL does
            result = {"error": str(e)}
        return {"role": "tool", "name": name, "content": str(result)}

    def call_tools_concurrently(self, calls: List[Tuple[int, str, Dict[str, Any]]]) -> List[Any]:
        """Async tools of several rollouts at once on the trainer's loop (what lets a batch's
        rollouts overlap)."""

        async def run() -> List[Any]:
            return await asyncio.gather(*(self.async_tools[i][name](**arguments) for i, name, arguments in calls))

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result()

    def calculate_rewards(self, inputs: List[Dict[str, Any]], prompts: List[Any], completions: List[Any]) -> List[List[float]]:
        """Rewards per completion per function (NaN for None), as ``_calculate_rewards``; then the
        environments' ``get_reward()`` when they own the reward."""
        keys = [key for key in inputs[0] if key not in ["prompt", "completion", "completion_ids"]]
        reward_kwargs: Dict[str, Any] = {key: [example[key] for example in inputs] for key in keys}
        reward_kwargs["trainer_state"] = None
        reward_kwargs["log_extra"] = lambda column, values: self.extra_logged.append((column, values))
        reward_kwargs["log_metric"] = lambda name, value: self.metrics_logged.append((name, value))
        if self.environments is not None:
            reward_kwargs["environments"] = self.environments
        completion_ids = [[0] for _ in completions]
        columns: List[List[float]] = []
        async_funcs = []
        for i, func in enumerate(self.reward_funcs):
            if inspect.iscoroutinefunction(func):
                async_funcs.append((i, func))
                columns.append([])
            else:
                out = func(prompts=prompts, completions=completions, completion_ids=completion_ids, **reward_kwargs)
                columns.append([math.nan if r is None else float(r) for r in out])
        if async_funcs:

            async def gather() -> List[Any]:
                return await asyncio.gather(*(f(prompts=prompts, completions=completions, completion_ids=completion_ids, **reward_kwargs) for _, f in async_funcs))

            for (i, _), out in zip(async_funcs, asyncio.run_coroutine_threadsafe(gather(), self.loop).result()):
                columns[i] = [math.nan if r is None else float(r) for r in out]
        if self.environments is not None and hasattr(self.environments[0], "get_reward"):
            columns.append([float(env.get_reward()) for env in self.environments[: len(completions)]])
        return columns
