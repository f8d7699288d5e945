/**
 * What the platform hands to tools and reward functions: today the code sandbox (isolated-vm
 * on Node, QuickJS on Workers). Environments never construct these themselves, so the same
 * environment runs on either platform.
 */
import type { Sandbox } from "../sandbox/types.ts";

export interface Services {
  sandbox?: Sandbox | undefined;
  /**
   * The Python sandbox (Pyodide; Node only, see src/sandbox/python.ts). Absent on Workers, so
   * environments and tools that need it (py-code, the `python` tool) are Node-only.
   */
  python?: Sandbox | undefined;
}
