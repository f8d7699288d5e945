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
   * The Python sandbox (CPython for WASI in a fork server; Node only, see src/sandbox/python.ts). Absent on Workers, so
   * environments and tools that need it (py-code, the `python` tool) are Node-only.
   */
  python?: Sandbox | undefined;
  /**
   * The operator's judge model (src/server/judge-client.ts), when the server has one. Reward
   * functions reach it through `defineJudge(...).ask(input)`, which reports its absence.
   */
  judge?: JudgeService | undefined;
}
