/**
 * Python targets (Node only): which specs name one (a `.py` file, a folder of a Python package or
 * holding env.py, a module of ENVWORKER_PYTHON's interpreter) and their environments.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Environment } from "../env/environment.ts";
import { pythonEnvironment } from "./environment.ts";
import { linkFor } from "./link.ts";
import { pythonInterpreter, pythonSettings } from "./settings.ts";

/** The environments `target` exposes, each calling its worker (one per target and thread). */
export async function pythonEnvironments(target: string): Promise<Environment[]> {
  const link = linkFor(target);
  const specs = await link.describe();
  return specs.map((spec) => pythonEnvironment(link, spec));
}

/** The URL importEnvironments loads `target`'s environments from (src/python/served.ts). */
export function pythonModuleUrl(target: string): string {
  const here = import.meta.url;
  const served = new URL(here.endsWith(".ts") ? "./served.ts" : "./served.js", here);
  served.searchParams.set("target", target);
  return served.href;
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
    execFileSync(python, ["-I", "-c", "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)", name], { env: {}, stdio: "ignore", timeout: 60_000 });
    return true;
  } catch {
    return false;
  }
}
