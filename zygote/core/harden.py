# The process-level measures of the Python sandbox's zygote and of each child it forks (zygote.py),
# on top of what the launcher already applied to the whole tree (src/wall/confine.ts: bubblewrap,
# a uid of its own, an empty environment, prlimit). Each is a system call or two, so each child
# gets them all; they matter only for a guest that got out of the WebAssembly interpreter into the
# child's host Python (what test/fixtures/python-escape/ simulates):
#
# - the zygote is not dumpable (PR_SET_DUMPABLE 0, inherited by its children): no process of its
#   uid can ptrace it or a sibling, or open their /proc/<pid>/mem, fd/ or environ;
# - a child keeps exactly one descriptor, the pipe its result goes back on (and, until its request
#   is read, the pipe that request comes on): the server's channel, the zygote's stderr and every
#   other descriptor of the zygote are closed before any of its guest's code runs, and
#   RLIMIT_NOFILE then refuses any new one (no file, socket, pipe or memfd can be opened);
# - RLIMIT_NPROC 0: no new process or thread; PR_SET_NO_NEW_PRIVS; PR_SET_PDEATHSIG: a child dies
#   with its zygote; RLIMIT_AS: the zygote's own mappings and a little more (its wasm memory is
#   reserved already: it grows by the store limit);
# - a seccomp filter (x86-64 and arm64; elsewhere none) that refuses what a child never needs and
#   an escaped guest would want: signals to any process (all processes of the sandbox share one
#   uid: without it a child could kill or stop its zygote), ptrace and reading or writing another
#   process's memory, new processes and programs, opening files, sockets, memfds, namespaces,
#   mounts, changes to the file system, prctl and rlimits. Denied calls fail with EPERM; another
#   ABI (i386, x32) kills the child.

import ctypes, os, resource, select, signal

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_THP_DISABLE = 41
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

_libc = ctypes.CDLL(None, use_errno=True)
_prctl = _libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_prctl.restype = ctypes.c_int

# Signals a process of the sandbox's uid could send the zygote: blocked (they stay pending, never
# delivered). SIGKILL and SIGSTOP cannot be blocked; the faults wasmtime turns into traps
# (SIGSEGV, SIGBUS, SIGILL, SIGFPE) must not be.
BLOCKED_SIGNALS = {
    signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2,
    signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGCHLD, signal.SIGCONT, signal.SIGTSTP,
    signal.SIGTTIN, signal.SIGTTOU, signal.SIGWINCH, signal.SIGURG, signal.SIGIO, signal.SIGXCPU,
    signal.SIGXFSZ, signal.SIGPIPE,
}


def prctl(option, arg=0):
    if _prctl(option, arg, 0, 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def harden_zygote():
    prctl(PR_SET_DUMPABLE, 0)
    # No transparent huge pages, here or in the children (inherited; a child cannot call prctl):
    # the server counts a child's memory by its page faults, one page each (process-memory.ts).
    prctl(PR_SET_THP_DISABLE, 1)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED_SIGNALS)


