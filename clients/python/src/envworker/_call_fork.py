"""The worker's fork server: every call that hands the environment model output (respond, a
reward, a tool) runs in a child forked for it, so that whatever one call does with the model's text
(a reward that execs the completion, a library that evals it: sympy's ``parse_expr``) ends with its
process. No later call, of the same client or another, runs where it ran.

What keeps a call to its own data:

- this process never parses a forked call's data, nor runs environment code on it: it reads the
  frame's body into a buffer of exactly its size (_frames.FrameReader), forks (the child inherits
  the buffer), and zeroes its own copy; what children send is relayed the same way. Every buffer
  that held a call's bytes is zeroed before it is let go, and a new child zeroes its copies of the
  ones still queued for others (``_scrub``): no child finds another call's bytes in its memory;
- a child keeps only its own pipes and stderr; it cannot write on the server's channel, and the
  frames it sends are relayed under its own call's id (it cannot answer for another call);
- neither this process nor its children are dumpable (no ptrace, no /proc/<pid>/mem of another
  process of the uid), and a child's seccomp filter lets it signal or re-limit only itself
  (_seccomp.py): it cannot kill this process or a sibling.

Calls that carry no model output (dataset, generate, system_prompt, max_turns: functions of the
client's args) run here, one at a time, so that what they build (reasoning-gym's datasets, kept per
args) is there, copy-on-write, for every child after them.
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import sys
import time
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from ._frames import FrameReader, ProtocolError, answer, frame, header, zero
from ._seccomp import prctl

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4

#: The methods whose calls are forked: the ones whose inputs hold model output.
FORKED = frozenset({"respond", "reward", "tool"})

#: An inline call that left this many more objects allocated built something later calls use
#: (reasoning-gym's datasets, kept per args): the spare forked before it is replaced by one that
#: has it. (A drawn item kept is a few hundred; a dataset, tens of thousands.)
INLINE_BUILDS_BLOCKS = 20_000

#: A spare's fork slower than this has lost its huge pages (1.9 ms with them, 6-14 without);
#: they are collapsed again at most every RECOLLAPSE_S.
SLOW_FORK_S = 0.004
RECOLLAPSE_S = 5.0

#: A call still running after this long is said to have started (its pid: the server's run clock
#: reads its child's waits for a CPU): most calls are answered first, and spare the server a message.
STARTED_AFTER_S = 0.05

#: A call still running after this long runs at a lower CPU priority (niceness YIELD_BY more): short
#: calls, another client's step among them, then win a busy CPU from a client's stalling answers.
#: Its deadline is on the run clock, which does not count time spent waiting for a CPU. (A child
#: cannot undo it: raising a priority needs a privilege it has not.)
YIELD_AFTER_S = 0.5
YIELD_BY = 10

#: The descriptors a child keeps: its requests (sandbox results) on 0, stderr on 1 and 2 (the
#: environment's print()), its frames to this process on 3.
CHILD_IN, CHILD_OUT = 0, 3


class _Out:
    """Bytes queued for a descriptor, written as it takes them; a call's buffers zeroed once sent."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.items: Deque[Tuple[Any, int, bool]] = deque()

    def push(self, data: Any, scrub: bool) -> None:
        self.items.append((data, 0, scrub))

    def flush(self) -> bool:
        """Writes what the descriptor takes now; False when it is broken."""
        while self.items:
            data, at, scrub = self.items[0]
            try:
                with memoryview(data) as view:
                    n = os.write(self.fd, view[at:])
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                return False
            if at + n < len(data):
                self.items[0] = (data, at + n, scrub)
                return True
            self.items.popleft()
            if scrub:
                zero(data)
        return True

    def drop(self) -> None:
        for data, _, scrub in self.items:
            if scrub:
                zero(data)
        self.items.clear()


class _Child:
    def __init__(self, call: int, pid: int, to_child: int, from_child: int, max_bytes: int) -> None:
        self.call = call
        self.pid = pid
        #: When its call was handed over; its `started` is sent once it has run STARTED_AFTER_S.
        self.since = 0.0
        self.told = False
        self.yielded = False
        self.out = _Out(to_child)
        self.reader = FrameReader(from_child, max_bytes)


def _nonblocking(fd: int) -> None:
    os.set_blocking(fd, False)


