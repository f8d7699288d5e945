"""The HTTP client: one episode at a time per :class:`EnvClient`, plus stateless calls."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union
from urllib.parse import quote

from ._transport import DEFAULT_TIMEOUT, Transport
from .errors import EnvworkerError
from .types import EnvInfo, ExamplesPage, ScoreResult, State, StepResult

__all__ = ["EnvClient", "to_action", "list_envs", "metadata", "score", "score_groups", "examples", "SCORE_BATCH_LIMIT", "GROUP_LIMIT", "EXAMPLES_LIMIT"]

#: The server accepts at most this many items per ``POST /score``; :func:`score` splits larger lists.
SCORE_BATCH_LIMIT = 1024
#: The server lists at most this many examples per ``POST /examples``.
EXAMPLES_LIMIT = 1000
#: The server accepts at most this many completions in one group of ``POST /score``.
GROUP_LIMIT = 256

Action = Union[str, Mapping[str, Any]]


def to_action(action: Action) -> Dict[str, Any]:
    """The model's turn as the server's action JSON.

    * a ``str`` becomes ``{"content": text}``;
    * a mapping is an OpenAI-style assistant message (``content``, ``tool_calls``,
      ``reasoning_content``); a ``"role": "assistant"`` key is dropped, and ``content`` is set
      to ``None`` when only ``tool_calls`` are given. Anything else is sent as it is, and the
      server rejects unknown fields (``400 VALIDATION_ERROR``).
    """
    if isinstance(action, str):
        return {"content": action}
    if isinstance(action, Mapping):
        out = dict(action)
        if out.get("role") == "assistant":
            del out["role"]
        if "content" not in out and "tool_calls" in out:
            out["content"] = None
        return out
    raise TypeError(f"an action is a str or an assistant-message dict, not {type(action).__name__}")


def _env_path(env: str) -> str:
    if not isinstance(env, str) or not env:
        raise ValueError("env must be a non-empty environment name")
    return "/envs/" + quote(env, safe="")



def _given(**fields: Any) -> Dict[str, Any]:
    """A request body of the fields that were given (None means "not given", as on the server)."""
    return {k: v for k, v in fields.items() if v is not None}

class EnvClient:
    """One environment on one server, one episode at a time, over one keep-alive connection.

    >>> with EnvClient("http://127.0.0.1:8000", "reverse-text") as env:
    ...     result = env.reset(seed=1)
    ...     result = env.step("<reversed_text>...</reversed_text>")
    ...     result.reward

    Leaving the ``with`` block closes the episode on the server (``POST /close``) and the
    connection. A client is safe to share between threads (requests are serialized), but run
    concurrent episodes with one client each.

    Retries: connection failures before the request was sent are retried (``retries`` times)
    for every call; ``state()``, ``close()`` and the stateless calls are also retried after a
    dropped connection. ``reset()`` and ``step()`` never are once the request went out: a step
    may have been applied, and a reset may have created an episode (see
    :class:`~envworker.errors.EnvworkerConnectionError`).
    """

    def __init__(
        self,
        base_url: str,
        env: str,
        token: Optional[str] = None,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        *,
        retries: int = 2,
    ) -> None:
        self.env = env
        self._path = _env_path(env)
        self._transport = Transport(base_url, token=token, timeout=timeout, retries=retries)
        #: The open episode, set by :meth:`reset` and cleared by :meth:`close`.
        self.episode_id: Optional[str] = None
        #: The last result of :meth:`reset` or :meth:`step`.
        self.last: Optional[StepResult] = None

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    @property
    def url(self) -> str:
        """The environment's base URL ``{base_url}/envs/{env}`` (what OpenEnv clients take)."""
        return self._transport.base_url + self._path

    @property
    def connections_opened(self) -> int:
        """TCP connections opened so far (1 while keep-alive holds)."""
        return self._transport.connections_opened

    # -- episodes ---------------------------------------------------------------------------

    def reset(
        self,
        seed: Optional[int] = None,
        *,
        index: Optional[int] = None,
        split: Optional[str] = None,
        args: Optional[Mapping[str, Any]] = None,
        episode_id: Optional[str] = None,
        example: Optional[str] = None,
    ) -> StepResult:
        """Start an episode (``POST /reset``); the observation's messages are the prompt.

        An episode this client still has open is closed first. Without ``seed`` the server
        picks one and reports it in ``observation.info["seed"]``. ``index`` picks a dataset
        row (the seed then does not choose it), ``split`` a dataset split, ``args`` the
        environment's arguments, ``episode_id`` the id (``409 EPISODE_EXISTS`` if taken).
        ``example`` is a reference from :func:`envworker.examples` (it carries the split, row or
        seed and args, so it takes none of those). ``observation.info["example"]`` is the
        reference of the example the reset chose.
        Not retried once sent: a reset that reached the server created an episode.
        """
        if self.episode_id is not None:
            self._close_episode(quiet=True)
        body = _given(seed=seed, index=index, split=split, args=dict(args) if args is not None else None,
                      episode_id=episode_id, example=example)
        result = StepResult.from_json(self._transport.post(self._path + "/reset", body, idempotent=False))
        self.episode_id = result.episode_id
        self.last = result
        return result

    def step(self, action: Action) -> StepResult:
        """Send the model's turn (``POST /step``): a str, or an assistant-message dict
        (see :func:`to_action`). Raises ``EnvworkerError`` ``409 EPISODE_DONE`` after the
        episode ended, ``404 UNKNOWN_EPISODE`` when it is gone (closed or expired)."""
        episode_id = self._require_episode()
        body = {"episode_id": episode_id, "action": to_action(action)}
        result = StepResult.from_json(self._transport.post(self._path + "/step", body, idempotent=False))
        self.last = result
        return result

    def state(self, episode_id: Optional[str] = None) -> State:
        """The episode as the server holds it (``GET /state``): this client's episode by default."""
        eid = episode_id if episode_id is not None else self._require_episode()
        return State.from_json(self._transport.get(f"{self._path}/state?episode_id={quote(eid, safe='')}"))

    def close(self) -> bool:
        """End this client's episode on the server (``POST /close``) and close the connection.

        Returns whether an episode was closed: ``False`` when there was none or the server no
        longer had it. The client stays usable: the next :meth:`reset` reconnects.
        """
        try:
            return self._close_episode(quiet=False)
        finally:
            self._transport.close()

    def _close_episode(self, *, quiet: bool) -> bool:
        eid = self.episode_id
        if eid is None:
            return False
        try:
            self._transport.post(self._path + "/close", {"episode_id": eid}, idempotent=True)
            closed = True
        except EnvworkerError as err:
            if err.code == "UNKNOWN_EPISODE":
                closed = False
            elif quiet:
                closed = False
            else:
                raise
        self.episode_id = None
        return closed

    def _require_episode(self) -> str:
        if self.episode_id is None:
            raise RuntimeError("no open episode: call reset() first")
        return self.episode_id

    # -- stateless calls on the same connection ---------------------------------------------

    def metadata(self) -> Dict[str, Any]:
        """``GET /envs/{env}/metadata``."""
        return self._transport.get(self._path + "/metadata")

    def score(self, items: Iterable[Mapping[str, Any]]) -> List[ScoreResult]:
        """Stateless batch scoring; see :func:`envworker.score`."""
        return _score(self._transport, self._path, items)

    def score_groups(self, groups: Iterable[Iterable[Mapping[str, Any]]]) -> List[List[ScoreResult]]:
        """Stateless scoring of groups; see :func:`envworker.score_groups`."""
        return _score_groups(self._transport, self._path, groups)

    def examples(self, **kwargs: Any) -> ExamplesPage:
        """One page of ``POST /examples``; see :func:`envworker.examples`."""
        return _examples(self._transport, self._path, **kwargs)

    # -- context manager --------------------------------------------------------------------

    def __enter__(self) -> "EnvClient":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        # Never mask the exception that ended the block: closing is best effort here.
        try:
            self._close_episode(quiet=True)
        finally:
            self._transport.close()

    def __repr__(self) -> str:
        return f"EnvClient({self.url!r}, episode_id={self.episode_id!r})"


