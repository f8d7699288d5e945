# The Python that runs INSIDE the WebAssembly interpreter (CPython 3.12 for WASI, run by wasmtime):
# zygote.py passes this file's text as `python -c` to the interpreter it boots once. It
#
# 1. imports the modules a guest most often uses and warms the interpreter up (a sample program
#    compiled and run, the report encoded), then freezes the collector's objects (gc.freeze), so a
#    forked child touches (and copies) as few pages as possible;
# 2. reads a run's payload from fd 0. In the zygote that read never returns: the host's fd_read is
#    the zygote's fork loop (zygote.py). In each forked child it returns that child's one payload;
# 3. runs the program (the runner below: the contract of src/sandbox/README.md "Python") and writes
#    its report to fd 1 (REPORT_MAGIC); the host ends the child in that write (os._exit, no teardown).
#
# Nothing here needs to undo what a guest does: every run is a fresh child of the zygote, so the
# next run never sees this one's modules, builtins, globals or output. Nor is anything here a wall:
# the guest shares this interpreter and can read or replace all of it. The walls are outside it
# (wasm memory, the host functions that bound what comes out, the forked process; zygote.py).
#
# Output: stdout/stderr are buffered text streams over fds 1 and 2, which the host captures (and
# caps at maxOutputBytes); the report (result and error, JSON) is one write to fd 1 that begins
# with REPORT_MAGIC (a token of this zygote's, argv[1]), so no print can end a run by accident.
# (WASI here knows fds 0-2 only: another descriptor is refused before it reaches the host.) A
# guest can of course write a report itself: that decides its own run's result, which its code
# decides anyway.

import sys, gc, io, os, ast, types, traceback, json, _json, builtins

REPORT_MAGIC = b"\x00envworker-report\x00" + sys.argv[1].encode("ascii")

for _name in (
    "bisect", "collections", "copy", "dataclasses", "datetime", "decimal", "fractions", "functools",
    "heapq", "itertools", "json", "math", "operator", "random", "re", "statistics", "string",
    "textwrap", "typing", "unicodedata", "enum", "array", "cmath", "time", "struct", "hashlib",
):
    try:
        __import__(_name)
    except ImportError:
        pass


