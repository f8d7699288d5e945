# The QuickJS sandbox's host process, instance per run (issue 42; the default on Node): every run is
# a NEW wasm instance of the warm engine's snapshot (qjs_snapshot.py: memory and globals baked into a
# precompiled module, instantiated through an InstancePre with the pooling allocator and
# copy-on-write memory), used once and dropped. The fork zygote (qjs_zygote.py) stays reachable
# (ENVWORKER_QUICKJS_MODE=fork) for comparison.
#
# Started by the server through the confinement launcher (src/wall/confine.ts; the pool:
# src/sandbox/engines/quickjs/quickjs-instances.ts), it speaks the host protocol
# (src/sandbox/host/host-protocol.ts) on stdin/stdout.
#
# Where "nothing a run does is seen by a later run" holds now: at the instance. A guest that broke
# QuickJS owns only its instance's memory, thrown away after its run; the host's own state that
# points into an instance (the engine's cache of interned file names, its memory's address) is reset
# from the snapshot's for every run. A guest that broke wasmtime itself would own this process, so
# the process is the second bound: it serves ONE client (the pool's affinity, never "off"), is
# replaced after a bounded number of runs (the pool) or seconds (MAX_AGE_S here: its last answer
# asks to be replaced), never holds hidden tests (grading runs go to hosts of their own), and is
# hardened as the fork zygote's children were before its first run: seccomp (no new process,
# thread, file, socket, signal to another process, ...), RLIMIT_NPROC 0, RLIMIT_NOFILE at what it
# holds, no new privileges, not dumpable, on top of bubblewrap, its own uid, the empty environment
# and the launcher's rlimits.
#
# Threads: the main thread runs the instances; a watcher thread (started before seccomp, the only
# other) reads the server's channel (runs are queued for the main thread; a cancel of the run under
# way interrupts it) and keeps the run clock (wall time minus the main thread's wait for a CPU,
# /proc/<pid>/task/<tid>/schedstat, as the fork zygote's run clock of its child). At timeoutMs it
# sets the SIGINT bit QuickJS's interrupt handler reads, in the live instance's memory (under the
# lock that the main thread takes to drop an instance); a run that has not ended GRACE_S of run
# clock later (a guest inside one long native call) ends its process: the watcher answers the run
# as a TimeoutError and exits, and the pool starts another host.
#
#   python -I -B qjs_instances.py SNAPSHOT_CWASM SNAPSHOT_JSON [MAX_AGE_S]

import ctypes, gc, json, os, queue, re, resource, select, struct, sys, threading, time

# Started as a script (python -I -B zygote/quickjs/qjs_instances.py): the one entry on the path is
# the zygote folder, whose packages are core/, python/ and quickjs/ (-I leaves this script's own
# folder off the path on Python >= 3.11; where it does not, it is taken off).
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [ROOT] + [p for p in sys.path if p not in (ROOT, HERE)]

from core import harden  # noqa: E402
from core import result as results  # noqa: E402
from core.channel import SERVER_IN, SERVER_OUT  # noqa: E402
from core.forking import PAGE, write_all  # noqa: E402
from core.run_clock import stretch_cap_s  # noqa: E402
from quickjs.qjs_snapshot import SnapshotEngine  # noqa: E402
from quickjs.qjs_zygote import GRACE_S, MAGIC, RESULT_HEAD, Zygote as ForkZygote  # noqa: E402

# The most seconds a host serves: past them its next answer asks to be replaced.
MAX_AGE_S = 600.0
# The time a cancelled run has to stop before its process is ended instead.
CANCEL_GRACE_S = 0.25
CANCELLED = {"name": "CancelledError", "message": "the run was cancelled while running"}
# Tests only (`--test-hooks` in the host's argv, which nothing in src/ passes): `__envworker_corrupt__`
# in a run's code makes the host overwrite its instance's whole memory after the run (what a guest
# that broke QuickJS could do), so a test can see that the next run is whole.
CORRUPT_MARK = "__envworker_corrupt__"
# Tests only too: `/*scan:TOKEN*/` in a run's code makes the host look for TOKEN in its fresh
# instance's memory before the run and in the same memory after it, and append what it found (and
# which host it is) to the run's stderr; a run's code that starts with ESCAPE is host-side Python,
# run in this process as a guest that broke out of QuickJS and wasmtime would (`report` is its answer).
SCAN = re.compile(r"/\*scan:([A-Za-z0-9_-]{8,64})\*/")
ESCAPE = "#escape\n"


