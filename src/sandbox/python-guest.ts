/**
 * The Python that runs inside every Pyodide interpreter of the python sandbox, once, before the
 * interpreter's memory snapshot is taken (python-worker.ts). It does two jobs:
 *
 * 1. LOCKDOWN: cut every route from Python to the host. The only bridge from Python to JavaScript
 *    is Pyodide's C module `_pyodide_core` (JsProxy objects, `run_js`, `to_js`...) and the Python
 *    modules built on it (`js`, `pyodide_js`, `pyodide.*`, `_pyodide.*`), plus `ctypes` (which can
 *    call any C symbol, `emscripten_run_script` included). The lockdown removes those modules from
 *    `sys.modules`, clears their dictionaries (so functions that stay reachable through the object
 *    graph, e.g. via `object.__subclasses__()` and `__globals__`, reach nothing), takes Pyodide's
 *    import hooks off `sys.meta_path`, creates every allowed built-in module up front and then
 *    replaces `_imp`'s creators outright, so no built-in module can be created or re-executed
 *    afresh (that would hand out `_pyodide_core`, or original functions such as an unpatched
 *    `signal.signal`). No replacement calls the function it replaced: a Python function's closure
 *    is readable by the guest, so the originals must be gone, not wrapped. Extension modules
 *    cannot be loaded at all. It then VERIFIES the result: after a full collection no JsProxy, no
 *    blocked module and none of the replaced built-in functions may be reachable from any object
 *    the collector knows; otherwise the interpreter refuses to start (fail closed).
 *    Network (`_socket`), subprocesses (`_posixsubprocess`), `faulthandler`, `mmap`, `select`,
 *    `fcntl`, `termios` and CPython's test modules are blocked the same way; `os._exit` and
 *    `os.abort` raise SystemExit instead of tearing down the interpreter; SIGINT (the time limit's
 *    interrupt) cannot be ignored or re-handled.
 *
 * 2. THE RUNNER: `__envworker_run(code, max_result_chars)` runs one program in a fresh `__main__`
 *    module and returns a JSON report `{"status", "result", "error"}` built from primitives with
 *    functions captured here, before any guest code ran. `result` is the value of the last
 *    expression statement (JSON-safe, see README). Everything the program changes (modules,
 *    builtins, files, `sys` settings) is undone afterwards by restoring the memory snapshot, so
 *    the runner may change global state freely.
 */

/** Modules a guest may never import (root names: `pyodide` blocks `pyodide.ffi` too). */
export const BLOCKED_MODULES = [
  "js",
  "pyodide_js",
  "pyodide",
  "_pyodide",
  "_pyodide_core",
  "micropip",
  "ctypes",
  "_ctypes",
  "_socket",
  "socket",
  "ssl",
  "_ssl",
  "select",
  "selectors",
  "_posixsubprocess",
  "subprocess",
  "multiprocessing",
  "_multiprocessing",
  "concurrent",
  "asyncio",
  "faulthandler",
  "mmap",
  "fcntl",
  "termios",
  "pty",
  "tty",
  "_testcapi",
  "_testinternalcapi",
  "_testbuffer",
  "_testclinic",
  "_testclinic_limited",
  "_testlimitedcapi",
  "_testmultiphase",
  "_xxtestfuzz",
  "xxsubtype",
  "_remote_debugging",
  "webbrowser",
  "http",
  "urllib.request",
  "ftplib",
  "smtplib",
  "poplib",
  "imaplib",
  "xmlrpc",
  "socketserver",
  // Sub-interpreters start with fresh, un-locked-down modules (not built into Pyodide today).
  "_interpreters",
  "_interpqueues",
  "_interpchannels",
  "_xxsubinterpreters",
] as const;

/** Modules imported before the snapshot, so a guest's `import` of them costs nothing. */
export const PRELOADED_MODULES = [
  "ast",
  "bisect",
  "collections",
  "copy",
  "dataclasses",
  "datetime",
  "decimal",
  "fractions",
  "functools",
  "heapq",
  "itertools",
  "json",
  "math",
  "operator",
  "random",
  "re",
  "statistics",
  "string",
  "textwrap",
  "typing",
  "unicodedata",
] as const;

const pyList = (names: readonly string[]) => `(${names.map((n) => JSON.stringify(n)).join(", ")},)`;

