/**
 * Attacks on the python sandbox. Each must end as ok:false with a clear error (or a harmless
 * ok:true), the test process stays up, and the same sandbox serves `1 + 1` right after
 * (expectHealthy). Limits are small where the test is about the limit.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPythonSandbox, type PythonSandbox } from "../src/sandbox/python.ts";
import type { RunOptions, RunResult } from "../src/sandbox/types.ts";

let sandbox: PythonSandbox;
beforeAll(async () => {
  sandbox = createPythonSandbox({ maxConcurrency: 2 });
  await sandbox.warm();
}, 60_000);
afterAll(() => sandbox.dispose());

const FAST: RunOptions = { timeoutMs: 300 };

async function expectHealthy(): Promise<void> {
  const r = await sandbox.run("1 + 1");
  expect(r, JSON.stringify(r)).toMatchObject({ ok: true, result: 2 });
}

/** Runs code that must fail with one of `names`; then the sandbox must still serve. */
async function attack(code: string, names: string[], options: RunOptions = FAST): Promise<RunResult> {
  const r = await sandbox.run(code, options);
  expect(r.ok, JSON.stringify(r).slice(0, 600)).toBe(false);
  expect(r.result).toBe(null);
  expect(names, JSON.stringify(r.error)).toContain(r.error?.name);
  expect(typeof r.error?.message).toBe("string");
  await expectHealthy();
  return r;
}

/** Runs code that may succeed, as long as what it returns shows no host access. */
async function harmless(code: string, options: RunOptions = FAST): Promise<RunResult> {
  const r = await sandbox.run(code, options);
  await expectHealthy();
  return r;
}

const NO_MODULE = ["ModuleNotFoundError", "ImportError"];

