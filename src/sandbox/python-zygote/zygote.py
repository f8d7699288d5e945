# The Python sandbox's host process: a fork server ("zygote") around CPython compiled for WASI.
#
# Started by the server through the confinement launcher (src/sandbox/confine.ts, python.ts), it
# speaks the host protocol of every sandbox host (src/sandbox/host-protocol.ts: frames of a 4-byte
# big-endian length and JSON on stdin/stdout), so the pool (host-pool.ts) keeps doing the queueing,
# affinity, reply checks, watchdog and memory watch. There is no JavaScript here, and no FFI from
# the guest to anything: the guest is WebAssembly, whose only way out is the host functions
# wasmtime gives it (WASI with no directories and no environment, and the two below).
#
# How a run goes ("a broken engine gains nothing"):
#
#   1. Once, at start: wasmtime loads the precompiled interpreter (engine.py), boots CPython in it
#      and runs guest.py, which warms up and then reads its payload from fd 0. That read calls the
#      host's fd_read, which is serve() below: the zygote's loop, which never returns. The zygote
#      itself never runs a guest's code.
#   2. Before a run arrives, the zygote forks a child (the spare): a copy of the warm interpreter,
#      stopped inside that fd_read. The child drops every descriptor but its two pipes, takes its
#      limits (harden.py) and waits for its request.
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
# /proc/<pid>/schedstat; src/sandbox/run-delay.ts says why) passes timeoutMs, or whose wall time
# passes the stretch cap (10 x timeoutMs + 30 s), and answers TimeoutError. Memory: the store limit
# refuses growth past the run's limit (MemoryError in the guest, MemoryLimitError in the result);
# the server also measures the whole tree (process-memory.ts ForkingHost).
#
#   python -I -B zygote.py CWASM [--no-prefault]

import errno, json, os, select, signal, struct, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import engine  # noqa: E402
import harden  # noqa: E402
import result as results  # noqa: E402
import wasmtime  # noqa: E402

MiB = 1 << 20
# The guest's report is one write to fd 1 that starts with this and the zygote's token (guest.py).
REPORT_MAGIC = b"\x00envworker-report\x00"
SERVER_IN = 0
SERVER_OUT = 1
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
# Before the first kill for time, the child is watched this long to tell "running" from "waiting
# for a CPU" (a wait under way is not in schedstat yet: run-delay.ts).
CONFIRM_S = 0.02
PAGE = os.sysconf("SC_PAGE_SIZE")
# What a child may map beyond the zygote's own mappings: its host-side Python (output, the report).
CHILD_MAPPINGS = 512 * MiB


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


def vsize():
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def rss():
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


# What the probe runs (zygote.probe): the shape of a typical small run.
PROBE_CODE = "def f(x):\n    return x * 2\nassert f(2) == 4\na, b = map(int, input().split())\nprint(a + b, [1, 'x'], {'k': 2.5})\nf(21)"


