/**
 * Scoping a sandbox to a caller: the server hands each episode (key = episode id, client = its
 * owner) or each client of a stateless route (key = client = the caller) a view of the one shared
 * sandbox whose runs queue under that key, in that client's group, run in that client's hosts, and
 * are cancelled when the scope's signal aborts (episode closed, request timed out, client gone).
 * Environment and tool code keep calling plain `sandbox.run(code, options)`.
 */
import { anySignal } from "../sched/signals.ts";
import type { RunOptions, RunResult, Sandbox } from "./types.ts";

export interface SandboxScope {
  /** Fair-queue key of every run made through the scope (it overrides the run's own `queueKey`). */
  key?: string;
  /**
   * The client the scope's runs are for (it overrides the run's own `client`): its group in the
   * fair queue and whom its hosts are dedicated to. Default: the key (a client of its own).
   */
  client?: string;
  /** Aborting it cancels every run of the scope, queued or running. */
  signal?: AbortSignal;
}

/** A view of `sandbox` whose runs carry the scope's key and signal. Disposing the view is a no-op. */
export function scopedSandbox(sandbox: Sandbox, scope: SandboxScope): Sandbox {
  return {
    kind: sandbox.kind,
    run: (code: string, options: RunOptions = {}): Promise<RunResult> => {
      const signal = anySignal(scope.signal, options.signal);
      return sandbox.run(code, {
        ...options,
        ...(scope.key !== undefined ? { queueKey: scope.key } : {}),
        // Never the caller's own: the code that calls run() does not choose whose hosts it gets.
        ...(scope.client !== undefined || scope.key !== undefined ? { client: scope.client ?? scope.key } : {}),
        ...(signal ? { signal } : {}),
      });
    },
    // The scope does not own the sandbox.
    dispose: async () => {},
  };
}
