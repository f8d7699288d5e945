import { defineConfig } from "vitest/config";

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
    include: ["test/**/*.test.ts"],
    // Builds dist/ when it is not the build of the sources (test/global-setup.ts).
    globalSetup: ["test/global-setup.ts"],
    // Generous: at load ~20 (a second copy of the suite running) tests that restart sandbox hosts
    // take 30+ s. A test that hangs still fails, later.
    testTimeout: 90_000,
    hookTimeout: 120_000,
    // vitest's default on 2 cores is 1 (cores − 1): every file would wait for the one before,
    // though most spend much of their time waiting (on a child starting: a server, workerd,
    // Chromium, Python zygotes; on a runaway run's time limit). Three at once fill the gaps. What made
    // more at once fail before is gone: sandbox limits are on the run clock (src/sched/run-delay.ts),
    // hosts are no longer below the tests' priority, and every bound on a probe's latency scales
    // with the load it measures (test/helpers/slowdown.ts).
    maxWorkers: 3,
  },
});
