import { readFileSync } from "node:fs";
import { processTree } from "../../src/wall/process-memory.ts";
import { pythonInterpreter, pythonSettings } from "../../src/node/python-envs/settings.ts";
/**
 * The interpreter the tests' Python environment workers run on: `python3`, the first one on PATH
 * the workers' own user can read (src/node/python-envs/settings.ts). Not the ENVWORKER_PYTHON of the
 * environment: CI exports the trainer venv's there for the Python client's suite, and that venv
 * lives under $HOME, which a worker (a user of its own when the tests run as root) cannot read.
 */
export const WORKER_PYTHON = { ENVWORKER_PYTHON: "python3" } as const;

/**
 * The Python environment workers of server `pid` that serve `target` (a fixture's file name): the
 * fork servers, not the children they fork for calls (a child's parent is one of them). Killing one
 * ends its children too (they die with their parent).
 */
export function pythonWorkers(pid: number, target: string): number[] {
  const tree = processTree(pid);
  const serving = tree.filter((p) => {
    try {
      const argv = readFileSync(`/proc/${p}/cmdline`, "latin1").split("\0");
      return /python[\d.]*$/.test(argv[0]!) && argv.some((a) => a.endsWith(target));
    } catch {
      return false;
    }
  });
  const parentOf = (p: number) => Number(readFileSync(`/proc/${p}/stat`, "latin1").split(") ")[1]!.split(" ")[1]);
  return serving.filter((p) => {
    try {
      return !serving.includes(parentOf(p));
    } catch {
      return false;
    }
  });
}

/**
 * The interpreter a server started with this environment runs its Python workers on (ENVWORKER_PYTHON,
 * or the first python3 on PATH they can read: src/node/python-envs/settings.ts), or undefined when there is none:
 * a test asks it, not `python3`, whether a package is there.
 */
export function serverPython(): string | undefined {
  try {
    return pythonInterpreter(pythonSettings().python).executable;
  } catch {
    return undefined;
  }
}
