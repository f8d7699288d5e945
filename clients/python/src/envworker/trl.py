"""envworker environments in TRL's ``GRPOTrainer``: datasets, reward functions, environments.

Three pieces, each usable alone (nothing here imports TRL; ``datasets`` only when asked for):

* :func:`dataset` — rows for ``train_dataset``: ``prompt`` (chat messages, system included)
  and ``example``, a reference the server re-derives the example from. Answers, hidden tests
  and ``info`` stay on the server.
* :func:`reward_functions` / :func:`reward_function` — ``reward_funcs`` that grade TRL's
  completions with the environment's rubric: one ``POST /score`` per batch, by reference, the
  completions of each prompt as one group (the environment's group reward functions see it
  whole; judged rewards bring their judge's costs as ``judge_*`` metrics). The rubric's total counts (weight 1); each rubric function is logged too (weight 0).
* :func:`environment_factory` — an ``environment_factory`` class for multi-turn and tool
  environments: ``reset(**row)`` opens the episode, the environment's tools (and a ``reply``
  method for answers and game moves) become the model's tools, ``get_reward()`` is the
  episode's reward.

The contract these follow is TRL's ``GRPOTrainer`` (``trl/trainer/grpo_trainer.py``):

* reward functions are called as ``f(prompts=..., completions=..., completion_ids=...,
  **reward_kwargs)`` where ``reward_kwargs`` holds every dataset column but ``prompt`` (one
  value per completion) plus ``trainer_state``, ``log_extra``, ``log_metric`` and, with an
  environment factory, ``environments`` (``_calculate_rewards``); a function may be a
  coroutine function (run with ``asyncio.gather`` on the trainer's loop) and may return
  ``None`` for a sample; it is logged as ``rewards/{f.__name__}/mean``, and
  ``GRPOConfig.reward_weights`` weighs it;
* ``environment_factory()`` is called once per slot of the generation batch at start-up; its
  public methods but ``reset`` (and the reserved ``get_reward``) are found with
  ``inspect.getmembers(env, inspect.ismethod)`` and become tools, keyed by ``__name__``, async
  ones when ``asyncio.iscoroutinefunction``; their schemas come from transformers'
  ``get_json_schema`` (type hints and a Google-style docstring with an ``Args:`` section);
* before each generation ``env.reset(**row)`` is called with the dataset row, and a returned
  string is appended to the prompt's last message; a tool's return value becomes the tool
  message (``str(result)``), an exception becomes ``{"error": str(e)}``;
* ``get_reward()`` (no arguments, a float) is called once per finished rollout.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import keyword
import random
import re
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._content import content_text as _text
from ._transport import DEFAULT_TIMEOUT, Transport
from .client import EXAMPLES_LIMIT, GROUP_LIMIT, EnvClient, _env_path, _example_pages, _examples, _score_groups
from .errors import EnvworkerError
from .types import ExamplesPage, ScoreResult, StepResult

__all__ = [
    "dataset",
    "reward_function",
    "reward_functions",
    "RewardFunctions",
    "environment_factory",
    "environment_metrics",
    "to_score_messages",
]

Message = Dict[str, Any]

#: Rows per ``POST /examples`` request when :func:`dataset` walks a whole dataset.
PAGE_SIZE = EXAMPLES_LIMIT


# -- 1. datasets -----------------------------------------------------------------------------


def dataset(
    base_url: str,
    env: str,
    *,
    split: Optional[str] = None,
    start: int = 0,
    count: Optional[int] = None,
    seeds: Optional[Iterable[int]] = None,
    args: Optional[Mapping[str, Any]] = None,
    columns: Sequence[str] = (),
    as_dataset: Optional[bool] = None,
    token: Optional[str] = None,
    timeout: Optional[float] = DEFAULT_TIMEOUT,
) -> Any:
    """The environment's examples as ``GRPOTrainer`` rows: ``{"prompt": messages, "example": ref}``.

    * A dataset environment gives its rows from ``start``: ``count`` of them, or all when
      ``count`` is ``None`` (fetched in pages).
    * A generated environment has no end: give ``seeds``, or ``count`` (seeds ``start``,
      ``start + 1``, ...). ``seeds`` work for a dataset too (the row a ``reset(seed)`` picks).
    * ``columns`` adds any of ``"split"``, ``"index"``, ``"seed"``, ``"example_id"``. TRL hands
      every column but ``prompt`` to the reward functions and to ``reset(**row)``.
    * ``as_dataset``: ``None`` (the default) returns a ``datasets.Dataset`` when the
      ``datasets`` package is installed and a ``list`` of dicts when it is not; ``True`` requires
      it; ``False`` always returns the list.
    """
    extra = list(columns)
    unknown = [c for c in extra if c not in ("split", "index", "seed", "example_id")]
    if unknown:
        raise ValueError(f"unknown columns {unknown}: choose from split, index, seed, example_id")
    transport = Transport(base_url, token=token, timeout=timeout)
    path = _env_path(env)
    rows: List[Dict[str, Any]] = []

    def add(page: ExamplesPage) -> None:
        for ex in page.examples:
            row: Dict[str, Any] = {"prompt": ex.prompt, "example": ex.example}
            for c in extra:
                row[c] = getattr(ex, c)
            rows.append(row)

    try:
        if seeds is not None:
            if count is not None or start:
                raise ValueError("give seeds or start/count, not both")
            pages = _example_pages(transport, path, split=split, args=args, seeds=[int(s) for s in seeds])
        else:
            first = _examples(transport, path, split=split, start=start, count=0, args=args)
            if first.total is None and count is None:
                raise ValueError(f"{env} generates its examples: pass count (seeds from start) or seeds")
            end = start + count if count is not None else first.total
            if first.total is not None:
                end = min(end, first.total)  # type: ignore[type-var]
            pages = _example_pages(transport, path, split=split, args=args, start=start, end=end)  # type: ignore[arg-type]
        for page in pages:
            add(page)
    finally:
        transport.close()
    return _maybe_dataset(rows, as_dataset)


def _maybe_dataset(rows: List[Dict[str, Any]], as_dataset: Optional[bool]) -> Any:
    if as_dataset is False:
        return rows
    try:
        import datasets  # type: ignore[import-not-found]
    except ImportError:
        if as_dataset:
            raise ImportError("as_dataset=True needs the datasets package (pip install datasets)") from None
        return rows
    return datasets.Dataset.from_list(rows)


# -- completions as the server's messages ------------------------------------------------------


def to_score_messages(messages: Union[str, Sequence[Mapping[str, Any]]]) -> Union[str, List[Message]]:
    """A completion as TRL hands it to reward functions, in the server's message format.

    TRL's tool loop writes assistant tool calls with ``arguments`` as a dict and tool results
    as ``{"role": "tool", "name": ..., "content": ...}`` without an id; the server (OpenAI
    format) wants ``arguments`` as a JSON string and a ``tool_call_id``. Calls get ids in order
    and each tool result answers the oldest open call of its name. Keys the server does not
    know are dropped, and so are the tool calls of a final assistant message: TRL never ran them.
    """
    if isinstance(messages, str):
        return messages
    out: List[Message] = []
    pending: List[Tuple[str, str]] = []  # (id, name) of calls not answered yet
    n = 0
    for m in messages:
        role = m.get("role")
        if role == "assistant":
            msg: Message = {"role": "assistant", "content": _text(m.get("content"))}
            calls = []
            for call in m.get("tool_calls") or []:
                fn = call.get("function", call)
                name = str(fn.get("name", ""))
                arguments = fn.get("arguments", {})
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments, ensure_ascii=False)
                n += 1
                call_id = str(call.get("id") or f"call_{n}")
                calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
                pending.append((call_id, name))
            if calls:
                msg["tool_calls"] = calls
            elif msg["content"] is None:
                msg["content"] = ""
            if isinstance(m.get("reasoning_content"), str):
                msg["reasoning_content"] = m["reasoning_content"]
            out.append(msg)
        elif role == "tool":
            call_id = m.get("tool_call_id")
            if call_id is None:
                name = m.get("name")
                k = next((i for i, (_, nm) in enumerate(pending) if nm == name), 0 if pending else None)
                call_id = pending.pop(k)[0] if k is not None else f"call_{n}_result"
            else:
                pending = [p for p in pending if p[0] != call_id]
            out.append({"role": "tool", "content": _text(m.get("content")) or "", "tool_call_id": str(call_id)})
        elif role in ("user", "system"):
            out.append({"role": role, "content": _text(m.get("content")) or ""})
    # Tool calls that end the completion were never run: TRL stopped its tool loop there
    # (max_tool_calling_iterations, or results that would overflow max_completion_length).
    # They are not the episode's tool calls, so the rubric must not count them.
    if out and out[-1]["role"] == "assistant" and out[-1].pop("tool_calls", None) is not None and out[-1]["content"] is None:
        out[-1]["content"] = ""
    return out


# -- 2. reward functions -----------------------------------------------------------------------


class RewardFunctions(list):
    """The reward functions of one environment, ready for ``GRPOTrainer(reward_funcs=...)``.

    ``weights`` goes to ``GRPOConfig(reward_weights=...)``: 1 for the rubric's total, 0 for the
    per-function metrics (logged, not counted).
    """

    weights: List[float]

    def close(self) -> None:
        """Close the functions' connection (the next call reopens it)."""
        for fn in self:
            scorer = getattr(fn, "scorer", None)
            if scorer is not None:
                scorer.transport.close()