describe("python sandbox: no route to the host", () => {
  it("has no js, pyodide_js, pyodide, pyodide.ffi, pyodide.http, _pyodide_core or micropip", async () => {
    for (const m of ["js", "pyodide_js", "pyodide", "pyodide.ffi", "pyodide.http", "pyodide.code", "_pyodide", "_pyodide_core", "micropip"]) {
      await attack(`import ${m}`, NO_MODULE);
    }
    await attack("from pyodide.ffi import to_js", NO_MODULE);
    await attack("import importlib\nimportlib.import_module('js')", NO_MODULE);
    await attack("__import__('pyodide_js')", NO_MODULE);
  });

  it("cannot re-create a blocked or already-loaded built-in module through the import machinery", async () => {
    await attack("import sys\nsys.meta_path.clear()\nimport _pyodide_core", NO_MODULE);
    await attack("import importlib.machinery as m, importlib.util as u\nspec = m.ModuleSpec('_pyodide_core', m.BuiltinImporter)\nu.module_from_spec(spec)", NO_MODULE);
    await attack("import _imp\nclass S: name = '_pyodide_core'\n_imp.create_builtin(S())", NO_MODULE);
    await attack("import sys, _imp\ndel sys.modules['posix']\nclass S: name = 'posix'\n_imp.create_builtin(S())", NO_MODULE);
    await attack("import importlib, _signal\nimportlib.reload(_signal)", NO_MODULE);
    await attack("import _imp\n_imp.create_dynamic(None)", NO_MODULE);
  });

  it("finds no JsProxy anywhere in the object graph", async () => {
    // Classes are skipped: Pyodide's (pure-Python) JsProxy classes stay, with emptied modules behind them.
    const r = await harmless(
      "import gc\nfound = []\nfor o in gc.get_objects():\n    for x in [o] + gc.get_referents(o):\n        n = type(x).__name__\n        if isinstance(x, type): continue\n        if 'JsProxy' in n or type(x).__module__.startswith(('pyodide', '_pyodide')) and getattr(x, '__dict__', None):\n            found.append(n)\nsorted(set(found))",
      { timeoutMs: 20_000 },
    );
    expect(r).toMatchObject({ ok: true, result: [] });
    const s = await harmless("[c.__name__ for c in object.__subclasses__() if 'Js' in c.__name__ and hasattr(c, 'new')]");
    expect(s.ok).toBe(true);
    // Whatever JsProxy classes exist, none can be turned into an object that reaches JavaScript.
    await attack("cls = [c for c in object.__subclasses__() if c.__name__ == 'JsProxy'][0]\ncls()", ["TypeError", "IndexError", "NameError"]);
  });

  it("reaches none of the functions the lockdown replaced, through closures or the object graph", async () => {
    // The escape: the lockdown's guard around _imp.create_builtin held the real one in its closure;
    // with it a guest re-created _pyodide_core and ran JavaScript in the sandbox's thread.
    const exploit = [
      "import _imp",
      "real = [c.cell_contents for c in (_imp.create_builtin.__closure__ or ()) if getattr(c.cell_contents, '__name__', '') == 'create_builtin']",
      "class S: name = '_pyodide_core'",
      "core = real[0](S())",
      "str(core.to_js([0]).constructor.constructor('return typeof process')())",
    ].join("\n");
    await attack(exploit, ["IndexError"]);
    await attack("import signal\nreal = [c.cell_contents for c in (signal.signal.__closure__ or ()) if callable(c.cell_contents)]\nreal[0](2, lambda *a: None)", ["IndexError"]);
    // Whatever route: no replaced built-in function is reachable from anything the collector tracks.
    const r = await harmless(
      [
        "import gc",
        "found = []",
        "for o in gc.get_objects():",
        "    for x in [o] + gc.get_referents(o):",
        "        if type(x) is type(len) and getattr(x, '__name__', '') in ('create_builtin', 'exec_builtin', 'create_dynamic', 'exec_dynamic', 'signal'):",
        "            found.append(repr(x))",
        "sorted(set(found))",
      ].join("\n"),
      { timeoutMs: 20_000 },
    );
    expect(r).toMatchObject({ ok: true, result: [] });
    // Creating any built-in module afresh is refused, allowed names included; preloaded ones import.
    await attack("import _imp, importlib.machinery as m\n_imp.create_builtin(m.ModuleSpec('math', m.BuiltinImporter))", NO_MODULE);
    await attack("import _imp, math\n_imp.exec_builtin(math)", NO_MODULE);
    expect(await harmless("import csv, array, zlib, unicodedata, _sha2\ncsv.__name__")).toMatchObject({ ok: true, result: "csv" });
    // Handlers for signals other than the time limit's are accepted (and never fire).
    expect(await harmless("import signal\nsignal.signal(signal.SIGPIPE, signal.SIG_DFL)\n1")).toMatchObject({ ok: true, result: 1 });
  }, 60_000);

  it("writes to the terminal devices land in the run's capped stdout, not in the host's memory", async () => {
    // Emscripten's own /dev/tty kept every byte before a newline in a JavaScript array on the
    // thread's heap (outside every limit) until V8 aborted the whole process.
    for (const dev of ["/dev/tty", "/dev/tty1"]) {
      const r = await harmless(`f = open('${dev}', 'wb', buffering=0)\nfor _ in range(300): f.write(b'x' * (1 << 20))\n1`, { timeoutMs: 10_000, maxOutputBytes: 4096 });
      expect(r).toMatchObject({ ok: true, result: 1, truncated: true });
      expect(r.stdout.length).toBeLessThanOrEqual(4096 + 20);
    }
    const said = await harmless("open('/dev/tty', 'w').write('to the terminal\\n')\nopen('/dev/tty', 'rb', buffering=0).read()", { stdin: "typed" });
    expect(said).toMatchObject({ ok: true, stdout: "to the terminal\n", result: "b'typed'" });
  }, 60_000);

  it("counts files against the run's memory: big files, growing truncates, floods of entries", async () => {
    const options: RunOptions = { timeoutMs: 10_000, memoryMb: 32 };
    const full = { ok: false, error: { name: "OSError", message: expect.stringContaining("No space left") } };
    // MEMFS keeps file data on the thread's JavaScript heap, beyond the WebAssembly memory limit.
    expect(await harmless("f = open('/tmp/big', 'wb')\nfor _ in range(1000): f.write(b'x' * (1 << 20))", options)).toMatchObject(full);
    expect(await harmless("import os\nfd = os.open('/tmp/t', os.O_CREAT | os.O_WRONLY)\nos.ftruncate(fd, 3 * 10**9)", options)).toMatchObject(full);
    expect(await harmless("import os\nfor i in range(10**6): os.mkdir('/home/pyodide/' + 'a' * 200 + str(i))", options)).toMatchObject(full);
    const flood = await harmless("n = 0\ntry:\n    while True:\n        open('/tmp/f%d' % n, 'w').close()\n        n += 1\nexcept OSError:\n    pass\nn", options);
    expect(flood).toMatchObject({ ok: true });
    expect(flood.result).toBeLessThanOrEqual(10_000);
    // What a run deletes is given back; ordinary scratch files work.
    const rewrite = "import os\nfor i in range(100):\n    with open('/tmp/x', 'wb') as f: f.write(b'z' * (1 << 20))\n    os.unlink('/tmp/x')\nopen('/tmp/a', 'w').write('hi')\nopen('/tmp/a').read()";
    expect(await harmless(rewrite, options)).toMatchObject({ ok: true, result: "hi" });
  }, 120_000);

  it("has no ctypes, sockets, subprocesses, network or process exits", async () => {
    for (const m of ["ctypes", "_ctypes", "socket", "_socket", "ssl", "subprocess", "_posixsubprocess", "multiprocessing", "select", "mmap", "faulthandler", "urllib.request", "http.client", "asyncio"]) {
      await attack(`import ${m}`, NO_MODULE);
    }
    await attack("import os\nos.system('ls')", ["AttributeError"]);
    await attack("import os\nos.fork()", ["AttributeError"]);
    await attack("import os\nos.kill(1, 9)", ["AttributeError"]);
    await attack("import os\nos.abort()", ["SystemExit"]);
    expect(await harmless("import os\nos._exit(0)")).toMatchObject({ ok: true });
    expect(await harmless("import sys\nsys.exit(0)")).toMatchObject({ ok: true });
    await attack("import sys\nsys.exit(7)", ["SystemExit"]);
    await attack("import threading\nthreading.Thread(target=lambda: None).start()", ["RuntimeError"]);
    await attack("import threading\nfor _ in range(1000): threading.Thread(target=lambda: None).start()", ["RuntimeError"]);
  });

  it("sees no host file system: only the read-only standard library and empty scratch directories", async () => {
    await attack("open('/etc/passwd').read()", ["FileNotFoundError"]);
    await attack("open('/proc/self/environ').read()", ["FileNotFoundError", "PermissionError", "OSError"]);
    await attack("open('/lib/python314.zip', 'wb').write(b'x')", ["PermissionError"]);
    await attack("import os\nos.remove('/lib/python314.zip')", ["PermissionError"]);
    await attack("import os\nos.rename('/lib', '/lib2')", ["PermissionError"]);
    await attack("import os\nos.chmod('/lib/python314.zip', 0o777)", ["PermissionError"]);
    const root = await harmless("import os\nsorted(os.listdir('/')), os.listdir('/tmp'), os.listdir('/home/pyodide'), os.getcwd()");
    expect(root.result).toEqual([["dev", "home", "lib", "proc", "tmp"], [], [], "/home/pyodide"]);
    // The standard library still imports after all that.
    expect(await harmless("import xml.dom.minidom, json, decimal\njson.dumps([1])")).toMatchObject({ ok: true, result: "[1]" });
  });

  it("stops infinite loops, including ones that swallow the interrupt, in __del__/__repr__/__eq__", async () => {
    await attack("while True: pass", ["TimeoutError"]);
    await attack("while True:\n    try:\n        while True: pass\n    except BaseException: pass", ["TimeoutError"]);
    await attack("class D:\n    def __del__(self):\n        while True: pass\nD()\nNone", ["TimeoutError"]);
    await attack("class R:\n    def __repr__(self):\n        while True: pass\nR()", ["TimeoutError"]);
    await attack("class E:\n    def __eq__(self, o):\n        while True: pass\n    __hash__ = object.__hash__\n{E(): 1, E(): 2}\n[E()] == [E()]", ["TimeoutError"]);
    await attack("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", ["ValueError", "TimeoutError"]);
  });

  it("stops C-level loops with the hard stop (thread terminated, a fresh interpreter takes over)", async () => {
    const before = sandbox.replaced;
    const r = await attack("sum(range(10**12))", ["TimeoutError"]);
    expect(r.error?.message).toMatch(/watchdog/);
    await attack("import re\nre.match(r'(a+)+$', 'a' * 40 + 'b')", ["TimeoutError"]);
    expect(sandbox.replaced).toBeGreaterThan(before);
  }, 60_000);

  it("enforces the memory limit on the interpreter's WebAssembly memory", async () => {
    await attack("x = bytearray(200 * 2**20)", ["MemoryLimitError"], { timeoutMs: 2000, memoryMb: 64 });
    await attack("x = []\nwhile True: x.append('y' * 10**6)", ["MemoryLimitError"], { timeoutMs: 5000, memoryMb: 32 });
    await attack("x = 'x' * 10**10", ["MemoryLimitError", "OverflowError"]);
    await attack("x = bytearray(2**31)", ["MemoryLimitError", "OverflowError"]);
    await attack("x = [[]] * 10**9", ["MemoryLimitError", "OverflowError"]);
    // Catching MemoryError and going on does not get past the limit either.
    const r = await harmless("try:\n    x = bytearray(200 * 2**20)\nexcept MemoryError:\n    pass\n'survived'", { timeoutMs: 2000, memoryMb: 64 });
    expect(r).toMatchObject({ ok: true, result: "survived" });
  }, 60_000);

  it("survives deep recursion, with the recursion limit raised too", async () => {
    await attack("def f(n): return f(n + 1) + 1\nf(0)", ["RecursionError"], { timeoutMs: 5000 });
    await attack("import sys\nsys.setrecursionlimit(10**6)\ndef f(n): return f(n + 1) + 1\nf(0)", ["RecursionError", "TimeoutError", "MemoryLimitError"], { timeoutMs: 2000 });
    await harmless("x = []\nfor _ in range(10**5): x = [x]\nlen(repr(x))", { timeoutMs: 5000 });
    await attack("eval('(' * 100000 + ')' * 100000)", ["RecursionError", "SyntaxError", "MemoryError", "MemoryLimitError"]);
  }, 60_000);

  it("caps output and results", async () => {
    const r = await harmless("while True: print('x' * 1000)", { timeoutMs: 300, maxOutputBytes: 1000 });
    expect(r.ok).toBe(false);
    expect(r.stdout.length).toBeLessThanOrEqual(1000 + 20);
    const big = await harmless("print('y' * 10**6)\n'z' * 10**6", { maxOutputBytes: 4096 });
    expect(big).toMatchObject({ ok: false, truncated: true, error: { name: "OutputLimitError" } });
    expect(big.stdout.endsWith("…[truncated]")).toBe(true);
  });

  it("leaks nothing from one run to the next: definitions, imports, patches, files, cwd, fds, sys settings", async () => {
    await harmless(
      [
        "import builtins, json, sys, os, math, random",
        "builtins.len = lambda x: 42",
        "json.dumps = None",
        "math.pi = 3",
        "secret = 'from run 1'",
        "sys.setrecursionlimit(50)",
        "sys.stdout = open('/tmp/out.txt', 'w')",
        "os.makedirs('/tmp/a/b')",
        "open('/home/pyodide/f.txt', 'w').write('x')",
        "os.chdir('/tmp/a')",
        "os.close(0)",
        "os.environ['LEAK'] = '1'",
        "sys.modules['evil'] = 1",
        "import collections\ncollections.Counter.most_common = None",
      ].join("\n"),
    );
    const r = await sandbox.run(
      "import builtins, json, sys, os, math, collections\n[len([1, 2]), json.dumps([1]), math.pi > 3.14, 'secret' in globals(), sys.getrecursionlimit(), os.listdir('/tmp'), os.listdir('/home/pyodide'), os.getcwd(), 'LEAK' in os.environ, 'evil' in sys.modules, callable(collections.Counter.most_common), input()]",
      { stdin: "still readable\n" },
    );
    expect(r).toMatchObject({ ok: true, result: [2, "[1]", true, false, 1000, [], [], "/home/pyodide", false, false, true, "still readable"] });
  });

  it("keeps running after dozens of attacks in parallel", async () => {
    const bombs = ["while True: pass", "x = bytearray(10**9)", "import js", "def f(): f()\nf()", "print('a' * 10**6)", "1 + 1"];
    const results = await Promise.all(Array.from({ length: 18 }, (_, i) => sandbox.run(bombs[i % bombs.length]!, { timeoutMs: 300, memoryMb: 32, maxOutputBytes: 1024 })));
    expect(results.filter((r) => r.ok && r.result === 2)).toHaveLength(3);
    await expectHealthy();
  }, 60_000);
});
