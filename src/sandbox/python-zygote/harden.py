# The process-level measures of the Python sandbox's zygote and of each child it forks (zygote.py),
# on top of what the launcher already applied to the whole tree (src/sandbox/confine.ts: bubblewrap,
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
#   with its zygote.

import ctypes, os, resource, signal

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38

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
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED_SIGNALS)


def harden_child(keep, zygote_pid):
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


def _max_fd():
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if 0 < soft < 1 << 20 else 1 << 16