def _score(transport: Transport, path: str, items: Iterable[Mapping[str, Any]]) -> List[ScoreResult]:
    batch = [dict(item) for item in items]
    if not batch:
        return []
    results: List[ScoreResult] = []
    for start in range(0, len(batch), SCORE_BATCH_LIMIT):
        chunk = batch[start : start + SCORE_BATCH_LIMIT]
        # Scoring is pure: retrying after a dropped connection is safe.
        data = transport.post(path + "/score", {"items": chunk}, idempotent=True)
        results.extend(ScoreResult.from_json(r) for r in data["results"])
    return results


def _score_groups(transport: Transport, path: str, groups: Iterable[Iterable[Mapping[str, Any]]]) -> List[List[ScoreResult]]:
    batch = [[dict(item) for item in group] for group in groups]
    for i, group in enumerate(batch):
        if not group or len(group) > GROUP_LIMIT:
            raise ValueError(f"group {i} has {len(group)} completions; a group has 1 to {GROUP_LIMIT}")
    results: List[List[ScoreResult]] = []
    start = 0
    while start < len(batch):
        # Whole groups per request, up to SCORE_BATCH_LIMIT completions in all.
        end, n = start, 0
        while end < len(batch) and n + len(batch[end]) <= SCORE_BATCH_LIMIT:
            n += len(batch[end])
            end += 1
        data = transport.post(path + "/score", {"groups": batch[start:end]}, idempotent=True)
        results.extend([ScoreResult.from_json(r) for r in group] for group in data["groups"])
        start = end
    return results


