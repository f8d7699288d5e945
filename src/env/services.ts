/**
 * What the platform hands to tools and reward functions: the code sandbox (isolated-vm on Node,
 * QuickJS on Workers) and the operator's judge. Environments never construct these themselves,
 * so the same environment runs on either platform.
 */
import type { JudgeService } from "./judge.ts";
import type { Sandbox } from "../sandbox/types.ts";

export interface Services {
  sandbox?: Sandbox | undefined;
  /**
   * The Python sandbox (CPython for WASI in a fork server; Node only, see src/sandbox/engines/python/python.ts). Absent on Workers, so
   * environments and tools that need it (py-code, the `python` tool) are Node-only.
   */
  python?: Sandbox | undefined;
  /**
   * The operator's judge model (src/server/judge-client.ts), when the server has one. Reward
   * functions reach it through `defineJudge(...).ask(input)`, which reports its absence.
   */
  judge?: JudgeService | undefined;
}

/**
 * What an environment's own functions get (respond, reward functions, tools): the same, with the
 * code sandbox always there, so `respond: async ({ sandbox }) => sandbox.run(...)` type-checks. It
 * is: the server (Node and Workers), `envworker eval` and `envworker/testing` each give one.
 */
export interface AuthorServices extends Omit<Services, "sandbox"> {
  /** The code sandbox: `run(code, { timeoutMs, memoryBytes, stdin?, globals?, ts? })`, see docs/authoring.md. */
  sandbox: Sandbox;
}

/** Where no sandbox was given (code calling the engine itself): runs fail saying so, nothing else does. */
const NO_SANDBOX: Sandbox = {
  // A kind is required; runs never reach a backend.
  kind: "quickjs",
  run: () => Promise.reject(new Error("no code sandbox was given to this environment (the server, envworker eval and envworker/testing give one; code calling the engine itself passes services.sandbox)")),
  dispose: () => Promise.resolve(),
};

/** `services` as an environment's functions see them (AuthorServices). */
export function withSandbox<S extends Services>(services: S): Omit<S, "sandbox"> & { sandbox: Sandbox } {
  return { ...services, sandbox: services.sandbox ?? NO_SANDBOX };
}
