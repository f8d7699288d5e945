import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // An environment that runs code (tools, code rewards, `sandbox.run` in respond) starts a
    // sandbox on first use (QuickJS: a WebAssembly module to compile, a second or more on a busy
    // machine), and each run may take up to its own timeoutMs: vitest's default 5 s per test is
    // too short for that. Keep this above your runs' timeoutMs times the runs in one test.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
