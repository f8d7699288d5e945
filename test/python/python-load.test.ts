/**
 * How specs name Python environments (src/node/python-envs/load.ts): files, folders (a package, env.py, a
 * pyproject.toml's package), and the fingerprint that keeps a thread from loading files changed
 * since the server loaded them.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isPythonModule, pythonFolderTarget, pythonModuleUrl } from "../../src/node/python-envs/load.ts";
import { WORKER_PYTHON } from "../helpers/python-workers.ts";

Object.assign(process.env, WORKER_PYTHON);

const dir = mkdtempSync(join(tmpdir(), "envworker-python-load-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("Python targets", () => {
  it("a folder is its package, its env.py, or the package its pyproject.toml names", () => {
    const pkg = join(dir, "pkg");
    mkdirSync(pkg);
    writeFileSync(join(pkg, "__init__.py"), "");
    expect(pythonFolderTarget(pkg)).toBe(pkg);
    const withEnv = join(dir, "with-env");
    mkdirSync(withEnv);
    writeFileSync(join(withEnv, "env.py"), "");
    expect(pythonFolderTarget(withEnv)).toBe(join(withEnv, "env.py"));
    const project = join(dir, "my-env");
    mkdirSync(join(project, "my_env"), { recursive: true });
    writeFileSync(join(project, "pyproject.toml"), '[project]\nname = "my-env"\n');
    writeFileSync(join(project, "my_env", "__init__.py"), "");
    expect(pythonFolderTarget(project)).toBe(join(project, "my_env"));
    const empty = join(dir, "empty");
    mkdirSync(empty);
    expect(pythonFolderTarget(empty)).toBeUndefined();
  });

  it("only names that can be Python modules are asked of the interpreter", () => {
    expect(isPythonModule("kebab-case-name")).toBe(false);
    expect(isPythonModule("../path")).toBe(false);
    expect(isPythonModule("json")).toBe(true); // the standard library's: importable by every interpreter
    expect(isPythonModule("envworker.authoring")).toBe(true); // envworker's own package, as the worker sees it
    expect(isPythonModule("surely_no_such_module_here")).toBe(false);
  });

  it("a thread refuses files changed since the server loaded them", () => {
    const file = join(dir, "stamped", "env.py");
    mkdirSync(join(dir, "stamped"));
    writeFileSync(file, "environment = None\n");
    const url = pythonModuleUrl(file);
    expect(new URL(url).searchParams.get("files")).toMatch(/^[0-9a-f]{32}$/);
    writeFileSync(file, "environment = 1\n");
    // Imported as a new thread imports it (Node and tsx, not vitest's loader, which drops the query).
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", `await import(${JSON.stringify(url)})`], { encoding: "utf8", timeout: 60_000 });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/changed since the server loaded them/);
  });
});
