// @ts-check
/**
 * Mutation testing of the server's wiring and security-critical modules: `npm run mutate` (slow;
 * not part of `npm test` or CI). Prints the mutation score per module; the HTML report goes to
 * reports/mutation/. Narrow a run with `npm run mutate -- --mutate src/server/auth.ts`.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.stryker.config.ts", related: false },
  mutate: [
    "src/server/auth.ts",
    "src/server/browser-guards.ts",
    "src/server/episode-host.ts",
    "src/server/config.ts",
    "src/server/body.ts",
    "src/node/node-body.ts",
    "src/node/ws-arriving.ts",
    "src/server/ws-session.ts",
    "src/server/app.ts",
    "src/server/episode-store.ts",
    "src/server/memory.ts",
    "src/server/client-json.ts",
    "src/server/ws-answers.ts",
    "src/node/node-answers.ts",
    "src/sandbox/options.ts",
  ],
  coverageAnalysis: "perTest",
  ignoreStatic: true,
  concurrency: 2,
  timeoutMS: 20_000,
  reporters: ["clear-text", "progress", "html", "json"],
  clearTextReporter: { reportMutants: true, reportScoreTable: true, allowEmojis: false },
  htmlReporter: { fileName: "reports/mutation/index.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
  thresholds: { high: 90, low: 80, break: null },
};
