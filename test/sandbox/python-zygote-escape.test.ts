/**
 * "A broken engine gains nothing", for the Python sandbox: a guest that broke out of WebAssembly
 * into its child's host-side Python (test/fixtures/python-escape/escape_zygote.py: the real zygote,
 * started through the real launcher and profile). The common cases (the server's channel out of
 * reach, the zygote unharmed, the next runs genuine, the control without harden.py) are
 * test/helpers/zygote-escape.ts's; here, the Python zygote's own.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { expect } from "vitest";
import { createPythonSandbox, PYTHON_PROFILE, type PythonSandbox } from "../../src/sandbox/engines/python/python.ts";
import { describeZygoteEscape } from "../helpers/zygote-escape.ts";

describeZygoteEscape({
  engine: "Python",
  fixture: resolve(import.meta.dirname, "../fixtures/python-escape/escape_zygote.py"),
  profile: PYTHON_PROFILE,
  create: (options) => createPythonSandbox(options),
  resultMagic: "EWZ1",
  escaped: (facts) => expect(facts.child).toBe(true),
  async genuine(python) {
    const next = await python.run("import builtins, sys\n[1 + 1, len([1, 2, 3]), 'json' in sys.modules, sorted(k for k in globals() if not k.startswith('__'))]", { client: "a" });
    expect(next).toMatchObject({ ok: true, result: [2, 3, true, ["builtins", "sys"]] });
    expect(await python.run("print('out')\n'genuine'", { client: "a" })).toMatchObject({ ok: true, result: "genuine", stdout: "out\n" });
  },
  cases: [
    {
      name: "a spare that died while it waited (killed from outside) is replaced by a fresh child for the run",
      async run({ sandbox: python, zygotePid, zygotes }) {
        await python.run("0", { client: "a" });
        // The spare is forked once the last run's child is reaped, just after its answer.
        const children = () => readFileSync(`/proc/${zygotePid}/task/${zygotePid}/children`, "utf8").trim().split(" ").filter(Boolean).map(Number);
        await expect.poll(() => children().length, { timeout: 5000, interval: 20 }).toBe(1);
        process.kill(children()[0]!, "SIGKILL");
        // Dead, or still on its way out: either way it must not be handed the run.
        const fresh = await python.run("'fresh'", { client: "a" });
        expect(fresh, JSON.stringify(fresh)).toMatchObject({ ok: true, result: "fresh" });
        expect(zygotes()).toEqual([zygotePid]);
      },
    },
    {
      name: "memory taken outside the interpreter's limit is the server's to see: counted by its page faults, its zygote replaced",
      timeoutMs: 60_000,
      async run({ sandbox }) {
        const python = sandbox as PythonSandbox;
        // The store limit bounds the guest's wasm memory; host-side memory of an escaped child is not
        // under it. The server measures the tree (process-memory.ts ForkingHost: a child's private
        // pages count in full) and kills the host past 2 x memoryMb + 96 MiB.
        const before = python.replaced;
        const r = await python.run("#escape\nimport time\nheld = b'\\x01' * (400 << 20)\ntime.sleep(8)\nresult = len(held)", { client: "a", memoryMb: 16, timeoutMs: 15_000 });
        expect(r).toMatchObject({ ok: false, error: { name: "MemoryLimitError" } });
        expect(r.error?.message).toMatch(/grew by \d+ MiB and was replaced/);
        expect(python.replaced).toBeGreaterThan(before);
        expect(await python.run("1 + 1", { client: "a" })).toMatchObject({ ok: true, result: 2 });
        expect(python.memoryBytes()).toBeLessThan(200 * 1024 * 1024);
      },
    },
  ],
});
