"""
The QuickJS engine as a snapshot: the warm engine (qjs_engine.Engine: QuickJS's runtime, the guest
context with its prelude and LOCKDOWN, sucrase and the last-expression helpers, warmed up) is made
once, its linear memory and globals baked into a new module, and every run is a NEW wasm instance
of that module, so no run sees what an earlier one left in the engine (issue 42; DESIGN.md
"Isolation model"; ../../../shared/reference/sandbox-limit.md, the `qjs-snap-cow-pool` way).

Baking (`bake`, run by `prepare` below, unconfined, by the server before its first QuickJS host, or
by `npm install`; only our own code runs in it, never a guest's):
- the reactor with its C API exported (wasm_layout.add_exports) and its mutable globals exported
  too, so their values can be read;
- qjs_engine.Engine made in it exactly as the fork zygote makes it;
- a new module written: the same code, the memory section's minimum = the warm memory's size, the
  data section = the warm memory's non-zero 4 KiB pages (runs of them, one active segment each),
  each mutable global's initialiser = its warm value; no start function (the reactor has none, and
  `_initialize` is never called again: its effects are in the image);
- compiled for the instance host's wasmtime settings (instance_config: the pooling allocator,
  copy-on-write memory initialisation) and serialised, beside a JSON file of what the host keeps
  about the warm engine (the addresses of the runtime, the contexts, the prelude's `ctl`, the
  helpers, the scratch buffers, the interned file names: every one a pointer into the image).

A run (`SnapshotEngine`, in the instance host qjs_instances.py): `fresh()` makes a new Store and
instantiates the precompiled snapshot through an InstancePre: wasmtime maps the image copy-on-write
into a pooled slot (~0.05 ms), and the engine's host-side state is reset from the JSON (the cache of
file names in particular: its pointers are the image's, never a former instance's). Then
qjs_engine.Engine.run, unchanged: a fresh Math.random seed from os.urandom, the run's limits, the
report. `drop()` ends the instance: the store is deleted and the slot is reset by wasmtime.

  python qjs_snapshot.py prepare CACHE_DIR ASSETS_JSON  -> {"snapshot", "meta", "cwasm", ...} as JSON
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import sys
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi
from wasmtime._extern import wrap_extern

# Started as a script (qjs_snapshot.py prepare, by quickjs-instances.ts and scripts/install-python.mjs)
# or imported by qjs_instances.py: the one entry on the path is the zygote folder, whose packages are
# core/, python/ and quickjs/ (-I leaves this script's own folder off the path on Python >= 3.11;
# where it does not, it is taken off).
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [ROOT] + [p for p in sys.path if p not in (ROOT, HERE)]

from core import engine as wasm_engine  # noqa: E402
from quickjs import qjs_engine  # noqa: E402
from quickjs.qjs_engine import API, OWN, Engine, _Fn  # noqa: E402
from quickjs.wasm_layout import Layout, WasmError, _enc_uleb, _Module, _uleb, add_exports, check_digest, read_layout  # noqa: E402

GiB = 1 << 30


class _LazyFns(dict):
    """SnapshotEngine.fn: an instance's exported functions, each made at its first use."""

    def __init__(self, engine: "SnapshotEngine"):
        super().__init__()
        self.engine = engine

    def __missing__(self, name: str) -> Any:
        e = self.engine
        fn = self[name] = _Fn(e.store, _RawFunc(e._export(name).of.func), e.sigs[name])
        return fn


class _RawFunc:
    """An exported function as qjs_engine._Fn reads it (its `_func`), without wasmtime-py's wrapper."""

    __slots__ = ("_func",)

    def __init__(self, func: Any):
        self._func = func

IMAGE_PAGE = 4096
GLOBAL_EXPORT = "__envworker_global_%d"
# Bumped when what a snapshot holds changes in a way its key would not see.
FORMAT = 1