class ForkServer:
    """
    The loop: frames from the server on stdin, children's frames on their pipes, everything out on
    stdout. `run_inline(method, params)` answers a call that is not forked (its value, or raises);
    `run_child(first)` is a child's whole life (it never returns): `first` is its call's method and
    body, or None for a spare, which reads them as a frame on its stdin.
    """

    def __init__(self, server_in: int, server_out: int, max_bytes: int, run_inline: Callable[[str, Any], Any], run_child: Callable[[Optional[Tuple[str, bytearray]]], None]) -> None:
        self.max_bytes = max_bytes
        self.run_inline = run_inline
        self.run_child = run_child
        self.server = FrameReader(server_in, max_bytes)
        self.out = _Out(server_out)
        self.children: Dict[int, _Child] = {}
        #: A child forked ahead, hardened and waiting on its pipe for the next forked call.
        self.spare: Optional[_Child] = None
        #: When the heap's huge pages were last collapsed (huge_pages).
        self.collapsed_at = 0.0
        #: Children killed and not yet reaped (an exit's teardown is not waited for on the loop).
        self.dying: Dict[int, Optional[Callable[[int], None]]] = {}
        self.sel = selectors.DefaultSelector()
        _nonblocking(server_in)
        _nonblocking(server_out)
        self.sel.register(server_in, selectors.EVENT_READ, None)

    # -- sending --------------------------------------------------------------------------------

    def send(self, fields: Dict[str, Any], body: Any = b"", scrub: bool = False) -> None:
        self.out.push(header({**fields, "n": len(body)}), False)
        if len(body):
            self.out.push(body, scrub)

    def send_json(self, fields: Dict[str, Any], value: Any) -> None:
        self.send(fields, json.dumps(value, separators=(",", ":")).encode())

    # -- the loop -------------------------------------------------------------------------------

    def serve(self) -> None:
        prctl(PR_SET_DUMPABLE, 0)
        huge_pages()
        self.collapsed_at = time.perf_counter()
        while True:
            self._want_writes()
            ready = self.sel.select(0)
            if not ready:
                self._keep_spare()
                self._want_writes()
                ready = self.sel.select(self._timeout())
            self._reap()
            self._tell_started()
            for key, events in ready:
                child: Optional[_Child] = key.data
                if events & selectors.EVENT_WRITE:
                    if child is None:
                        if not self.out.flush():
                            os._exit(0)  # the server went away
                    elif not child.out.flush():
                        child.out.drop()
                if events & selectors.EVENT_READ:
                    if child is None:
                        self._from_server()
                    elif child.call in self.children:
                        self._from_child(child)

    def _timeout(self) -> Optional[float]:
        """How long the loop may sleep: until a child is to be reaped or a call is to be said started."""
        waits = [0.02] if self.dying else []
        now = time.perf_counter()
        waits += [max(0.0, c.since + STARTED_AFTER_S - now) for c in self.children.values() if not c.told]
        waits += [max(0.0, c.since + YIELD_AFTER_S - now) for c in self.children.values() if not c.yielded]
        return min(waits) if waits else None

    def _tell_started(self) -> None:
        """Says which process runs each call past STARTED_AFTER_S; lowers the priority of those past YIELD_AFTER_S."""
        now = time.perf_counter()
        for child in self.children.values():
            if not child.told and now - child.since >= STARTED_AFTER_S:
                child.told = True
                self.send({"t": "started", "id": child.call, "pid": child.pid})
            if not child.yielded and now - child.since >= YIELD_AFTER_S:
                child.yielded = True
                try:
                    os.setpriority(os.PRIO_PROCESS, child.pid, min(19, os.getpriority(os.PRIO_PROCESS, child.pid) + YIELD_BY))
                except OSError:
                    pass  # it has just ended

    def _want_writes(self) -> None:
        def want(fd: int, writing: bool, reading: bool, data: Any) -> None:
            events = (selectors.EVENT_WRITE if writing else 0) | (selectors.EVENT_READ if reading else 0)
            try:
                key = self.sel.get_key(fd)
            except KeyError:
                if events:
                    self.sel.register(fd, events, data)
                return
            if not events:
                self.sel.unregister(fd)
            elif key.events != events:
                self.sel.modify(fd, events, data)

        want(self.out.fd, bool(self.out.items), False, None)
        for child in self.children.values():
            want(child.out.fd, bool(child.out.items), False, child)

    def _from_server(self) -> None:
        try:
            got, ended = self.server.read()
        except ProtocolError:
            os._exit(2)  # the server's own channel is broken: nothing here can be trusted to go on
        if ended:
            os._exit(0)
        if got is None:
            return
        fields, body = got
        t, call = fields.get("t"), fields.get("id")
        if t == "call" and isinstance(call, int):
            method = str(fields.get("method"))
            if method in FORKED:
                self._fork(call, method, body)
            else:
                self._inline(call, method, body)
        elif t in ("sandbox-result", "sandbox-error") and isinstance(call, int):
            child = self.children.get(call)
            if child is None:
                zero(body)
                return
            child.out.push(header({"t": t, "sid": fields.get("sid"), "n": len(body)}), False)
            child.out.push(body, True)
        elif t == "kill" and isinstance(call, int):
            child = self.children.get(call)
            if child is not None:
                self._end(child)

    def _inline(self, call: int, method: str, body: bytearray) -> None:
        try:
            params = json.loads(bytes(body)) if body else {}
        finally:
            zero(body)
        blocks = sys.getallocatedblocks()
        self.reply(call, lambda: self.run_inline(method, params))
        if sys.getallocatedblocks() - blocks > INLINE_BUILDS_BLOCKS:
            self._retire_spare()

    def reply(self, call: int, compute: Callable[[], Any]) -> None:
        """Answers call `call` with what `compute()` gives (done) or raises (failed)."""
        t, data = answer(compute, self.max_bytes)
        self.send({"t": t, "id": call}, data)

    # -- children -------------------------------------------------------------------------------

    def _fork(self, call: int, method: str, body: bytearray) -> None:
        child, self.spare = self.spare, None
        if child is not None:
            # The spare was forked before this call's bytes arrived: they reach it on its pipe.
            child.out.push(header({"t": "call", "method": method, "n": len(body)}), False)
            child.out.push(body, True)
        else:
            child = self._spawn((method, body))
            zero(body)
        child.call = call
        child.since = time.perf_counter()
        self.children[call] = child
        self.sel.register(child.reader.fd, selectors.EVENT_READ, child)

    def _spawn(self, first: Optional[Tuple[str, bytearray]]) -> _Child:
        """A new child: for the call `first` (its bytes inherited), or a spare (None) that waits for one."""
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        parent = os.getpid()
        # The objects made so far stay out of the children's collections: a collection that walked
        # them would copy every page they sit on (each a copy-on-write fault) in every child.
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            try:
                self._become_child(parent, to_r, from_w, first[1] if first else None)
                self.run_child(first)
            finally:
                os._exit(1)
        os.close(to_r)
        os.close(from_w)
        for fd in (to_w, from_r):
            _nonblocking(fd)
        return _Child(-1, pid, to_w, from_r, self.max_bytes)

    def _keep_spare(self) -> None:
        """
        Forks a spare while nothing waits, no call runs and nothing is to be sent: a call then pays
        for no fork (2-14 ms for reasoning-gym's worker here), and a fork never holds up the answer
        of a call under way.
        """
        if self.spare is None and not self.children and not self.out.items:
            started = time.perf_counter()
            self.spare = self._spawn(None)
            # The process's own writes split its huge pages over time (each a page table to copy
            # again): a fork grown slow gets them collapsed again, at most every few seconds.
            now = time.perf_counter()
            if now - started > SLOW_FORK_S and now - self.collapsed_at > RECOLLAPSE_S:
                huge_pages()
                self.collapsed_at = time.perf_counter()

    def _retire_spare(self) -> None:
        """After an inline call that built something (a dataset, kept per args): the next spare has it."""
        if self.spare is not None:
            spare, self.spare = self.spare, None
            self.children[-1] = spare
            self._end(spare)
        huge_pages()

    def _become_child(self, parent: int, to_r: int, from_w: int, own: Optional[bytearray]) -> None:
        """In a new child, before any of its call's own code runs."""
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)  # the fork server is already gone
        self._scrub(own)
        keep = [os.dup(to_r), os.dup(2), os.dup(2), os.dup(from_w)]
        for i, fd in enumerate(keep):
            os.dup2(fd, i)
        os.closerange(len(keep), _max_fd())
        os.set_blocking(CHILD_IN, True)
        os.set_blocking(CHILD_OUT, True)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    def _scrub(self, own: bytearray) -> None:
        """Zeroes this child's copies of every buffer that holds another call's bytes."""
        self.out.drop()
        for child in [*self.children.values(), *([self.spare] if self.spare else [])]:
            child.out.drop()
            child.reader.discard()
        if self.server.buf is not own:
            self.server.discard()
        self.children = {}
        self.spare = None
        self.dying = {}
        self.sel = None  # type: ignore[assignment]

    def _from_child(self, child: _Child) -> None:
        try:
            got, ended = child.reader.read()
        except ProtocolError as err:
            self._crashed(child, str(err), "TOO_LARGE" if err.too_large else "CRASHED")
            return
        if ended:
            # Its exit status says why: the answer waits for its reaping.
            call = child.call
            self._end(child, lambda status: self._crashed(None, f"the call's process died ({_how(status)})", "CRASHED", call=call))
            return
        if got is None:
            return
        fields, body = got
        t = fields.get("t")
        if t in ("done", "failed"):
            self.send({"t": t, "id": child.call}, body, scrub=True)
            self._end(child)
        elif t == "sandbox" and isinstance(fields.get("sid"), int) and not isinstance(fields.get("sid"), bool):
            self.send({"t": "sandbox", "id": child.call, "sid": fields["sid"]}, body, scrub=True)
        else:
            zero(body)
            self._crashed(child, "it wrote something that is not a protocol message", "CRASHED")

    def _crashed(self, child: Optional[_Child], message: str, reason: str, call: Optional[int] = None) -> None:
        if child is not None:
            call = child.call
            self._end(child)
        self.send_json({"t": "crashed", "id": call}, {"reason": reason, "message": message})

    def _end(self, child: _Child, then: Optional[Callable[[int], None]] = None) -> None:
        """Kills a child, lets go of its pipes and zeroes what it had queued; `then(status)` once reaped."""
        if self.children.pop(child.call, None) is None:
            return
        try:
            self.sel.unregister(child.reader.fd)
        except (KeyError, ValueError):
            pass
        try:
            self.sel.unregister(child.out.fd)
        except (KeyError, ValueError):
            pass
        child.out.drop()
        child.reader.discard()
        for fd in (child.out.fd, child.reader.fd):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.dying[child.pid] = then

    def _reap(self) -> None:
        for pid in list(self.dying):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, -1
            if done == pid:
                then = self.dying.pop(pid)
                if then is not None:
                    then(status)


