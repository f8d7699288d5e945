/**
 * A host killed at any moment of its start-up leaves no process behind and always reports its end
 * (host-handles.ts). Killed while bubblewrap was still setting up, its namespace's init once
 * outlived it, holding the host's stdio open: "close" never came, and an `envworker run-code`
 * process waited for it for ever (a CI run hung on it).
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { HOST_UID_BASE } from "../../src/wall/confine.ts";
import { processHost } from "../../src/sandbox/host/host-handles.ts";
import { QUICKJS_PROFILE } from "../../src/sandbox/engines/quickjs/quickjs-process.ts";

/** Pids of live processes whose real uid is one of `uids`. */
function processesOf(uids: Set<number>): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${name}/status`, "latin1"))?.[1]);
      const state = /^State:\s+(\S)/m.exec(readFileSync(`/proc/${name}/status`, "latin1"))?.[1];
      if (uids.has(uid) && state !== "Z") found.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

describe.runIf(process.getuid?.() === 0)("killing a host while it starts", () => {
  it("at any moment of its start-up: its end is reported and none of its processes is left", async () => {
    const uids = new Set<number>();
    for (let i = 0; i < 24; i++) {
      const host = processHost(QUICKJS_PROFILE);
      const ended = new Promise<void>((resolve) => host.onExit(() => resolve()));
      const { uid } = await host.started;
      if (uid !== undefined) uids.add(uid);
      // Spread the kills over the first ~50 ms: bubblewrap forking, its init, node starting.
      await new Promise((r) => setTimeout(r, (i % 12) * 4));
      host.kill();
      await ended;
    }
    // Processes die a moment after SIGKILL is sent.
    const deadline = Date.now() + 5000;
    let left = processesOf(uids);
    while (left.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      left = processesOf(uids);
    }
    expect(uids.size === 0 || [...uids].every((u) => u >= HOST_UID_BASE)).toBe(true);
    expect(left, "processes of killed hosts still alive").toEqual([]);
  }, 120_000);
});

describe("a host's end", () => {
  it("closes what the server kept open of it: no descriptor left per host (the server starts hosts for as long as it runs)", async () => {
    const { createQuickJSProcessSandbox } = await import("../../src/sandbox/engines/quickjs/quickjs-process.ts");
    // A host per episode: every run below starts one and stops another, and each is measured
    // (its /proc statm) and timed (its schedstat) while it serves.
    const sandbox = createQuickJSProcessSandbox({ maxConcurrency: 1, affinity: "episode" });
    const descriptors = () => readdirSync("/proc/self/fd").length;
    try {
      await sandbox.run("1", { queueKey: "first" });
      const before = descriptors();
      for (let i = 0; i < 20; i++) expect((await sandbox.run("1 + 1", { queueKey: `episode ${i}` })).result).toBe(2);
      expect(sandbox.started).toBeGreaterThanOrEqual(21);
      // The hosts alive now hold theirs (stdio, /proc files); the 20 stopped hold none.
      await new Promise((r) => setTimeout(r, 1500));
      expect(descriptors() - before).toBeLessThan(10);
    } finally {
      await sandbox.dispose();
    }
  }, 120_000);
});