def harden_child(keep, zygote_pid, address_space=0):
    """In a freshly forked child: `keep` = the descriptors it may hold, moved to 0, 1, ... in order."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != zygote_pid:
        os._exit(1)  # the zygote is already gone
    # Move the kept descriptors to 0..n-1 (dup first, so no kept one is closed by a dup2 over it).
    dups = [os.dup(fd) for fd in keep]
    for i, fd in enumerate(dups):
        os.dup2(fd, i, inheritable=False)
    os.closerange(len(keep), _max_fd())
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(keep), len(keep)))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if address_space:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    seccomp()


def spare(keep, zygote_pid, address_space, hot):
    """
    A spare child's start (both zygotes): hardened (harden_child), then the pages a run writes
    (`hot`, the zygote's probe) copied ahead while no request waits on fd 0 (populate).
    """
    harden_child(keep, zygote_pid, address_space)
    if hot:
        request_ready = select.poll()
        request_ready.register(0, select.POLLIN)
        populate(hot, lambda: bool(request_ready.poll(0)))


MADV_POPULATE_WRITE = 23
_madvise = _libc.madvise
_madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_madvise.restype = ctypes.c_int


POPULATE_STEP = 64 * 1024


def populate(ranges, waiting):
    """
    Copies these pages now (each a write fault's work, done by the kernel, Linux 5.14+; elsewhere
    nothing), a little at a time, and stops as soon as `waiting()` says a request has arrived: the
    copies are worth making ahead only while nothing waits for this child (back to back, the run
    would wait for pages it may not even need).
    """
    for address, length in ranges:
        for at in range(address, address + length, POPULATE_STEP):
            if waiting():
                return
            if _madvise(at, min(POPULATE_STEP, address + length - at), MADV_POPULATE_WRITE) != 0 and ctypes.get_errno() == 22:
                return  # EINVAL: this kernel has no MADV_POPULATE_WRITE


def _max_fd():
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if 0 < soft < 1 << 20 else 1 << 16


# ---- seccomp --------------------------------------------------------------------------------------

_DENIED = {
    # x86-64
    "x86_64": (0xC000003E, [
        62, 200, 234, 129, 297, 424, 434, 438,  # kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo pidfd_send_signal pidfd_open pidfd_getfd
        101, 310, 311, 312, 440,  # ptrace process_vm_readv process_vm_writev kcmp process_madvise
        56, 435, 57, 58, 59, 322,  # clone clone3 fork vfork execve execveat
        41, 53, 42, 49, 50, 43, 288,  # socket socketpair connect bind listen accept accept4
        2, 257, 437, 85, 319, 304,  # open openat openat2 creat memfd_create open_by_handle_at
        272, 308, 165, 166, 155, 161,  # unshare setns mount umount2 pivot_root chroot
        250, 321, 298, 323, 425, 157, 160, 302,  # keyctl bpf perf_event_open userfaultfd io_uring_setup prctl setrlimit prlimit64
        82, 264, 316, 87, 263, 86, 265, 88, 266, 83, 258, 84, 133, 259, 90, 268, 92, 260, 76,  # renames, unlinks, links, mkdir, rmdir, mknod, chmod, chown, truncate
        68, 29, 64, 30,  # msgget shmget semget shmat
    ]),
    # arm64 (the generic table)
    "aarch64": (0xC00000B7, [
        129, 130, 131, 138, 240, 424, 434, 438,
        117, 270, 271, 272, 440,
        220, 435, 221, 281,
        198, 199, 203, 200, 201, 202, 242,
        56, 437, 279, 265,
        97, 268, 40, 39, 41, 51,
        219, 280, 241, 282, 425, 167, 164, 261,
        38, 276, 35, 37, 36, 34, 33, 53, 54, 45,
        186, 194, 190, 196,
    ]),
}


def _seccomp_program():
    import platform

    entry = _DENIED.get(platform.machine())
    if entry is None:
        return None
    arch, numbers = entry
    LD, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06
    ALLOW, KILL, EPERM = 0x7FFF0000, 0x80000000, 0x00050000 | 1
    prog = [(LD, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, KILL), (LD, 0, 0, 0)]
    if arch == 0xC000003E:
        prog += [(JGE, 0, 1, 0x40000000), (RET, 0, 0, KILL)]  # the x32 ABI
    first = len(prog)
    deny_at = first + len(numbers) + 1
    for i, nr in enumerate(numbers):
        prog.append((JEQ, deny_at - (first + i + 1), 0, nr))
    prog += [(RET, 0, 0, ALLOW), (RET, 0, 0, EPERM)]
    return prog


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


_PROGRAM = _seccomp_program()
_FILTERS = (_Filter * len(_PROGRAM))(*_PROGRAM) if _PROGRAM else None
_PROG = _Prog(len(_PROGRAM), _FILTERS) if _PROGRAM else None


def seccomp():
    """Installs the filter in this process (after PR_SET_NO_NEW_PRIVS); False where there is none for this machine."""
    if _PROG is None:
        return False
    if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(_PROG), 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return True
