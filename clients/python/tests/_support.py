"""Test support: the package from ../src (nothing needs installing), a real envworker server as a
subprocess, a scripted fake HTTP server for the connection-failure cases, and gold answers.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

CLIENT_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = CLIENT_DIR.parent.parent
SRC = CLIENT_DIR / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

START_TIMEOUT_S = 60.0
_URL_LINE = re.compile(r"envworker serving (\d+) environment\(s\) on (http://\S+)")


class EnvworkerServer:
    """``node bin/envworker.js serve --port 0`` from the repository root, in its own process
    group; :meth:`stop` ends that group (the CLI may re-execute itself as a child)."""

    def __init__(self, *envs: str, extra_env: Optional[Dict[str, str]] = None, start_timeout: float = START_TIMEOUT_S) -> None:
        self.envs = envs
        self.extra_env = extra_env or {}
        self.start_timeout = start_timeout
        self.url = ""
        self.proc: Optional[subprocess.Popen[str]] = None
        self._stdout: "queue.Queue[Optional[str]]" = queue.Queue()
        self._stderr: List[str] = []

    def start(self) -> str:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH: the client tests run a real envworker server")
        entry = REPO_ROOT / "bin" / "envworker.js"
        if not entry.exists():
            raise RuntimeError(f"{entry} not found: the tests expect to live in clients/python of the repository")
        env = dict(os.environ)
        env.pop("PORT", None)
        env.pop("HOST", None)
        env.update(self.extra_env)
        # The flag bin/envworker.js would otherwise re-execute itself to add (isolated-vm's
        # --no-node-snapshot), so the process started is the server itself
        # (test/helpers/serve-process.ts SERVER_NODE_FLAGS). `npm test` builds dist/ first, so it
        # runs the compiled code of these sources; with a stale dist/ it runs the sources through
        # tsx (and re-executes itself to add the condition that resolves "envworker" to src/).
        cmd = [node, "--no-node-snapshot", str(entry), "serve", "--host", "127.0.0.1", "--port", "0", *self.envs]
        self.proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
        )
        threading.Thread(target=self._pump, args=(self.proc.stdout, self._stdout.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self._stderr.append), daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stop()
                raise RuntimeError(f"envworker did not print its URL within {self.start_timeout} s:\n{self.stderr()}")
            try:
                line = self._stdout.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if line is None:
                code = self.proc.wait(5)
                raise RuntimeError(f"envworker exited ({code}) before serving:\n{self.stderr()}")
            m = _URL_LINE.search(line)
            if m:
                self.url = m.group(2)
                # Keep draining stdout so the server never blocks on a full pipe.
                threading.Thread(target=self._drain_stdout, daemon=True).start()
                return self.url

    @staticmethod
    def _pump(stream: Any, sink: Callable[[Any], None]) -> None:
        for line in stream:
            sink(line)
        sink(None)

    def _drain_stdout(self) -> None:
        while self._stdout.get() is not None:
            pass

    def stderr(self) -> str:
        return "".join(s for s in self._stderr if s)

    def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(5)
        finally:
            for stream in (proc.stdout, proc.stderr):
                try:
                    stream.close()  # type: ignore[union-attr]
                except Exception:
                    pass


# -- the interpreter of the server's Python environment workers (src/node/python-envs/settings.ts) ---------


def others_can_read(path: str) -> bool:
    """Whether a user of its own (a Python worker's, when the server runs as root) can read
    ``path``: the file (and what its symlinks point to) and every folder above it."""
    for p in {os.path.abspath(path), os.path.realpath(path)}:
        try:
            if not os.stat(p).st_mode & 0o004:
                return False
            d = os.path.dirname(p)
            while d != "/":
                if not os.stat(d).st_mode & 0o001:
                    return False
                d = os.path.dirname(d)
        except OSError:
            return False
    return True


def python_workers_env() -> Dict[str, str]:
    """What to add to the server's environment so its Python workers run on an interpreter they can
    read: as root, ``ENVWORKER_PYTHON=python3`` (the first one on PATH the workers' user can read;
    CI's trainer venv is under $HOME, which they cannot) unless ENVWORKER_PYTHON is already a
    path they can read (a venv under /var/cache). Otherwise nothing (as test/helpers/python-workers.ts)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return {}
    given = os.environ.get("ENVWORKER_PYTHON", "")
    if "/" in given and others_can_read(given):
        return {}
    return {"ENVWORKER_PYTHON": "python3"}


def worker_interpreter(extra_env: Dict[str, str]) -> Optional[str]:
    """The interpreter the server will run its Python workers on, given ``extra_env``: as
    src/node/python-envs/settings.ts picks it (ENVWORKER_PYTHON, default python3; a name is looked up on
    PATH, passing over, as root, the ones the workers' user cannot read). None when there is none."""
    name = extra_env.get("ENVWORKER_PYTHON") or os.environ.get("ENVWORKER_PYTHON") or "python3"
    if "/" in name:
        return name if os.path.exists(name) else None
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    for folder in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        candidate = os.path.join(folder, name)
        if not os.path.exists(candidate):
            continue
        try:
            out = subprocess.run([candidate, "-I", "-c", "import sys; print(sys.executable)"], capture_output=True, text=True, timeout=60, env={"PATH": os.environ.get("PATH", "")})
        except (OSError, subprocess.TimeoutExpired):
            continue
        executable = out.stdout.strip()
        if out.returncode == 0 and executable and (not root or others_can_read(executable)):
            return executable
    return None


def interpreter_imports(python: Optional[str], module: str) -> bool:
    """Whether ``python`` (isolated, as a worker's user would: no user site-packages) imports ``module``."""
    if python is None:
        return False
    try:
        return subprocess.run([python, "-I", "-c", f"import {module}"], stdin=subprocess.DEVNULL, capture_output=True, timeout=180).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# -- gold answers, from the prompts (as test/helpers/oracles.ts) ---------------------------------


def reverse_text_gold(messages: List[Dict[str, Any]]) -> str:
    text = next(m for m in reversed(messages) if m["role"] == "user")["content"]
    return f"<reversed_text>{text[::-1]}</reversed_text>"


def _sort_key(name: str, by_first: bool) -> str:
    cut = len(name)
    for i in range(1, len(name)):
        if name[i].isupper():
            cut = i
            break
    return name[:cut] if by_first else name[cut:]


def alphabet_sort_gold(history: List[Dict[str, Any]]) -> str:
    users = [m["content"] for m in history if m["role"] == "user"]
    turn = sum(1 for m in history if m["role"] == "assistant")

    def parse(text: str) -> "tuple[bool, List[str]]":
        m = re.search(r"by (FIRST|LAST) name: (.*)", text)
        assert m, text
        return m.group(1) == "FIRST", [s.strip() for s in m.group(2).split(", ")]

    seen: List[str] = []
    for text in users[:turn]:
        seen.extend(parse(text)[1])
    by_first, current = parse(users[turn])
    everything = sorted(seen + current, key=lambda n: _sort_key(n, by_first))
    fresh = set(current)
    tag = "alphabetical_sorted" if turn == 0 else "combined_alphabetical_sorted"
    lines = [f"{n} // new name!" if turn > 0 and n in fresh else n for n in everything]
    return f"<{tag}>\n" + "\n".join(lines) + f"\n</{tag}>"


# -- a scripted HTTP/1.1 server for failures a real server does not produce on demand ----------


@dataclass
class Request:
    method: str
    path: str
    headers: Dict[str, str]
    body: bytes
    connection: int

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Reply:
    status: int = 200
    body: Any = field(default_factory=dict)
    raw: Optional[bytes] = None
    headers: Dict[str, str] = field(default_factory=dict)
    #: Close the connection after replying (without saying so in a header).
    close_after: bool = False
    #: Close the connection without replying.
    drop: bool = False
    #: Never reply (until the server stops).
    hang: bool = False


def step_json(episode_id: str = "ep1", done: bool = False, reward: Optional[float] = None) -> Dict[str, Any]:
    return {
        "observation": {"messages": [{"role": "user", "content": "hi"}], "turn": 0, "truncated": False},
        "reward": reward,
        "done": done,
        "episode_id": episode_id,
    }


def default_reply(req: Request) -> Reply:
    if req.path.endswith("/reset"):
        return Reply(body=step_json())
    if req.path.endswith("/step"):
        return Reply(body=step_json(done=True, reward=1.0))
    if "/state" in req.path:
        return Reply(body={"episode_id": "ep1", "step_count": 0, "done": False})
    if req.path.endswith("/close"):
        return Reply(body={"episode_id": "ep1", "closed": True})
    return Reply(body={"status": "healthy"})


class FakeServer:
    """Answers each request with ``script(request, n)`` (n counts requests from 0)."""

    def __init__(self, script: Callable[[Request, int], Reply] = lambda r, n: default_reply(r), keep_alive: Optional[str] = None) -> None:
        self.script = script
        self.keep_alive = keep_alive
        self.requests: List[Request] = []
        self.connections = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conns: List[socket.socket] = []
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> "FakeServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        with self._lock:
            for c in self._conns:
                try:
                    c.close()
                except OSError:
                    pass

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                index = self.connections
                self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn, index), daemon=True).start()

    def _serve(self, conn: socket.socket, index: int) -> None:
        f = conn.makefile("rb")
        try:
            while not self._stop.is_set():
                line = f.readline()
                if not line:
                    return
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers: Dict[str, str] = {}
                while True:
                    h = f.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                n = int(headers.get("content-length", "0"))
                body = f.read(n) if n else b""
                req = Request(method, path, headers, body, index)
                with self._lock:
                    number = len(self.requests)
                    self.requests.append(req)
                reply = self.script(req, number)
                if reply.hang:
                    self._stop.wait(10)
                    return
                if reply.drop:
                    return
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                head = [f"HTTP/1.1 {reply.status} X", f"Content-Length: {len(payload)}"]
                if reply.raw is None:
                    head.append("Content-Type: application/json")
                if self.keep_alive:
                    head.append(f"Keep-Alive: {self.keep_alive}")
                head.extend(f"{k}: {v}" for k, v in reply.headers.items())
                conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
                if reply.close_after:
                    return
        except OSError:
            return
        finally:
            try:
                f.close()
                conn.close()
            except OSError:
                pass


