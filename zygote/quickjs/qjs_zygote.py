# The QuickJS sandbox's host process: a fork server ("zygote") around QuickJS-NG's WASI reactor
# (qjs_engine.py), on the Python sandbox's zygote core (../core/: the channel to the server
# of channel.py, the forking and probing of forking.py, the child hardening of harden.py, the run
# clock of run_clock.py, the output caps and report checks of result.py).
#
# Started by the server through the confinement launcher (src/wall/confine.ts, quickjs-process.ts),
# it speaks the host protocol of every sandbox host (src/sandbox/host/host-protocol.ts: frames of a 4-byte
# big-endian length and JSON on stdin/stdout), so the pool (host-pool.ts) keeps the queueing,
# affinity, reply checks, watchdog and memory watch. There is no JavaScript host here: QuickJS is
# WebAssembly, whose only way out is the WASI functions qjs_engine.py gives it (none that reach
# anything), and the guest's context has no module and no host function at all.
#
# How a run goes ("a broken engine gains nothing"):
#
#   1. Once, at start: the engine is made and warmed (qjs_engine.Engine): QuickJS, the guest context
#      with its prelude, sucrase. The zygote never runs a guest's code.
#   2. Before a run arrives, the zygote forks the spare: a copy of that state. The spare maps the
#      wasm page that holds QuickJS-libc's pending-signal bits onto a page it shares with the zygote
#      (so the zygote can interrupt it), drops every descriptor but its two pipes, takes its limits
#      (harden.py: seccomp, no new process or thread, no new descriptor), copies ahead the pages a
#      run writes (found once by a probe run at start) and waits for its request.
#   3. A run: the zygote hands the request to the spare, which runs it (qjs_engine.Engine.run) and
#      writes its report to its result pipe, then exits on the spot (os._exit).
#   4. The zygote answers the server from that report (bounded; whatever the child sends is
#      untrusted), then kills and reaps the child, and only then forks the next spare: no two
#      guests' processes, and no spare and a guest, ever live at once.
#
# Time: on the run clock of the child (wall time minus its wait for a CPU, /proc/<pid>/schedstat;
# src/sched/run-delay.ts says why). At timeoutMs the zygote sets the SIGINT bit in the shared page:
# QuickJS's interrupt handler stops the guest with an uncatchable error, the child clears the bit
# and still reports (its output is kept, as in quickjs.ts). A child that has not answered
# GRACE_S of run clock later, or by the stretch cap (10 x timeoutMs + 30 s of wall time), is
# killed. Either way the answer is a TimeoutError. Memory: QuickJS's own count (the warm heap +
# memoryMb) and wasmtime's store limit on the wasm memory (the warm size + 1.5 x memoryMb + 8 MiB);
# the server also measures the whole tree (process-memory.ts, by PSS).
#
#   python -I -B qjs_zygote.py CWASM ASSETS_JSON

import ctypes, json, mmap, os, struct, sys, time

# Started as a script (python -I -B zygote/quickjs/qjs_zygote.py): the one entry on the path is
# the zygote folder, whose packages are core/, python/ and quickjs/ (-I leaves this script's own
# folder off the path on Python >= 3.11; where it does not, it is taken off).
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [ROOT] + [p for p in sys.path if p not in (ROOT, HERE)]

from core import forking, harden  # noqa: E402
from core import result as results  # noqa: E402
from core.channel import Channel  # noqa: E402
from core.forking import CHILD_MAPPINGS, MiB, died, probe_pages, read_exact, report_written, rss, vsize, write_all  # noqa: E402
from core.run_clock import wait_for_result  # noqa: E402
from core.serve import ForkServer  # noqa: E402
from quickjs.qjs_engine import Engine  # noqa: E402

# What the probe runs (Zygote.probe): the shape of a typical small run.
PROBE_CODE = "const o = { a: [1, 'x'], b: 2.5 }; let s = 0; for (let i = 1; i <= 1000; i++) s += i; console.log('sum', s, o); s"
PROBE_OPTIONS = {"timeoutMs": 1000, "memoryMb": 64, "stackKb": 256, "maxOutputBytes": 65536, "ts": False, "globals": {"g": [1]}, "stdin": "3 4\n"}
# zygote -> child: the request's length, then the request (JSON: {"id", "code", "options"}).
REQUEST_HEAD = struct.Struct("<I")
# child -> zygote: magic, the lengths of the header (JSON) and of the report.
RESULT_HEAD = struct.Struct("<4sII")
MAGIC = b"EWQ1"
# Run clock a child has, after its interrupt, to hand over its report (quickjs.ts allows 50 ms; a
# forked child on a loaded machine also needs its pages back: 50 ms lost the output of runs there).
GRACE_S = 0.25
# What the prelude's report may say (guest.ts): the Python guest's statuses, and a promise never
# settled or a report that could not be made.
REPORT_STATUSES = ("ok", "error", "too_large", "pending", "broken")
PAGE = mmap.PAGESIZE

