# The Python sandbox's host process: a fork server ("zygote") around CPython compiled for WASI.
#
# Started by the server through the confinement launcher (src/wall/confine.ts, python.ts), it
# speaks the host protocol of every sandbox host (src/sandbox/host/host-protocol.ts: frames of a 4-byte
# big-endian length and JSON on stdin/stdout), so the pool (host-pool.ts) keeps doing the queueing,
# affinity, reply checks, watchdog and memory watch. There is no JavaScript here, and no FFI from
# the guest to anything: the guest is WebAssembly, whose only way out is the host functions this
# file gives it (a minimal WASI of its own: no directory, no environment, no socket; stdin is the
# run's request, stdout/stderr are captured and capped; every other call answers ENOSYS).
#
# How a run goes ("a broken engine gains nothing"):
#
#   1. Once, at start: wasmtime loads the precompiled interpreter (engine.py), boots CPython in it
#      and runs guest.py, which warms up and then reads its payload from fd 0. That read calls the
#      host's fd_read, which is serve() below: the zygote's loop, which never returns. The zygote
#      itself never runs a guest's code.
#   2. Before a run arrives, the zygote forks a child (the spare): a copy of the warm interpreter,
#      stopped inside that fd_read. The child drops every descriptor but its two pipes, takes its
#      limits (harden.py), copies ahead the pages a run writes (probe()) and waits for its request.
#   3. A run: the zygote hands the request to the spare. The child sets its memory limit (wasmtime
#      store limits: the warm size + memoryMb), returns from fd_read into WebAssembly, and the guest
#      runs. Its stdout/stderr come out through fd_write (capped at maxOutputBytes here, in the
#      child), and its report ends it: the child writes everything to its result pipe and exits on
#      the spot (os._exit: no interpreter teardown).
#   4. The zygote reads the result (bounded; whatever the child sends is untrusted: result.py),
#      answers the server, then kills and reaps the child, and only then forks the next spare: no
#      two guests' processes, and no spare and a guest, ever live at once.
#
# Time: the zygote kills a child whose run clock (wall time minus the child's wait for a CPU, from
# /proc/<pid>/schedstat; src/sched/run-delay.ts says why) passes timeoutMs, or whose wall time
# passes the stretch cap (10 x timeoutMs + 30 s), and answers TimeoutError. Memory: the store limit
# refuses growth past the run's limit (MemoryError in the guest, MemoryLimitError in the result);
# the server also measures the whole tree (process-memory.ts ForkingHost).
#
#   python -I -B zygote.py CWASM [--no-prefault]

import json, os, signal, struct, sys, time

# Started as a script (python -I -B zygote/python/zygote.py): the one entry on the path is
# the zygote folder, whose packages are core/, python/ and quickjs/ (-I leaves this script's own
# folder off the path on Python >= 3.11; where it does not, it is taken off).
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [ROOT] + [p for p in sys.path if p not in (ROOT, HERE)]

import wasmtime  # noqa: E402
from core import engine, harden  # noqa: E402
from core import result as results  # noqa: E402
from core.channel import Channel  # noqa: E402
from core.forking import CHILD_MAPPINGS, MiB, Child, died, probe_pages, read_exact, report_written, rss, vsize, write_all  # noqa: E402
from core.run_clock import wait_for_result  # noqa: E402
from core.serve import ForkServer  # noqa: E402

# The guest's report is one write to fd 1 that starts with this and the zygote's token (guest.py).
REPORT_MAGIC = b"\x00envworker-report\x00"
MASK = 0xFFFFFFFF
# WASI's errno values.
EBADF, EFAULT, EINVAL, ENOSYS, ESPIPE = 8, 21, 28, 52, 70
DEFAULTS = {"timeoutMs": 1000, "memoryMb": 64, "maxOutputBytes": 64 * 1024}
# child -> zygote: magic, kind, then the lengths of report/message, stdout, stderr, and where output was cut.
RESULT_HEAD = struct.Struct("<4sBIIIB")
MAGIC = b"EWZ1"
KIND_REPORT, KIND_TRAP, KIND_EXIT, KIND_NONE = 1, 2, 3, 4
# zygote -> child: the memory limit (bytes of linear memory), maxOutputBytes, the request's length.
REQUEST_HEAD = struct.Struct("<QQI")


