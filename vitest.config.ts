import { defineConfig } from "vitest/config";

/**
 * Files whose assertions are about how fast a live server keeps serving while it is attacked
 * (probes within a deadline, a spinning reward beside a probe): they run one at a time after the
 * rest, so that they compete with nothing but each other's absence.
 */
const ALONE = ["test/hostile.test.ts", "test/hostile-code.test.ts", "test/hostile-memory.test.ts", "test/env-threads.test.ts"];

export default defineConfig({
  test: {
    // Test files run in child processes (forks): isolated-vm needs --no-node-snapshot on Node >= 20
    // and must not share a process with a worker-thread pool.
    pool: "forks",
    execArgv: ["--no-node-snapshot"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: "parallel",
          include: ["test/**/*.test.ts"],
          exclude: ALONE,
          // vitest's default on 2 cores is 1 (cores − 1): every file would wait for the one before.
          // Most files spend their time waiting on a child (a server, workerd, Chromium, Pyodide
          // starting up), so 3 at once keep both cores busy.
          maxWorkers: 3,
        },
      },
      {
        extends: true,
        test: { name: "alone", include: ALONE, maxWorkers: 1 },
      },
    ],
  },
});
