/**
 * The Python interpreter is chosen, and said (issue 40, 2): a server that serves Python environments
 * names, in its first line, the interpreter its workers run on and why, and the ones it passed over
 * with why (as root, a `python3` under /root, pyenv's or conda's, cannot be read by the workers'
 * own users). Where what the user meant cannot be used, one line says what to run: a venv every
 * user can read, never a pip command into a Python that refuses one (PEP 668); a Python environment
 * in a folder the workers cannot enter (a `mktemp -d` folder) is refused in one line naming the folder.
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, cpSync, mkdtempSync, rmSync, symlinkSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SERVER_NODE_FLAGS } from "../helpers/serve-process.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const root = process.getuid?.() === 0;
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A folder only root may enter (0700), as `mktemp -d` and /root are. */
function privateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ew-private-"));
  chmodSync(dir, 0o700);
  made.push(dir);
  return dir;
}

/** `envworker serve ARGS` until it listens (then stopped) or exits: what it printed on stderr, and whether it listened. */
async function serve(args: string[], env: Record<string, string>): Promise<{ listened: boolean; stderr: string; code: number | null }> {
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, "bin/envworker.js", "serve", "--port", "0", ...args], {
    cwd: ROOT,
    env: { ...process.env, PORT: "", HOST: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let listened = false;
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    if (!listened && /serving \d+ environment\(s\) on http/.test(stdout)) {
      listened = true;
      child.kill("SIGTERM");
    }
  });
  const code = await new Promise<number | null>((res) => child.once("exit", (c) => res(c)));
  return { listened, stderr, code };
}

const hasVenv = (() => {
  try {
    execFileSync("/usr/bin/python3", ["-c", "import reasoning_gym"], { stdio: "ignore", timeout: 60_000 });
    return false; // Debian's python3 has reasoning-gym here: the missing-package case cannot be shown with it
  } catch {
    return true;
  }
})();

describe.skipIf(!root)("the Python interpreter, chosen and said (as root)", { timeout: 120_000 }, () => {
  it("names the interpreter and why, passing over a python3 in a folder the workers cannot enter", async () => {
    const hidden = privateDir();
    mkdirSync(join(hidden, "bin"));
    symlinkSync("/usr/bin/python3", join(hidden, "bin", "python3"));
    const { listened, stderr } = await serve(["./envs/reverse-text/env.py"], { ENVWORKER_PYTHON: "", PATH: `${join(hidden, "bin")}:/usr/bin:/bin` });
    expect(listened, stderr).toBe(true);
    const line = stderr.split("\n").find((l) => l.startsWith("envworker: Python environments run on"));
    expect(line, stderr).toBeDefined();
    expect(line).toContain("run on /usr/bin/python3 (Python 3.");
    expect(line).toContain(`passed over ${join(hidden, "bin", "python3")} (${hidden} is 0700: others cannot enter it)`);
  });

  it("refuses an ENVWORKER_PYTHON the workers cannot read in one line that says to make a venv every user can read", async () => {
    const hidden = privateDir();
    symlinkSync("/usr/bin/python3", join(hidden, "python3"));
    const { listened, stderr, code } = await serve(["./envs/reverse-text/env.py"], { ENVWORKER_PYTHON: join(hidden, "python3") });
    expect(listened).toBe(false);
    expect(code).not.toBe(0);
    const said = stderr.trim().split("\n");
    expect(said, stderr).toHaveLength(1);
    expect(said[0]).toContain(`${hidden} is 0700: others cannot enter it`);
    expect(said[0]).toContain("-m venv /opt/envworker-python");
    expect(said[0]).toContain("export ENVWORKER_PYTHON=/opt/envworker-python/bin/python");
  });

  it.skipIf(!hasVenv)("says in one line, no traceback, how to get reasoning-gym where pip refuses to install into the workers' Python (PEP 668)", async () => {
    const { listened, stderr, code } = await serve(["rg-leg-counting"], { ENVWORKER_PYTHON: "/usr/bin/python3" });
    expect(listened).toBe(false);
    expect(code).not.toBe(0);
    const said = stderr.trim().split("\n");
    expect(said[0]).toMatch(/^envworker: Python environments run on \/usr\/bin\/python3 /);
    expect(said.slice(1), stderr).toHaveLength(1);
    expect(stderr).not.toContain("Traceback");
    expect(said[1]).toContain("reasoning-gym is not installed in /usr/bin/python3");
    expect(said[1]).toContain("/usr/bin/python3 -m venv /opt/envworker-python && /opt/envworker-python/bin/pip install reasoning-gym");
    expect(said[1]).not.toContain("/usr/bin/python3 -m pip install");
  });

  it("refuses a Python environment in a folder the workers cannot enter in one line naming the folder and the fix", async () => {
    const hidden = privateDir();
    cpSync(join(ROOT, "envs", "reverse-text"), join(hidden, "reverse-text"), { recursive: true });
    const { listened, stderr } = await serve([join(hidden, "reverse-text", "env.py")], { ENVWORKER_PYTHON: "/usr/bin/python3" });
    expect(listened).toBe(false);
    const said = stderr.trim().split("\n").filter((l) => !l.startsWith("envworker: Python environments run on"));
    expect(said, stderr).toHaveLength(1);
    expect(said[0]).toContain(`${hidden} is 0700: others cannot enter it (chmod o+x ${hidden})`);
  });
});