def free_port() -> int:
    """A port with nothing listening (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# -- trainer packages: skipped where absent, failed where this venv must have them ----------------

#: A trainers venv (scripts/trainers-venv.sh) lists the distributions it pins directly here.
TRAINERS_MARKER = "envworker-trainers.txt"


def required_trainers() -> "set[str]":
    """Distributions this interpreter must have: those its trainers venv pins directly (the
    marker file in ``sys.prefix``), and ``ENVWORKER_REQUIRE_TRAINERS`` (names, comma-separated)."""
    names = {n.strip().lower() for n in os.environ.get("ENVWORKER_REQUIRE_TRAINERS", "").split(",") if n.strip()}
    marker = Path(sys.prefix) / TRAINERS_MARKER
    if marker.exists():
        names |= {line.strip().lower() for line in marker.read_text().splitlines() if line.strip() and not line.startswith("#")}
    return names


def trainer_missing(distribution: str, *modules: str, why: str = "") -> str:
    """"" when ``modules`` import (default: the distribution's name as a module); else why not,
    to skip with. Where this venv is required to hold ``distribution`` (:func:`required_trainers`),
    a missing one is an error instead: the suite fails rather than skip what CI must test."""
    import importlib.util

    missing = []
    for module in modules or (distribution.replace("-", "_"),):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            missing.append(module)
    if not missing:
        return ""
    reason = f"{distribution} is not installed (no {', '.join(missing)}){': ' + why if why else ''}"
    if distribution.lower() in required_trainers():
        raise RuntimeError(f"{reason}; this Python ({sys.prefix}) must have it: its trainers venv pins {distribution} (envworker-trainers.txt), or ENVWORKER_REQUIRE_TRAINERS names it")
    return reason
