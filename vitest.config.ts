import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["envworker-source", "module", "node", "development|production"] },
  ssr: { resolve: { conditions: ["envworker-source", "module", "node", "development|production"] } },
  test: {
    include: ["test/**/*.test.ts"],
    // Test files run in child processes (forks): isolated-vm needs --no-node-snapshot on Node >= 20
    // and must not share a process with a worker-thread pool.
    pool: "forks",
    // --conditions: "envworker" (imported by envs/ like a user's) is src/ here, not dist/, also
    // in the threads that load environments.
    execArgv: ["--no-node-snapshot", "--conditions=envworker-source"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
