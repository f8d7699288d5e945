"""The worker's wire: frames of a fixed-size header and a body, both ways (src/node/python-envs/frames.ts is
the server's side).

A header is HEADER bytes: a JSON object padded with spaces, its last byte a newline; its ``n`` is the
length of the body that follows (JSON, UTF-8). A fixed size lets a reader take exactly one frame's
bytes and nothing of the next: the fork server (_call_fork.py) hands a call's body to the child made
for it and must never hold, parse or read ahead into another call's data.
"""

from __future__ import annotations

import json
import math
import os
import traceback
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

HEADER = 256


class ProtocolError(Exception):
    """A peer wrote something that is not a frame (or one larger than allowed)."""

    def __init__(self, message: str, too_large: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large


def header(fields: Mapping[str, Any]) -> bytes:
    raw = json.dumps(fields, separators=(",", ":")).encode()
    if len(raw) >= HEADER:
        raise ValueError(f"a frame header of {len(raw)} bytes")
    return raw + b" " * (HEADER - 1 - len(raw)) + b"\n"


def frame(fields: Mapping[str, Any], body: bytes = b"") -> bytes:
    return header({**fields, "n": len(body)}) + body


def parse_header(raw: bytes, max_bytes: int) -> Dict[str, Any]:
    try:
        fields = json.loads(raw)
    except ValueError:
        raise ProtocolError("it wrote something that is not a protocol message") from None
    if not isinstance(fields, dict) or not isinstance(fields.get("t"), str):
        raise ProtocolError("it wrote something that is not a protocol message")
    n = fields.get("n", 0)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ProtocolError("it wrote a frame with no valid length")
    if n > max_bytes:
        raise ProtocolError(f"it sent a message of {n} bytes, more than the {max_bytes} a message may have", too_large=True)
    fields["n"] = n
    return fields


class TooLarge(Exception):
    pass


def _json_default(value: Any) -> Any:
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()  # an Example
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON (use numbers, strings, bools, None, lists and dicts)")


def encode(value: Any, max_bytes: int) -> bytes:
    data = json.dumps(value, default=_json_default, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    if len(data) > max_bytes:
        raise TooLarge(f"the reply is {len(data)} bytes, more than the {max_bytes} a message may have")
    return data


def answer(compute: Callable[[], Any], max_bytes: int) -> Tuple[str, bytes]:
    """A call's answer frame: ("done", its value) or ("failed", the error it raised)."""
    try:
        value = compute()
        try:
            return "done", encode(value, max_bytes)
        except (TypeError, ValueError) as err:
            raise TypeError(f"its value cannot be sent: {err}") from None
    except BaseException as err:  # noqa: BLE001 (an environment's error of any kind is its call's answer)
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            os._exit(1)
        tb = traceback.format_exception(type(err), err, err.__traceback__)
        error = {"type": type(err).__name__, "message": str(err), "traceback": "".join(tb)[-4000:], "too_large": isinstance(err, TooLarge)}
        return "failed", json.dumps(error, ensure_ascii=False).encode("utf-8", "backslashreplace")


def finite(value: Any, where: str) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} is {value}, not a finite number")
    return value


def zero(buf: bytearray) -> None:
    """Overwrites a buffer that held a call's data before it is let go (see _call_fork.py)."""
    buf[:] = bytes(len(buf))


class FrameReader:
    """Frames from a non-blocking descriptor, read into buffers of exactly their size."""

    def __init__(self, fd: int, max_bytes: int) -> None:
        self.fd = fd
        self.max_bytes = max_bytes
        self.fields: Optional[Dict[str, Any]] = None
        self.buf = bytearray(HEADER)
        self.got = 0

    def read(self) -> Tuple[Optional[Tuple[Dict[str, Any], bytearray]], bool]:
        """One read: (a whole frame or None, whether the descriptor reached its end)."""
        view = memoryview(self.buf)[self.got :]
        try:
            n = os.readv(self.fd, [view]) if len(view) else 0
        except (BlockingIOError, InterruptedError):
            return None, False
        finally:
            view.release()
        if n == 0 and len(self.buf) > self.got:
            return None, True
        self.got += n
        if self.got < len(self.buf):
            return None, False
        if self.fields is None:
            self.fields = parse_header(bytes(self.buf), self.max_bytes)
            self.buf = bytearray(self.fields["n"])
            self.got = 0
            if self.fields["n"] > 0:
                return None, False
        done = (self.fields, self.buf)
        self.fields, self.buf, self.got = None, bytearray(HEADER), 0
        return done, False

    def discard(self) -> None:
        zero(self.buf)


def read_frame(fd: int, max_bytes: int) -> Tuple[Dict[str, Any], bytes]:
    """One whole frame from a blocking descriptor (a child reading what its server sends)."""
    fields = parse_header(_read_exact(fd, HEADER), max_bytes)
    return fields, _read_exact(fd, fields["n"])


def _read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n > 0:
        c = os.read(fd, min(n, 1 << 20))
        if not c:
            raise EOFError
        chunks.append(c)
        n -= len(c)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