def instance_config() -> wasmtime.Config:
    """
    The engine's wasmtime settings (core/engine.py) and the pooling allocator: instances
    are made in slots reserved once and reset by wasmtime after each (madvise back to the image),
    not mapped and unmapped per run. Two slots of everything (one instance lives at a time; the
    second is headroom), 4 GiB of address space per memory slot (a wasm32 memory's most), no GC
    heaps. `memory_init_cow` is on (wasmtime's default, set here so it stays so).
    """
    from wasmtime import _bindings as b

    cfg = wasm_engine.config()
    cfg.memory_init_cow = True
    pool = b.wasmtime_pooling_allocation_config_new()
    try:
        b.wasmtime_pooling_allocation_config_total_core_instances_set(pool, 2)
        b.wasmtime_pooling_allocation_config_total_memories_set(pool, 2)
        b.wasmtime_pooling_allocation_config_total_tables_set(pool, 2)
        b.wasmtime_pooling_allocation_config_total_gc_heaps_set(pool, 0)
        b.wasmtime_pooling_allocation_config_total_component_instances_set(pool, 0)
        b.wasmtime_pooling_allocation_config_max_memories_per_module_set(pool, 1)
        b.wasmtime_pooling_allocation_config_max_tables_per_module_set(pool, 1)
        b.wasmtime_pooling_allocation_config_max_memory_size_set(pool, 4 * GiB)
        b.wasmtime_pooling_allocation_strategy_set(cfg.ptr(), pool)
    finally:
        b.wasmtime_pooling_allocation_config_delete(pool)
    return cfg


# ---- the module -------------------------------------------------------------------------------------


def _sections(b: bytes) -> list[tuple[int, str | None, int, int, int]]:
    return _Module(b).sections


def _globals(b: bytes) -> list[tuple[int, bool, bytes]]:
    """The module's own globals: (value type, mutable, init expression) each (constant inits only)."""
    m = _Module(b)
    j, _ = m.section(6)
    count, i = _uleb(b, j)
    out = []
    for _ in range(count):
        vt, mut = b[i], b[i + 1]
        k = i + 2
        # A constant expression: one instruction and `end`.
        op = b[k]
        if op == 0x41 or op == 0x42:  # i32.const / i64.const
            k += 1
            while b[k] & 0x80:
                k += 1
            k += 1
        else:
            raise WasmError(f"global init opcode {op:#x} not expected")
        if b[k] != 0x0B:
            raise WasmError("global init not a single constant")
        out.append((vt, mut == 1, b[i + 2 : k + 1]))
        i = k + 1
    return out


def _imported_globals(b: bytes) -> int:
    m = _Module(b)
    m.imported_functions()  # refuses any import that is not a function
    return 0


def bakeable(patched: bytes) -> bytes:
    """`patched` (its C API exported) with its mutable globals exported as GLOBAL_EXPORT % index."""
    _imported_globals(patched)
    mutable = [i for i, (_, mut, _) in enumerate(_globals(patched)) if mut]
    out = bytearray(patched[:8])
    for sid, _, start, j, e in _sections(patched):
        if sid == 7:
            count, i = _uleb(patched, j)
            body = bytearray(_enc_uleb(count + len(mutable)))
            body += patched[i:e]
            for g in mutable:
                nb = (GLOBAL_EXPORT % g).encode()
                body += _enc_uleb(len(nb)) + nb + b"\x03" + _enc_uleb(g)
            out += bytes([7]) + _enc_uleb(len(body)) + body
        else:
            out += patched[start:e]
    return bytes(out)


def _sleb_enc(n: int) -> bytes:
    out = bytearray()
    while True:
        x = n & 0x7F
        n >>= 7
        if (n == 0 and not x & 0x40) or (n == -1 and x & 0x40):
            out.append(x)
            return bytes(out)
        out.append(x | 0x80)