def _prompt_groups(items: Sequence[Optional[Dict[str, Any]]]) -> List[List[Dict[str, Any]]]:
    """GRPO's groups in a batch: TRL puts the ``num_generations`` completions of a prompt next to
    each other, so consecutive items graded against the same thing (example reference, or
    prompt, answer, info and args) form one group, which the environment's group reward
    functions see whole. Rows of other environments (``None``) are left out."""
    groups: List[List[Dict[str, Any]]] = []
    last: Optional[str] = None
    for item in items:
        if item is None:
            last = None
            continue
        key = json.dumps({k: v for k, v in item.items() if k != "completion"}, sort_keys=True, default=str)
        if key == last and len(groups[-1]) < GROUP_LIMIT:
            groups[-1].append(item)
        else:
            groups.append([item])
        last = key
    return groups


class _Scorer:
    """One ``POST /score`` per batch, shared by the functions :func:`reward_functions` returns.

    TRL calls every reward function with the same ``completions`` list in one scoring pass, so
    the first function to run sends the batch and the others reuse its results.
    """

    def __init__(self, base_url: str, env: str, token: Optional[str], timeout: Optional[float], retries: int, args: Optional[Mapping[str, Any]]) -> None:
        self.env = env
        self.path = _env_path(env)
        self.transport = Transport(base_url, token=token, timeout=timeout, retries=retries)
        self.args = dict(args) if args is not None else None
        self._lock = threading.Lock()
        self._batch: Any = None  # the completions list last scored (kept alive so its id stays unique)
        self._results: List[Optional[ScoreResult]] = []
        self._pending: Optional["asyncio.Future[List[Optional[ScoreResult]]]"] = None
        #: ``POST /score`` requests sent (one per batch).
        self.requests = 0

    def items(self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: Mapping[str, Any]) -> List[Optional[Dict[str, Any]]]:
        refs = kwargs.get("example")
        environments = kwargs.get("environments")
        answers = kwargs.get("answer")
        infos = kwargs.get("info")
        items: List[Optional[Dict[str, Any]]] = []
        for i, completion in enumerate(completions):
            item: Dict[str, Any] = {"completion": to_score_messages(completion)}
            ref = refs[i] if refs is not None else None
            if ref is None and environments is not None and i < len(environments):
                ref = getattr(environments[i], "_example_ref", None)
            if ref:
                item["example"] = ref
            elif answers is not None and answers[i] is not None:
                item["answer"] = str(answers[i])
                if infos is not None and isinstance(infos[i], Mapping):
                    item["info"] = dict(infos[i])
                if prompts and prompts[i] is not None:
                    item["prompt"] = to_score_messages(prompts[i])
                if self.args is not None:
                    item["args"] = self.args
            elif refs is not None or answers is not None:
                items.append(None)  # a row of another environment (multi-task): not ours to grade
                continue
            else:
                raise ValueError(
                    f"the {self.env} reward function needs an `example` column (envworker.trl.dataset) "
                    "or an `answer` column in the dataset, or environments from envworker.trl.environment_factory"
                )
            items.append(item)
        return items

    def _send(self, items: List[Optional[Dict[str, Any]]]) -> List[Optional[ScoreResult]]:
        groups = _prompt_groups(items)
        self.requests += 1
        scored = iter([r for group in _score_groups(self.transport, self.path, groups) for r in group])
        return [next(scored) if it is not None else None for it in items]

    def score(self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: Mapping[str, Any]) -> List[Optional[ScoreResult]]:
        with self._lock:
            if self._batch is not completions:
                self._results = self._send(self.items(prompts, completions, kwargs))
                self._batch = completions
                _release_episodes(kwargs.get("environments"), len(completions))
            return self._results

    async def score_async(self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: Mapping[str, Any]) -> List[Optional[ScoreResult]]:
        # The functions run concurrently on TRL's loop: the first starts the request, the others
        # await the same future. The HTTP call runs in a thread so the loop is never blocked.
        if self._batch is not completions or self._pending is None:
            self._batch = completions
            items = self.items(prompts, completions, kwargs)
            environments = kwargs.get("environments")

            def send() -> List[Optional[ScoreResult]]:
                results = self._send(items)
                _release_episodes(environments, len(completions))
                return results

            self._pending = asyncio.ensure_future(asyncio.to_thread(send))
        return await self._pending


