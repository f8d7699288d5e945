/**
 * The python sandbox (Node only): CPython 3.12 compiled for WASI, run by wasmtime in a fork server
 * (zygote/python/zygote.py), behind the same `Sandbox` interface as the JavaScript backends and
 * through the same supervised, confined host pool (host-pool.ts, confine.ts). See README.md
 * ("Python") for what a guest can and cannot do.
 *
 * Isolation ("a broken engine gains nothing"): a host is a zygote, a Python process holding a warm
 * interpreter that never runs a guest's code itself. EVERY run executes in a fresh child forked from
 * it, used once, killed and reaped before the next child exists: nothing a run does (to the
 * interpreter, or to its process, should it break out of WebAssembly) is seen by a later run. There
 * is no JavaScript in the sandbox's process, and no FFI: the guest's only way out of WebAssembly is
 * the host functions wasmtime gives it (WASI with no directory, socket or environment; stdin and
 * the capped output of zygote.py).
 *
 * Limits, all enforced by the zygote on its child: time on the run clock (the child is killed;
 * TimeoutError), memory by wasmtime's store limit (the warm size + memoryMb; MemoryLimitError),
 * output capped at maxOutputBytes. The pool's watchdog (timeoutMs + watchdogSlackMs, on the run
 * clock of the child) and the memory watch of the whole tree (zygote by RSS, children by their page
 * faults: process-memory.ts ForkingHost) stay as the backstop.
 *
 * Grading (`RunOptions.grading`): a run with `grading: true` goes to a pool of its own, whose zygotes
 * never fork a candidate's code (an environment's harness, its hidden tests), so no process that a
 * candidate's code ran in, or in which it could have left anything, ever sees them.
 */
import type { ProgramProfile } from "../../../wall/confine.ts";
import { GradingPoolSandbox } from "../../host/grading-pool.ts";
import type { HostAffinity, HostPoolOptions } from "../../host/host-pool.ts";
import { pythonRuntime, ZYGOTE_DIR } from "./python-runtime.ts";
import type { RunOptions } from "../../types.ts";
import { zygotePoolOptions, zygoteProfile, type ZygoteSandboxOptions } from "../../host/zygote-pool.ts";
import { join } from "node:path";

export interface PythonSandboxOptions extends ZygoteSandboxOptions {
  /** Max concurrent grading runs (`RunOptions.grading`), each pool its own zygotes (default 1). */
  gradingConcurrency?: number;
}

/** How a zygote is started: the interpreter of python-runtime.ts on zygote/python/zygote.py, with the precompiled module. */
export const PYTHON_PROFILE: ProgramProfile = zygoteProfile("python", async () => {
  const runtime = await pythonRuntime();
  return { executable: runtime.executable, args: ["-I", "-B", join(ZYGOTE_DIR, "zygote.py"), runtime.cwasm], readable: runtime.readable };
});

function validatePython(_code: string, options: RunOptions): void {
  if (options.ts) throw new TypeError("sandbox: the python sandbox runs Python; the ts option is for JavaScript backends");
  if (options.grading !== undefined && typeof options.grading !== "boolean") throw new TypeError("sandbox: grading must be a boolean");
  const globals = options.globals ?? {};
  if (typeof globals !== "object" || globals === null || Array.isArray(globals)) throw new TypeError("sandbox: globals must be an object");
  for (const name of Object.keys(globals)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new TypeError(`sandbox: global name ${JSON.stringify(name)} is not a Python identifier`);
  }
}

function poolOptions(options: PythonSandboxOptions, label: string, maxConcurrency: number | undefined, affinity: HostAffinity | undefined): HostPoolOptions {
  return zygotePoolOptions("python", label, PYTHON_PROFILE, options, { maxConcurrency, affinity, validate: validatePython });
}

/** The candidates' zygotes (this pool), and the grading zygotes (`grading: true`) beside it. */
export class PythonSandbox extends GradingPoolSandbox {
  declare readonly kind: "python";

  constructor(options: PythonSandboxOptions = {}) {
    super(poolOptions(options, "Python process", options.maxConcurrency, options.affinity), () => poolOptions(options, "Python grading process", options.gradingConcurrency ?? 1, "off"));
  }

  /** Starts `count` zygotes (default: all) ahead of the first runs and waits for them. */
  override warm(count = this.maxConcurrency): Promise<void> {
    return super.warm(count);
  }
}

export function createPythonSandbox(options: PythonSandboxOptions = {}): PythonSandbox {
  return new PythonSandbox(options);
}
