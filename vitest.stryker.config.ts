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
      "test/server/auth.test.ts",
      "test/server/browser-guards.test.ts",
      "test/env/episode.test.ts",
      "test/server/mcp-episode.test.ts",
      "test/server/config.test.ts",
      "test/server/wire-promises.test.ts",
      "test/runtime/node/protocol-node.test.ts",
      "test/server/episode-store.test.ts",
      "test/server/memory-budget.test.ts",
      "test/sandbox/sandbox.test.ts",
      "test/server/server-units.test.ts",
      "test/server/app-wiring.test.ts",
      "test/server/body-limit.test.ts",
      "test/server/ws-handlers.test.ts",
      "test/server/ws-session.test.ts",
      "test/server/ws-answers.test.ts",
      "test/server/answers-budget.test.ts",
      "test/server/client-json.test.ts",
      "test/runtime/node/ws-arriving.test.ts",
      "test/sandbox/sandbox-options.test.ts",
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
