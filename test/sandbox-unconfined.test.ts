/**
 * Sandbox hosts are not started without bubblewrap unless the operator opts in (issue 29, finding
 * 2): without it an escaped host connected to the server's own port, and `process.dlopen` loaded
 * another package's native addon (Node 20's permission model does not check an addon's path once
 * addons are allowed). What the README claims holds only with bubblewrap, so without it (turned
 * off, not installed, failing) a host is refused, each run a SandboxError saying why and how to opt
 * in (ENVWORKER_UNCONFINED=1), and `envworker serve` says so at start-up.
 */
import { afterEach, describe, expect, it } from "vitest";
import { UNCONFINED_ENV } from "../src/sandbox/confine.ts";
import { createIsolatedVmProcessSandbox } from "../src/sandbox/isolated-vm-process.ts";
import { createQuickJSProcessSandbox } from "../src/sandbox/quickjs-process.ts";
import type { Sandbox } from "../src/sandbox/types.ts";
import { startLiveServer, type LiveServer } from "./helpers/hostile.ts";
import { post } from "./helpers/http.ts";

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

  it("starts on the explicit opt-in (what then holds: test/sandbox-confinement.test.ts)", async () => {
    sandbox = createQuickJSProcessSandbox({ maxConcurrency: 1, confine: { bwrap: false, unconfined: true } });
    expect(await sandbox.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
  }, 60_000);
});

describe("envworker serve on a machine without bubblewrap", () => {
  let server: LiveServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  /** math-tools' javascript tool, as a model would call it: the tool's answer. */
  async function runTool(url: string, code: string): Promise<string> {
    const reset = await post(`${url}/envs/math-tools/reset`, { seed: 1 });
    expect(reset.status).toBe(200);
    const call = { id: "t", type: "function", function: { name: "javascript", arguments: JSON.stringify({ code }) } };
    const step = await post(`${url}/envs/math-tools/step`, { episode_id: reset.body.episode_id, action: { content: null, tool_calls: [call] } });
    expect(step.status).toBe(200);
    return step.body.observation.messages[0].content as string;
  }

  // No bubblewrap on its PATH (nor prlimit): as on a machine without them.
  const NO_TOOLS = { PATH: "/nonexistent", [UNCONFINED_ENV]: "" };

  it("says at start-up that sandbox hosts will not start and how to opt in; a tool's run is a SandboxError; other environments are served", async () => {
    server = await startLiveServer(NO_TOOLS, ["math-tools", "reverse-text"]);
    // Written just after the banner.
    await expect.poll(() => server!.stderr()).toMatch(/envworker: error: sandbox hosts are not started without bubblewrap \(bwrap is not installed/);
    expect(server.stderr()).toMatch(/ENVWORKER_UNCONFINED=1/);
    const answer = await runTool(server.url, "1 + 1");
    expect(answer).toMatch(/SandboxError/);
    expect(answer).toMatch(REFUSED);
    const reset = await post(`${server.url}/envs/reverse-text/reset`, {});
    expect(reset.status).toBe(200);
  }, 120_000);

  it("with ENVWORKER_UNCONFINED=1: a warning only, and the tool runs", async () => {
    server = await startLiveServer({ ...NO_TOOLS, [UNCONFINED_ENV]: "1" }, ["math-tools"]);
    await expect.poll(() => server!.stderr()).toMatch(/envworker: warning: no bubblewrap/);
    expect(server.stderr()).not.toMatch(/envworker: error/);
    expect(await runTool(server.url, "1 + 1")).toMatch(/result: 2/);
  }, 120_000);
});
