import { defineConfig } from "vitest/config";

/**
 * Files whose assertions are about how fast a live server keeps serving while it is attacked
 * (test/helpers/hostile.ts: probes within a deadline; a spinning reward beside a probe): they run
 * one at a time, after the rest. Their bounds hold on a loaded machine too (they scale with the
 * load they measure), but alone they are held to the idle machine's bound more often.
 */
const ALONE = ["test/hostile*.test.ts", "test/env-threads.test.ts"];

export default defineConfig({
  resolve: { conditions: ["envworker-source", "module", "node", "development|production"] },
  ssr: { resolve: { conditions: ["envworker-source", "module", "node", "development|production"] } },
  test: {
    // Test files run in child processes (forks): isolated-vm needs --no-node-snapshot on Node >= 20
    // and must not share a process with a worker-thread pool.
    pool: "forks",
    // --conditions: "envworker" (imported by envs/ like a user's) is src/ here, not dist/, also
    // in the threads that load environments.
    execArgv: ["--no-node-snapshot", "--conditions=envworker-source"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: "parallel",
          include: ["test/**/*.test.ts"],
          exclude: ALONE,
          // vitest's default on 2 cores is 1 (cores − 1): every file would wait for the one before,
          // though most spend much of their time waiting (on a child starting: a server, workerd,
          // Chromium, Pyodide; on a runaway run's time limit). 2 at once fill the gaps without
          // crowding runs with short time limits (300 ms): 3 at once, on a machine already busy, failed several.
          maxWorkers: 2,
        },
      },
      {
        extends: true,
        test: { name: "alone", include: ALONE, maxWorkers: 1 },
      },
    ],
  },
});
