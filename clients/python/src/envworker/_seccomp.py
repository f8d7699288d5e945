"""The seccomp filter of a call's child (_call_fork.py): it may signal, re-limit or re-prioritise
only itself. Every process of a worker shares one uid, so without it a call that ran the model's
text could kill its fork server (every client's calls with it) or a sibling (another client's call).
Reading or writing another process's memory is refused already: the fork server is not dumpable,
nor are its children (ptrace and /proc/<pid>/mem need that). x86-64 and arm64; elsewhere none.
"""

from __future__ import annotations

import ctypes
import os
import platform
from typing import List, Optional, Tuple

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# Per machine: its arch id and {syscall: how it is checked}. SELF(i): allowed only when its
# argument i is this process; SELF_OR_0(i): 0 also means "myself" there; NEVER: always refused.
SELF, SELF_OR_0 = "self", "self-or-0"
NEVER = None
_TABLES = {
    "x86_64": (0xC000003E, {
        62: (SELF, 0), 200: (SELF, 0), 234: (SELF, 0), 129: (SELF, 0), 297: (SELF, 0),  # kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo
        424: NEVER, 434: NEVER, 438: NEVER,  # pidfd_send_signal pidfd_open pidfd_getfd
        101: NEVER, 310: NEVER, 311: NEVER, 312: NEVER, 440: NEVER,  # ptrace process_vm_readv/writev kcmp process_madvise
        141: (SELF, 1), 251: (SELF, 1),  # setpriority ioprio_set (their 0 may name a group or a user)
        302: (SELF_OR_0, 0), 203: (SELF_OR_0, 0), 144: (SELF_OR_0, 0), 142: (SELF_OR_0, 0), 314: (SELF_OR_0, 0), 256: (SELF_OR_0, 0), 279: (SELF_OR_0, 0),  # prlimit64 sched_setaffinity sched_setscheduler sched_setparam sched_setattr migrate_pages move_pages
    }),
    "aarch64": (0xC00000B7, {
        129: (SELF, 0), 130: (SELF, 0), 131: (SELF, 0), 138: (SELF, 0), 240: (SELF, 0),
        424: NEVER, 434: NEVER, 438: NEVER,
        117: NEVER, 270: NEVER, 271: NEVER, 272: NEVER, 440: NEVER,
        140: (SELF, 1), 30: (SELF, 1),
        261: (SELF_OR_0, 0), 122: (SELF_OR_0, 0), 119: (SELF_OR_0, 0), 118: (SELF_OR_0, 0), 274: (SELF_OR_0, 0), 238: (SELF_OR_0, 0), 239: (SELF_OR_0, 0),
    }),
}

LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
ALLOW, KILL, EPERM = 0x7FFF0000, 0x80000000, 0x00050000 | 1
SECCOMP_DATA_NR, SECCOMP_DATA_ARCH, SECCOMP_DATA_ARGS = 0, 4, 16


def program(pid: int, machine: Optional[str] = None) -> Optional[List[Tuple[int, int, int, int]]]:
    """The filter for process `pid`: a call naming another pid (or 0, a process group: its fork
    server's) is refused with EPERM; another ABI (i386, x32) kills the process."""
    entry = _TABLES.get(machine or platform.machine())
    if entry is None:
        return None
    arch, calls = entry
    prog = [(LD_W_ABS, 0, 0, SECCOMP_DATA_ARCH), (JEQ_K, 1, 0, arch), (RET_K, 0, 0, KILL), (LD_W_ABS, 0, 0, SECCOMP_DATA_NR)]
    if arch == 0xC000003E:
        prog += [(JGE_K, 0, 1, 0x40000000), (RET_K, 0, 0, KILL)]  # the x32 ABI
    for nr, rule in calls.items():
        if rule is NEVER:
            prog += [(JEQ_K, 0, 1, nr), (RET_K, 0, 0, EPERM)]
            continue
        kind, arg = rule
        # Not this call: skip its check. Else the (low half of the) pid argument decides.
        check = [(LD_W_ABS, 0, 0, SECCOMP_DATA_ARGS + 8 * arg), (JEQ_K, 0, 1, pid), (RET_K, 0, 0, ALLOW)]
        if kind == SELF_OR_0:
            check += [(JEQ_K, 0, 1, 0), (RET_K, 0, 0, ALLOW)]
        check.append((RET_K, 0, 0, EPERM))
        prog += [(JEQ_K, 0, len(check), nr)] + check
    prog.append((RET_K, 0, 0, ALLOW))
    return prog


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


_libc = ctypes.CDLL(None, use_errno=True)
_prctl = _libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_prctl.restype = ctypes.c_int


def prctl(option: int, arg: int = 0, arg2: int = 0) -> None:
    if _prctl(option, arg, arg2, 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


#: A pid no process has (pids are below 2**22): the slots of the pid in a prepared filter.
_PID_SLOT = 0xFFFFFFFF


class Prepared:
    """The filter built once, in the fork server, so that a child only writes its own pid into it
    and installs it (building it in each child cost ~1 ms of its start-up)."""

    def __init__(self, machine: Optional[str] = None) -> None:
        prog = program(_PID_SLOT, machine)
        self.filters = (_Filter * len(prog))(*prog) if prog else None
        self.slots = [i for i, ins in enumerate(prog or []) if ins[0] == JEQ_K and ins[3] == _PID_SLOT]

    def install(self) -> bool:
        """Installs the filter for this process; False where there is none for this machine."""
        if self.filters is None:
            return False
        pid = os.getpid()
        for i in self.slots:
            self.filters[i].k = pid
        fprog = _Prog(len(self.filters), self.filters)  # held until prctl has copied it
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog))
        return True


def confine_to_self() -> bool:
    """Installs the filter in this process; False where there is none for this machine."""
    return Prepared().install()