def _release_episodes(environments: Any, n: int) -> None:
    """Close the episodes of the rollouts just graded: grading is the last thing TRL does with
    them, and with ``owns_reward=False`` nothing else would close them before the next ``reset``
    (the last batch's would stay open after ``train()``)."""
    for e in list(environments or [])[:n]:
        if isinstance(e, EnvworkerEnvironment):
            e._release()


def reward_functions(
    base_url: str,
    env: str,
    *,
    metrics: Union[bool, Sequence[str]] = True,
    asynchronous: bool = False,
    args: Optional[Mapping[str, Any]] = None,
    token: Optional[str] = None,
    timeout: Optional[float] = DEFAULT_TIMEOUT,
    retries: int = 2,
) -> RewardFunctions:
    """``reward_funcs`` grading completions with the environment's rubric, one ``/score`` per batch.

    Returns ``[total, *metrics]``: ``total`` (named ``env``) is the rubric's weighted reward;
    each metric function (named ``env/metric``) is one rubric function's value, so TRL logs
    ``rewards/{env}/{metric}/mean``. Pass ``reward_weights=funcs.weights`` (1, then 0 for every
    metric) so only the total counts. ``metrics`` is ``True`` (all), ``False`` (none) or the names
    to keep.

    Each completion is graded against:

    * the row's ``example`` column (from :func:`dataset`): the server's own answer and info;
    * else the ``example`` of the row's environment (``environments`` from
      :func:`environment_factory`, when a rollout was played there);
    * else the row's ``answer`` (and ``info``) columns, with ``args``.

    A row without any of them (another task in a mixed dataset) gets ``None``, which TRL leaves
    out. ``asynchronous=True`` makes them coroutine functions (the request runs in a thread), which
    TRL runs concurrently with other async reward functions. Connection failures are retried
    (``retries``); a request that still fails raises.
    """
    scorer = _Scorer(base_url, env, token, timeout, retries, args)
    try:
        page = _examples(scorer.transport, scorer.path, count=0, args=args)
        names = [str(r["name"]) for r in page.rubric]
        if metrics is True:
            chosen = names
        elif metrics is False:
            chosen = []
        else:
            chosen = list(metrics)
            missing = [m for m in chosen if m not in names]
            if missing:
                raise ValueError(f"{env} has no reward functions {missing}; it has {names}")
    except BaseException:
        scorer.transport.close()
        raise

    def pick(metric: Optional[str]) -> Callable[[Optional[ScoreResult]], Optional[float]]:
        if metric is None:
            return lambda r: None if r is None else r.reward
        # A metric whose function failed on this item is left out (None), not counted as 0.
        return lambda r: None if r is None or (r.errors and metric in r.errors) else r.metrics.get(metric)

    def make(name: str, value: Callable[[Optional[ScoreResult]], Optional[float]]) -> Callable[..., Any]:
        if asynchronous:

            async def reward_async(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> List[Optional[float]]:
                return [value(r) for r in await scorer.score_async(prompts, completions, kwargs)]

            fn: Callable[..., Any] = reward_async
        else:

            def reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> List[Optional[float]]:
                return [value(r) for r in scorer.score(prompts, completions, kwargs)]

            fn = reward
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = f"envworker {env}: {'the rubric total' if name == env else 'metric ' + name}"
        fn.scorer = scorer  # type: ignore[attr-defined]
        return fn

    funcs = RewardFunctions([make(env, pick(None))] + [make(f"{env}/{m}", pick(m)) for m in chosen])
    funcs.weights = [1.0] + [0.0] * len(chosen)
    return funcs


def reward_function(base_url: str, env: str, **kwargs: Any) -> Callable[..., Any]:
    """The rubric's total as one reward function (:func:`reward_functions` without metrics)."""
    return reward_functions(base_url, env, metrics=False, **kwargs)[0]


# -- 3. environments ---------------------------------------------------------------------------

_PY_TYPES: Dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict}


