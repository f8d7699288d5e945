/**
 * The code sandboxes a Node process gives environments: JavaScript (QuickJS unless ENVWORKER_SANDBOX
 * says isolated-vm) and Python. One definition for the server (src/node/server.ts) and for the commands that
 * run environments in process (`envworker eval`), so an in-process run gets every sandbox a served
 * one does: a py-code reward scored without the Python sandbox was a silent 0 (issue 40).
 *
 * Both are lazy: nothing starts until an environment first runs code. Each call sees them scoped to
 * its episode or client (scope.ts), so fair queues and cancellation work per caller.
 */
import type { HostAffinity } from "./host/host-pool.ts";
import { createSandbox, serverAffinity, type CreateSandboxOptions } from "./index.ts";
import { createPythonSandbox, type PythonSandbox } from "./engines/python/python.ts";
import { scopedSandbox, type SandboxScope } from "./scope.ts";
import type { Sandbox, SandboxKind } from "./types.ts";

export interface LocalSandboxOptions {
  kind: SandboxKind;
  /** The operator's ENVWORKER_SANDBOX_AFFINITY (undefined: the per-run default of serverAffinity). */
  affinity?: HostAffinity | undefined;
  /** Max concurrent runs of each engine (undefined: the engine's default). */
  maxConcurrency?: number | undefined;
  /** Use this JavaScript sandbox (the caller owns and disposes it). */
  sandbox?: Sandbox | undefined;
  /** Make the JavaScript sandbox with this instead of `createSandbox` (tests: a host with a deliberate escape). */
  makeSandbox?: ((options: CreateSandboxOptions) => Sandbox) | undefined;
}

export interface LocalSandboxes {
  sandbox: Sandbox;
  python: PythonSandbox;
  /** The services' sandboxes of one call: both scoped to it. */
  forScope(scope: SandboxScope): { sandbox: Sandbox; python: Sandbox };
  /** The sandboxes made here (not a caller's own), to dispose at the end. */
  owned: Sandbox[];
}

export function createLocalSandboxes(opts: LocalSandboxOptions): LocalSandboxes {
  const concurrency = opts.maxConcurrency ? { maxConcurrency: opts.maxConcurrency } : {};
  // Unless the operator chose otherwise, every run starts in a state no earlier guest touched: a
  // fresh fork of a zygote (QuickJS, Python; zygotes dedicated to a client), a single-use host
  // (isolated-vm). src/sandbox/README.md "The residual".
  const make = opts.makeSandbox ?? ((o: CreateSandboxOptions) => createSandbox(opts.kind, o));
  const sandbox = opts.sandbox ?? make({ ...concurrency, affinity: serverAffinity(opts.kind, opts.affinity) });
  const python = createPythonSandbox({ ...concurrency, affinity: serverAffinity("python", opts.affinity) });
  return {
    sandbox,
    python,
    forScope: (scope) => ({ sandbox: scopedSandbox(sandbox, scope), python: scopedSandbox(python, scope) }),
    owned: [...(opts.sandbox === undefined ? [sandbox] : []), python],
  };
}
