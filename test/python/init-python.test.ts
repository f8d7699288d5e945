/**
 * `envworker init --python NAME`: the package it makes passes its own unit tests (python -m
 * unittest) and `envworker validate` (served through a Python worker, an episode played, /score
 * equal to the episode's reward), as its README says to run them.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { scaffoldPython } from "../../src/cli/init.ts";
import { WORKER_PYTHON } from "../helpers/python-workers.ts";
import { SERVER_NODE_FLAGS } from "../helpers/serve-process.ts";
import { makeOwnPackage } from "../helpers/own-package.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "envworker-init-python-"));
// The worker runs as a user of its own when the tests run as root: it must be able to read the package.
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("envworker init --python", () => {
  const pkg = join(dir, "guess-py");

  it("writes the package", () => {
    const files = scaffoldPython("guess-py", pkg, join(ROOT, "clients", "python"));
    expect(files.sort()).toEqual([".gitignore", "README.md", "guess_py/__init__.py", "guess_py/env.py", "package.json", "pyproject.toml", "tests/__init__.py", "tests/test_env.py"]);
    expect(() => scaffoldPython("Bad_Name", join(dir, "x"))).toThrow(/kebab-case/);
    expect(() => scaffoldPython("guess-py", pkg)).toThrow(/not empty/);
  });

  it("its package.json installs envworker by the dependency given (--dependency), its install script allowed", () => {
    const other = join(dir, "by-tarball");
    scaffoldPython("by-tarball", other, join(ROOT, "clients", "python"), "file:../envworker-0.1.0.tgz");
    const written = JSON.parse(readFileSync(join(other, "package.json"), "utf8"));
    expect(written.dependencies).toEqual({ envworker: "file:../envworker-0.1.0.tgz" });
    expect(written.allowScripts["file:../envworker-0.1.0.tgz"]).toBe(true);
    expect(written.envworker).toEqual({ environments: ["."] });
  });

  it("its unit tests pass with python -m unittest", () => {
    const out = spawnSync("python3", ["-m", "unittest", "-v"], { cwd: pkg, env: { ...process.env, PYTHONPATH: join(ROOT, "clients", "python", "src") }, encoding: "utf8" });
    expect(out.status, out.stderr).toBe(0);
    expect(out.stderr).toMatch(/Ran 4 tests/);
  });

  it("passes envworker validate", () => {
    expect(existsSync(join(pkg, "guess_py", "env.py"))).toBe(true);
    const out = execFileSync(process.execPath, [...SERVER_NODE_FLAGS, "bin/envworker.js", "validate", pkg], { cwd: ROOT, env: { ...process.env, ...WORKER_PYTHON }, encoding: "utf8", timeout: 300_000 });
    expect(out).toMatch(/PASS guess-py/);
    expect(out).toMatch(/POST \/score of the played completion gives the episode's reward/);
    expect(out).not.toMatch(/FAIL/);
  }, 300_000);

  it("from its own directory, installed as npm install links it, `npx envworker validate .` and `npx envworker validate` pass (its README's commands)", async () => {
    // Before it had a package.json, `npx envworker` there asked npm's registry: 404.
    const own = await makeOwnPackage("my-py", { python: true });
    try {
      for (const args of [["validate", "."], ["validate"]]) {
        const out = await own.run(args, WORKER_PYTHON);
        expect(out.code, out.stderr).toBe(0);
        expect(out.stdout).toMatch(/PASS my-py/);
        expect(out.stdout).not.toMatch(/FAIL/);
      }
    } finally {
      own.remove();
    }
  }, 300_000);
});