def _python_type(schema: Mapping[str, Any]) -> Any:
    """A type hint transformers' ``get_json_schema`` turns back into (nearly) this JSON schema."""
    if "anyOf" in schema or "oneOf" in schema:
        options = [_python_type(s) for s in schema.get("anyOf") or schema.get("oneOf")]
        return Union[tuple(options)] if len(options) > 1 else options[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        options = [_python_type({**schema, "type": k}) for k in kind if k != "null"]
        hint = Union[tuple(options)] if len(options) > 1 else (options[0] if options else Any)
        return Optional[hint] if "null" in kind else hint
    if kind == "array":
        items = schema.get("items")
        return List[_python_type(items)] if isinstance(items, Mapping) else list
    if kind in _PY_TYPES:
        return _PY_TYPES[kind]
    if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
        return str
    return Any


_SECTION = re.compile(r"\b(Args|Returns|Raises)\s*:")


def _one_line(text: Any) -> str:
    """Docstring-safe text: one line, no section headers or ``(choices: ...)`` that
    ``get_json_schema``'s parser would take for structure."""
    line = " ".join(str(text or "").split())
    line = _SECTION.sub(lambda m: m.group(1) + " -", line)
    return re.sub(r"\(\s*choices\s*:", "(options:", line, flags=re.IGNORECASE)


def _tool_docstring(description: str, params: Mapping[str, Mapping[str, Any]], returns: str) -> str:
    lines = [_one_line(description) or "A tool of this environment.", "", "Args:"]
    for name, schema in params.items():
        desc = _one_line(schema.get("description")) or f"The {name}."
        enum = schema.get("enum")
        if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
            desc += " (choices: " + json.dumps(enum) + ")"
        lines.append(f"    {name}: {desc}")
    lines += ["", "Returns:", f"    {returns}"]
    return "\n".join(lines)


def _make_method(
    name: str,
    description: str,
    parameters: Mapping[str, Any],
    call: Callable[[Any, Dict[str, Any]], str],
    asynchronous: bool,
    returns: str,
) -> Callable[..., Any]:
    """A method named ``name`` whose signature and Google-style docstring describe ``parameters``
    (a JSON schema): what TRL and transformers read to show the tool to the model."""
    props: Mapping[str, Mapping[str, Any]] = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    sig_params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: Dict[str, Any] = {}
    for pname, pschema in props.items():
        if not pname.isidentifier() or keyword.iskeyword(pname):
            raise ValueError(f"tool {name!r}: parameter {pname!r} is not a Python identifier")
        hint = _python_type(pschema)
        if pname in required:
            sig_params.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, annotation=hint))
        else:
            hint = Optional[hint]
            sig_params.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=hint))
        annotations[pname] = hint
    annotations["return"] = str
    signature = inspect.Signature(sig_params, return_annotation=str)
    bound_check = inspect.Signature(sig_params[1:])

    def arguments(kwargs: Dict[str, Any]) -> Dict[str, Any]:
        bound_check.bind(**kwargs)  # TypeError (reported to the model by TRL) on unknown or missing arguments
        return {k: v for k, v in kwargs.items() if v is not None or k in required}

    if asynchronous:

        async def method(self: Any, **kwargs: Any) -> str:
            return await asyncio.to_thread(call, self, arguments(kwargs))

    else:

        def method(self: Any, **kwargs: Any) -> str:  # type: ignore[misc]
            return call(self, arguments(kwargs))

    method.__name__ = method.__qualname__ = name
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    method.__doc__ = _tool_docstring(description, props, returns)
    return method