_HUGE = 2 << 20
MADV_HUGEPAGE, MADV_COLLAPSE = 14, 25


def huge_pages() -> None:
    """
    Backs this process's heap with huge pages where the kernel allows (MADV_COLLAPSE, Linux 6.1+):
    fork copies a page table entry per page, and on these VMs that was most of a call's cost
    (reasoning-gym's worker, 113 MB: fork 6-14 ms with 4 KiB pages, 1.9 ms once collapsed). A
    child's write into a shared huge page copies 4 KiB of it, as before. Elsewhere nothing changes.
    """
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as f:
            maps = f.read().splitlines()
    except (OSError, AttributeError):
        return
    for line in maps:
        parts = line.split()
        # Private writable memory of no file: the heap and anonymous mappings (Python's arenas).
        if len(parts) < 2 or not parts[1].startswith("rw") or parts[1][3] != "p" or (len(parts) > 5 and parts[5] != "[heap]"):
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        start, end = (lo + _HUGE - 1) & ~(_HUGE - 1), hi & ~(_HUGE - 1)
        if end - start >= _HUGE and madvise(start, end - start, MADV_HUGEPAGE) == 0:
            madvise(start, end - start, MADV_COLLAPSE)


def _how(status: int) -> str:
    if status < 0:
        return "unknown"
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _max_fd() -> int:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if 0 < soft < 1 << 20 else 1 << 16


def child_frames(out_fd: int = CHILD_OUT) -> Callable[[Dict[str, Any], bytes], None]:
    """How a child sends a frame to its fork server."""
    from ._frames import write_all

    def send(fields: Dict[str, Any], body: bytes) -> None:
        write_all(out_fd, frame(fields, body))

    return send


__all__: List[str] = ["ForkServer", "FORKED", "CHILD_IN", "CHILD_OUT", "child_frames"]