def _make_runner():
    enc = _json.encode_basestring_ascii
    parse = ast.parse
    Expr = ast.Expr
    Expression = ast.Expression
    ModuleType = types.ModuleType
    _compile = compile
    _exec = exec
    _eval = eval
    _type = type
    _isinstance = isinstance
    _repr = repr
    _str = str
    _len = len
    _id = id
    _int_repr = int.__repr__
    _float_repr = float.__repr__
    _str_new = str.__new__
    _type_name = type.__dict__["__name__"].__get__
    _join = "".join
    _list_append = list.append
    _dict_items = dict.items
    _modules = sys.modules
    _format_exception = traceback.format_exception
    _BaseException = BaseException
    _write = os.write
    SAFE_INT = 2 ** 53
    MAX_DEPTH = 64

    class TooLarge(BaseException):
        pass

    def clip(s, n):
        return s if _len(s) <= n else s[:n] + "..."

    def scalar_key(k):
        t = _type(k)
        if t is str:
            return k
        if t is bool:
            return "true" if k else "false"
        if k is None:
            return "null"
        if _isinstance(k, int):
            return _int_repr(k)
        if _isinstance(k, float):
            return _float_repr(k)
        return _repr(k)

    def describe(v):
        try:
            r = _repr(v)
            if _type(r) is not str:
                r = "<object>"
        except _BaseException:
            r = "<unrepresentable %s>" % (_type_name(_type(v)),)
        return r

    def to_json(v, depth, out, budget, stack):
        # Appends JSON text for v to out; returns the remaining budget (characters).
        t = _type(v)
        if v is None:
            s = "null"
        elif t is bool:
            s = "true" if v else "false"
        elif _isinstance(v, int):
            try:
                digits = _int_repr(v)
            except ValueError:
                digits = "<int with %d bits>" % (v.bit_length(),)
            s = digits if -SAFE_INT <= v <= SAFE_INT else enc(digits)
        elif _isinstance(v, float):
            if v != v:
                s = '"NaN"'
            elif v in (float("inf"), float("-inf")):
                s = '"Infinity"' if v > 0 else '"-Infinity"'
            else:
                s = _float_repr(v)
        elif _isinstance(v, str):
            if _len(v) > budget:
                raise TooLarge
            s = enc(_str_new(str, v))
        elif _isinstance(v, (list, tuple, dict, set, frozenset)):
            if depth >= MAX_DEPTH:
                s = '"[Object]"' if _isinstance(v, dict) else '"[Array]"'
            elif _id(v) in stack:
                s = '"[Circular]"'
            else:
                stack.add(_id(v))
                if _isinstance(v, dict):
                    _list_append(out, "{")
                    budget -= 1
                    first = True
                    for k, x in _dict_items(v):
                        if not first:
                            _list_append(out, ",")
                            budget -= 1
                        first = False
                        key = enc(clip(scalar_key(k), budget + 1))
                        _list_append(out, key)
                        _list_append(out, ":")
                        budget -= _len(key) + 1
                        if budget < 0:
                            raise TooLarge
                        budget = to_json(x, depth + 1, out, budget, stack)
                    _list_append(out, "}")
                else:
                    _list_append(out, "[")
                    budget -= 1
                    first = True
                    for x in (list.__iter__(v) if _isinstance(v, list) else tuple.__iter__(v) if _isinstance(v, tuple) else v):
                        if not first:
                            _list_append(out, ",")
                            budget -= 1
                        first = False
                        budget = to_json(x, depth + 1, out, budget, stack)
                    _list_append(out, "]")
                budget -= 1
                stack.discard(_id(v))
                if budget < 0:
                    raise TooLarge
                return budget
        else:
            s = enc(clip(describe(v), budget + 1))
        budget -= _len(s)
        if budget < 0:
            raise TooLarge
        _list_append(out, s)
        return budget

    def describe_error(e):
        name = "Error"
        try:
            name = _type_name(_type(e))
        except _BaseException:
            pass
        try:
            message = _str(e)
            if _type(message) is not str:
                message = ""
        except _BaseException:
            message = ""
        stack = ""
        try:
            # The runner's own frames (this file, "<string>") are not the guest's.
            stack = _join([l for l in _format_exception(e) if 'File "<string>"' not in l])
        except _BaseException:
            pass
        return '{"name":%s,"message":%s,"stack":%s}' % (enc(clip(name, 200)), enc(clip(message, 2000)), enc(clip(stack, 4000)))

    class Out(io.RawIOBase):
        # fd 1 or 2 as a raw stream: os.write goes straight to the host's fd_write (no fstat).
        # Output is capped here first (maxOutputBytes for both streams together, `budget`): past
        # it nothing more crosses into the host, which caps it again (a guest can write to the
        # fds directly) and marks the cut. One byte past the cap is passed on, so the host sees
        # which stream was cut.
        def __init__(self, fd, budget):
            self._fd = fd
            self._budget = budget

        def writable(self):
            return True

        def write(self, b):
            n = _len(b)
            left = self._budget[0]
            if left >= 0:
                k = n if n <= left else left + 1
                if k:
                    _write(self._fd, b if k == n else memoryview(b)[:k])
                self._budget[0] = left - n
            return n

    class Stdin(io.BytesIO):
        # The run's stdin; its fileno() is 0, as a real stdin's would be.
        def fileno(self):
            return 0

    def streams(stdin, max_output):
        budget = [max_output]
        out = io.TextIOWrapper(io.BufferedWriter(Out(1, budget), 8192), encoding="utf-8", errors="strict", newline="\n")
        err = io.TextIOWrapper(io.BufferedWriter(Out(2, budget), 8192), encoding="utf-8", errors="backslashreplace", newline="\n", line_buffering=True)
        inp = io.TextIOWrapper(io.BufferedReader(Stdin(stdin.encode("utf-8", "surrogatepass"))), encoding="utf-8", errors="strict")
        return inp, out, err

    def flush():
        for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                s.flush()
            except _BaseException:
                pass

    def run(code, max_result_chars, globals_, stdin):
        # One program in a fresh __main__; returns the report's JSON text.
        sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams(stdin, max_result_chars)
        main = ModuleType("__main__")
        main.__dict__["__builtins__"] = builtins
        main.__dict__.update(globals_)
        _modules["__main__"] = main
        g = main.__dict__
        status = "error"
        result = "null"
        error = "null"
        try:
            try:
                tree = parse(code, "<main>", "exec")
                last = None
                if tree.body and _type(tree.body[-1]) is Expr:
                    last = tree.body.pop()
                body = _compile(tree, "<main>", "exec")
                tail = _compile(Expression(last.value), "<main>", "eval") if last is not None else None
            except _BaseException as e:
                error = describe_error(e)
            else:
                try:
                    _exec(body, g)
                    value = _eval(tail, g) if tail is not None else None
                    out = []
                    try:
                        to_json(value, 0, out, max_result_chars, set())
                        result = _join(out)
                        status = "ok"
                    except TooLarge:
                        status = "too_large"
                except SystemExit as e:
                    # sys.exit()/exit()/os._exit(): the program ended; a normal ending when the code is 0/None.
                    code_ = e.code
                    if code_ is None or code_ == 0:
                        status = "ok"
                    else:
                        error = '{"name":"SystemExit","message":%s}' % (enc(clip(describe(code_) if _type(code_) is not str else code_, 2000)),)
                except _BaseException as e:
                    error = describe_error(e)
        except _BaseException as e:
            # A recursion or memory error inside the runner's own steps.
            status = "error"
            error = '{"name":%s,"message":"the run failed in the runner"}' % (enc(_type_name(_type(e))),)
        flush()
        return '{"status":"%s","result":%s,"error":%s}' % (status, result, error)

    return run


