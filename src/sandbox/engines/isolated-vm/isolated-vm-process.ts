/**
 * isolated-vm out of the server's process (the Node default): child processes
 * (isolated-vm-host.ts), each hosting one isolate and serving one run at a time, supervised by
 * host-pool.ts. A V8 fatal error cannot be caught inside the process that hits it; here it ends a
 * child, and its run becomes a MemoryLimitError (or a SandboxError), never a dead server. See
 * README.md "Isolation model" for the measurements behind this.
 */
import { siblingModule } from "../../../wall/sibling-module.ts";
import type { ConfineOptions, NodeProfile } from "../../../wall/confine.ts";
import { processHost } from "../../host/host-handles.ts";
import { HostPoolSandbox, type HostAffinity } from "../../host/host-pool.ts";

export interface IsolatedVmProcessSandboxOptions {
  /** Max concurrent runs = max child processes (default: number of CPUs). */
  maxConcurrency?: number;
  /** Whom each host is dedicated to (host-pool.ts `HostAffinity`; README.md "The residual"). Default "off". */
  affinity?: HostAffinity;
  /** How the children are confined (tests turn bubblewrap off to check the rest holds alone). */
  confine?: ConfineOptions;
}

/**
 * Past timeoutMs: the child's own watchdog disposes a stuck isolate at +550 ms; this one kills the
 * child when even that did not answer (its event loop blocked, e.g. stripping hostile TypeScript).
 */
const WATCHDOG_SLACK_MS = 1500;
/** The child's own V8 heap (type stripping, messages), not the isolates'. */
const CHILD_HEAP_MB = 256;

export type IsolatedVmProcessSandbox = HostPoolSandbox;

/** How an isolated-vm child is confined (confine.ts): the addon is its only package, and the one allowed. */
export const ISOLATED_VM_PROFILE: NodeProfile = {
  name: "isolated-vm",
  entries: { "isolated-vm-host": siblingModule("isolated-vm-host", import.meta.url) },
  packages: ["isolated-vm"],
  addons: true,
  nodeFlags: ["--no-node-snapshot", `--max-old-space-size=${CHILD_HEAP_MB}`],
  addressSpaceMb: 16 * 1024,
};

export function createIsolatedVmProcessSandbox(options: IsolatedVmProcessSandboxOptions = {}): IsolatedVmProcessSandbox {
  return new HostPoolSandbox({
    kind: "isolated-vm",
    label: "isolated-vm process",
    start: () => processHost(ISOLATED_VM_PROFILE, options.confine),
    maxConcurrency: options.maxConcurrency,
    watchdogSlackMs: WATCHDOG_SLACK_MS,
    // The pool's defaults (host-pool.ts): RSS may grow by 2 × memoryMb + 96 MiB during a run (the
    // isolate's limit is a guideline for large allocations), memoryMb + 64 MiB kept after it.
    memory: {},
    cooperativeCancel: true,
    affinity: options.affinity,
  });
}