def baked(patched: bytes, memory: bytes, global_values: dict[int, int]) -> bytes:
    """The module whose instances start where the warm engine was: memory and globals baked in."""
    pages = len(memory) // 65536
    globals_ = _globals(patched)
    out = bytearray(patched[:8])
    # Runs of non-zero 4 KiB pages: one active data segment each (the rest of the memory is zero).
    segments: list[tuple[int, bytes]] = []
    zero = bytes(IMAGE_PAGE)
    run_start = None
    for at in range(0, len(memory) + IMAGE_PAGE, IMAGE_PAGE):
        nonzero = at < len(memory) and memory[at : at + IMAGE_PAGE] != zero
        if nonzero and run_start is None:
            run_start = at
        elif not nonzero and run_start is not None:
            segments.append((run_start, memory[run_start:at]))
            run_start = None
    for sid, name, start, j, e in _sections(patched):
        if sid == 0 and name is not None and name.startswith(".debug"):
            continue
        if sid == 5:
            body = b"\x01\x00" + _enc_uleb(pages)  # one memory, no maximum, minimum = the warm size
            out += bytes([5]) + _enc_uleb(len(body)) + body
        elif sid == 6:
            body = bytearray(_enc_uleb(len(globals_)))
            for idx, (vt, mut, init) in enumerate(globals_):
                body += bytes([vt, 1 if mut else 0])
                if mut:
                    if vt == 0x7F:
                        v = global_values[idx] & 0xFFFFFFFF
                        v = v - (1 << 32) if v >= 1 << 31 else v
                        body += b"\x41" + _sleb_enc(v) + b"\x0b"
                    elif vt == 0x7E:
                        v = global_values[idx] & 0xFFFFFFFFFFFFFFFF
                        v = v - (1 << 64) if v >= 1 << 63 else v
                        body += b"\x42" + _sleb_enc(v) + b"\x0b"
                    else:
                        raise WasmError("only i32/i64 mutable globals are expected")
                else:
                    body += init
            out += bytes([6]) + _enc_uleb(len(body)) + body
        elif sid == 12:
            body = _enc_uleb(len(segments))
            out += bytes([12]) + _enc_uleb(len(body)) + body
        elif sid == 11:
            body = bytearray(_enc_uleb(len(segments)))
            for offset, data in segments:
                body += b"\x00\x41" + _sleb_enc(offset) + b"\x0b" + _enc_uleb(len(data)) + data
            out += bytes([11]) + _enc_uleb(len(body)) + body
        elif sid == 8:
            raise WasmError("the module has a start function")
        else:
            out += patched[start:e]
    return bytes(out)


# ---- baking -----------------------------------------------------------------------------------------


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snapshot_key(patched: bytes, assets_text: bytes) -> str:
    """What the snapshot depends on: the module, the assets, the code that makes the warm state, wasmtime and its settings."""
    h = hashlib.sha256()
    for part in (patched, assets_text, json.dumps(wasm_engine.SETTINGS, sort_keys=True).encode(), wasm_engine.wasmtime_version().encode(), str(FORMAT).encode()):
        h.update(_sha(part).encode())
    for f in ("qjs_engine.py", "qjs_snapshot.py", "wasm_layout.py"):
        with open(os.path.join(HERE, f), "rb") as fh:
            h.update(_sha(fh.read()).encode())
    return h.hexdigest()[:20]


def _write(path: str, data: bytes) -> None:
    partial = "%s.%d.tmp" % (path, os.getpid())
    with open(partial, "wb") as f:
        f.write(data)
    os.chmod(partial, 0o644)
    # Renamed over: a host starting meanwhile finds the whole file or none.
    os.replace(partial, path)


def bake(cache_dir: str, assets: str) -> dict[str, str]:
    """The snapshot (a .cwasm and its .json) in `cache_dir`, made unless it is there already (~5 s)."""
    with open(qjs_engine.find_wasm(), "rb") as f:
        raw = f.read()
    check_digest(raw)
    patched = add_exports(raw, list(API))
    with open(assets, "rb") as f:
        assets_text = f.read()
    key = snapshot_key(patched, assets_text)
    base = os.path.join(cache_dir, "quickjs-snapshot-%s" % key)
    snapshot, meta = base + ".cwasm", base + ".json"
    if os.path.exists(snapshot) and os.path.exists(meta):
        return {"snapshot": snapshot, "meta": meta}
    a = json.loads(assets_text)
    # The warm engine, made in the bakeable module (compiled to a temporary .cwasm: Engine loads one).
    warm_cwasm = base + ".warm.%d.cwasm" % os.getpid()
    _write(warm_cwasm, wasmtime.Module(wasmtime.Engine(wasm_engine.config()), bakeable(patched)).serialize())
    try:
        eng = Engine(warm_cwasm, a["prelude"], a["bundle"])
    finally:
        os.unlink(warm_cwasm)
    ex = eng.instance.exports(eng.store)
    values: dict[int, int] = {}
    for idx, (_, mut, _) in enumerate(_globals(patched)):
        if mut:
            g = ex[GLOBAL_EXPORT % idx]
            assert isinstance(g, wasmtime.Global)
            values[idx] = int(g.value(eng.store))
    size = eng.memory.data_len(eng.store)
    memory = ctypes.string_at(eng._base(), size)
    layout = eng.layout
    state = {
        "format": FORMAT,
        "key": key,
        "pages": size // 65536,
        "rt": eng.rt,
        "ctx": eng.ctx,
        "ctl": eng.ctl,
        "strip": eng.strip,
        "candidates": eng.candidates,
        "pctx": eng.pctx,
        "plen": eng.plen,
        "scratch": eng.scratch,
        "scratch_size": eng.scratch_size,
        "argv": eng.argv,
        "filenames": eng.filenames,
        "prelude": eng.prelude,
        "layout": {k: getattr(layout, k) for k in Layout.__dataclass_fields__},
        "nonzero_pages": sum(1 for at in range(0, size, IMAGE_PAGE) if memory[at : at + IMAGE_PAGE] != bytes(IMAGE_PAGE)),
    }
    module = wasmtime.Module(wasmtime.Engine(instance_config()), baked(patched, memory, values))
    _write(snapshot, module.serialize())
    _write(meta, json.dumps(state).encode())
    return {"snapshot": snapshot, "meta": meta}


