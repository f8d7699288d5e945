/**
 * A pool of hosts for the candidates' runs with a pool beside it for grading runs
 * (`RunOptions.grading: true`, started on first use): hidden tests and expected values never enter a
 * process where a candidate's code ran. The Python zygotes and the QuickJS instance hosts.
 */
import type { RunOptions, RunResult } from "../types.ts";
import { HostPoolSandbox, type HostPoolOptions } from "./host-pool.ts";

export class GradingPoolSandbox extends HostPoolSandbox {
  /** Grading runs: hosts of their own, started on first use. */
  private grader: HostPoolSandbox | undefined;

  /** `options`: the candidates' pool; `gradingOptions`: the grading pool's, asked for at its first run. */
  constructor(
    options: HostPoolOptions,
    private readonly gradingOptions: () => HostPoolOptions,
  ) {
    super(options);
  }

  /** The grading pool, for tests and metrics (undefined until the first grading run). */
  get grading(): HostPoolSandbox | undefined {
    return this.grader;
  }

  override run(code: string, options: RunOptions = {}): Promise<RunResult> {
    if (options.grading === true) {
      this.grader ??= new HostPoolSandbox(this.gradingOptions());
      return this.grader.run(code, options);
    }
    return super.run(code, options);
  }

  override memoryBytes(): number {
    return super.memoryBytes() + (this.grader?.memoryBytes() ?? 0);
  }

  override async dispose(): Promise<void> {
    await Promise.all([super.dispose(), this.grader?.dispose()]);
  }
}
