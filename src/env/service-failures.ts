/**
 * What the platform failed at during one step: a sandbox run its host could not run (`SandboxError`,
 * or a run refused), a judge that gave no answer. A reward computed meanwhile is not the
 * environment's verdict on the model's turn, even when the environment caught the failure and
 * scored 0 itself (py-code's `sandbox_error` metric), so the step reports them in
 * `observation.info.service_errors` and `envworker eval` counts the rollout as an error.
 */
import type { JudgeService } from "./judge.ts";
import type { Services } from "./services.ts";
import type { RunOptions, RunResult, Sandbox } from "../sandbox/types.ts";

/** The key of `observation.info` that lists a step's service failures, one line each. */
export const SERVICE_ERRORS = "service_errors";

/** `services` whose sandboxes and judge note their failures in `failures`. */
export function watchServices(services: Services): { services: Services; failures: string[] } {
  const failures: string[] = [];
  const note = (line: string) => {
    // A tool's run repeated in a loop fails the same way each time: one line says it.
    if (!failures.includes(line) && failures.length < 20) failures.push(line);
  };
  return {
    services: {
      ...services,
      sandbox: services.sandbox && watchSandbox(services.sandbox, "sandbox", note),
      python: services.python && watchSandbox(services.python, "python sandbox", note),
      judge: services.judge && watchJudge(services.judge, note),
    },
    failures,
  };
}

function watchSandbox(sandbox: Sandbox, label: string, note: (line: string) => void): Sandbox {
  return {
    kind: sandbox.kind,
    run: async (code: string, options: RunOptions = {}): Promise<RunResult> => {
      let result: RunResult;
      try {
        result = await sandbox.run(code, options);
      } catch (err) {
        note(`${label}: the run was refused: ${err instanceof Error ? err.message : String(err)}`);
        throw err;
      }
      // The guest's own errors (a throw, a limit, a cancelled run) are the model's; SandboxError is the host's.
      if (result.error?.name === "SandboxError") note(`${label}: ${result.error.message}`);
      return result;
    },
    // The watch does not own the sandbox (as scope.ts's view does not).
    dispose: async () => {},
  };
}

function watchJudge(judge: JudgeService, note: (line: string) => void): JudgeService {
  return {
    ask: async (request, options) => {
      try {
        return await judge.ask(request, options);
      } catch (err) {
        // A caller that gave up (the episode closed, its deadline) is no failure of the judge.
        if (!options?.signal?.aborted) note(`judge: ${describe(err)}`);
        throw err;
      }
    },
    ...(judge.note ? { note: (summary) => judge.note!(summary) } : {}),
  };
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" ? `${code}: ${err.message}` : err.message;
}
