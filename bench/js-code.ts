/**
 * js-code's time limit against the engine's speed: every task's reference solution on its hidden
 * tests (one sandbox run each, as the environment grades), on the QuickJS zygote (Node's default)
 * and isolated-vm, in one process. Prints the slowest tasks' run times (the run's own elapsedMs,
 * TypeScript stripping included) beside the environment's default limit (DEFAULT_TIMEOUT_MS).
 *
 *   npm run bench -- js-code
 */
import { DEFAULT_TIMEOUT_MS, evaluateSolution } from "../envs/js-code/harness.ts";
import { REFERENCE } from "../envs/js-code/reference.ts";
import { TASKS } from "../envs/js-code/tasks.ts";
import { createSandbox } from "../src/sandbox/index.ts";
import type { RunOptions, Sandbox, SandboxKind } from "../src/sandbox/types.ts";
import { fmt } from "./server.ts";

const SHOWN = 6;

async function times(kind: SandboxKind): Promise<Map<string, number>> {
  const inner = createSandbox(kind);
  let last = 0;
  const timed: Sandbox = {
    kind,
    async run(code: string, options?: RunOptions) {
      const r = await inner.run(code, options);
      last = r.elapsedMs;
      return r;
    },
    dispose: () => inner.dispose(),
  };
  const out = new Map<string, number>();
  try {
    await timed.run("1"); // the first host's start-up is not a task's
    for (const t of TASKS) {
      const ref = REFERENCE[t.id]!;
      const e = await evaluateSolution(timed, t, ref.code, { typescript: ref.language === "typescript" });
      if (e.status !== "ok" || e.passed !== e.total) throw new Error(`${kind}: ${t.id} ${JSON.stringify(e)}`);
      out.set(t.id, last);
    }
  } finally {
    await timed.dispose();
  }
  return out;
}

export async function benchJsCode(): Promise<void> {
  const quickjs = await times("quickjs");
  const ivm = await times("isolated-vm");
  const slowest = [...quickjs.entries()].sort((a, b) => b[1] - a[1]).slice(0, SHOWN);
  console.log(`\n## js-code: reference solutions' run time (all hidden tests in one run; the env's limit ${DEFAULT_TIMEOUT_MS} ms)`);
  console.log("| task | QuickJS zygote ms | isolated-vm ms | of the limit (QuickJS) |");
  console.log("| --- | ---: | ---: | ---: |");
  for (const [id, ms] of slowest) console.log(`| ${id} | ${fmt(ms, 1)} | ${fmt(ivm.get(id)!, 1)} | ${((100 * ms) / DEFAULT_TIMEOUT_MS).toFixed(1)}% |`);
  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  console.log(`| all ${TASKS.length} tasks | ${fmt(sum(quickjs), 1)} | ${fmt(sum(ivm), 1)} | |`);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchJsCode();