class _Sampler:
    """Seeds for rollouts whose rows do not name an example (the environment owns the data).

    TRL resets its environments in order, a prompt's ``num_generations`` rollouts one after
    another, so consecutive groups of ``group_size`` resets share a seed: a GRPO group plays one
    example.
    """

    def __init__(self, seed: Optional[int], group_size: int) -> None:
        self.rng = random.Random(seed)
        self.group_size = group_size
        self.calls = 0
        self.current = 0
        self.lock = threading.Lock()

    def next_seed(self) -> int:
        with self.lock:
            if self.calls % self.group_size == 0:
                self.current = self.rng.randrange(2**32)
            self.calls += 1
            return self.current


class EnvworkerEnvironment:
    """Base of the classes :func:`environment_factory` makes: one episode per rollout.

    Public methods are the model's tools, so everything else here is private.
    """

    _config: Dict[str, Any] = {}
    _sampler: _Sampler

    def __init__(self) -> None:
        cfg = self._config
        self._client = EnvClient(cfg["base_url"], cfg["env"], token=cfg["token"], timeout=cfg["timeout"], retries=cfg["retries"])
        self._example_ref: Optional[str] = None
        self._prompt: List[Message] = []
        self._conversation: List[Message] = []
        self._last: Optional[StepResult] = None
        self._final: Optional[ScoreResult] = None
        self._calls = 0
        self._lock = threading.Lock()
        # An environment dropped by the trainer closes its episode and connection.
        weakref.finalize(self, _close_client, self._client)

    # TRL: reset(**row) before each rollout; a returned string is appended to the last message.
    def reset(self, **row: Any) -> Optional[str]:
        """Open this rollout's episode (reserved: not a tool)."""
        cfg = self._config
        with self._lock:
            self._final = None
            self._conversation = []
            ref = row.get("example")
            if isinstance(ref, str) and ref:
                result = self._client.reset(example=ref)
            elif row.get("seed") is not None or row.get("index") is not None:
                result = self._client.reset(
                    seed=row.get("seed"),
                    index=row.get("index"),
                    split=row.get("split") or cfg["split"],
                    args=row.get("args") or cfg["args"],
                )
            else:
                result = self._client.reset(seed=self._sampler.next_seed(), split=cfg["split"], args=cfg["args"])
            self._last = result
            self._prompt = list(result.observation.messages)
            info = result.observation.info or {}
            self._example_ref = info.get("example")
        return _prompt_text(self._prompt, row.get("prompt"))

    def _step(self, action: Mapping[str, Any], assistant: Message) -> str:
        with self._lock:
            if self._client.episode_id is None or self._final is not None:
                raise RuntimeError("no episode is open: it ended, or reset was not called")
            if self._last is not None and self._last.done:
                raise RuntimeError("the episode is over: answer without calling tools")
            result = self._client.step(action)
            self._last = result
            self._conversation.append(assistant)
            self._conversation.extend(result.observation.messages)
            reply = "\n\n".join(_text(m.get("content")) or "" for m in result.observation.messages)
            if result.done:
                reply = (reply + "\n\n" if reply else "") + "The episode is over."
            return reply

    def _call_tool(self, name: str, arguments: Dict[str, Any]) -> str:
        self._calls += 1
        call = {"id": f"call_{self._calls}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}
        return self._step({"content": None, "tool_calls": [call]}, {"role": "assistant", "content": None, "tool_calls": [call]})

    def _reply(self, message: str) -> str:
        if not isinstance(message, str):
            raise TypeError("message must be a string")
        return self._step({"content": message}, {"role": "assistant", "content": message})

    def _finish(self) -> ScoreResult:
        """The rollout's score, once: the episode's reward when it ended, else the rubric on the
        conversation so far (what a truncation would score). Closes the episode."""
        with self._lock:
            if self._final is not None:
                return self._final
            last = self._last
            if last is None:
                raise RuntimeError("reset was not called")
            if last.done:
                errors = (last.observation.info or {}).get("reward_errors")
                final = ScoreResult(reward=float(last.reward or 0.0), metrics=dict(last.observation.metrics or {}), errors=errors)
            elif self._example_ref:
                item = {"example": self._example_ref, "completion": self._conversation or [{"role": "assistant", "content": ""}]}
                final = self._client.score([item])[0]
            else:
                raise RuntimeError("the episode is not over and has no example reference to score it by")
            self._final = final
            try:
                self._client.close()
            except EnvworkerError:
                pass  # scoring is done; an episode that is already gone is fine
            return final


    def _release(self) -> None:
        """Close this rollout's episode once it is graded (the outcome stays for ``_finish``)."""
        with self._lock:
            if self._client.episode_id is None:
                return
            try:
                self._client.close()
            except EnvworkerError:
                pass  # already gone: nothing to free


def _close_client(client: EnvClient) -> None:
    try:
        client.close()
    except Exception:
        pass


def _get_reward(self: EnvworkerEnvironment) -> float:
    """The episode's reward (reserved by TRL: called once per finished rollout, not a tool)."""
    return float(self._finish().reward)


def _prompt_text(prompt: List[Message], row_prompt: Any) -> Optional[str]:
    """What ``reset`` returns for TRL to append to the row's last message: nothing when the row
    already holds this prompt (rows from :func:`dataset`), else the prompt's messages that the
    row lacks (an environment-owned or a custom prompt)."""
    have = set()
    if isinstance(row_prompt, str):
        have.add(row_prompt.strip())
    elif isinstance(row_prompt, list):
        have = {(_text(m.get("content")) or "").strip() for m in row_prompt if isinstance(m, Mapping)}
    missing = [c for c in ((_text(m.get("content")) or "").strip() for m in prompt) if c and c not in have]
    return "\n\n".join(missing) if missing else None


_RESERVED = {"reset", "get_reward"}


def environment_factory(
    base_url: str,
    env: str,
    *,
    split: Optional[str] = None,
    args: Optional[Mapping[str, Any]] = None,
    seed: Optional[int] = None,
    group_size: int = 1,
    reply_tool: Optional[str] = "reply",
    owns_reward: bool = True,
    asynchronous: bool = True,
    class_name: Optional[str] = None,
    token: Optional[str] = None,
    timeout: Optional[float] = DEFAULT_TIMEOUT,
    retries: int = 2,
) -> type:
    """A class for ``GRPOTrainer(environment_factory=...)``: each instance plays one episode per rollout.

    * ``reset(**row)`` opens the episode of the row's ``example`` (rows from :func:`dataset`),
      or of its ``seed``/``index`` columns; without them the environment owns the data and
      draws a seed (from ``seed``), the same for ``group_size`` consecutive resets — set it to
      ``num_generations`` so a GRPO group plays one example. It returns the prompt's text when
      the row does not already carry that prompt.
    * Each of the environment's tools is a method with its parameters and a Google-style
      docstring, so transformers' ``get_json_schema`` shows the model the server's schema.
    * ``reply_tool`` (default ``"reply"``; ``None`` for none) is a method ``reply(message)``
      that sends the model's message as its turn: a game move, an answer, a tool environment's
      final answer. It returns the environment's reply.
    * With ``owns_reward`` the class has ``get_reward()``, which TRL calls once per finished
      rollout: the episode's reward, or, for an episode the model did not finish, the rubric on
      its conversation so far. Without it, grade with :func:`reward_functions` (they find each
      rollout's example through ``environments``).
    * ``asynchronous`` makes the tool methods coroutines (TRL runs them on its event loop; the
      HTTP call runs in a thread); ``AsyncGRPOTrainer`` needs ``False``.

    The episode is closed when the rollout's reward is taken, and at the latest by the next
    ``reset``. The class attribute ``tool_names`` lists the methods the model gets.
    """
    if group_size < 1:
        raise ValueError("group_size must be at least 1")
    transport = Transport(base_url, token=token, timeout=timeout, retries=retries)
    try:
        page = _examples(transport, _env_path(env), split=split, count=0, args=args)
    finally:
        transport.close()
    namespace: Dict[str, Any] = {
        "_config": {"base_url": base_url, "env": env, "split": split, "args": dict(args) if args is not None else None, "token": token, "timeout": timeout, "retries": retries},
        "_sampler": _Sampler(seed, group_size),
        "__doc__": f"The envworker environment {env!r} at {base_url}: one episode per rollout.",
        "rubric": tuple(str(r["name"]) for r in page.rubric),
    }
    tool_names: List[str] = []
    for tool in page.tools or []:
        fn = tool.get("function", tool)
        name = str(fn["name"])
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or name in _RESERVED or name == reply_tool:
            raise ValueError(f"{env}'s tool {name!r} cannot be a method of the environment class")

        def call(self: EnvworkerEnvironment, arguments: Dict[str, Any], _name: str = name) -> str:
            return self._call_tool(_name, arguments)

        namespace[name] = _make_method(name, fn.get("description", ""), fn.get("parameters") or {}, call, asynchronous, "The tool's output.")
        tool_names.append(name)
    if reply_tool is not None:
        if not reply_tool.isidentifier() or reply_tool.startswith("_") or reply_tool in _RESERVED:
            raise ValueError(f"reply_tool {reply_tool!r} must be a public method name other than reset and get_reward")
        if page.tools:
            description = "Give your final answer, in the format the instructions ask for. This ends the episode."
        else:
            description = "Send your message (your answer, or your next move) to the environment, in the format the instructions ask for."
        params = {"type": "object", "properties": {"message": {"type": "string", "description": "Your whole message, formatted as the instructions say."}}, "required": ["message"]}

        def reply(self: EnvworkerEnvironment, arguments: Dict[str, Any]) -> str:
            return self._reply(arguments["message"])

        namespace[reply_tool] = _make_method(reply_tool, description, params, reply, asynchronous, "The environment's reply.")
        tool_names.append(reply_tool)
    if not tool_names:
        raise ValueError(f"{env} has no tools and reply_tool is None: the model would have no way to act")
    if owns_reward:
        namespace["get_reward"] = _get_reward
    namespace["tool_names"] = tuple(tool_names)
    name = class_name or "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", env) if part) + "Env"
    return type(name, (EnvworkerEnvironment,), namespace)


def environment_metrics(factory: type, metrics: Union[bool, Sequence[str]] = True) -> RewardFunctions:
    """Reward functions (weight 0) that log each rubric function of the episodes played in
    ``factory``'s environments: TRL passes them as ``environments``. Their ``weights`` are all 0,
    to go after the environment's own reward (``get_reward``) in ``GRPOConfig.reward_weights``."""
    names = list(factory.rubric) if metrics is True else ([] if metrics is False else list(metrics))  # type: ignore[attr-defined]
    env = factory._config["env"]  # type: ignore[attr-defined]

    def make(metric: str) -> Callable[..., Any]:
        def metric_reward(completions: Sequence[Any], environments: Sequence[EnvworkerEnvironment], **kwargs: Any) -> List[Optional[float]]:
            out: List[Optional[float]] = []
            for e in environments[: len(completions)]:
                final = e._finish()
                out.append(None if final.errors and metric in final.errors else final.metrics.get(metric))
            return out

        metric_reward.__name__ = metric_reward.__qualname__ = f"{env}/{metric}"
        return metric_reward

    funcs = RewardFunctions(make(m) for m in names)
    funcs.weights = [0.0] * len(names)
    return funcs
