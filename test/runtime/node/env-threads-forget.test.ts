/**
 * A call its caller gave up on while it waited for sandbox runs is forgotten by its environment
 * thread too (issue 29, finding 3): before, the thread kept what waited for the runs' answers
 * (the call's inputs, its reward functions' state) for its whole life, since those answers never
 * came. A flood of /score requests whose clients left filled the threads' heaps (their collections
 * slowed every other call) until a thread died of it. Here: js-code /score calls whose sandbox
 * never answers, each given up on, on one thread with a small heap.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Environment } from "../../../src/env/environment.ts";
import { importEnvironments } from "../../../src/env/source.ts";
import { EnvThreadPool } from "../../../src/node/env-threads.ts";
import type { RunOptions, RunResult, Sandbox } from "../../../src/sandbox/types.ts";

/** A sandbox whose runs never end unless cancelled. */
let asked = 0;
const stuck: Sandbox = {
  kind: "isolated-vm",
  run(_code: string, options: RunOptions = {}): Promise<RunResult> {
    asked++;
    return new Promise((resolve) => {
      options.signal?.addEventListener("abort", () => resolve({ ok: false, result: null, stdout: "", stderr: "", error: { name: "CancelledError", message: "cancelled" }, elapsedMs: 0 }), { once: true });
    });
  },
  async dispose() {},
};

let pool: EnvThreadPool;
let jsCode: Environment;
beforeAll(async () => {
  const shipped = await importEnvironments(new URL("../../../envs/index.ts", import.meta.url).href);
  jsCode = shipped.find((e) => e.name === "js-code")!;
  // One thread with a small heap: what it keeps of calls nobody waits for adds up fast.
  pool = new EnvThreadPool([jsCode], { services: () => ({ sandbox: stuck }), minThreads: 1, maxThreads: 1, threadHeapMb: 48 });
  await pool.warm();
}, 60_000);
afterAll(() => pool?.dispose());

describe("a call given up on while it waits for its sandbox runs", () => {
  it("is forgotten by its thread: forty calls of 32 items of 64 KB each, each given up on, and the thread lives on", async () => {
    const completion = "```js\nwhile (true) {}\n// " + "x".repeat(64 * 1024) + "\n```";
    const groups = Array.from({ length: 32 }, () => [{ completion, answer: "fizzbuzz" }]);
    for (let i = 0; i < 40; i++) {
      const gaveUp = new AbortController();
      const before = asked;
      const scored = pool.score(jsCode, { groups, grouped: false }, { key: `client-${i}`, signal: gaveUp.signal });
      scored.catch(() => {});
      // Waiting for its 32 runs, then its caller leaves.
      await expect.poll(() => asked - before, { timeout: 30_000, interval: 5 }).toBe(32);
      gaveUp.abort();
      await expect(scored).rejects.toMatchObject({ details: { reason: "CANCELLED" } });
    }
    expect(pool.died, "environment threads that died").toBe(0);
  }, 180_000);
});