def _examples(
    transport: Transport,
    path: str,
    *,
    split: Optional[str] = None,
    start: Optional[int] = None,
    count: Optional[int] = None,
    seeds: Optional[Iterable[int]] = None,
    args: Optional[Mapping[str, Any]] = None,
) -> ExamplesPage:
    body = _given(split=split, start=start, count=count, seeds=list(seeds) if seeds is not None else None,
                  args=dict(args) if args is not None else None)
    # Listing is a pure read: retrying after a dropped connection is safe.
    return ExamplesPage.from_json(transport.post(path + "/examples", body, idempotent=True))


def _example_pages(
    transport: Transport,
    path: str,
    *,
    split: Optional[str],
    args: Optional[Mapping[str, Any]],
    seeds: Optional[Sequence[int]] = None,
    start: int = 0,
    end: int = 0,
) -> Iterator[ExamplesPage]:
    """``/examples`` a page at a time (EXAMPLES_LIMIT each): the examples of ``seeds``, or rows
    ``start`` to ``end``."""
    if seeds is not None:
        for i in range(0, len(seeds), EXAMPLES_LIMIT):
            yield _examples(transport, path, split=split, seeds=seeds[i : i + EXAMPLES_LIMIT], args=args)
        return
    for at in range(start, end, EXAMPLES_LIMIT):
        yield _examples(transport, path, split=split, start=at, count=min(EXAMPLES_LIMIT, end - at), args=args)


def examples(
    base_url: str,
    env: str,
    *,
    split: Optional[str] = None,
    start: Optional[int] = None,
    count: Optional[int] = None,
    seeds: Optional[Iterable[int]] = None,
    args: Optional[Mapping[str, Any]] = None,
    token: Optional[str] = None,
    timeout: Optional[float] = DEFAULT_TIMEOUT,
) -> ExamplesPage:
    """One page of an environment's examples (``POST /envs/{env}/examples``), without episodes.

    A dataset is walked by row (``start``, ``count``; ``total`` is its size), a generated
    environment by seed (``seeds``, or ``count`` seeds from ``start``; ``total`` is ``None``).
    At most ``EXAMPLES_LIMIT`` (1000) per request; ``count=0`` returns only ``rubric`` and
    ``tools``. Each example has its prompt and a reference (``example``) for ``score`` items and
    ``EnvClient.reset(example=...)``; answers stay on the server.
    """
    transport = Transport(base_url, token=token, timeout=timeout)
    try:
        return _examples(transport, _env_path(env), split=split, start=start, count=count, seeds=seeds, args=args)
    finally:
        transport.close()


def score(
    base_url: str,
    env: str,
    items: Iterable[Mapping[str, Any]],
    token: Optional[str] = None,
    timeout: Optional[float] = DEFAULT_TIMEOUT,
) -> List[ScoreResult]:
    """Score completions a trainer already has with the environment's rubric (``POST /score``).

    Each item is ``{"completion": str | messages, "answer"?: str, "info"?: dict,
    "prompt"?: str | messages, "args"?: dict}``, or ``{"completion", "example": reference}``
    (a reference from :func:`examples`: graded against the server's own answer); a string
    completion is one assistant message.
    Returns one :class:`ScoreResult` per item, in order. Lists longer than
    ``SCORE_BATCH_LIMIT`` (1024) are sent in several requests. An empty list returns ``[]``
    without a request.
    """
    transport = Transport(base_url, token=token, timeout=timeout)
    try:
        return _score(transport, _env_path(env), items)
    finally:
        transport.close()


def score_groups(
    base_url: str,
    env: str,
    groups: Iterable[Iterable[Mapping[str, Any]]],
    token: Optional[str] = None,
    timeout: Optional[float] = DEFAULT_TIMEOUT,
) -> List[List[ScoreResult]]:
    """Score groups of completions, each group the completions of one prompt (``POST /score``
    with ``groups``): the environment's group reward functions see the whole group (GRPO's unit),
    the others score each completion as :func:`score` does. Items are as in :func:`score`.
    Returns one list of :class:`ScoreResult` per group, in order. A group holds 1 to
    ``GROUP_LIMIT`` (256) completions; requests carry whole groups, up to ``SCORE_BATCH_LIMIT``
    completions each.
    """
    transport = Transport(base_url, token=token, timeout=timeout)
    try:
        return _score_groups(transport, _env_path(env), groups)
    finally:
        transport.close()


def list_envs(base_url: str, token: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT) -> List[EnvInfo]:
    """The server's environments (``GET /envs``)."""
    transport = Transport(base_url, token=token, timeout=timeout)
    try:
        return [EnvInfo.from_json(e) for e in transport.get("/envs")["envs"]]
    finally:
        transport.close()


def metadata(base_url: str, env: str, token: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT) -> Dict[str, Any]:
    """An environment's OpenEnv metadata (``GET /envs/{env}/metadata``):
    ``{"name", "description", "version", "author"?, "documentation_url"?}``."""
    transport = Transport(base_url, token=token, timeout=timeout)
    try:
        return transport.get(_env_path(env) + "/metadata")
    finally:
        transport.close()