_libc = ctypes.CDLL(None, use_errno=True)
_mremap = _libc.mremap
_mremap.restype = ctypes.c_void_p
_mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
MREMAP_MAYMOVE, MREMAP_FIXED = 1, 2


class Child(forking.Child):
    def __init__(self, pid, request_w, result_r, shared):
        super().__init__(pid, request_w, result_r)
        # The zygote's view of the child's page of pending-signal bits.
        self.shared = shared

    def reap(self):
        status = super().reap()
        self.shared.close()
        return status


class Zygote(ForkServer):
    def __init__(self, cwasm, assets):
        self.pid = os.getpid()
        with open(assets, "r", encoding="utf-8") as f:
            a = json.load(f)
        self.engine = Engine(cwasm, a["prelude"], a["bundle"])
        layout = self.engine.layout
        self.signal_page = layout.signals_byte - layout.signals_byte % PAGE
        self.signal_offset = layout.signals_byte - self.signal_page
        self.channel = Channel(self.exit)

    # ---- the server's side ----------------------------------------------------------------------

    def serve(self):
        harden.harden_zygote()
        # A child may map what the zygote maps and CHILD_MAPPINGS more (its wasm memory grows inside
        # its reservation, which the zygote's mappings already include).
        self.address_space = vsize() + CHILD_MAPPINGS
        import gc

        gc.collect()
        gc.freeze()
        gc.disable()
        self.hot = self.probe()
        self.channel.send({"type": "ready", "bytes": rss(), "engineBytes": self.engine.memory.data_len(self.engine.store)})
        self.serve_runs()

    # ---- a child --------------------------------------------------------------------------------

    def probe(self):
        """
        The pages a run writes, found once at start (forking.probe_pages, as the Python zygote
        does): a child runs a sample request from the zygote's state and reports the pages it
        copied. Each spare copies them in advance (harden.spare) while it waits for its request.
        """

        def run_in_child(w):
            try:
                self.engine.run(PROBE_OPTIONS, PROBE_CODE)
            finally:
                report_written(w)

        return probe_pages(run_in_child)

    def fork(self):
        shared = mmap.mmap(-1, PAGE, flags=mmap.MAP_SHARED)
        request_r, request_w = os.pipe()
        result_r, result_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                self.spare_process(shared, request_r, result_w)
            finally:
                os._exit(70)
        os.close(request_r)
        os.close(result_w)
        return Child(pid, request_w, result_r, shared)

    def spare_process(self, shared, request_r, result_w):
        """The spare, then the run's process: never returns."""
        engine = self.engine
        # The page of pending-signal bits becomes the page shared with the zygote (its contents
        # first: other statics of QuickJS-libc live there too).
        target = engine._base() + self.signal_page
        source = ctypes.addressof(ctypes.c_char.from_buffer(shared))
        ctypes.memmove(source, target, PAGE)
        if _mremap(source, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, target) != target:
            os._exit(71)
        harden.spare([request_r, result_w], self.pid, self.address_space, self.hot)
        # fd 0: the request; fd 1: the result. Nothing else is open from here on.
        (length,) = REQUEST_HEAD.unpack(read_exact(0, REQUEST_HEAD.size))
        request = json.loads(read_exact(0, length))
        os.close(0)
        self.serve_child(request)
        os.close(1)
        os._exit(0)

    def serve_child(self, request):
        """The run, in its child: its result goes to fd 1."""
        outcome = self.engine.run(request["options"], request["code"])
        self.write_result({"interrupted": outcome.interrupted, "memoryRefused": outcome.memory_refused, "hostError": outcome.host_error, "heldBytes": outcome.held_bytes}, outcome.report or b"")

    @staticmethod
    def write_result(header, report):
        head = json.dumps(header).encode()
        write_all(1, RESULT_HEAD.pack(MAGIC, len(head), len(report)) + head + report)

    def interrupt(self, child):
        child.shared[self.signal_offset] = child.shared[self.signal_offset] | self.engine.layout.sigint_mask

    def run(self, request, _body, queued):
        rid = request.get("id")
        options = request.get("options") or {}
        limits = {k: options[k] for k in ("timeoutMs", "memoryMb", "stackKb", "maxOutputBytes")}
        child, self.spare = self.spare, None
        started = time.monotonic()
        body = json.dumps({"id": rid, "code": request.get("code", ""), "options": options}).encode()
        try:
            write_all(child.request_w, REQUEST_HEAD.pack(len(body)) + body)
        except OSError:
            pass  # the spare died: its run is answered from its exit below
        child.close_request()
        bound = RESULT_HEAD.size + 1024 + 16 * limits["maxOutputBytes"] + 64 * 1024
        interrupted = False

        def at_limit():
            # The time limit: QuickJS stops the guest, the child reports what it has (GRACE_S more).
            nonlocal interrupted
            interrupted = True
            self.interrupt(child)
            return GRACE_S

        self.current = child
        data, host_error, elapsed_ms = wait_for_result(self.channel, child, rid, started, limits, bound, queued, "QuickJS process", at_limit)
        self.current = None
        if host_error is None and self.complete(data):
            # A whole result needs no exit status: the server is answered first, the child (done,
            # or about to be) is killed and reaped after, and no spare exists before that.
            self.channel.send(self.reply(rid, self.from_child(data, None, limits, elapsed_ms, interrupted)))
            child.reap()
            return
        status = child.reap()
        if host_error is not None:
            self.channel.send(self.reply(rid, results.to_run_result(None, "", "", None, limits, elapsed_ms, host_error)))
        else:
            self.channel.send(self.reply(rid, self.from_child(data, status, limits, elapsed_ms, interrupted)))

    @staticmethod
    def complete(data):
        if len(data) < RESULT_HEAD.size:
            return False
        magic, n_head, n_report = RESULT_HEAD.unpack_from(data)
        return magic == MAGIC and n_head <= 4096 and RESULT_HEAD.size + n_head + n_report == len(data)

    def from_child(self, data, status, limits, elapsed_ms, interrupted):
        """A RunResult from what the child sent: report.ts toRunResult's rules, the zygote's facts first."""
        header, report = None, None
        if len(data) >= RESULT_HEAD.size:
            magic, n_head, n_report = RESULT_HEAD.unpack_from(data)
            if magic == MAGIC and n_head <= 4096 and RESULT_HEAD.size + n_head + n_report == len(data):
                try:
                    header = json.loads(data[RESULT_HEAD.size : RESULT_HEAD.size + n_head])
                except ValueError:
                    header = None
                report = data[RESULT_HEAD.size + n_head :]
        if not isinstance(header, dict):
            if interrupted:
                return results.to_run_result(None, "", "", None, limits, elapsed_ms, results.timeout_error(limits))
            return results.to_run_result(None, "", "", None, limits, elapsed_ms, died(status, "QuickJS process"))
        host_error = header.get("hostError")
        if not (isinstance(host_error, dict) and isinstance(host_error.get("name"), str) and isinstance(host_error.get("message"), str)):
            host_error = None
        parsed = results.parse_report(report, limits, REPORT_STATUSES) if report else None
        stdout, stderr, cut = (parsed["stdout"], parsed["stderr"], parsed["truncated"]) if parsed else ("", "", None)
        status = parsed["status"] if parsed else None
        if interrupted:
            error = results.timeout_error(limits)
        elif host_error is not None:
            error = {"name": host_error["name"][:200], "message": host_error["message"][:2000]}
        elif parsed is None:
            error = {"name": "SandboxError", "message": "the sandbox returned no usable report"}
        elif status == "error":
            error = parsed["error"] or {"name": "Error", "message": "unknown error"}
            # QuickJS's out-of-memory is a (catchable) InternalError: the same name as on V8.
            if error["name"] == "InternalError" and error["message"] == "out of memory":
                error = results.memory_error(limits)
        elif status == "pending":
            error = {"name": "UnsettledPromiseError", "message": "the script's promise never settled (the sandbox has no timers or I/O that could settle it later)"}
        elif status == "broken":
            error = {"name": "SandboxError", "message": "the guest could not produce a report"}
        else:
            error = None  # ok, too_large: result.py's checks
        # Out of memory, QuickJS may not even build its out-of-memory error: the refusal says it, or
        # a `null` thrown (what QuickJS throws when it cannot allocate the error) by a run that held
        # a large part of its memory (a guest's own `throw null` with less is left as it is).
        if error is not None and error["name"] != "TimeoutError":
            held = header.get("heldBytes")
            starved = error == {"name": "Error", "message": "Uncaught null"} and isinstance(held, int) and held > limits["memoryMb"] * MiB // 4
            if header.get("memoryRefused") is True or starved:
                error = results.memory_error(limits)
        ok_report = json.dumps({"status": status, "result": parsed["result"], "error": None}).encode() if error is None else None
        return results.to_run_result(ok_report, stdout, stderr, cut, limits, elapsed_ms, error)

    def reply(self, rid, result):
        return {"type": "result", "id": rid, "result": result, "bytes": rss()}


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: qjs_zygote.py CWASM ASSETS_JSON\n")
        os._exit(2)
    Zygote(sys.argv[1], sys.argv[2]).serve()


if __name__ == "__main__":
    main()
