/**
 * Environment threads never turn a string into code: environment code (respond, rewards, parsers)
 * reads model text in threads shared by every client, so a reward that `eval`s a completion, or a
 * library that compiles one (an expression evaluator built on `new Function`), would run the
 * model's program there. Imported first by env-thread.ts, this replaces, before any environment
 * module loads, every way a thread's code reaches the compiler from a string: `eval`, the
 * Function constructors (also as any function's `.constructor`, async and generator ones
 * included), node:vm's compiling functions and `process.binding("contextify")` under them.
 * `setTimeout`/`setInterval` with a string throw on Node anyway (ERR_INVALID_ARG_TYPE); here
 * they are recorded as the attempt they are.
 *
 * V8's own `--disallow-code-generation-from-strings` cannot be had per thread: a Worker's
 * `execArgv` refuses it (ERR_WORKER_INVALID_EXEC_ARGV), and `v8.setFlagsFromString` inside the
 * thread leaves its context (created before) as it was; setting it process-wide for the moment a
 * thread starts races with every other context made meanwhile. So the replacement is here, in JS.
 *
 * A refusal throws (EvalError, as V8's own), and it is also recorded for the call it happened in
 * (`watchCall`): the call then fails with EXECUTION_ERROR (`details.reason: "CODE_FROM_STRINGS"`)
 * even if the environment caught the throw and went on to return a reward.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createRequire, syncBuiltinESMExports } from "node:module";

/** One call's record: what it tried first, if it tried. */
export interface CallWatch {
  refused?: string | undefined;
}

const calls = new AsyncLocalStorage<CallWatch>();

/** Run `fn` as one call: a refusal inside it (however deep in its awaits) is recorded on `watch`. */
export function watchCall<T>(watch: CallWatch, fn: () => Promise<T>): Promise<T> {
  return calls.run(watch, fn);
}

function refusal(what: string): EvalError {
  return new EvalError(`${what}: code generation from strings is refused in environment threads (model text must never become code where other clients' calls run)`);
}

/**
 * A stand-in that throws for `what`. An empty source (all arguments "") compiles nothing anyone
 * wrote: it throws without counting, so probes such as zod 4's `new Function("")` (which picks its
 * JIT) fall back quietly instead of failing the call that happened to parse first.
 */
function refuser(what: string): (...args: unknown[]) => never {
  return function refused(...args: unknown[]): never {
    const empty = args.every((a) => a === "" || a === undefined);
    const call = calls.getStore();
    if (call && !empty) call.refused ??= what;
    throw refusal(what);
  };
}

/** Set `key` on `target` to `value` for good: nothing in the thread can put the original back. */
function pin(target: object, key: PropertyKey, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: false, configurable: false, enumerable: false });
}

/** Replace a Function constructor (`%Function%`, `%AsyncFunction%`, ...) reached through its prototype. */
function lockConstructor(prototype: object, what: string): (...args: unknown[]) => never {
  const stand = refuser(what);
  // `x instanceof Function` and friends keep working: they read the constructor's `prototype`.
  pin(stand, "prototype", prototype);
  pin(prototype, "constructor", stand);
  return stand;
}

function install(): void {
  pin(globalThis, "eval", refuser("eval"));
  const fn = lockConstructor(Function.prototype, "Function");
  pin(globalThis, "Function", fn);
  lockConstructor(Object.getPrototypeOf(async function () {}), "AsyncFunction");
  lockConstructor(Object.getPrototypeOf(function* () {}), "GeneratorFunction");
  lockConstructor(Object.getPrototypeOf(async function* () {}), "AsyncGeneratorFunction");

  for (const name of ["setTimeout", "setInterval"] as const) {
    const timer = globalThis[name] as (...args: unknown[]) => unknown;
    const refuse = refuser(name);
    const checked = function (this: unknown, handler: unknown, ...rest: unknown[]) {
      if (typeof handler === "string") refuse(handler);
      return timer.call(this, handler, ...rest);
    };
    // util.promisify(setTimeout) and friends read properties of the original (promisify.custom).
    for (const key of Reflect.ownKeys(timer)) if (!(key in checked)) Object.defineProperty(checked, key, Object.getOwnPropertyDescriptor(timer, key)!);
    // Left writable: the original refuses strings too, so putting it back gains nothing.
    (globalThis as Record<string, unknown>)[name] = checked;
  }

  // node:vm compiles strings without eval. Its CJS exports are patched and then copied to its ESM
  // namespace (syncBuiltinESMExports), so `import vm from "node:vm"` sees the same.
  const require = createRequire(import.meta.url);
  const vm = require("node:vm") as Record<string, unknown>;
  for (const name of ["runInThisContext", "runInContext", "runInNewContext", "compileFunction", "Script", "SourceTextModule", "createScript"]) {
    if (name in vm) vm[name] = refuser(`vm.${name}`);
  }
  syncBuiltinESMExports();
  // The binding vm is built on, still reachable through the deprecated process.binding.
  const proc = process as unknown as { binding?: (name: string) => unknown };
  const binding = proc.binding?.bind(process);
  if (binding) {
    pin(proc, "binding", (name: string) => {
      if (name === "contextify") refuser('process.binding("contextify")')(name);
      return binding(name);
    });
  }
}

install();
