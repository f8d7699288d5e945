"""The zygotes' one wait for a child's result on its run clock (zygote/core/run_clock.py,
used by the Python zygote and QuickJS's), against real forked children: a result read whole, a run
stopped at its limit (a sleeping child and a spinning one), QuickJS's grace after the limit, a cancel
from the server, a child that sends more than its run allows. Pure standard library (Linux /proc);
the zygotes themselves are tested from vitest (test/sandbox/sandbox-quickjs-zygote.test.ts,
test/sandbox/python-zygote-escape.test.ts, test/sandbox/run-clock.test.ts)."""

from __future__ import annotations

import json
import os
import struct
import sys
import time
import unittest

from _support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "zygote"))

LINUX = sys.platform.startswith("linux")
if LINUX:
    from core import channel, forking, run_clock  # noqa: E402


def fork_child(body):
    """A child running body(result_fd); the zygote's view of it (forking.Child)."""
    request_r, request_w = os.pipe()
    result_r, result_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(result_r)
            body(result_w)
        finally:
            os._exit(0)
    os.close(request_r)
    os.close(result_w)
    return forking.Child(pid, request_w, result_r)


def spin(_fd):
    while True:
        pass


@unittest.skipUnless(LINUX, "the run clock reads /proc")
class WaitForResultTests(unittest.TestCase):
    def setUp(self) -> None:
        # The server's end of the channel: a pipe on this process's fd 0 (SERVER_IN), as a zygote has.
        self.saved_stdin = os.dup(0)
        self.server_r, self.server_w = os.pipe()
        os.dup2(self.server_r, 0)
        self.channel = channel.Channel(lambda: None)
        self.children = []

    def tearDown(self) -> None:
        for child in self.children:
            child.reap()
        os.dup2(self.saved_stdin, 0)
        for fd in (self.saved_stdin, self.server_r, self.server_w):
            os.close(fd)

    def wait(self, body, timeout_ms, bound=1 << 20, at_limit=None, before=None):
        child = fork_child(body)
        self.children.append(child)
        child.close_request()
        if before:
            before(child)
        queued = []
        started = time.monotonic()
        data, error, elapsed = run_clock.wait_for_result(self.channel, child, 7, started, {"timeoutMs": timeout_ms}, bound, queued, "test child", at_limit)
        return data, error, elapsed, queued, time.monotonic() - started

    def test_a_result_is_read_whole(self) -> None:
        data, error, elapsed, _, _ = self.wait(lambda fd: forking.write_all(fd, b"x" * 300_000), 5000)
        self.assertIsNone(error)
        self.assertEqual(data, b"x" * 300_000)
        self.assertLess(elapsed, 5000)

    def test_a_spinning_child_is_stopped_at_its_limit(self) -> None:
        _, error, elapsed, _, wall = self.wait(spin, 300)
        self.assertEqual(error, {"name": "TimeoutError", "message": "execution exceeded the time limit of 300 ms"})
        # Its run clock reached the limit (the wall may be longer on a busy machine: its wait for a CPU is given back).
        self.assertGreaterEqual(elapsed, 300 * 0.5)
        self.assertGreaterEqual(wall, 0.3)

    def test_a_sleeping_child_is_stopped_at_its_limit_too(self) -> None:
        _, error, _, _, wall = self.wait(lambda fd: time.sleep(60), 200)
        self.assertEqual(error["name"], "TimeoutError")
        self.assertLess(wall, run_clock.stretch_cap_s(200))

    def test_at_the_limit_a_grace_once_then_the_stop(self) -> None:
        calls = []

        def at_limit():
            calls.append(time.monotonic())
            return 0.1

        _, error, elapsed, _, _ = self.wait(spin, 200, at_limit=at_limit)
        self.assertEqual(len(calls), 1)
        self.assertEqual(error["name"], "TimeoutError")
        self.assertGreaterEqual(elapsed, 300 * 0.5)

    def test_a_child_answering_within_its_grace_is_not_stopped(self) -> None:
        def body(fd):
            # Spins past its limit, then answers once the zygote's interrupt (here: a byte) comes.
            while not os.read(request_r, 1):
                pass
            forking.write_all(fd, b"interrupted")

        request_r, request_w = os.pipe()
        _, error, _, _, _ = self.wait(body, 200, at_limit=lambda: (os.write(request_w, b"!"), 5)[1])
        os.close(request_r)
        os.close(request_w)
        self.assertIsNone(error)

    def test_a_cancel_of_this_run_ends_the_wait_and_other_requests_are_queued(self) -> None:
        def frames(*messages):
            out = b""
            for m in messages:
                body = json.dumps(m).encode()
                out += struct.pack(">I", len(body)) + body
            return out

        os.write(self.server_w, frames({"type": "run", "id": 8}, {"type": "cancel", "id": 7}))
        _, error, _, queued, _ = self.wait(spin, 60_000)
        self.assertEqual(error["name"], "CancelledError")
        self.assertEqual([q[0] for q in queued], [{"type": "run", "id": 8}])

    def test_a_child_sending_more_than_its_run_allows_is_stopped(self) -> None:
        def flood(fd):
            while True:
                os.write(fd, b"y" * 65536)

        data, error, _, _, _ = self.wait(flood, 60_000, bound=100_000)
        self.assertEqual(error, {"name": "SandboxError", "message": "the test child sent more than its run allows; it was stopped"})
        self.assertGreater(len(data), 100_000)

    def test_the_server_closing_its_end_is_the_zygotes_cue(self) -> None:
        class ServerGone(Exception):
            pass

        def on_eof():
            raise ServerGone  # a zygote ends there (os._exit); here, the test sees it

        self.channel.on_eof = on_eof
        os.close(self.server_w)
        self.server_w = os.open(os.devnull, os.O_RDONLY)  # closed again in tearDown
        with self.assertRaises(ServerGone):
            self.wait(spin, 60_000)


if __name__ == "__main__":
    unittest.main()
