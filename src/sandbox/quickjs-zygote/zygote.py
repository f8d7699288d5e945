"""
The QuickJS fork server ("zygote"): one process that makes a warm QuickJS once (qjs_engine.Engine)
and then forks a fresh, single-use child for every run. The child runs the guest, sends its report
and exits; the zygote itself never runs guest code, so no run can start from a state an earlier
run touched, the engine's or the host's (a guest that broke QuickJS, or wasmtime, has its own
child process and nothing else: its report is the only thing it can forge, and only its own).

Wire (stdin / stdout, every frame a 4-byte little-endian length and its bytes):
  in, first:  JSON {"prelude", "bundle", "cacheDir"?, "spares"?}     (assets.ts)
  out:        JSON {"type": "ready", "pid", "wasmBytes", "heapBytes"}
  in:         JSON {"id", "code", "ts", "configJson", "limits": {timeoutMs, memoryMb, stackKb, maxOutputBytes}}
  out:        4-byte header length, header JSON {"id", "timedOut", "memoryRefused", "hostError",
              "cpuMs", "signal"}, then the guest's report (the prelude's JSON text, raw)
Runs are served concurrently, one child each; results come back in the order they end.

Spares: children are forked ahead (`spares`, default 2), each waiting for one request, so the fork,
the child's first page faults and its watchdog thread's start are paid while nothing waits for
them. A spare is as fresh as a child forked on demand: it has run nothing.

What the zygote decides itself rather than taking from the child (a child is where guest code
ran): how long the child ran (its CPU time from wait4), whether the kernel killed it, and so
whether it overran its time limit. The report is passed on as opaque bytes, never parsed here;
the server checks it like any host reply.

Time: each child's limit is on its own CPU time (it starts at the fork): at timeoutMs its
watchdog interrupts QuickJS (the report still comes), at timeoutMs + HARD_SLACK_MS the kernel ends
it (ITIMER_PROF, whose default action kills). The zygote also ends a child that has not finished
by 10 x timeoutMs + 30 s of wall time (a machine too busy to run it).
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import selectors
import signal
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from qjs_engine import REPORT_GRACE_S, Engine, Watchdog, find_wasm  # noqa: E402

REPORT_GRACE_MS = int(REPORT_GRACE_S * 1000)

HARD_SLACK_MS = 250
MAX_FRAME = 64 * 1024 * 1024
PR_SET_PDEATHSIG = 1


def read_exact(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_frame(fd: int) -> bytes | None:
    head = read_exact(fd, 4)
    if head is None:
        return None
    n = int.from_bytes(head, "little")
    if n > MAX_FRAME:
        raise ValueError("frame too large")
    return read_exact(fd, n)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def frame(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def close_all_but(keep: set[int]) -> None:
    """Closes every descriptor but `keep`, in ranges (close_range where the kernel has it)."""
    low = 0
    for fd in sorted(keep):
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def spare_main(engine: Engine, req_r: int, res_w: int, keep: set[int]) -> None:
    """A spare child, forked before any request for it exists: it waits for one run's request, runs
    it, writes its result and exits. Never returns."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() == 1:
            os._exit(0)
        # Nothing of the zygote's stays reachable: not its channel to the server (a child that broke
        # its engine could otherwise write frames for other runs), not other children's pipes. What
        # the engine itself opened (wasmtime's mapping of the compiled module) stays.
        close_all_but(keep | {2, req_r, res_w})
        watchdog = Watchdog(engine.set_interrupt)
        data = read_frame(req_r)
        if data is None:
            os._exit(0)
        os.close(req_r)
        request = json.loads(data)
        timeout_s = request["limits"]["timeoutMs"] / 1000
        # The kernel's bound: SIGPROF (default action: kill) after this much more CPU time.
        signal.setitimer(signal.ITIMER_PROF, timeout_s + (HARD_SLACK_MS + REPORT_GRACE_MS) / 1000)
        watchdog.start(timeout_s)
        outcome = engine.run(request, watchdog)
        header = json.dumps(
            {
                "timedOut": outcome.timed_out,
                "memoryRefused": outcome.memory_refused,
                "hostError": outcome.host_error,
                "cpuMs": outcome.cpu_ms,
            }
        ).encode()
        write_all(res_w, struct.pack("<I", len(header)) + header + (outcome.report or b""))
        os._exit(0)
    except BaseException as err:  # noqa: BLE001
        try:
            os.write(2, f"quickjs zygote child: {err!r}\n".encode()[:2000])
        finally:
            os._exit(70)


class Child:
    def __init__(self, pid: int, req_w: int, res_r: int):
        self.pid = pid
        self.req_w = req_w
        self.res_r = res_r
        self.id = 0
        self.timeout_ms = 0
        self.out = bytearray()
        self.wall_deadline = float("inf")
        self.killed_for_wall = False


