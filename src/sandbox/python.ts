/**
 * The python sandbox (Node only): CPython 3.14 + its standard library compiled to WebAssembly
 * (Pyodide), behind the same `Sandbox` interface as the JavaScript backends and through the same
 * supervised, confined host pool (host-pool.ts, confine.ts). See README.md ("Python") for what a
 * guest can and cannot do.
 *
 * Isolation: each interpreter lives in a confined child process (python-host.ts), on a worker thread
 * of it (python-worker.ts). A run that crashes its interpreter (a trap, a fatal error), or that the
 * time limit cannot stop, costs that process only: it is killed and a fresh interpreter takes its
 * place. Every run starts from the same memory snapshot (restored after each run), so nothing
 * leaks from one run to the next.
 *
 * Time limit, in two stages:
 *  1. at `timeoutMs` the host process writes SIGINT into the interpreter's interrupt buffer (a
 *     SharedArrayBuffer); Python raises KeyboardInterrupt at the next bytecode boundary. The write
 *     is repeated every 50 ms, so code that catches the interrupt gets another one;
 *  2. at `timeoutMs + watchdogSlackMs` a run still going (a C-level loop such as
 *     `sum(range(10**12))` or a catastrophic regex never reaches a bytecode boundary; or code that
 *     keeps swallowing interrupts) is answered with a TimeoutError and its process killed.
 * Either way the run ends as TimeoutError.
 *
 * Pool: at most `maxConcurrency` interpreters (~180 MB RSS each), started on first use (~2.5 s;
 * `warm()` starts them ahead) and reused for up to `recycleAfterRuns` runs. An interpreter whose
 * WebAssembly memory grew (memory cannot shrink) is not handed a run whose memory limit is below
 * its growth; it is replaced instead.
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { resolve as resolveModule } from "import-meta-resolve";
import { siblingModule } from "../node/ts-worker.ts";
import type { ConfineOptions, ConfinementProfile } from "./confine.ts";
import { processHost } from "./host-handles.ts";
import { dirtyPagesAddon } from "./memory-image.ts";
import { HostPoolSandbox, type HostAffinity } from "./host-pool.ts";
import type { RunOptions } from "./types.ts";

export interface PythonSandboxOptions {
  /** Max concurrent runs = max interpreters (default: number of CPUs). */
  maxConcurrency?: number;
  /** Time past timeoutMs before the watchdog kills the interpreter's process (default 500 ms). */
  watchdogSlackMs?: number;
  /** Replace an interpreter after this many runs (default 20,000). */
  recycleAfterRuns?: number;
  /** Replace an interpreter whose memory grew more than this above its start size (default 64 MiB). */
  retainedGrowthMb?: number;
  /** Whom each host is dedicated to (host-pool.ts `HostAffinity`; README.md "The residual"). Default "off". */
  affinity?: HostAffinity;
  /** How the processes are confined (tests turn bubblewrap off to check the rest holds alone). */
  confine?: ConfineOptions;
  /**
   * Tests: after every run the interpreter compares its whole memory with its snapshot (a mismatch
   * makes it unusable), and it does not start unless its written pages are tracked (memory-image.ts).
   */
  checkRestore?: boolean;
}

const WATCHDOG_SLACK_MS = 500;
/** The module that tells which pages a run wrote (memory-image.ts), where `npm install` built it. */
const DIRTY_PAGES_ADDON = dirtyPagesAddon();
const MiB = 1024 * 1024;

/**
 * How a Python process is confined: Pyodide's directory is its only package; a worker thread is
 * allowed (the timer that interrupts the interpreter); V8's wasm trap handler stays on (explicit
 * bounds checks measured ~10% slower here), so the address space allows its guard regions (Pyodide
 * failed to start under 16 GiB, starts under 24 GiB); a 64 MiB native
 * stack for the interpreter on the main thread: Python-to-Python calls use no C stack, but C-level
 * recursion (repr/json of deeply nested data, the parser) does; measured, with 4 MiB it overflowed
 * (a fatal error of the interpreter) before CPython's own C-stack check fired, with 64 MiB
 * CPython's check or the time limit ends such runs first. Native addons only where
 * native/wasm-dirty is built: the interpreter loads it (its restore copies only written pages).
 */
export const PYTHON_PROFILE: ConfinementProfile = {
  name: "python",
  entries: { "python-host": siblingModule("python-host", import.meta.url), "python-timer": siblingModule("python-timer", import.meta.url) },
  packages: ["pyodide"],
  workers: true,
  noEval: true,
  // The interpreter's JavaScript heap (its output buffers); Python's memory is wasm memory, limited per run.
  nodeFlags: ["--max-old-space-size=256"],
  addressSpaceMb: 24 * 1024,
  stackMb: 64,
  ...(DIRTY_PAGES_ADDON ? { addons: true, readable: [dirname(DIRTY_PAGES_ADDON)] } : {}),
};

let pyodideDir: string | undefined;
function pyodideIndex(): string {
  pyodideDir ??= `${dirname(fileURLToPath(resolveModule("pyodide", import.meta.url)))}/`;
  return pyodideDir;
}

function validatePython(_code: string, options: RunOptions): void {
  if (options.ts) throw new TypeError("sandbox: the python sandbox runs Python; the ts option is for JavaScript backends");
  const globals = options.globals ?? {};
  if (typeof globals !== "object" || globals === null || Array.isArray(globals)) throw new TypeError("sandbox: globals must be an object");
  for (const name of Object.keys(globals)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new TypeError(`sandbox: global name ${JSON.stringify(name)} is not a Python identifier`);
  }
}

export class PythonSandbox extends HostPoolSandbox {
  declare readonly kind: "python";

  constructor(options: PythonSandboxOptions = {}) {
    const retainedGrowthBytes = (options.retainedGrowthMb ?? 64) * MiB;
    super({
      kind: "python",
      label: "Python process",
      start: () => processHost(PYTHON_PROFILE, options.confine, [pyodideIndex(), DIRTY_PAGES_ADDON ?? "", options.checkRestore ? "check-restore" : ""]),
      maxConcurrency: options.maxConcurrency,
      watchdogSlackMs: options.watchdogSlackMs ?? WATCHDOG_SLACK_MS,
      memory: {
        // Measured RSS: the interpreter's wasm memory may keep retainedGrowth, its files take up to memoryMb on the JS heap.
        killAboveBytes: (limits) => 2 * limits.memoryMb * MiB + retainedGrowthBytes + 96 * MiB,
        retireAboveBytes: (limits) => limits.memoryMb * MiB + retainedGrowthBytes + 64 * MiB,
        engine: {
          retireAboveBytes: () => retainedGrowthBytes,
          // Memory the interpreter took stays usable by the next run: one grown past a run's limit does not serve it.
          fits: (limits, grown) => grown <= limits.memoryMb * MiB,
        },
      },
      cooperativeCancel: true,
      recycleAfterRuns: options.recycleAfterRuns ?? 20_000,
      affinity: options.affinity,
      validate: validatePython,
    });
  }

  /** Starts `count` interpreters (default: all) ahead of the first runs and waits for them. */
  override warm(count = this.maxConcurrency): Promise<void> {
    return super.warm(count);
  }
}

export function createPythonSandbox(options: PythonSandboxOptions = {}): PythonSandbox {
  return new PythonSandbox(options);
}