def written_ranges():
    """This process's private writable pages that are its own (copied or new since fork), as [address, length] runs."""
    import array

    ranges = []
    with open("/proc/self/maps", "r") as f:
        maps = f.read().splitlines()
    fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    try:
        for line in maps:
            parts = line.split()
            if len(parts) < 2 or not parts[1].startswith("rw") or parts[1][3] != "p":
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            pages = (hi - lo) // PAGE
            if pages > 1 << 20:
                continue
            entries = array.array("Q", os.pread(fd, 8 * pages, (lo // PAGE) * 8))
            start = None
            for i, v in enumerate(entries):
                # present (bit 63) and mapped by this process alone (bit 56): copied or new here.
                if (v >> 63) & 1 and (v >> 56) & 1:
                    if start is None:
                        start = i
                elif start is not None:
                    ranges.append([lo + start * PAGE, (i - start) * PAGE])
                    start = None
            if start is not None:
                ranges.append([lo + start * PAGE, (len(entries) - start) * PAGE])
    finally:
        os.close(fd)
    return ranges


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_exact(fd, n):
    chunks = []
    while n > 0:
        c = os.read(fd, min(n, 1 << 20))
        if not c:
            raise EOFError
        chunks.append(c)
        n -= len(c)
    return b"".join(chunks)


class Schedstat:
    """A child's /proc/<pid>/schedstat: time on a CPU and time waiting for one, in seconds."""

    def __init__(self, pid):
        try:
            self.fd = os.open("/proc/%d/schedstat" % pid, os.O_RDONLY)
        except OSError:
            self.fd = None
        self.pid = pid
        self.last = (0.0, 0.0)

    def read(self):
        if self.fd is not None:
            try:
                ran, waited = os.pread(self.fd, 128, 0).split()[:2]
                self.last = (int(ran) / 1e9, int(waited) / 1e9)
            except (OSError, ValueError):
                pass
        return self.last

    def running(self):
        """Whether the child is running or runnable (not asleep by itself)."""
        try:
            with open("/proc/%d/stat" % self.pid, "rb") as f:
                stat = f.read()
            return stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] == b"R"
        except (OSError, ValueError):
            return False

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Child:
    def __init__(self, pid, request_w, result_r):
        self.pid = pid
        self.request_w = request_w
        self.result_r = result_r


class Zygote:
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
        self.child = False
        self.probing = None
        self.hot = []
        self.prefault = True
        self.spare = None
        self.inbuf = bytearray()
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
            if fd == 1 and vecs and vecs[0][1] >= len(self.report_magic):
                data = b"".join(ctypes.string_at(base + p, n) for p, n in vecs)
                if data.startswith(self.report_magic):
                    self.finish(KIND_REPORT, data[len(self.report_magic) :])
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
            try:
                write_all(self.probing, json.dumps(written_ranges()).encode())
            finally:
                os._exit(0)
        try:
            head = RESULT_HEAD.pack(MAGIC, kind, len(message), len(self.out[0]), len(self.out[1]), self.truncated_in)
            write_all(1, head + message + bytes(self.out[0]) + bytes(self.out[1]))
            os.close(1)
        finally:
            os._exit(0)

    # ---- the zygote ---------------------------------------------------------------------------------

    def send(self, message):
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8", "backslashreplace")
        write_all(SERVER_OUT, struct.pack(">I", len(body)) + body)

    def read_request(self, block):
        """The next request from the server (None when none is whole yet and block is False)."""
        while True:
            if len(self.inbuf) >= 4:
                n = struct.unpack(">I", self.inbuf[:4])[0]
                if len(self.inbuf) >= 4 + n:
                    body = bytes(self.inbuf[4 : 4 + n])
                    del self.inbuf[: 4 + n]
                    return json.loads(body), body
            if not block:
                return None
            chunk = os.read(SERVER_IN, 1 << 20)
            if not chunk:
                self.exit()
            self.inbuf += chunk

    def exit(self):
        if self.spare:
            self.reap(self.spare)
        os._exit(0)

    def serve(self, caller):
        harden.harden_zygote()
        self.base_memory = self.memory.data_len(caller)
        # A child may map what the zygote maps and CHILD_MAPPINGS more (its wasm memory grows inside
        # its reservation, which the zygote's mappings already include).
        self.address_space = vsize() + CHILD_MAPPINGS
        import gc

        gc.collect()
        gc.freeze()
        gc.disable()
        hot = self.probe()
        if self.child:
            return  # in the probe: back into WebAssembly with its sample request
        self.hot = hot
        self.send({"type": "ready", "bytes": rss(), "engineBytes": self.base_memory})
        queued = []
        while True:
            if self.spare is None:
                self.spare = self.fork()
                if self.child:
                    return  # in the new child: back into WebAssembly with its request
            request, body = queued.pop(0) if queued else self.read_request(block=True)
            if request.get("type") != "run":
                continue  # a cancel for a run already answered
            reply = self.run(request, body, queued)
            if self.child:
                return  # a child forked in place of a dead spare: back into WebAssembly
            self.send(reply)

    def probe(self):
        """
        The pages a run writes, found once at start: a child runs a sample request (as a real run
        would, from the same zygote state) and reports which of its pages it copied (written_ranges).
        Each spare copies those in advance (harden.populate), while it waits for its request: the
        copies (~500 page faults, ~1-2 ms here) happen before the run arrives, not during it.
        In the probe child this returns None (it goes back into WebAssembly).
        """
        # Measured twice: after a run, and right after a fork with no run (what measuring itself
        # writes); the pages of the first that are not in the second are the run's.
        measured = []
        for run in (True, False):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                if not run:
                    try:
                        write_all(w, json.dumps(written_ranges()).encode())
                    finally:
                        os._exit(0)
                self.child = True
                self.probing = w
                self.pending = json.dumps({"type": "run", "id": 0, "code": PROBE_CODE, "options": {"stdin": "3 4\n"}}).encode()
                self.max_output = self.budget = 64 * 1024
                return None
            os.close(w)
            chunks = []
            while True:
                c = os.read(r, 1 << 16)
                if not c:
                    break
                chunks.append(c)
            os.close(r)
            os.waitpid(pid, 0)
            try:
                measured.append({int(a) + i for a, n in json.loads(b"".join(chunks)) for i in range(0, int(n), PAGE)})
            except (ValueError, TypeError):
                return []
        pages = sorted(measured[0] - measured[1])
        ranges = []
        for page in pages:
            if ranges and ranges[-1][0] + ranges[-1][1] == page:
                ranges[-1][1] += PAGE
            else:
                ranges.append([page, PAGE])
        return [tuple(x) for x in ranges][:4096]

    def fork(self):
        request_r, request_w = os.pipe()
        result_r, result_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            self.child = True
            try:
                harden.harden_child([request_r, result_w], self.pid, self.address_space)
                if self.prefault:
                    request_ready = select.poll()
                    request_ready.register(0, select.POLLIN)
                    harden.populate(self.hot, lambda: bool(request_ready.poll(0)))
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

    def reap(self, child):
        for fd in (child.request_w, child.result_r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            _, status = os.waitpid(child.pid, 0)
            return status
        except ChildProcessError:
            return None

    def run(self, request, body, queued):
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
            self.reap(child)
            child = self.fork()
            if child is None:
                return None  # in the new child (the caller returns it into WebAssembly)
            try:
                write_all(child.request_w, head + body)
            except OSError:
                pass  # answered from its exit below
        os.close(child.request_w)
        child.request_w = -1
        clock = Schedstat(child.pid)
        waited0 = clock.read()[1]
        timeout = limits["timeoutMs"] / 1000
        cap = (limits["timeoutMs"] * 10 + 30_000) / 1000
        extension = 0.0
        bound = RESULT_HEAD.size + 17 * limits["maxOutputBytes"] + 64 * 1024
        data = bytearray()
        poller = select.poll()
        poller.register(child.result_r, select.POLLIN)
        poller.register(SERVER_IN, select.POLLIN)
        host_error = None
        eof = False
        try:
            while not eof:
                now = time.monotonic()
                remaining = min(started + timeout + extension, started + cap) - now
                if remaining <= 0:
                    # The wall clock passed the limit: give back the time the child waited for a CPU.
                    waited = clock.read()[1] - waited0
                    if waited > extension and now < started + cap:
                        extension = waited
                        continue
                    if now < started + cap and clock.running():
                        # Running or waiting for a CPU? A wait under way is not counted yet.
                        ran0 = clock.read()[0]
                        t0 = time.monotonic()
                        poller.poll(CONFIRM_S * 1000)
                        if clock.read()[0] - ran0 < CONFIRM_S / 4:
                            extension += time.monotonic() - t0
                            continue
                    host_error = results.timeout_error(limits)
                    break
                for fd, _ in poller.poll(max(1, int(remaining * 1000) + 1)):
                    if fd == SERVER_IN:
                        chunk = os.read(SERVER_IN, 1 << 20)
                        if not chunk:
                            self.reap(child)
                            os._exit(0)
                        self.inbuf += chunk
                        while (next_ := self.read_request(block=False)) is not None:
                            if next_[0].get("type") == "cancel" and next_[0].get("id") == rid:
                                host_error = {"name": "CancelledError", "message": "the run was cancelled while running"}
                            else:
                                queued.append(next_)
                        if host_error:
                            eof = True
                            break
                    else:
                        chunk = os.read(child.result_r, 1 << 20)
                        if not chunk:
                            eof = True
                            break
                        data += chunk
                        if len(data) > bound:
                            host_error = {"name": "SandboxError", "message": "the interpreter process sent more than its run allows; it was stopped"}
                            eof = True
                            break
        finally:
            waited = clock.read()[1] - waited0
            clock.close()
        elapsed_ms = max(0.0, (time.monotonic() - started - waited) * 1000)
        status = self.reap(child)
        if host_error is not None:
            return self.reply(rid, None, b"", b"", 0, limits, elapsed_ms, host_error)
        return self.from_child(rid, bytes(data), status, limits, elapsed_ms)

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
        how = "exit code %s" % os.waitstatus_to_exitcode(status) if status is not None else "unknown"
        return self.reply(rid, None, b"", b"", 0, limits, elapsed_ms, {"name": "SandboxError", "message": "the interpreter process died (%s)" % how})

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