class Zygote:
    def __init__(self, engine: Engine, fin: int, fout: int, spares: int, engine_fds: set[int]):
        self.engine = engine
        self.fin = fin
        self.fout = fout
        self.target_spares = spares
        self.engine_fds = engine_fds
        self.spares: list[Child] = []
        self.running: dict[int, Child] = {}
        self.sel = selectors.DefaultSelector()
        self.sel.register(fin, selectors.EVENT_READ, None)
        self.pending = bytearray()

    def fork_spare(self) -> Child:
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            spare_main(self.engine, req_r, res_w, self.engine_fds)
        os.close(req_r)
        os.close(res_w)
        return Child(pid, req_w, res_r)

    def top_up(self) -> None:
        while len(self.spares) < self.target_spares:
            self.spares.append(self.fork_spare())

    def dispatch(self, data: bytes) -> None:
        request = json.loads(data)
        while True:
            child = self.spares.pop(0) if self.spares else self.fork_spare()
            try:
                write_all(child.req_w, frame(data))
                break
            except BrokenPipeError:
                # A spare that died while waiting (killed from outside): reap it, take another.
                os.close(child.req_w)
                os.close(child.res_r)
                os.waitpid(child.pid, 0)
        os.close(child.req_w)
        child.id = int(request["id"])
        child.timeout_ms = int(request["limits"]["timeoutMs"])
        child.wall_deadline = time.monotonic() + (10 * child.timeout_ms + 30_000) / 1000
        self.running[child.res_r] = child
        self.sel.register(child.res_r, selectors.EVENT_READ, child)

    def finish(self, c: Child) -> None:
        self.sel.unregister(c.res_r)
        os.close(c.res_r)
        del self.running[c.res_r]
        _, status, usage = os.wait4(c.pid, 0)
        cpu_ms = (usage.ru_utime + usage.ru_stime) * 1000
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        claims: object = {}
        report = b""
        data = bytes(c.out)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and len(data) >= 4:
            n = int.from_bytes(data[:4], "little")
            try:
                claims = json.loads(data[4 : 4 + n])
                report = data[4 + n :]
            except ValueError:
                claims = {}
        if not isinstance(claims, dict):
            claims = {}
        claimed_cpu = claims.get("cpuMs")
        host_error = claims.get("hostError")
        header = json.dumps(
            {
                "id": c.id,
                # The child's word, or what the zygote saw: the kernel's SIGPROF, its own wall-clock kill.
                "timedOut": bool(claims.get("timedOut")) or sig == signal.SIGPROF or c.killed_for_wall,
                "memoryRefused": bool(claims.get("memoryRefused")),
                "hostError": host_error if isinstance(host_error, dict) else None,
                # Never more than the kernel counted for the whole child (its wait as a spare included).
                "cpuMs": min(cpu_ms, float(claimed_cpu)) if isinstance(claimed_cpu, (int, float)) and claimed_cpu >= 0 else cpu_ms,
                "signal": sig,
                "exitCode": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            }
        ).encode()
        write_all(self.fout, frame(struct.pack("<I", len(header)) + header + report))

    def shutdown(self) -> None:
        for c in [*self.spares, *self.running.values()]:
            try:
                os.kill(c.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def serve(self) -> None:
        self.top_up()
        while True:
            timeout = None
            if self.running:
                timeout = max(0.0, min(c.wall_deadline for c in self.running.values()) - time.monotonic())
            for key, _ in self.sel.select(timeout):
                if key.data is None:
                    chunk = os.read(self.fin, 1 << 16)
                    if not chunk:
                        self.shutdown()
                        return
                    self.pending += chunk
                    while len(self.pending) >= 4:
                        n = int.from_bytes(self.pending[:4], "little")
                        if len(self.pending) < 4 + n:
                            break
                        data = bytes(self.pending[4 : 4 + n])
                        del self.pending[: 4 + n]
                        self.dispatch(data)
                else:
                    c = key.data
                    chunk = os.read(c.res_r, 1 << 16)
                    if chunk:
                        if len(c.out) < MAX_FRAME:
                            c.out += chunk
                        continue
                    self.finish(c)
            now = time.monotonic()
            for c in list(self.running.values()):
                if now >= c.wall_deadline and not c.killed_for_wall:
                    c.killed_for_wall = True
                    os.kill(c.pid, signal.SIGKILL)
            self.top_up()


def main() -> None:
    fin, fout = 0, 1
    # Stray writes to fd 1 would corrupt the wire: the channel moves to a descriptor of its own and
    # fd 1 becomes stderr.
    fout = os.dup(1)
    os.dup2(2, 1)
    init = read_frame(fin)
    if init is None:
        return
    cfg = json.loads(init)
    with open(cfg.get("wasm") or find_wasm(), "rb") as f:
        wasm = f.read()
    before = {int(fd) for fd in os.listdir("/proc/self/fd")}
    engine = Engine(wasm, cfg["prelude"], cfg["bundle"], cache_dir=cfg.get("cacheDir"))
    engine_fds = {int(fd) for fd in os.listdir("/proc/self/fd")} - before
    # Everything allocated so far is the zygote's: the children's collector need not touch it.
    gc.collect()
    gc.freeze()
    gc.disable()
    ready = json.dumps({"type": "ready", "pid": os.getpid(), "wasmBytes": engine.memory.data_len(engine.store), "heapBytes": engine.malloc_size()}).encode()
    write_all(fout, struct.pack("<I", len(ready)) + ready)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    Zygote(engine, fin, fout, int(cfg.get("spares", 2)), engine_fds).serve()


if __name__ == "__main__":
    main()
