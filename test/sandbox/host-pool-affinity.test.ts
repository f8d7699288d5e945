/**
 * The host pool's affinity and its fairness, on hosts that are plain objects (no processes): which
 * host serves whom, when one is started and when one is stopped to make room (host-pool.ts).
 */
import { describe, expect, it } from "vitest";
import type { HostExit, HostHandle } from "../../src/sandbox/host/host-handles.ts";
import type { HostReply, HostRequest } from "../../src/sandbox/host/host-protocol.ts";
import { HostPoolSandbox, type HostAffinity } from "../../src/sandbox/host/host-pool.ts";
import { breaksPerRunRule, serverAffinity } from "../../src/sandbox/index.ts";

/** A host that answers a run after `code` ms with its own number as the result. */
function fakeHost(n: number, killed: number[]): HostHandle {
  let listener: ((m: HostReply) => void) | undefined;
  let onExit: ((e: HostExit) => void) | undefined;
  let dead = false;
  setTimeout(() => listener?.({ type: "ready", bytes: 1 }), 1);
  return {
    post(m: HostRequest) {
      if (m.type !== "run") return;
      setTimeout(() => {
        if (!dead) listener?.({ type: "result", id: m.id, result: { ok: true, result: n, stdout: "", stderr: "", elapsedMs: 1 }, bytes: 1 });
      }, Number(m.code));
    },
    onMessage: (l) => void (listener = l),
    onExit: (l) => void (onExit = l),
    kill() {
      if (dead) return;
      dead = true;
      killed.push(n);
      onExit?.({ why: "killed", outOfMemory: false });
    },
    keepAlive() {},
    setMaxReplyBytes() {},
    measure: () => undefined,
    started: new Promise(() => {}),
  };
}

function pool(affinity: HostAffinity, maxConcurrency: number) {
  const killed: number[] = [];
  let next = 0;
  const sandbox = new HostPoolSandbox({
    kind: "quickjs",
    label: "fake host",
    start: () => fakeHost(next++, killed),
    maxConcurrency,
    watchdogSlackMs: 5000,
    memory: {},
    cooperativeCancel: true,
    affinity,
  });
  return { sandbox, killed };
}

