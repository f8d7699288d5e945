/**
 * The tests `npm run mutate` runs against each mutant: in-process tests of the modules it mutates
 * (stryker.config.mjs). Tests that drive a child process (`envworker serve`) cannot see a mutant,
 * which lives in the test process, so they are left out: they would only cost time. (Stryker
 * runs vitest in worker threads, where execArgv is not allowed: `npm run mutate` passes
 * --no-node-snapshot through NODE_OPTIONS instead.)
 */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "test/auth.test.ts",
      "test/browser-guards.test.ts",
      "test/episode.test.ts",
      "test/mcp-episode.test.ts",
      "test/config.test.ts",
      "test/wire-promises.test.ts",
      "test/protocol-node.test.ts",
      "test/episode-store.test.ts",
      "test/memory-budget.test.ts",
      "test/sandbox.test.ts",
      "test/server-units.test.ts",
      "test/app-wiring.test.ts",
      "test/body-limit.test.ts",
      "test/ws-handlers.test.ts",
      "test/ws-session.test.ts",
      "test/ws-answers.test.ts",
      "test/answers-budget.test.ts",
      "test/client-json.test.ts",
      "test/ws-arriving.test.ts",
      "test/sandbox-options.test.ts",
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