_libc = ctypes.CDLL(None, use_errno=True)
_memmem = _libc.memmem
_memmem.restype = ctypes.c_void_p
_memmem.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]


SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1


def seccomp_all_threads():
    """
    harden.py's filter on EVERY thread of this process (seccomp(2) with TSYNC; prctl would filter
    the calling thread only, and the watcher thread is started before it: no thread can be made
    after). The kernel gives the other threads no-new-privileges too. Where the filter or TSYNC is
    not available the host refuses to serve.
    """
    import platform

    nr = SYS_SECCOMP.get(platform.machine())
    if nr is None or harden._PROG is None:
        raise RuntimeError("no seccomp filter for this machine: the QuickJS instance host does not serve unfiltered")
    syscall = _libc.syscall
    syscall.restype = ctypes.c_long
    r = syscall(ctypes.c_long(nr), ctypes.c_long(SECCOMP_SET_MODE_FILTER), ctypes.c_long(SECCOMP_FILTER_FLAG_TSYNC), ctypes.c_void_p(ctypes.addressof(harden._PROG)))
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, "seccomp(TSYNC) failed: %s (thread %d did not sync)" % (os.strerror(e), r) if r > 0 else os.strerror(e))


class Clock:
    """The main thread's /proc schedstat and stat, opened once (no file opens after the hardening)."""

    def __init__(self, tid):
        self.sched = os.open("/proc/self/task/%d/schedstat" % tid, os.O_RDONLY)
        self.stat = os.open("/proc/self/task/%d/stat" % tid, os.O_RDONLY)
        self.statm = os.open("/proc/self/statm", os.O_RDONLY)

    def waited(self):
        try:
            return int(os.pread(self.sched, 128, 0).split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return 0.0

    def ran(self):
        try:
            return int(os.pread(self.sched, 128, 0).split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            return 0.0

    def rss(self):
        try:
            return int(os.pread(self.statm, 128, 0).split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            return 0


class Current:
    """The run under way, as the watcher sees it."""

    def __init__(self, rid, limits, signals, waited0):
        self.rid = rid
        self.limits = limits
        self.signals = signals  # the address of the live instance's pending-signal byte, or None once dropped
        self.started = time.monotonic()
        self.waited0 = waited0
        self.deadline = limits["timeoutMs"] / 1000
        self.cap = stretch_cap_s(limits["timeoutMs"])
        self.interrupted = False  # the time limit
        self.cancelled = False
        self.hard_stop_at = None  # run clock at which the process ends if the run is still going
        self.answered = False


class Host:
    def __init__(self, snapshot, meta, max_age_s, test_hooks):
        self.born = time.monotonic()
        self.host_id = os.urandom(8).hex()
        self.max_age_s = max_age_s
        self.test_hooks = test_hooks
        self.engine = SnapshotEngine(snapshot, meta)
        self.snapshot = os.path.realpath(snapshot)
        self.sigint = self.engine.layout.sigint_mask
        self.lock = threading.Lock()
        self.send_lock = threading.Lock()
        self.current = None
        self.requests = queue.Queue()
        self.cancelled_early = set()
        self.inbuf = bytearray()
        self.clock = Clock(threading.get_native_id())
        # The main thread wakes the watcher through this when a run starts (its poll then has a deadline).
        self.wake_r, self.wake_w = os.pipe()

    # ---- the channel ------------------------------------------------------------------------------

    def send(self, message):
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8", "backslashreplace")
        with self.send_lock:
            write_all(SERVER_OUT, struct.pack(">I", len(body)) + body)

    def frames(self):
        while len(self.inbuf) >= 4:
            n = struct.unpack(">I", self.inbuf[:4])[0]
            if len(self.inbuf) < 4 + n:
                return
            body = bytes(self.inbuf[4 : 4 + n])
            del self.inbuf[: 4 + n]
            yield json.loads(body)

    # ---- the watcher thread -----------------------------------------------------------------------

    def watch(self):
        poller = select.poll()
        poller.register(SERVER_IN, select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        while True:
            timeout_ms = self.check()
            for fd, _ in poller.poll(timeout_ms):
                if fd == self.wake_r:
                    os.read(self.wake_r, 4096)
                    continue
                chunk = os.read(SERVER_IN, 1 << 20)
                if not chunk:
                    os._exit(0)  # the server closed its end
                self.inbuf += chunk
                for message in self.frames():
                    if message.get("type") == "run":
                        self.requests.put(message)
                    elif message.get("type") == "cancel":
                        with self.lock:
                            cur = self.current
                            if cur is not None and cur.rid == message.get("id"):
                                cur.cancelled = True
                                self.interrupt(cur)
                                if cur.hard_stop_at is None:
                                    cur.hard_stop_at = self.run_clock(cur) + CANCEL_GRACE_S
                            else:
                                self.cancelled_early.add(message.get("id"))

    def run_clock(self, cur):
        return time.monotonic() - cur.started - max(0.0, self.clock.waited() - cur.waited0)

    def interrupt(self, cur):
        """Sets the SIGINT bit in the live instance (the caller holds the lock)."""
        if cur.signals is not None:
            byte = ctypes.c_uint8.from_address(cur.signals)
            byte.value = byte.value | self.sigint

    def check(self):
        """The run clock of the run under way: interrupt at its limit, end the process past its grace. The next poll's timeout (ms)."""
        with self.lock:
            cur = self.current
            if cur is None:
                return -1
            wall = time.monotonic() - cur.started
            clock = self.run_clock(cur)
            if cur.hard_stop_at is not None and (clock >= cur.hard_stop_at or wall >= cur.cap + GRACE_S):
                self.stop(cur)
            if not cur.interrupted and (clock >= cur.deadline or wall >= cur.cap):
                cur.interrupted = True
                self.interrupt(cur)
                if cur.hard_stop_at is None:
                    cur.hard_stop_at = cur.deadline + GRACE_S if clock >= cur.deadline else clock + GRACE_S
            target = cur.hard_stop_at if cur.hard_stop_at is not None else cur.deadline
            return max(1, min(int((target - clock) * 1000) + 1, 50))

    def stop(self, cur):
        """A run that did not stop when interrupted: answered here, and this process ends (the pool starts another)."""
        elapsed_ms = max(0.0, self.run_clock(cur) * 1000)
        error = CANCELLED if cur.cancelled else results.timeout_error(cur.limits)
        if not cur.answered:
            cur.answered = True
            try:
                self.send({"type": "result", "id": cur.rid, "result": results.to_run_result(None, "", "", None, cur.limits, elapsed_ms, error), "bytes": self.clock.rss(), "retire": True})
            except OSError:
                pass
        os._exit(0)

    # ---- the main thread --------------------------------------------------------------------------

    def harden(self):
        """This process as the fork zygote's children were (harden.py), before any run."""
        harden.harden_zygote()
        threading.Thread(target=self.watch, name="watcher", daemon=True).start()
        gc.collect()
        gc.freeze()
        # Descriptors: stdio (the server's channel and stderr), the clock's, the wake pipe, and what
        # wasmtime maps the image from (the snapshot file, or a memfd); any other one inherited is
        # closed. No new one can be made: the limit is the lowest free number.
        keep = {0, 1, 2, self.clock.sched, self.clock.stat, self.clock.statm, self.wake_r, self.wake_w}
        for fd in [int(x) for x in os.listdir("/proc/self/fd")]:
            if fd in keep:
                continue
            try:
                target = os.readlink("/proc/self/fd/%d" % fd)
            except OSError:
                continue  # the listing's own descriptor, closed by now
            if target == self.snapshot or target.startswith("/memfd:"):
                keep.add(fd)
            else:
                os.close(fd)
        self.fds = sorted(keep)
        lowest_free = next(n for n in range(len(keep) + 1) if n not in keep)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, lowest_free))
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        harden.prctl(harden.PR_SET_NO_NEW_PRIVS, 1)
        seccomp_all_threads()

    def serve(self):
        # A first instance made and dropped before the hardening (wasmtime's first use of its pool).
        self.engine.fresh()
        self.engine.drop()
        self.harden()
        self.send({"type": "ready", "bytes": self.clock.rss(), "engineBytes": self.engine.image_bytes})
        while True:
            request = self.requests.get()
            rid = request.get("id")
            with self.lock:
                early = rid in self.cancelled_early
                self.cancelled_early.clear()
            options = request.get("options") or {}
            limits = {k: options[k] for k in ("timeoutMs", "memoryMb", "stackKb", "maxOutputBytes")}
            if early:
                result = results.to_run_result(None, "", "", None, limits, 0.0, {"name": "CancelledError", "message": "the run was cancelled before it started"})
            else:
                result = self.run(rid, request.get("code", ""), options, limits)
                if result is None:
                    continue  # answered by the watcher
            retire = time.monotonic() - self.born > self.max_age_s
            self.send({"type": "result", "id": rid, "result": result, "bytes": self.clock.rss(), **({"retire": True} if retire else {})})

    def run(self, rid, code, options, limits):
        engine = self.engine
        if self.test_hooks and code.startswith(ESCAPE):
            return self.escape(code, limits)
        base = engine.fresh()
        scan = SCAN.search(code) if self.test_hooks else None
        if scan:
            found_before = self.find(base, scan.group(1))
        cur = Current(rid, limits, engine.signals_address(base), self.clock.waited())
        with self.lock:
            self.current = cur
            if rid in self.cancelled_early:  # cancelled while its instance was being made
                cur.cancelled = True
                self.interrupt(cur)
                cur.hard_stop_at = CANCEL_GRACE_S
        os.write(self.wake_w, b"r")
        outcome, failure = None, None
        try:
            outcome = engine.run(options, code)
        except Exception as e:  # the engine failed under the host: this run only, and a new host
            failure = {"name": "SandboxError", "message": ("QuickJS failed: %s" % e)[:300]}
        if scan:
            found_after = self.find(base, scan.group(1))
            size = engine.memory.data_len(engine.store)
        if self.test_hooks and CORRUPT_MARK in code:
            self.corrupt(base)
        with self.lock:
            # No write into the instance after this: it is dropped below.
            cur.signals = None
            self.current = None
            answered = cur.answered
            cur.answered = True
        elapsed_ms = max(0.0, self.run_clock(cur) * 1000)
        engine.drop()
        if answered:
            return None
        if cur.cancelled:
            return results.to_run_result(None, "", "", None, limits, elapsed_ms, CANCELLED)
        if failure is not None:
            self.born = -1e9  # replaced after this answer
            return results.to_run_result(None, "", "", None, limits, elapsed_ms, failure)
        header = {"interrupted": outcome.interrupted, "memoryRefused": outcome.memory_refused, "hostError": outcome.host_error, "heldBytes": outcome.held_bytes}
        head = json.dumps(header).encode()
        report = outcome.report or b""
        data = RESULT_HEAD.pack(MAGIC, len(head), len(report)) + head + report
        result = ForkZygote.from_child(None, data, None, limits, elapsed_ms, cur.interrupted)
        if scan:
            result["stderr"] += "[scan before=%d after=%d size=%d host=%s]" % (found_before, found_after, size, self.host_id)
        return result

    def find(self, base, token):
        """Whether `token` is anywhere in the instance's memory (memmem over it: no copy)."""
        data = token.encode()
        return int(bool(_memmem(base, self.engine.memory.data_len(self.engine.store), data, len(data))))

    def escape(self, code, limits):
        """Tests only: host-side Python in this process (after its hardening), as an escaped guest would run it."""
        scope = {"host": self, "report": None}
        try:
            exec(compile(code, "<escape>", "exec"), scope)
            value = json.loads(json.dumps(scope["report"]))
            return results.to_run_result(json.dumps({"status": "ok", "result": value, "error": None}).encode(), "", "", None, limits, 0.0, None)
        except BaseException as e:  # noqa: the escape's own failure
            return results.to_run_result(None, "", "", None, limits, 0.0, {"name": "EscapeError", "message": repr(e)[:500]})

    def corrupt(self, base):
        """Tests only: after its run, the whole of the instance's memory overwritten (QuickJS's heap,
        its runtime and contexts, the prelude, the helpers, the stack): what a guest that took over
        QuickJS could do to it at worst. Nothing of it may reach the next run."""
        ctypes.memset(base, 0xA5, self.engine.memory.data_len(self.engine.store))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) not in (2, 3):
        sys.stderr.write("usage: qjs_instances.py SNAPSHOT_CWASM SNAPSHOT_JSON [MAX_AGE_S] [--test-hooks]\n")
        os._exit(2)
    host = Host(args[0], args[1], float(args[2]) if len(args) == 3 else MAX_AGE_S, "--test-hooks" in sys.argv)
    host.serve()


if __name__ == "__main__":
    main()