describe("host affinity", () => {
  it("client: a host serves one client only, whichever of the client's episodes runs", async () => {
    const { sandbox } = pool("client", 2);
    const servedBy = new Map<number, Set<string>>();
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const client = `c${i % 3}`;
        const r = await sandbox.run(String(1 + (i % 4)), { client, queueKey: `${client}/e${i % 5}` });
        const set = servedBy.get(r.result as number) ?? new Set();
        servedBy.set(r.result as number, set.add(client));
      }),
    );
    for (const clients of servedBy.values()) expect(clients.size).toBe(1);
    expect(sandbox.hosts).toBeLessThanOrEqual(3);
    await sandbox.dispose();
  });

  it("client: a client whose host is busy waits for it when the pool is full; a new client stops the idle host used least lately", async () => {
    const { sandbox, killed } = pool("client", 2);
    // A and B get a host each (the second from the spare); then A runs two at once and takes the new spare.
    expect((await sandbox.run("1", { client: "A" })).result).toBe(0);
    expect((await sandbox.run("1", { client: "B" })).result).toBe(1);
    const a = await Promise.all([sandbox.run("20", { client: "A" }), sandbox.run("20", { client: "A" })]);
    expect(a.map((r) => r.result).sort()).toEqual([0, 2]);
    expect(sandbox.started).toBe(3);
    // Full (3 hosts): B's second run at once waits for B's host rather than stopping one of A's.
    const b = await Promise.all([sandbox.run("20", { client: "B" }), sandbox.run("20", { client: "B" })]);
    expect(b.map((r) => r.result)).toEqual([1, 1]);
    expect(sandbox.started).toBe(3);
    expect(killed).toEqual([]);
    // A new client: the idle host used least lately (A's second, which served one run) is stopped for it.
    expect((await sandbox.run("1", { client: "C" })).result).toBe(3);
    expect(killed).toEqual([2]);
    expect(sandbox.hosts).toBe(3);
    await sandbox.dispose();
  });

  it("client: a stream of new clients (one run each) stops their own hosts, not a steady client's", async () => {
    // An attacker with many addresses is many clients, each asking for a host of its own. Stopping
    // the least recently used idle host for each would stop the steady client's host between two of
    // its runs whenever those are further apart than two of the attacker's: every run of the steady
    // client would then wait for a start-up (Python: seconds; measured ~2.5 s per run).
    const { sandbox, killed } = pool("client", 2);
    for (let i = 0; i < 5; i++) expect((await sandbox.run("1", { client: "steady" })).result).toBe(0);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 6; i++) await sandbox.run("1", { client: `newcomer-${round}-${i}` });
      // The steady client's host was idle longer than any newcomer's, and still serves it.
      expect((await sandbox.run("1", { client: "steady" })).result).toBe(0);
    }
    expect(killed).not.toContain(0);
    expect(killed.length).toBeGreaterThanOrEqual(15);
    await sandbox.dispose();
  });

  it("a run waiting for its client's busy host leaves when its caller gives up", async () => {
    const { sandbox } = pool("client", 2);
    await sandbox.run("1", { client: "A" });
    await sandbox.run("1", { client: "B" });
    await Promise.all([sandbox.run("1", { client: "A" }), sandbox.run("1", { client: "A" })]);
    const long = sandbox.run("300", { client: "B" });
    const gaveUp = new AbortController();
    const waiting = sandbox.run("1", { client: "B", signal: gaveUp.signal });
    setTimeout(() => gaveUp.abort(new Error("episode closed")), 20);
    const r = await waiting;
    expect(r.error?.name).toBe("CancelledError");
    expect((await long).result).toBe(1);
    await sandbox.dispose();
  });

  it("off: hosts serve anyone; episode: a host per queue key", async () => {
    const off = pool("off", 1).sandbox;
    const results = [];
    for (const client of ["A", "B", "C"]) results.push((await off.run("1", { client })).result);
    expect(results).toEqual([0, 0, 0]);
    await off.dispose();
    const episode = pool("episode", 2).sandbox;
    const e1 = (await episode.run("1", { client: "A", queueKey: "e1" })).result;
    const e2 = (await episode.run("1", { client: "A", queueKey: "e2" })).result;
    expect(e1).not.toBe(e2);
    expect((await episode.run("1", { client: "A", queueKey: "e1" })).result).toBe(e1);
    await episode.dispose();
  });

  it("run: every run in a host that served none before, killed after it; fresh spares (one per slot) started ahead", async () => {
    const { sandbox, killed } = pool("run", 2);
    await sandbox.warm(2);
    expect(sandbox.started).toBe(2);
    const results: number[] = [];
    for (let i = 0; i < 5; i++) results.push((await sandbox.run("1", { client: "A", queueKey: "e1" })).result as number);
    // Two at once, same client and episode: two more fresh hosts.
    const both = await Promise.all([sandbox.run("5", { client: "A", queueKey: "e1" }), sandbox.run("5", { client: "A", queueKey: "e1" })]);
    results.push(...both.map((r) => r.result as number));
    expect(new Set(results).size).toBe(7);
    await expect.poll(() => killed.length).toBe(7);
    expect(killed.sort((a, b) => a - b)).toEqual([...results].sort((a, b) => a - b));
    // A used host is never handed back: what is left are the spares, never more than one per slot.
    expect(sandbox.hosts).toBe(2);
    // Killing a host after its one run is the plan, not a replacement.
    expect(sandbox.replaced).toBe(0);
    await sandbox.dispose();
  });

  it("fairness is nested: a client's many episodes share one client's turns", async () => {
    const { sandbox } = pool("off", 1);
    const order: string[] = [];
    const runs: Promise<unknown>[] = [sandbox.run("30", { client: "X" })];
    for (let e = 0; e < 6; e++) runs.push(sandbox.run("2", { client: "A", queueKey: `a${e}`, onStart: () => order.push(`A`) }));
    for (let i = 0; i < 3; i++) runs.push(sandbox.run("2", { client: "B", queueKey: "b", onStart: () => order.push(`B`) }));
    await Promise.all(runs);
    // B's three runs are served in the first six turns, not after A's six episodes.
    expect(order.slice(0, 6)).toEqual(["A", "B", "A", "B", "A", "B"]);
    await sandbox.dispose();
  });
});

describe("the affinity a server gives each engine (serverAffinity)", () => {
  it("unset: isolated-vm a host per run, the zygotes a zygote per client; a chosen one is kept, but \"run\" never makes single-use zygotes", () => {
    expect(serverAffinity("isolated-vm", undefined)).toBe("run");
    expect(serverAffinity("quickjs", undefined)).toBe("client");
    expect(serverAffinity("python", undefined)).toBe("client");
    // The zygotes fork a fresh child per run whatever their affinity: "run" would only add a start-up per run.
    expect(serverAffinity("quickjs", "run")).toBe("client");
    expect(serverAffinity("python", "run")).toBe("client");
    for (const chosen of ["client", "episode", "off"] as const) {
      expect(serverAffinity("isolated-vm", chosen)).toBe(chosen);
      expect(serverAffinity("quickjs", chosen)).toBe(chosen);
      // Only reused isolated-vm hosts let a broken engine reach later runs: the server warns then.
      expect(breaksPerRunRule("isolated-vm", chosen)).toBe(true);
      expect(breaksPerRunRule("quickjs", chosen)).toBe(false);
    }
    expect(breaksPerRunRule("isolated-vm", undefined)).toBe(false);
    expect(breaksPerRunRule("isolated-vm", "run")).toBe(false);
  });
});
