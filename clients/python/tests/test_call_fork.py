"""The worker's fork server (envworker._call_fork) and its children's seccomp filter
(envworker._seccomp), in this process: what a call's child may do to the processes beside it, and
the zeroing of every buffer that held a call's bytes. The server-level proof is
test/python/python-call-isolation.test.ts in the repository."""

import os
import platform
import signal
import unittest

import _support  # noqa: F401  (puts ../src on sys.path)

from envworker import _seccomp
from envworker._call_fork import _Out
from envworker._frames import HEADER, FrameReader, ProtocolError, frame


def in_child(body):
    """Runs `body()` in a forked child; its return value (a short string) comes back."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.write(w, str(body()).encode())
        finally:
            os._exit(0)
    os.close(w)
    out = os.read(r, 4096).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return out


@unittest.skipUnless(platform.machine() in ("x86_64", "aarch64"), "the filter exists for x86-64 and arm64 only")
class SeccompTest(unittest.TestCase):
    def test_a_child_may_signal_and_relimit_only_itself(self):
        parent = os.getpid()

        prepared = _seccomp.Prepared()  # built in the parent, as the fork server does

        def probe():
            prepared.install()
            seen = []
            for name, call in [
                ("kill parent", lambda: os.kill(parent, 0)),
                ("kill group", lambda: os.kill(0, 0)),
                ("kill all", lambda: os.kill(-1, 0)),
                ("prlimit parent", lambda: __import__("resource").prlimit(parent, __import__("resource").RLIMIT_NOFILE)),
                ("kill self", lambda: os.kill(os.getpid(), 0)),
                ("prlimit self", lambda: __import__("resource").prlimit(0, __import__("resource").RLIMIT_NOFILE)),
            ]:
                try:
                    call()
                    seen.append(f"{name}: ok")
                except PermissionError:
                    seen.append(f"{name}: refused")
            return "; ".join(seen)

        self.assertEqual(
            in_child(probe),
            "kill parent: refused; kill group: refused; kill all: refused; prlimit parent: refused; kill self: ok; prlimit self: ok",
        )
        os.kill(parent, 0)  # this process is untouched by its child's filter

    def test_a_prepared_filter_is_the_childs_own_once_installed(self):
        prepared = _seccomp.Prepared()

        def installed():
            prepared.install()
            return repr([(f.code, f.jt, f.jf, f.k) for f in prepared.filters]) == repr(_seccomp.program(os.getpid()))

        self.assertEqual(in_child(lambda: str(installed())), "True")


class BuffersTest(unittest.TestCase):
    def test_a_call_buffer_is_zeroed_once_written(self):
        r, w = os.pipe()
        try:
            body = bytearray(b"the model's text")
            out = _Out(w)
            out.push(b"header", False)
            out.push(body, True)
            self.assertTrue(out.flush())
            self.assertEqual(os.read(r, 100), b"headerthe model's text")
            self.assertEqual(bytes(body), bytes(len(body)))
        finally:
            os.close(r)
            os.close(w)

    def test_dropped_buffers_are_zeroed_too(self):
        out = _Out(-1)
        body = bytearray(b"secret")
        out.push(body, True)
        out.drop()
        self.assertEqual(bytes(body), bytes(6))

    def test_frames_are_read_to_their_size_and_no_further(self):
        r, w = os.pipe()
        try:
            os.write(w, frame({"t": "call", "id": 1}, b'{"a":1}') + frame({"t": "call", "id": 2}, b"xy"))
            os.set_blocking(r, False)
            reader = FrameReader(r, 1000)
            got = []
            while len(got) < 2:
                f, ended = reader.read()
                self.assertFalse(ended)
                if f:
                    got.append((f[0]["id"], bytes(f[1])))
            self.assertEqual(got, [(1, b'{"a":1}'), (2, b"xy")])
            os.write(w, b"not a frame".ljust(HEADER))
            with self.assertRaises(ProtocolError):
                reader.read()
            os.write(w, frame({"t": "done", "n": 0}).replace(b'"n":0', b'"n":9999'))
            with self.assertRaises(ProtocolError) as too_large:
                FrameReader(r, 1000).read()
            self.assertTrue(too_large.exception.too_large)
        finally:
            os.close(r)
            os.close(w)


if __name__ == "__main__":
    unittest.main()
