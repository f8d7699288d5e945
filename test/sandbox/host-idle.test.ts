/**
 * What an escaped host can do between runs (issue 29, finding 1): a guest that took over its host
 * process (test/fixtures/confine/escape-host.ts: a run's code runs as host-side JavaScript) can keep
 * running after its run was answered. Idle hosts used to be measured for memory only: three such
 * hosts burned ~10 CPU-s each in 30 s and were never stopped, and a host's stderr was read and
 * decoded for its whole life at any rate. Now an idle host that uses more CPU than housekeeping
 * does (host-pool.ts IdleCpuPolicy), or writes to its stderr faster than a host's own last words
 * need (host-handles.ts), is stopped. The bounds here are on CPU time and bytes, not wall time.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import mathTools from "../../envs/math-tools/index.ts";
import reverseText from "../../envs/reverse-text/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { describeConfinement } from "../../src/wall/confine.ts";
import { DEFAULT_IDLE_CPU, watchHostReplacements, type HostPoolSandbox, type HostReplacement } from "../../src/sandbox/host/host-pool.ts";
import { STDERR_BURST_BYTES } from "../../src/sandbox/host/host-handles.ts";
import { ISOLATED_VM_PROFILE } from "../../src/sandbox/engines/isolated-vm/isolated-vm-process.ts";
import { escapePool } from "../fixtures/confine/escape-pool.ts";
import { processesBelow } from "../helpers/processes.ts";
import { expectServed, rssKiB, underAttack, type LiveServer } from "../helpers/hostile.ts";
import { post } from "../helpers/http.ts";

const HAS_BWRAP = describeConfinement().bwrap;
/** What an escaped host calls itself once it has answered its run (its /proc comm): so the test finds it. */
const TITLE = "escaped-idle";

/** Host-side code: answers its run (with an id of its process), then keeps `work` going while idle. */
const idleThen = (work: string) => `
export default () => {
  globalThis.id ??= Math.random();
  process.title = "${TITLE}";
  setTimeout(function again() { ${work}; setImmediate(again); }, 50);
  return globalThis.id;
};`;
/** 50 ms of CPU at a time, for ever. */
const SPIN = idleThen("const end = Date.now() + 50; while (Date.now() < end) {}");
/** 64 KiB to stderr at a time, for ever. */
const FLOOD = idleThen(`process.stderr.write(Buffer.alloc(65536, 120))`);
const ID = `export default () => globalThis.id ?? null;`;

/** Live processes below this one that an escaped guest named TITLE. */
function escapedHosts(): number[] {
  return [...processesBelow().keys()].filter((pid) => readProc(pid, "comm").trim() === TITLE);
}

function readProc(pid: number, file: string): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return ""; // gone
  }
}