__envworker_run = _make_runner()
sys.argv = [""]
del _make_runner

# Ending the process would skip the report: both are a plain SystemExit, as sys.exit() is (a
# normal ending for 0/None, an error otherwise). proc_exit is still reachable by a guest that
# looks for it; it ends only its own child, with no report (a SandboxError for that run).
def _exit(status=0):
    raise SystemExit(status)


def _abort():
    raise SystemExit("os.abort() called")


os._exit = _exit
os.abort = _abort

# time.process_time: this build reads it through wasi-libc's times(), which scales WASI's CPU clock
# wrongly (10^9 times too large). A child runs one single-threaded program from its fork on, so
# its monotonic time since then is what it gets instead (differences, the usual use, are right).
def _process_clock():
    import time

    monotonic_ns = time.monotonic_ns
    start = [monotonic_ns()]
    time.process_time_ns = lambda: monotonic_ns() - start[0]
    time.process_time = lambda: (monotonic_ns() - start[0]) / 1e9

    def reset():
        start[0] = monotonic_ns()

    return reset


_reset_process_clock = _process_clock()
del _process_clock
import posix
posix._exit = _exit
posix.abort = _abort
del posix


def __envworker_serve():
    def read_all():
        chunks = []
        while True:
            c = os.read(0, 1 << 20)
            if not c:
                return b"".join(chunks)
            chunks.append(c)

    # Warm-up: what every run does, on a sample, so the code paths and caches a run needs exist in
    # the zygote (shared by every child) instead of being built (and their pages copied) per run.
    sample = {"code": "import math\ns = 0\nfor i in range(200):\n    s += i\nprint(s, [1, 'a', None], {'k': 1.5})\ntry:\n    1 / 0\nexcept Exception as e:\n    str(e)\nx = input()\n{'s': s, 'x': x, 't': (1, 2.5, None, True)}", "stdin": "line\n", "globals": {"g": [1, 2]}, "maxResultChars": 1000}
    stdio = (sys.stdin, sys.stdout, sys.stderr)
    for _ in range(3):
        report = __envworker_run(sample["code"], sample["maxResultChars"], sample["globals"], sample["stdin"])
        json.loads(json.dumps(json.loads(report)))
    sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__ = stdio
    sys.modules.pop("__main__", None)
    gc.collect()
    gc.freeze()

    # In the zygote this read is where the fork loop runs (it never returns); in a child it
    # returns that child's payload.
    request = json.loads(read_all())
    _reset_process_clock()
    options = request.get("options") or {}
    report = __envworker_run(request["code"], options.get("maxOutputBytes", 65536), options.get("globals") or {}, options.get("stdin") or "")
    os.write(1, REPORT_MAGIC + report.encode("utf-8", "surrogatepass"))


__envworker_serve()