def dying(pid):
    """
    Whether a child is gone or on its way out: a SIGKILL pending, or exiting (PF_EXITING; a killed
    process frees its memory before it closes its descriptors, so its pipe still takes a request).
    """
    try:
        with open("/proc/%d/status" % pid, "rb") as f:
            status = f.read()
        for line in status.split(b"\n"):
            if line.startswith((b"SigPnd:", b"ShdPnd:")) and int(line.split()[1], 16) & (1 << (signal.SIGKILL - 1)):
                return True
            if line.startswith(b"State:") and line.split()[1] in (b"Z", b"X"):
                return True
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[6]) & 0x4 != 0
    except (OSError, ValueError, IndexError):
        return True


# What the probe runs (zygote.probe): the shape of a typical small run.
PROBE_CODE = "def f(x):\n    return x * 2\nassert f(2) == 4\na, b = map(int, input().split())\nprint(a + b, [1, 'x'], {'k': 2.5})\nf(21)"


class Zygote(ForkServer):
    def __init__(self, cwasm):
        self.pid = os.getpid()
        self.engine = wasmtime.Engine(engine.config())
        self.module = wasmtime.Module.deserialize_file(self.engine, cwasm)
        self.store = wasmtime.Store(self.engine)
        with open(os.path.join(HERE, "guest.py"), "rb") as f:
            self.report_magic = REPORT_MAGIC + os.urandom(16).hex().encode("ascii")
            self.argv = [b"python", b"-c", f.read(), self.report_magic[len(REPORT_MAGIC) :]]
        # WASI is this file's, not wasmtime's: the few calls CPython makes, each a few lines here;
        # every other import of the module answers ENOSYS. wasmtime's WASI (all of it, and the
        # runtime threads it starts, which a forked child would not have) is never linked.
        linker = wasmtime.Linker(self.engine)
        for imported in self.module.imports:
            if imported.module != "wasi_snapshot_preview1":
                raise RuntimeError("the module imports %s.%s" % (imported.module, imported.name))
            own = getattr(self, "wasi_" + imported.name, None)
            if own is not None:
                linker.define_func(imported.module, imported.name, imported.type, own, access_caller=True)
            else:
                linker.define_func(imported.module, imported.name, imported.type, lambda *args: ENOSYS)
        self.instance = linker.instantiate(self.store, self.module)
        self.memory = self.instance.exports(self.store)["memory"]
        self.probing = None
        self.hot = []
        self.prefault = True
        self.channel = Channel(self.exit)
        # In a child: its request, limits and captured output.
        self.pending = b""
        self.max_output = 0
        self.budget = 0
        self.out = [bytearray(), bytearray()]
        self.truncated_in = 0

    # ---- the guest's way out: the host functions of WASI ------------------------------------------
    # Arguments arrive as signed i32: addresses and counts are taken as u32 (& 0xFFFFFFFF), so an
    # address past 2 GiB (a run with a large memoryMb) is an address, and none is negative.

    def _base(self, caller):
        import ctypes

        return ctypes.addressof(self.memory.data_ptr(caller).contents), self.memory.data_len(caller)

    def _iovecs(self, caller, iovs, count):
        import ctypes

        iovs &= MASK
        count &= MASK
        base, size = self._base(caller)
        if count < 0 or count > 1024 or iovs < 0 or iovs + 8 * count > size:
            return base, size, None
        raw = ctypes.string_at(base + iovs, 8 * count)
        vecs = []
        for i in range(count):
            ptr, length = struct.unpack_from("<II", raw, 8 * i)
            if ptr + length > size:
                return base, size, None
            vecs.append((ptr, length))
        return base, size, vecs

    def wasi_fd_read(self, caller, fd, iovs, count, nread):
        import ctypes

        nread &= MASK
        if not self.child:
            # The zygote: this call is its loop; it returns only in a forked child, with its request.
            self.serve(caller)
        if fd != 0:
            return EBADF
        base, size, vecs = self._iovecs(caller, iovs, count)
        if vecs is None or nread + 4 > size:
            return EFAULT
        total = 0
        for ptr, length in vecs:
            k = min(length, len(self.pending))
            if k:
                ctypes.memmove(base + ptr, self.pending[:k], k)
                self.pending = self.pending[k:]
                total += k
            if not self.pending:
                break
        ctypes.memmove(base + nread, struct.pack("<I", total), 4)
        return 0

    def wasi_fd_write(self, caller, fd, iovs, count, nwritten):
        import ctypes

        nwritten &= MASK
        base, size, vecs = self._iovecs(caller, iovs, count)
        if vecs is None or nwritten + 4 > size:
            return EFAULT
        total = sum(length for _, length in vecs)
        if self.child:
            magic = self.report_magic
            if fd == 1 and vecs and vecs[0][1] >= len(magic) and ctypes.string_at(base + vecs[0][0], len(magic)) == magic:
                # The report: bounded by the zygote (result.py), whatever its size here.
                data = b"".join(ctypes.string_at(base + p, n) for p, n in vecs)
                self.finish(KIND_REPORT, data[len(magic) :])
            if fd not in (1, 2):
                return EBADF
            # Output: at most maxOutputBytes of stdout and stderr together; the rest is dropped and
            # the stream that was cut is marked (result.py appends the marker).
            for ptr, length in vecs:
                k = min(length, self.budget)
                if k:
                    self.out[fd - 1] += ctypes.string_at(base + ptr, k)
                    self.budget -= k
                if k < length and not self.truncated_in:
                    self.truncated_in = fd
        # In the zygote (warm-up) output goes nowhere.
        ctypes.memmove(base + nwritten, struct.pack("<I", total), 4)
        return 0

    def wasi_clock_time_get(self, caller, clock_id, _precision, out):
        """WASI's clocks, from the host's (so that poll_oneoff's absolute deadlines mean the same)."""
        import ctypes

        out &= MASK
        base, size = self._base(caller)
        if out + 8 > size:
            return EFAULT
        if clock_id == 0:
            now = time.time_ns()
        elif clock_id == 1:
            now = time.monotonic_ns()
        elif clock_id in (2, 3):
            now = time.process_time_ns()
        else:
            return EINVAL
        ctypes.memmove(base + out, struct.pack("<Q", now), 8)
        return 0

    def wasi_poll_oneoff(self, caller, subscriptions, events, count, nevents):
        """
        WASI's poll (time.sleep, select): clocks are slept here, with the host's own sleep; the
        standard streams are always ready. (wasmtime's own slept on a thread of its runtime, which
        a child cannot start: RLIMIT_NPROC 0, seccomp; it crashed the child.) A sleeping guest is
        on the run clock like any other: the zygote ends it at its limit.
        """
        import ctypes

        subscriptions, events, count, nevents = subscriptions & MASK, events & MASK, count & MASK, nevents & MASK
        base, size = self._base(caller)
        if count == 0 or count > 4096 or subscriptions + 48 * count > size or events + 32 * count > size or nevents + 4 > size:
            return EINVAL
        raw = ctypes.string_at(base + subscriptions, 48 * count)
        ready = []
        sleep = None
        for i in range(count):
            userdata, tag = struct.unpack_from("<QB", raw, 48 * i)
            if tag == 0:  # a clock
                clock_id, timeout, _precision, flags = struct.unpack_from("<I4xQQH", raw, 48 * i + 16)
                seconds = timeout / 1e9
                if flags & 1:  # an absolute time on that clock
                    now = time.monotonic() if clock_id == 1 else time.process_time() if clock_id in (2, 3) else time.time()
                    seconds -= now
                if sleep is None or seconds < sleep[0]:
                    sleep = (max(0.0, seconds), userdata)
            else:  # fd_read / fd_write: the run's streams never block
                ready.append(struct.pack("<QHBxxxxxQH6x", userdata, 0, tag, 0, 0))
        if not ready and sleep is not None:
            time.sleep(sleep[0])
            ready.append(struct.pack("<QHBxxxxxQH6x", sleep[1], 0, 0, 0, 0))
        data = b"".join(ready)
        ctypes.memmove(base + events, data, len(data))
        ctypes.memmove(base + nevents, struct.pack("<I", len(ready)), 4)
        return 0

    def _put(self, caller, address, data):
        import ctypes

        address &= MASK
        base, size = self._base(caller)
        if address + len(data) > size:
            return False
        ctypes.memmove(base + address, data, len(data))
        return True

    def wasi_args_sizes_get(self, caller, argc, size):
        ok = self._put(caller, argc, struct.pack("<I", len(self.argv))) and self._put(caller, size, struct.pack("<I", sum(len(a) + 1 for a in self.argv)))
        return 0 if ok else EFAULT

    def wasi_args_get(self, caller, argv, buf):
        at = buf
        for i, arg in enumerate(self.argv):
            if not (self._put(caller, argv + 4 * i, struct.pack("<I", at)) and self._put(caller, at, arg + b"\0")):
                return EFAULT
            at += len(arg) + 1
        return 0

    def wasi_environ_sizes_get(self, caller, count, size):
        # An empty environment.
        return 0 if self._put(caller, count, b"\0" * 4) and self._put(caller, size, b"\0" * 4) else EFAULT

    def wasi_environ_get(self, caller, environ, buf):
        return 0

    def wasi_clock_res_get(self, caller, clock_id, out):
        return 0 if self._put(caller, out, struct.pack("<Q", 1000)) else EFAULT

    def wasi_random_get(self, caller, buf, length):
        length &= MASK
        if length > 1 << 20:
            return EINVAL
        return 0 if self._put(caller, buf, os.urandom(length)) else EFAULT

    def wasi_sched_yield(self, caller):
        return 0

    def wasi_fd_fdstat_get(self, caller, fd, out):
        # fds 0-2: character devices with every right, so not terminals (wasi-libc's isatty wants
        # a device without seek rights); there is no other descriptor (no preopened directory).
        if fd not in (0, 1, 2):
            return EBADF
        return 0 if self._put(caller, out, struct.pack("<BxHxxxxQQ", 2, 0, (1 << 29) - 1, (1 << 29) - 1)) else EFAULT

    def wasi_fd_filestat_get(self, caller, fd, out):
        if fd not in (0, 1, 2):
            return EBADF
        return 0 if self._put(caller, out, struct.pack("<QQBxxxxxxxQQQQQ", 0, 0, 2, 1, 0, 0, 0, 0)) else EFAULT

    def wasi_fd_prestat_get(self, caller, fd, out):
        return EBADF

    def wasi_fd_close(self, caller, fd):
        return 0 if fd in (0, 1, 2) else EBADF

    def wasi_fd_seek(self, caller, fd, offset, whence, out):
        return ESPIPE if fd in (0, 1, 2) else EBADF

    def wasi_fd_tell(self, caller, fd, out):
        return ESPIPE if fd in (0, 1, 2) else EBADF

    def wasi_proc_exit(self, caller, code):
        if self.child:
            self.finish(KIND_EXIT, str(code).encode())
        sys.stderr.write("the Python interpreter exited while starting (code %d)\n" % code)
        os._exit(1)

    # ---- a child's end ----------------------------------------------------------------------------

    def finish(self, kind, message):
        """Sends what the run produced to the zygote and ends this child at once."""
        if self.probing is not None:
            report_written(self.probing)
        try:
            head = RESULT_HEAD.pack(MAGIC, kind, len(message), len(self.out[0]), len(self.out[1]), self.truncated_in)
            write_all(1, head + message + bytes(self.out[0]) + bytes(self.out[1]))
            os.close(1)
        finally:
            os._exit(0)

    # ---- the zygote ---------------------------------------------------------------------------------

    def serve(self, caller):
        harden.harden_zygote()
        self.base_memory = self.memory.data_len(caller)
        # A child may map what the zygote maps and CHILD_MAPPINGS more (its wasm memory grows inside
        # its reservation, which the zygote's mappings already include).
        self.address_space = vsize() + CHILD_MAPPINGS
        import gc

        # Everything the zygote holds now is frozen out of the collector: a collection in a child
        # (or in the zygote, over its 20,000 runs) walks only what was made since, so it copies none
        # of these pages.
        gc.collect()
        gc.freeze()
        hot = self.probe()
        if self.child:
            return  # in the probe: back into WebAssembly with its sample request
        self.hot = hot
        self.channel.send({"type": "ready", "bytes": rss(), "engineBytes": self.base_memory})
        # Returns in a child: back into WebAssembly with its request.
        self.serve_runs()

    def probe(self):
        """
        The pages a run writes, found once at start (forking.probe_pages): the probe child runs a
        sample request as a real run would, back in WebAssembly, and reports its pages at its end
        (finish). Each spare copies those in advance (harden.spare), while it waits for its
        request: the copies (~500 page faults, ~1-2 ms here) happen before the run arrives, not
        during it. In the probe child this returns None (it goes back into WebAssembly).
        """

        def run_in_child(w):
            self.child = True
            self.probing = w
            self.pending = json.dumps({"type": "run", "id": 0, "code": PROBE_CODE, "options": {"stdin": "3 4\n"}}).encode()
            self.max_output = self.budget = 64 * 1024

        return probe_pages(run_in_child)

    def fork(self):
        request_r, request_w = os.pipe()
        result_r, result_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            self.child = True
            try:
                harden.spare([request_r, result_w], self.pid, self.address_space, self.hot if self.prefault else [])
                # fd 0: the request; fd 1: the result. Nothing else is open from here on.
                memory_limit, max_output, length = REQUEST_HEAD.unpack(read_exact(0, REQUEST_HEAD.size))
                self.pending = read_exact(0, length)
                os.close(0)
                self.max_output = self.budget = max_output
                self.store.set_limits(memory_size=memory_limit)
            except BaseException:
                os._exit(1)
            return None
        os.close(request_r)
        os.close(result_w)
        return Child(pid, request_w, result_r)

    def run(self, request, body, queued):
        reply = self.answer(request, body, queued)
        if not self.child:
            self.channel.send(reply)

    def answer(self, request, body, queued):
        rid = request.get("id")
        options = request.get("options") or {}
        limits = {k: options.get(k) if isinstance(options.get(k), int) else v for k, v in DEFAULTS.items()}
        child, self.spare = self.spare, None
        started = time.monotonic()
        head = REQUEST_HEAD.pack(self.base_memory + limits["memoryMb"] * MiB, limits["maxOutputBytes"], len(body))
        try:
            if dying(child.pid):
                raise BrokenPipeError  # its pipe stays open until its exit is done
            write_all(child.request_w, head + body)
        except OSError:
            # The spare died while it waited (killed from outside: nothing of a guest's ran in
            # it): a fresh one takes the run.
            child.reap()
            child = self.fork()
            if child is None:
                return None  # in the new child (the caller returns it into WebAssembly)
            try:
                write_all(child.request_w, head + body)
            except OSError:
                pass  # answered from its exit below
        child.close_request()
        bound = RESULT_HEAD.size + 17 * limits["maxOutputBytes"] + 64 * 1024
        self.current = child
        data, host_error, elapsed_ms = wait_for_result(self.channel, child, rid, started, limits, bound, queued, "interpreter process")
        self.current = None
        status = child.reap()
        if host_error is not None:
            return self.reply(rid, None, b"", b"", 0, limits, elapsed_ms, host_error)
        return self.from_child(rid, data, status, limits, elapsed_ms)

    def from_child(self, rid, data, status, limits, elapsed_ms):
        if len(data) >= RESULT_HEAD.size:
            magic, kind, n_msg, n_out, n_err, cut = RESULT_HEAD.unpack_from(data)
            if magic == MAGIC and RESULT_HEAD.size + n_msg + n_out + n_err == len(data) and cut in (0, 1, 2):
                at = RESULT_HEAD.size
                message = data[at : at + n_msg]
                stdout = data[at + n_msg : at + n_msg + n_out]
                stderr = data[at + n_msg + n_out :]
                if kind == KIND_REPORT:
                    return self.reply(rid, message, stdout, stderr, cut, limits, elapsed_ms, None)
                if kind == KIND_EXIT:
                    code = int(message or b"0")
                    if code == 0:
                        return self.reply(rid, b'{"status":"ok","result":null,"error":null}', stdout, stderr, cut, limits, elapsed_ms, None)
                    error = {"name": "SystemExit", "message": str(code)}
                elif kind == KIND_TRAP:
                    text = message.decode("utf-8", "replace")
                    if "stack" in text and ("exhausted" in text or "overflow" in text):
                        error = {"name": "RecursionError", "message": "maximum recursion depth exceeded (the interpreter's stack overflowed)"}
                    else:
                        error = {"name": "SandboxError", "message": "the interpreter failed: " + text.split("\n")[0][:300]}
                else:
                    error = {"name": "SandboxError", "message": "the interpreter ended without a report"}
                return self.reply(rid, None, stdout, stderr, cut, limits, elapsed_ms, error)
        return self.reply(rid, None, b"", b"", 0, limits, elapsed_ms, died(status, "interpreter process"))

    def reply(self, rid, report, stdout, stderr, cut, limits, elapsed_ms, host_error):
        cut_in = {1: "stdout", 2: "stderr"}.get(cut)
        result = results.to_run_result(report, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"), cut_in, limits, elapsed_ms, host_error)
        return {"type": "result", "id": rid, "result": result, "bytes": rss()}

    # ---- start --------------------------------------------------------------------------------------

    def start(self):
        try:
            self.instance.exports(self.store)["_start"](self.store)
            kind, message = KIND_NONE, b""
        except wasmtime.ExitTrap as e:
            kind, message = KIND_EXIT, str(e.code).encode()
        except wasmtime.Trap as e:
            kind, message = KIND_TRAP, str(e).encode("utf-8", "replace")[:4096]
        except wasmtime.WasmtimeError as e:
            kind, message = KIND_TRAP, str(e).encode("utf-8", "replace")[:4096]
        if self.child:
            self.finish(kind, message)
        # The zygote itself ended: its interpreter failed to boot.
        sys.stderr.write("the Python interpreter did not start: %s\n" % message.decode("utf-8", "replace")[:2000])
        os._exit(1)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.stderr.write("usage: zygote.py CWASM [--no-prefault]\n")
        os._exit(2)
    zygote = Zygote(args[0])
    # Benchmarks compare with and without copying the probe's pages ahead (zygote.probe).
    zygote.prefault = "--no-prefault" not in sys.argv
    zygote.start()


if __name__ == "__main__":
    main()