/** CPU time of one process (every thread), ms; undefined once it is gone (or a zombie). */
function cpuMs(pid: number): number | undefined {
  const stat = readProc(pid, "stat");
  if (!stat) return undefined;
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  if (fields[0] === "Z") return undefined;
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Bytes a process has written so far (every write, to pipes included); undefined once it is gone. */
function written(pid: number): number | undefined {
  const io = readProc(pid, "io");
  const m = /^wchar:\s+(\d+)/m.exec(io);
  return m && cpuMs(pid) !== undefined ? Number(m[1]) : undefined;
}

/**
 * Follows `pid` (read every 100 ms) until it is gone, and fails as soon as `measure` grows past
 * `bound` from `from` (default: its first reading): a host never stopped fails on the bound, not
 * on a timeout. Resolves with its growth.
 */
async function stoppedWithin(pid: number, measure: (pid: number) => number | undefined, bound: number, what: string, from?: number): Promise<number> {
  const first = measure(pid);
  expect(first, `${what}: the host is running`).toBeDefined();
  const base = from ?? first!;
  let last = first!;
  for (;;) {
    const now = measure(pid);
    if (now === undefined) return last - base;
    last = now;
    expect(last - base, `${what} while idle, host still running`).toBeLessThan(bound);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("an idle host that keeps running after its run is stopped", () => {
  let pool: HostPoolSandbox | undefined;
  afterEach(async () => {
    await pool?.dispose();
    pool = undefined;
  });

  it("a host spinning while it has no run: stopped after about its allowance of CPU, the next run in a fresh process; the replacement is told with its reason", async () => {
    pool = escapePool(ISOLATED_VM_PROFILE, { bwrap: HAS_BWRAP, maxConcurrency: 1, memory: {} });
    const replacements: HostReplacement[] = [];
    const unwatch = watchHostReplacements((r) => replacements.push(r));
    const first = await pool.run(SPIN, { timeoutMs: 10_000 });
    expect(first.ok, JSON.stringify(first)).toBe(true);
    const [pid] = escapedHosts();
    expect(pid).toBeDefined();
    // Its allowance (500 ms at once) and one idle check's worth more (~0.5 s); the old code never stopped it.
    const burned = await stoppedWithin(pid!, cpuMs, DEFAULT_IDLE_CPU.burstMs + 2500, "CPU ms");
    console.log(`[host-idle] spinning host stopped after ${burned} ms of CPU while idle`);
    const next = await pool.run(ID);
    expect(next.ok).toBe(true);
    expect(next.result).not.toBe(first.result);
    unwatch();
    // What the server logs (src/node/server.ts): which host, and why.
    expect(replacements).toEqual([{ label: expect.any(String), why: expect.stringMatching(/^it used \d+ ms of CPU while it had no run$/) }]);
    expect(pool.replaced).toBe(1);
  }, 120_000);

  it("an idle host that used only housekeeping CPU is kept", async () => {
    pool = escapePool(ISOLATED_VM_PROFILE, { bwrap: HAS_BWRAP, maxConcurrency: 1, memory: {} });
    const first = await pool.run(`export default () => (globalThis.id ??= Math.random())`);
    // Idle checks come every ~0.5 s: a few of them.
    await new Promise((r) => setTimeout(r, 2000));
    expect((await pool.run(ID)).result).toBe(first.result);
    expect(pool.replaced).toBe(0);
  }, 60_000);

  it("a host flooding its stderr while idle: stopped after about its allowance of bytes, the next run in a fresh process", async () => {
    pool = escapePool(ISOLATED_VM_PROFILE, { bwrap: HAS_BWRAP, maxConcurrency: 1, memory: {} });
    const first = await pool.run(FLOOD, { timeoutMs: 10_000 });
    expect(first.ok, JSON.stringify(first)).toBe(true);
    const [pid] = escapedHosts();
    expect(pid).toBeDefined();
    // The server reads at most its allowance, and what the pipe holds on the way (64 KiB a read).
    const bytes = await stoppedWithin(pid!, written, 8 * STDERR_BURST_BYTES, "bytes written", 0);
    console.log(`[host-idle] flooding host stopped after writing ${bytes} bytes in all`);
    const next = await pool.run(ID);
    expect(next.result).not.toBe(first.result);
  }, 120_000);
});

describe("through the server's own wiring: escaped hosts of three clients spin, another client is served", () => {
  let server: RunningServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("three clients' hosts spinning while idle are stopped; a fourth client's episodes are served meanwhile", async () => {
    const tokens = ["a", "b", "c", "probe"].map((t) => `token-${t}`);
    server = await startServer(
      [mathTools, reverseText],
      { port: 0, token: tokens.join(","), sandboxConcurrency: 2 },
      { makeSandbox: (o) => escapePool(ISOLATED_VM_PROFILE, { bwrap: HAS_BWRAP, maxConcurrency: o.maxConcurrency, memory: {}, ...(o.affinity ? { affinity: o.affinity } : {}) }) },
    );
    const url = server.url;
    const live: LiveServer = {
      url,
      pid: process.pid,
      headers: { authorization: `Bearer ${tokens[3]}` },
      alive: () => true,
      rssKiB: () => rssKiB(process.pid),
      stderr: () => "",
      stop: async () => "",
    };
    const spinAs = async (token: string) => {
      const headers = { authorization: `Bearer ${token}` };
      const reset = await post(`${url}/envs/math-tools/reset`, { seed: 1 }, headers);
      expect(reset.status).toBe(200);
      const call = { id: "t", type: "function", function: { name: "javascript", arguments: JSON.stringify({ code: SPIN }) } };
      const step = await post(`${url}/envs/math-tools/step`, { episode_id: reset.body.episode_id, action: { content: null, tool_calls: [call] } }, headers);
      expect(step.status).toBe(200);
    };
    const outcome = await underAttack(live, async () => {
      // One after another: each client's host is its own (client affinity, the default), 3 of at most 3.
      const seen = new Set<number>();
      const followed: Promise<number>[] = [];
      for (const token of tokens.slice(0, 3)) {
        await spinAs(token);
        for (const pid of escapedHosts().filter((p) => !seen.has(p))) {
          seen.add(pid);
          followed.push(stoppedWithin(pid, cpuMs, DEFAULT_IDLE_CPU.burstMs + 2500, "CPU ms"));
        }
      }
      expect(seen.size).toBe(3);
      return Promise.all(followed);
    });
    console.log(`[host-idle] three spinning hosts stopped after ${outcome.result.join(", ")} ms of CPU each while idle`);
    expectServed("three clients' escaped hosts spinning while idle", outcome);
  }, 180_000);
});