export const PYTHON_SETUP = String.raw`
def __envworker_setup(blocked, preload):
    import sys, gc, _imp, builtins, posix, os, _signal, signal
    for name in preload:
        __import__(name)

    blocked = frozenset(blocked)

    def is_blocked(name):
        if not isinstance(name, str):
            return False
        if name in blocked:
            return True
        parts = name.split(".")
        for i in range(1, len(parts)):
            if ".".join(parts[:i]) in blocked:
                return True
        return False

    def refuse(name):
        return ModuleNotFoundError("No module named %r (not available in the sandbox)" % (name,), name=name)

    # Take Pyodide's hooks (JsFinder, the Windows path finder) off the import system.
    sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, "__module__", "") in ("_frozen_importlib", "_frozen_importlib_external")]

    class SandboxImportBlocker:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if is_blocked(name):
                raise refuse(name)
            return None

        @staticmethod
        def invalidate_caches():
            pass

    sys.meta_path.insert(0, SandboxImportBlocker)

    # Clear and drop every blocked module that is loaded, Pyodide's own first.
    doomed = [m for m in list(sys.modules) if is_blocked(m) or m.startswith(("_pyodide", "pyodide", "asyncio", "concurrent"))]
    for m in doomed:
        mod = sys.modules.pop(m, None)
        d = getattr(mod, "__dict__", None)
        if isinstance(d, dict):
            try:
                d.clear()
            except Exception:
                pass
    # Attributes of surviving packages that point at dropped submodules.
    for m, mod in list(sys.modules.items()):
        d = getattr(mod, "__dict__", None)
        if not isinstance(d, dict):
            continue
        for k, v in list(d.items()):
            if type(v) is type(sys) and is_blocked(getattr(v, "__name__", None)):
                del d[k]

    # Every built-in module a guest may use is created now, before the lockdown, so that creating
    # or re-initialising a built-in module can afterwards be refused outright. A guard that let some
    # names through would have to call the real _imp.create_builtin, so hold it, and whatever a
    # Python function holds a guest can reach (__closure__, gc.get_referents): with it a guest
    # re-created _pyodide_core and reached the thread's JavaScript. The real functions must not
    # survive the lockdown at all (__envworker_verify checks that none is reachable).
    for name in sys.builtin_module_names:
        if name not in sys.modules and not is_blocked(name):
            try:
                __import__(name)
            except Exception:
                pass

    def refuse_builtin(spec, *args):
        name = getattr(spec, "name", None)
        if not isinstance(name, str) or is_blocked(name):
            raise refuse(name)
        raise ImportError("creating or re-initialising a built-in module is not supported in the sandbox", name=name)

    def refuse_dynamic(spec, file=None):
        raise ImportError("loading extension modules is not supported in the sandbox", name=getattr(spec, "name", None))

    _imp.create_builtin = refuse_builtin
    _imp.exec_builtin = refuse_builtin
    _imp.create_dynamic = refuse_dynamic
    if hasattr(_imp, "exec_dynamic"):
        _imp.exec_dynamic = refuse_dynamic

    # Ending the process would take the interpreter down with it: make both a plain SystemExit.
    def _exit(status=0):
        raise SystemExit(status)

    def abort():
        raise SystemExit("os.abort() called")

    posix._exit = os._exit = _exit
    posix.abort = os.abort = abort
    for name in ("system", "fork", "forkpty", "execv", "execve", "posix_spawn", "posix_spawnp", "kill", "killpg"):
        for m in (posix, os):
            m.__dict__.pop(name, None)

    # The time limit arrives as SIGINT: it can be neither ignored nor handled by the guest. Its
    # handler is set here once; afterwards no guest can reach the real _signal.signal (a wrapper
    # that called it would hand it out through its closure). Installing a handler for any other
    # signal is accepted and does nothing: no other signal ever arrives inside the sandbox.
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    SIGINT = _signal.SIGINT
    SIG_DFL = _signal.SIG_DFL

    def guarded_signal(signalnum, handler):
        if signalnum == SIGINT:
            raise ValueError("SIGINT is reserved by the sandbox")
        if not isinstance(signalnum, int) or not (callable(handler) or isinstance(handler, int)):
            raise TypeError("signal handler must be signal.SIG_IGN, signal.SIG_DFL, or a callable object")
        return SIG_DFL

    _signal.signal = guarded_signal
    signal.signal = guarded_signal

    # Objects of Pyodide's classes that something still holds (the JsFinder on the JavaScript
    # side, the event loop...): empty them, so what they referred to (JsProxies) goes away.
    for o in gc.get_objects():
        tm = getattr(type(o), "__module__", "") or ""
        if tm.startswith(("_pyodide", "pyodide")) and not isinstance(o, type):
            d = getattr(o, "__dict__", None)
            if isinstance(d, dict):
                d.clear()
    gc.collect()


def __envworker_verify():
    # Fail closed: no JsProxy (except Pyodide's immortal JsNull, a proxy of JavaScript null that has
    # no attributes) and no blocked module may be reachable from anything the collector tracks.
    import gc, sys
    gc.collect()
    leaks = []
    # The built-ins the lockdown replaced: whoever holds one of them can undo it.
    replaced = {("_imp", "create_builtin"), ("_imp", "exec_builtin"), ("_imp", "create_dynamic"), ("_imp", "exec_dynamic"), ("_signal", "signal")}
    builtin_function = type(len)
    module = type(sys)
    for o in gc.get_objects():
        for r in [o] + gc.get_referents(o):
            t = type(r)
            if t is builtin_function:
                owner = getattr(r, "__self__", None)
                if type(owner) is module and (getattr(owner, "__name__", None), r.__name__) in replaced:
                    leaks.append("the real %s.%s" % (owner.__name__, r.__name__))
                continue
            if isinstance(r, type):
                continue  # classes of Pyodide's (empty-namespace modules) are inert
            tm = getattr(t, "__module__", "") or ""
            if t.__name__ == "JsNull":
                continue
            if tm.startswith(("_pyodide", "pyodide")) and "JsProxy" not in t.__name__ and not getattr(r, "__dict__", None):
                continue  # an emptied instance of a Pyodide class: its methods' globals are empty too
            if "JsProxy" in t.__name__ or tm.startswith(("_pyodide", "pyodide")) or (t is type(sys) and r.__dict__ and r.__name__.split(".")[0] in ("js", "pyodide_js", "pyodide", "_pyodide", "_pyodide_core", "ctypes", "_ctypes", "_socket")):
                leaks.append("%s.%s" % (tm, t.__name__))
    if leaks:
        raise RuntimeError("sandbox lockdown failed: still reachable: " + ", ".join(sorted(set(leaks))[:10]))
    return "ok"


def __envworker_make_runner():
    import sys, gc, ast, builtins, _json, io, types, traceback, json

    enc = _json.encode_basestring_ascii
    loads = json.JSONDecoder().decode
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
    _stdout = sys.stdout
    _stderr = sys.stderr
    _flush = io.TextIOWrapper.flush
    _format_exception = traceback.format_exception
    _BaseException = BaseException
    _KeyboardInterrupt = KeyboardInterrupt
    _RecursionError = RecursionError
    _MemoryError = MemoryError
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

    def describe_error(e, source):
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
            lines = _format_exception(e)
            kept = [l for l in lines if 'File "<envworker>"' not in l]
            stack = _join(kept)
        except _BaseException:
            pass
        return '{"name":%s,"message":%s,"stack":%s}' % (enc(clip(name, 200)), enc(clip(message, 2000)), enc(clip(stack, 4000)))

    def flush():
        for s in (_stdout, _stderr):
            try:
                _flush(s)
            except _BaseException:
                pass

    def run(code, max_result_chars, globals_json):
        main = ModuleType("__main__")
        main.__dict__["__builtins__"] = builtins
        main.__dict__.update(loads(globals_json))
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
                error = describe_error(e, code)
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
                    # sys.exit()/exit()/os._exit(): the program ended; that is a normal ending when the code is 0/None.
                    code_ = e.code
                    if code_ is None or code_ == 0:
                        status = "ok"
                    else:
                        error = '{"name":"SystemExit","message":%s}' % (enc(clip(describe(code_) if _type(code_) is not str else code_, 2000)),)
                except _BaseException as e:
                    error = describe_error(e, code)
        except _BaseException as e:
            # An interrupt or a recursion/memory error inside the runner's own steps.
            status = "error"
            error = '{"name":%s,"message":"the run was interrupted"}' % (enc(_type_name(_type(e))),)
        flush()
        return '{"status":"%s","result":%s,"error":%s}' % (status, result, error)

    return run


__envworker_setup(${pyList(BLOCKED_MODULES)}, ${pyList(PRELOADED_MODULES)})
__envworker_run = __envworker_make_runner()
del __envworker_setup, __envworker_make_runner
`;
