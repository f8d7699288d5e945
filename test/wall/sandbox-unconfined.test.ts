/**
 * Sandbox hosts are not started without bubblewrap unless the operator opts in (issue 29, finding
 * 2): without it an escaped host connected to the server's own port, and `process.dlopen` loaded
 * another package's native addon (Node 20's permission model does not check an addon's path once
 * addons are allowed). What the README claims holds only with bubblewrap, so without it (turned
 * off, not installed, failing) a host is refused, each run a SandboxError saying why and how to opt
 * in (ENVWORKER_UNCONFINED=1), and `envworker serve` says so at start-up (test/server/settings.test.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { createIsolatedVmProcessSandbox } from "../../src/sandbox/engines/isolated-vm/isolated-vm-process.ts";
import { createQuickJSProcessSandbox } from "../../src/sandbox/engines/quickjs/quickjs-process.ts";
import type { Sandbox } from "../../src/sandbox/types.ts";

const REFUSED = /not started without bubblewrap \(.+\).*ENVWORKER_UNCONFINED=1/s;

describe("a sandbox host without bubblewrap", () => {
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await sandbox?.dispose();
    sandbox = undefined;
  });

  it.each([
    ["isolated-vm", () => createIsolatedVmProcessSandbox({ maxConcurrency: 1, confine: { bwrap: false } })],
    ["QuickJS", () => createQuickJSProcessSandbox({ maxConcurrency: 1, confine: { bwrap: false } })],
  ] as const)("%s: is refused, and the run is a SandboxError that says why and how to opt in", async (_name, create) => {
    sandbox = create();
    for (let i = 0; i < 2; i++) {
      const r = await sandbox.run("1 + 1");
      expect(r.ok).toBe(false);
      expect(r.error?.name).toBe("SandboxError");
      expect(r.error?.message).toMatch(REFUSED);
      expect(r.error?.message).toMatch(/turned off/);
    }
  }, 60_000);

  it("starts on the explicit opt-in (what then holds: test/wall/sandbox-confinement.test.ts)", async () => {
    sandbox = createQuickJSProcessSandbox({ maxConcurrency: 1, confine: { bwrap: false, unconfined: true } });
    expect(await sandbox.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
  }, 60_000);
});

// `envworker serve` without bubblewrap, with and without the opt-in: test/server/settings.test.ts (ENVWORKER_UNCONFINED).
