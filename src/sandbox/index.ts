/**
 * Sandboxed code execution: one interface, two backends, chosen by configuration.
 *
 *   ENVWORKER_SANDBOX=quickjs|isolated-vm   (default: quickjs everywhere)
 *
 * On Node the default is the QuickJS zygote (quickjs-process.ts): every run in a fresh process
 * forked for it, so no run can change another's outcome even when the engine breaks. isolated-vm
 * (V8, several times faster on heavy code) is the operator's choice; the server then gives each
 * run a host process of its own (affinity "run", serverAffinity). On Workers: in-process QuickJS.
 *
 * This module is safe to bundle for Cloudflare Workers: the Node-only backends (isolated-vm is a
 * native addon; the QuickJS zygote needs Python and child processes) are loaded lazily, through import
 * specifiers that bundlers do not follow. See README.md.
 */
import { createQuickJSSandbox, type QuickJSSandboxOptions } from "./engines/quickjs/quickjs.ts";
import { isNode } from "./platform.ts";
import { SANDBOX_KINDS, sandboxKindFromEnv } from "./kind.ts";
import type { RunOptions, RunResult, Sandbox, SandboxKind } from "./types.ts";
import type { HostAffinity } from "./host/host-pool.ts";

export { DEFAULT_LIMITS, TRUNCATION_MARKER } from "./types.ts";
export { SANDBOX_KINDS, sandboxKindFromEnv };
export type { JsonValue, RunError, RunLimits, RunOptions, RunResult, Sandbox, SandboxKind } from "./types.ts";
export { createQuickJSSandbox, QuickJSSandbox, quickjsVariant, type QuickJSSandboxOptions } from "./engines/quickjs/quickjs.ts";
export { createDeadline, DEFAULT_CALLS_PER_MS, type Deadline, type DeadlineOptions, type DeadlineStrategy } from "../sched/deadline.ts";
export { resolveLimits } from "./options.ts";
export { CancelledError } from "../sched/limiter.ts";
export { scopedSandbox, type SandboxScope } from "./scope.ts";
export { anySignal } from "../sched/signals.ts";


export interface CreateSandboxOptions {
  /** Max concurrent runs = threads/processes (default: number of CPUs on Node, 1 for in-process QuickJS). */
  maxConcurrency?: number;
  /** Options of the in-process QuickJS sandbox (Workers: pass `wasmModule` here). */
  quickjs?: QuickJSSandboxOptions;
  /**
   * Node only: run QuickJS out of the server's process (confined child processes), with a watchdog
   * that can kill a run the interrupt handler cannot stop (default true on Node; in-process
   * elsewhere). The name is from when these were worker threads.
   */
  quickjsThreads?: boolean;
  /** Node: whom each host process is dedicated to (host-pool.ts `HostAffinity`; README "The residual"). Default "off" (a server passes serverAffinity's). */
  affinity?: HostAffinity;
}


/**
 * The affinity a server gives an engine's hosts, from the operator's choice (undefined: none). The
 * default holds the rule that every run starts in a state no earlier guest touched: isolated-vm's
 * host is a Node process, which cannot fork, so a host serves one run ("run"). The zygotes
 * (QuickJS, Python) fork a fresh child per run whatever their affinity, so "run" would only add a
 * zygote start-up per run: they are dedicated to a client instead.
 */
export function serverAffinity(engine: SandboxKind | "python", chosen: HostAffinity | undefined): HostAffinity {
  if (engine === "isolated-vm") return chosen ?? "run";
  return chosen === undefined || chosen === "run" ? "client" : chosen;
}

/** Whether an affinity the operator chose lets a guest that broke `kind`'s engine reach later runs (the server warns at start). */
export function breaksPerRunRule(kind: SandboxKind, affinity: HostAffinity | undefined): boolean {
  return kind === "isolated-vm" && affinity !== undefined && affinity !== "run";
}

export function createSandbox(kind: SandboxKind = sandboxKindFromEnv(), options: CreateSandboxOptions = {}): Sandbox {
  const { maxConcurrency, affinity } = options;
  switch (kind) {
    case "isolated-vm":
      if (!isNode()) throw new Error("the isolated-vm sandbox needs Node.js");
      // Out of process: a V8 fatal error in an isolate aborts the process hosting it.
      return new LazySandbox(kind, async () => {
        const m = (await importNodeOnly("./engines/isolated-vm/isolated-vm-process.ts")) as typeof import("./engines/isolated-vm/isolated-vm-process.ts");
        return m.createIsolatedVmProcessSandbox({ maxConcurrency, affinity });
      });
    case "quickjs":
      if (isNode() && options.quickjsThreads !== false) {
        return new LazySandbox(kind, async () => {
          const m = (await importNodeOnly("./engines/quickjs/quickjs-process.ts")) as typeof import("./engines/quickjs/quickjs-process.ts");
          return m.createQuickJSProcessSandbox({ maxConcurrency, affinity });
        });
      }
      return createQuickJSSandbox({ ...options.quickjs, ...(maxConcurrency ? { maxConcurrency } : {}) });
    default:
      throw new Error(`unknown sandbox kind ${JSON.stringify(kind)}`);
  }
}

let shared: Sandbox | undefined;

/** A process-wide sandbox of the configured kind, created on first use. */
export function defaultSandbox(): Sandbox {
  shared ??= createSandbox();
  return shared;
}

/** Disposes the process-wide sandbox (at shutdown); the next defaultSandbox() makes a new one. */
export async function disposeDefaultSandbox(): Promise<void> {
  const s = shared;
  shared = undefined;
  await s?.dispose();
}

/** A variable specifier keeps bundlers (wrangler/esbuild) from pulling Node-only code into Workers. */
function importNodeOnly(specifier: string): Promise<unknown> {
  return import(/* @vite-ignore */ specifier);
}

/** A sandbox whose backend module is imported on first use. */
class LazySandbox implements Sandbox {
  private backend: Promise<Sandbox> | undefined;

  constructor(
    readonly kind: SandboxKind,
    private readonly load: () => Promise<Sandbox>,
  ) {}

  private loaded: Sandbox | undefined;

  async run(code: string, options?: RunOptions): Promise<RunResult> {
    this.backend ??= this.load().then((b) => (this.loaded = b));
    return (await this.backend).run(code, options);
  }

  memoryBytes(): number {
    return this.loaded?.memoryBytes?.() ?? 0;
  }

  async dispose(): Promise<void> {
    const backend = this.backend;
    this.backend = Promise.reject(new Error("sandbox is disposed"));
    this.backend.catch(() => {});
    if (backend) await (await backend).dispose();
  }
}
