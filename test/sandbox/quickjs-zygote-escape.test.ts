/**
 * "A broken engine gains nothing", for the QuickJS sandbox on Node: a guest that broke out of
 * QuickJS and WebAssembly into its child's host-side Python (test/fixtures/quickjs-escape/
 * escape_qjs_zygote.py: the real zygote, started through the real launcher and profile), which also
 * scribbles over QuickJS, the warm guest context and the page it shares with its zygote. The common
 * cases are test/helpers/zygote-escape.ts's (the hardening is the Python sandbox's, harden.py);
 * here, what the next runs of QuickJS must still be.
 */
import { resolve } from "node:path";
import { expect } from "vitest";
import { createQuickJSProcessSandbox, QUICKJS_PROFILE } from "../../src/sandbox/engines/quickjs/quickjs-process.ts";
import { describeZygoteEscape } from "../helpers/zygote-escape.ts";

describeZygoteEscape({
  engine: "QuickJS",
  fixture: resolve(import.meta.dirname, "../fixtures/quickjs-escape/escape_qjs_zygote.py"),
  profile: QUICKJS_PROFILE,
  // The fork zygote's walls (the instance host's: test/sandbox/quickjs-instance-freshness.test.ts).
  create: (options) => createQuickJSProcessSandbox({ ...options, mode: "fork" }),
  resultMagic: "EWQ1",
  async genuine(quickjs) {
    const next = await quickjs.run("[1 + 1, typeof std, typeof print, Object.getOwnPropertyNames(globalThis).includes('leak'), [3, 1, 2].sort().join(), JSON.stringify({ a: 1 })]", { client: "a" });
    expect(next).toMatchObject({ ok: true, result: [2, "undefined", "undefined", false, "1,2,3", '{"a":1}'] });
    expect(await quickjs.run("console.log('out'); 'genuine'", { client: "a" })).toMatchObject({ ok: true, result: "genuine", stdout: "out\n" });
    // The interrupt still works: the escaped child's scribbles on its shared page were its own.
    expect(await quickjs.run("console.log('in'); for (;;) {}", { client: "a", timeoutMs: 300 })).toMatchObject({ ok: false, stdout: "in\n", error: { name: "TimeoutError" } });
  },
});
