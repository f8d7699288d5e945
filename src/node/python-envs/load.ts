/**
 * Python targets (Node only): which specs name one (a `.py` file, a folder of a Python package or
 * holding env.py, a module of ENVWORKER_PYTHON's interpreter) and their environments.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { pathToFileURL } from "node:url";
import { filesStamp } from "../source-files.ts";
import type { Environment } from "../../env/environment.ts";
import { pythonEnvironment } from "./environment.ts";
import { linkFor } from "./link.ts";
import { clientSource, describeInterpreter, pythonInterpreter, pythonSettings } from "./settings.ts";

/** The environments `target` exposes, each calling its worker (one per target and thread). */
export async function pythonEnvironments(target: string): Promise<Environment[]> {
  const link = linkFor(target);
  const specs = await link.describe();
  return specs.map((spec) => pythonEnvironment(link, spec));
}

/** A Python environment's code and data files (what a fingerprint covers). */
export const PYTHON_CODE = /\.(?:py|json|jsonl|txt|csv|toml)$/;

/** A file URL in the folder a path target's fingerprint covers: a file's folder, or the package folder itself. */
export function stampedUrl(target: string): string | undefined {
  if (!isAbsolute(target)) return undefined;
  return pathToFileURL(target.endsWith(".py") ? target : join(target, "__init__.py")).href;
}

/**
 * The URL importEnvironments loads `target`'s environments from (src/node/python-envs/served.ts), with the
 * fingerprint of a path target's files: an environment thread started after they changed refuses
 * to load (served.ts), as a TypeScript module's thread does (src/node/source-files.ts).
 */
export function pythonModuleUrl(target: string): string {
  announceInterpreter();
  const here = import.meta.url;
  const served = new URL(here.endsWith(".ts") ? "./served.ts" : "./served.js", here);
  served.searchParams.set("target", target);
  const at = stampedUrl(target);
  const stamp = at === undefined ? undefined : filesStamp(at, PYTHON_CODE);
  if (stamp !== undefined) served.searchParams.set("files", stamp);
  return served.href;
}

let announced = false;

/** Says once, on stderr, which interpreter the Python workers run on and why (a server that has none says so at the load). */
function announceInterpreter(): void {
  if (announced) return;
  announced = true;
  try {
    console.error(describeInterpreter());
  } catch {
    // No usable interpreter: the worker's start says why, for the environment that needs it.
  }
}

/**
 * The Python target of a folder: the folder itself when it is a package (`__init__.py`), its env.py,
 * or the package a pyproject.toml names (`my-env` -> `my_env/`, as `envworker init --python` makes it).
 */
export function pythonFolderTarget(dir: string): string | undefined {
  if (existsSync(join(dir, "__init__.py"))) return dir;
  if (existsSync(join(dir, "env.py"))) return join(dir, "env.py");
  const pyproject = join(dir, "pyproject.toml");
  if (!existsSync(pyproject)) return undefined;
  const name = /^\s*name\s*=\s*"([^"]+)"/m.exec(readFileSync(pyproject, "utf8"))?.[1];
  if (!name) return undefined;
  for (const base of [dir, join(dir, "src")]) {
    const pkg = join(base, name.replace(/[-.]/g, "_").toLowerCase());
    if (existsSync(join(pkg, "__init__.py")) && statSync(pkg).isDirectory()) return pkg;
  }
  return undefined;
}

const MODULE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** Whether `name` is a module ENVWORKER_PYTHON's interpreter can import (asked of it; false when there is none). */
export function isPythonModule(name: string): boolean {
  if (!MODULE_NAME.test(name)) return false;
  let python: string;
  try {
    python = pythonInterpreter(pythonSettings().python).executable;
  } catch {
    return false;
  }
  try {
    // As the worker sees modules: envworker's own Python package first (a catalog inside it is found
    // too). Only the top-level name is looked up: finding `a.b` would run a's code here, unconfined;
    // a missing submodule is the worker's load error.
    const find = "import importlib.util, sys; sys.path.insert(0, sys.argv[2]); sys.exit(0 if importlib.util.find_spec(sys.argv[1].split('.')[0]) else 3)";
    execFileSync(python, ["-I", "-c", find, name, clientSource()], { env: {}, stdio: "ignore", timeout: 60_000 });
    return true;
  } catch {
    return false;
  }
}