def prepare(cache_dir: str, assets: str) -> dict[str, Any]:
    os.makedirs(cache_dir, exist_ok=True)
    out = bake(cache_dir, assets)
    return {**out, "wasmtime": wasm_engine.wasmtime_version(), "executable": wasm_engine.executable_path(), "readable": wasm_engine.readable_paths()}


# ---- a run: a fresh instance of the snapshot --------------------------------------------------------


class SnapshotEngine(Engine):
    """qjs_engine.Engine whose every run is a fresh instance of the snapshot (fresh(), then run(), then drop())."""

    def __init__(self, snapshot: str, meta: str):  # noqa: super().__init__ makes the warm engine; this loads it
        with open(meta, "r", encoding="utf-8") as f:
            state = json.load(f)
        if state.get("format") != FORMAT:
            raise RuntimeError("the QuickJS snapshot is of another format")
        self.state = state
        self.layout = Layout(**state["layout"])
        self.engine = wasmtime.Engine(instance_config())
        self.module = wasmtime.Module.deserialize_file(self.engine, snapshot)
        self.pre = self._linker().instantiate_pre(self.module)
        self.prelude = state["prelude"]
        for k in ("rt", "ctx", "ctl", "strip", "candidates", "pctx", "plen", "scratch", "scratch_size", "argv"):
            setattr(self, k, int(state[k]))
        self.image_bytes = int(state["pages"]) * 65536
        self.store = None  # type: ignore[assignment]
        self.instance = None  # type: ignore[assignment]
        self.memory = None  # type: ignore[assignment]
        self.fn = {}
        self.filenames = {}
        self.sigs = {**API, **OWN}
        # Where each export the host uses is in the module's export list: an instance's exports are
        # then read by index alone (wasmtime-py's Instance.exports wraps all of them, ~0.2 ms a run).
        store = wasmtime.Store(self.engine)
        names = list(self.pre.instantiate(store).exports(store))
        store.close()
        self.export_index = {n: names.index(n) for n in ["memory", *self.sigs]}

    def _export(self, name: str) -> Any:
        item = ffi.wasmtime_extern_t()
        name_ptr = ctypes.POINTER(ctypes.c_char)()
        name_len = ctypes.c_size_t(0)
        if not ffi.wasmtime_instance_export_nth(self.store._context(), ctypes.byref(self.instance._instance), self.export_index[name], ctypes.byref(name_ptr), ctypes.byref(name_len), ctypes.byref(item)):
            raise RuntimeError(f"the snapshot's instance has no export {name}")
        return item

    def fresh(self) -> int:
        """A new instance of the snapshot, and the host's state reset to the snapshot's; the address of its memory."""
        self.store = wasmtime.Store(self.engine)
        self.instance = self.pre.instantiate(self.store)
        self.memory = wrap_extern(self._export("memory"))
        # Each function is looked up at its first call in this instance (~15 us each in wasmtime's C
        # API): a run calls about half of them.
        self.fn = _LazyFns(self)
        # Pointers into the image (interned file names): the snapshot's own, never a former run's.
        self.filenames = {k: int(v) for k, v in self.state["filenames"].items()}
        return self._base()

    def signals_address(self, base: int) -> int:
        return base + self.layout.signals_byte

    def drop(self) -> None:
        """The instance ends: nothing of it is kept (the store deleted, its slot reset by wasmtime)."""
        self.fn = {}
        self.memory = None  # type: ignore[assignment]
        self.instance = None  # type: ignore[assignment]
        store, self.store = self.store, None  # type: ignore[assignment]
        if store is not None:
            store.close()
        self.filenames = {}


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "prepare":
        sys.stderr.write("usage: qjs_snapshot.py prepare CACHE_DIR ASSETS_JSON\n")
        sys.exit(2)
    print(json.dumps(prepare(sys.argv[2], sys.argv[3])))
