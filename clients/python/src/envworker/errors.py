"""The one exception type of the client."""

from __future__ import annotations

import json
from typing import Any, Optional


def _details_text(details: Any, limit: int = 500) -> str:
    """The server's details in a line: validation issues as ``path: message``, else compact JSON."""
    if details is None or details == [] or details == {}:
        return ""
    if isinstance(details, list) and all(isinstance(d, dict) and "message" in d for d in details):
        text = "; ".join(f"{d['path']}: {d['message']}" if d.get("path") else str(d["message"]) for d in details)
    elif isinstance(details, str):
        text = details
    else:
        try:
            text = json.dumps(details, ensure_ascii=False, separators=(", ", ": "), default=str)
        except (TypeError, ValueError):
            text = repr(details)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class EnvworkerError(Exception):
    """A request to an envworker server failed.

    Server errors carry the server's JSON error: ``code`` (e.g. ``"UNKNOWN_EPISODE"``),
    ``message``, ``details`` (optional) and the HTTP ``status``. Failures on the wire are
    :class:`EnvworkerConnectionError`, a subclass, with ``status`` ``None``.
    """

    def __init__(self, code: str, message: str, status: Optional[int] = None, details: Any = None) -> None:
        head = f"{code}: {message}" if status is None else f"{status} {code}: {message}"
        more = _details_text(details)
        # The offending key or value is in the details: str(err) shows them, not only .details.
        super().__init__(f"{head} ({more})" if more else head)
        self.code = code
        self.message = message
        self.status = status
        self.details = details


class EnvworkerConnectionError(EnvworkerError, ConnectionError):
    """The server could not be reached, or the connection failed during a request.

    ``code`` is ``"CONNECTION_ERROR"`` (or ``"TIMEOUT"`` when no response came in time).
    ``request_sent`` tells whether the request may have reached the server: when it is true
    for a ``step`` or ``reset``, the server may have applied it (the client never retries
    those); ``EnvClient.state()`` shows whether the step was taken.
    """

    def __init__(self, code: str, message: str, *, request_sent: bool) -> None:
        super().__init__(code, message, None, None)
        self.request_sent = request_sent
