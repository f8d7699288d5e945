/**
 * The Workers sandbox: QuickJS with its wasm imported as a module (workerd refuses to compile
 * wasm from bytes) and a time limit counted in interrupt-handler calls, because the clock stands
 * still during synchronous code in deployed Workers. The platform's CPU limit is the backstop.
 *
 * `#quickjs/sync.wasm` is a subpath import of package.json ("imports") that names the .wasm file
 * `@jitl/quickjs-wasmfile-release-sync` ships: wrangler's default rule bundles `*.wasm` specifiers
 * as compiled modules, and resolves this one from envworker's own folder, so the same import works
 * in this repository and in a project that installed envworker. Nothing is copied.
 */
import wasm from "#quickjs/sync.wasm";
import { createQuickJSSandbox } from "../sandbox/engines/quickjs/quickjs.ts";
import type { Sandbox } from "../sandbox/types.ts";

let shared: Sandbox | undefined;

/** One sandbox per isolate, made on first use. */
export function workersSandbox(): Sandbox {
  shared ??= createQuickJSSandbox({ wasmModule: wasm, deadline: "budget" });
  return shared;
}
