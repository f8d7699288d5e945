# The run clock of a zygote's child, and the wait for its result (both zygotes: python/zygote.py,
# quickjs/qjs_zygote.py). A run's time limit counts the time its child ran, not the time
# it waited for a CPU on a busy machine (src/sched/run-delay.ts says why): wall time minus the
# child's wait from /proc/<pid>/schedstat, up to a stretch cap of wall time (10 x timeoutMs + 30 s).

import os, select, time

from . import result as results
from .channel import SERVER_IN

# Before a kill for time, the child is watched this long to tell "running" from "waiting for a CPU"
# (a wait under way is not in schedstat yet: run-delay.ts).
CONFIRM_S = 0.02


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


def stretch_cap_s(timeout_ms):
    """The wall time a run may take at most, however long it waited for a CPU."""
    return (timeout_ms * 10 + 30_000) / 1000


def wait_for_result(channel, child, rid, started, limits, bound, queued, what, at_limit=None):
    """
    Reads `child`'s result pipe to its end while its run clock (from `started`, monotonic) stays
    under limits["timeoutMs"], serving the server meanwhile: a cancel of this run (`rid`) ends the
    wait, any other request joins `queued`. More than `bound` bytes from the child end it too (a
    child may have been taken over by its guest: `what` names it in the error).

    At the limit, `at_limit()` (once, if given) may grant more run clock: its answer in seconds
    (QuickJS interrupts its guest, then allows it a grace to report), or None to stop there.

    Returns (data, host_error, elapsed_ms): what the child sent, the zygote's own verdict (a
    TimeoutError, a CancelledError, too much sent; None when the child ended by itself) and the
    run's time on its run clock.
    """
    clock = Schedstat(child.pid)
    waited0 = clock.read()[1]
    deadline = limits["timeoutMs"] / 1000
    cap = stretch_cap_s(limits["timeoutMs"])
    extension = 0.0
    data = bytearray()
    poller = select.poll()
    poller.register(child.result_r, select.POLLIN)
    poller.register(SERVER_IN, select.POLLIN)
    host_error = None
    eof = False
    try:
        while not eof:
            now = time.monotonic()
            remaining = min(started + deadline + extension, started + cap) - now
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
                if at_limit is not None and now < started + cap:
                    more, at_limit = at_limit(), None
                    if more is not None:
                        deadline += more
                        continue
                host_error = results.timeout_error(limits)
                break
            for fd, _ in poller.poll(max(1, int(remaining * 1000) + 1)):
                if fd == SERVER_IN:
                    channel.pump()
                    while (next_ := channel.next(block=False)) is not None:
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
                        host_error = {"name": "SandboxError", "message": "the %s sent more than its run allows; it was stopped" % what}
                        eof = True
                        break
    finally:
        waited = clock.read()[1] - waited0
        clock.close()
    elapsed_ms = max(0.0, (time.monotonic() - started - waited) * 1000)
    return bytes(data), host_error, elapsed_ms
