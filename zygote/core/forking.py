# What a fork server (the Python zygote, python/zygote.py, and QuickJS's, quickjs/qjs_zygote.py)
# does with its own process and with the children it forks: pipes read and written whole, its
# memory as /proc says, the pages a run writes (found once by a probe), and a child's end.

import json, os, signal

MiB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")
# What a child may map beyond the zygote's own mappings: its host-side Python (output, the report).
CHILD_MAPPINGS = 512 * MiB


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


def read_to_end(fd):
    chunks = []
    while True:
        c = os.read(fd, 1 << 16)
        if not c:
            return b"".join(chunks)
        chunks.append(c)


def _statm(field):
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[field]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def vsize():
    """This process's mapped bytes."""
    return _statm(0)


def rss():
    """This process's resident bytes."""
    return _statm(1)


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


def report_written(fd):
    """In a probe child: its written pages (written_ranges) to `fd`, then its end."""
    try:
        write_all(fd, json.dumps(written_ranges()).encode())
    finally:
        os._exit(0)


def probe_pages(run_in_child):
    """
    The pages a run writes, found once at a zygote's start: a child runs a sample request from the
    zygote's state (`run_in_child(fd)`, in the child) and reports the pages it copied to `fd`
    (report_written); another reports those it copies with no run at all (what measuring itself
    writes); the difference is the run's. Each spare copies them in advance (harden.populate)
    while it waits for its request, so a run takes fewer copy-on-write faults while it runs.

    `run_in_child` may return (the Python zygote's probe goes back into WebAssembly, and reports
    at its run's end): then this returns None in that child. In the zygote: [(address, length)].
    """
    measured = []
    for run in (True, False):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            if not run:
                report_written(w)
            run_in_child(w)
            return None
        os.close(w)
        data = read_to_end(r)
        os.close(r)
        os.waitpid(pid, 0)
        try:
            measured.append({int(a) + i for a, n in json.loads(data) for i in range(0, int(n), PAGE)})
        except (ValueError, TypeError):
            return []
    ranges = []
    for page in sorted(measured[0] - measured[1]):
        if ranges and ranges[-1][0] + ranges[-1][1] == page:
            ranges[-1][1] += PAGE
        else:
            ranges.append([page, PAGE])
    return [tuple(x) for x in ranges][:4096]


class Child:
    """A forked child as its zygote holds it: its pid and its two pipes (the request's, the result's)."""

    def __init__(self, pid, request_w, result_r):
        self.pid = pid
        self.request_w = request_w
        self.result_r = result_r

    def close_request(self):
        os.close(self.request_w)
        self.request_w = -1

    def reap(self):
        """Its pipes closed, killed and waited for: its wait status, or None."""
        for fd in (self.request_w, self.result_r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            _, status = os.waitpid(self.pid, 0)
            return status
        except ChildProcessError:
            return None


def died(status, what):
    """The host error of a child that ended with no usable result."""
    how = "exit code %s" % os.waitstatus_to_exitcode(status) if status is not None else "unknown"
    return {"name": "SandboxError", "message": "the %s died (%s)" % (what, how)}
