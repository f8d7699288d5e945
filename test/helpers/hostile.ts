/**
 * A harness for hostile-input tests against a REAL server: `envworker serve` in a child process
 * (the code path of `npm start`), attacked over HTTP while a probe keeps playing ordinary
 * episodes and records how long each one takes. An attack passes when every probe was served
 * within the deadline, enough probes ran, and the server process is still alive; memory-related
 * attacks also bound the server's RSS growth.
 *
 * Use: `const server = await startLiveServer({ ENVWORKER_TOKEN: "t" })`, then
 * `const outcome = await underAttack(server, async () => { ...send the attack... })`, then
 * `expectServed(outcome)`; `await server.stop()` in afterAll.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { expect } from "vitest";
import { reverseTextGold } from "./oracles.ts";
import { cpuSlowdown, loadDuring, median } from "./slowdown.ts";
import { delayProbe } from "../../src/sched/run-delay.ts";
import { SERVER_NODE_FLAGS } from "./serve-process.ts";

const ROOT = resolve(import.meta.dirname, "../..");

export interface LiveServer {
  /** Origin, e.g. http://127.0.0.1:41234 */
  url: string;
  /** The server process itself (not a wrapper). */
  pid: number;
  /** Headers every request needs (the bearer token, when the server has one). */
  headers: Record<string, string>;
  /** True while the process exists (signal 0). */
  alive(): boolean;
  /** Resident memory of the server process, in KiB (VmRSS). */
  rssKiB(): number;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /**
   * SIGTERM, then SIGKILL if it has not exited after a grace period. Resolves with how it ended:
   * "SIGTERM" (or an exit code) when it stopped by itself, "SIGKILL" when it had to be killed.
   */
  stop(): Promise<string>;
}

/**
 * Start `envworker serve --port 0` with these environment variables (ENVWORKER_* settings) and
 * wait for the URL it prints. Node gets the flags bin/envworker.js needs directly
 * (SERVER_NODE_FLAGS), so it does not re-execute itself and the child's pid is the server's:
 * checked, since a shim's pid would make every RSS and liveness check here measure the shim.
 */
export async function startLiveServer(env: Record<string, string> = {}, serveArgs: string[] = []): Promise<LiveServer> {
  const child: ChildProcess = spawn(process.execPath, [...SERVER_NODE_FLAGS, "bin/envworker.js", "serve", "--port", "0", ...serveArgs], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((res) => child.once("exit", () => res()));
  const url = await new Promise<string>((res, rej) => {
    const onData = (d: Buffer) => {
      stdout += d.toString();
      const m = /serving \d+ environment\(s\) on (http:\/\/\S+)/.exec(stdout);
      if (m) {
        child.stdout!.off("data", onData);
        child.stdout!.resume(); // keep draining: a full pipe would block the server's console.log
        res(m[1]!);
      }
    };
    child.stdout!.on("data", onData);
    child.once("exit", (code, signal) => rej(new Error(`envworker serve exited (${code ?? signal}) before listening:\n${stdout}\n${stderr}`)));
  });
  const pid = child.pid!;
  // The shim marks the server it starts with ENVWORKER_SHIM_PARENT (its command line would not do:
  // a child the server is forking shows the server's own command line until it execs).
  const shimmed = childPids(pid).filter((c) => readProc(c, "environ").split("\0").includes("ENVWORKER_SHIM_PARENT=1"));
  if (shimmed.length > 0) {
    child.kill("SIGTERM");
    throw new Error(`bin/envworker.js re-executed itself (server pid ${shimmed.join(", ")}, not ${pid}): SERVER_NODE_FLAGS lacks a flag it adds`);
  }
  return {
    url,
    pid,
    headers: env.ENVWORKER_TOKEN ? { authorization: `Bearer ${env.ENVWORKER_TOKEN}` } : {},
    alive() {
      try {
        process.kill(pid, 0);
        return child.exitCode === null && child.signalCode === null;
      } catch {
        return false;
      }
    },
    rssKiB: () => rssKiB(pid),
    stderr: () => stderr,
    async stop() {
      const ended = () => String(child.signalCode ?? child.exitCode);
      if (child.exitCode !== null || child.signalCode !== null) return ended();
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
      return ended();
    },
  };
}

/** A file of /proc/PID, or "" when the process is gone. */
function readProc(pid: string, file: string): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return ""; // gone meanwhile
  }
}

/** The pids whose parent is `pid` (from /proc). */
export function childPids(pid: number): string[] {
  return readdirSync("/proc").filter((d) => /^\d+$/.test(d) && readProc(d, "stat").split(") ")[1]?.split(" ")[1] === String(pid));
}

/** VmRSS of a process in KiB, from /proc (Linux). */
export function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]);
}

/** One probe: an ordinary reverse-text episode (reset, then the gold answer). */
export interface ProbeRecord {
  /** Milliseconds from the reset request to the step's answer. */
  ms: number;
  /**
   * Of those, how long the server's main thread waited for a CPU (its run delay, src/sched/run-delay.ts):
   * the machine's load, not the server's doing. Set by underAttack.
   */
  serverWaitMs?: number;
  /** Why the probe was not served correctly (undefined: reward 1 as expected). */
  error?: string;
}

/** Play one reverse-text episode with the gold answer; never throws. */
export async function probeOnce(server: Pick<LiveServer, "url" | "headers">): Promise<ProbeRecord> {
  const base = `${server.url}/envs/reverse-text`;
  const headers = { "content-type": "application/json", ...server.headers };
  const start = performance.now();
  try {
    const reset = await fetch(`${base}/reset`, { method: "POST", headers, body: "{}" });
    const r = (await reset.json()) as { episode_id: string; observation: { messages: { role: string; content: string }[] } };
    if (reset.status !== 200) return { ms: performance.now() - start, error: `reset: ${reset.status} ${JSON.stringify(r)}` };
    const step = await fetch(`${base}/step`, {
      method: "POST",
      headers,
      body: JSON.stringify({ episode_id: r.episode_id, action: { content: reverseTextGold(r.observation.messages) } }),
    });
    const s = (await step.json()) as { reward: number };
    const ms = performance.now() - start;
    if (step.status !== 200 || s.reward !== 1) return { ms, error: `step: ${step.status} ${JSON.stringify(s).slice(0, 200)}` };
    // Closed, as a trainer's client does: the probe is one client, with its share of the episodes.
    const close = await fetch(`${base}/close`, { method: "POST", headers, body: JSON.stringify({ episode_id: r.episode_id }) });
    if (close.status !== 200) return { ms, error: `close: ${close.status} ${(await close.text()).slice(0, 200)}` };
    await close.body?.cancel();
    return { ms };
  } catch (err) {
    return { ms: performance.now() - start, error: `probe failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}

export interface AttackOptions {
  /** Probes that must complete after the attack started (default 3). */
  minProbes?: number;
  /**
   * Run before probing starts: ordinary use of what the attack targets, so one-time costs (an
   * environment's first use loads its data, e.g. a 63,000-word dictionary) are not counted
   * against the attack.
   */
  warmUp?: () => Promise<unknown>;
}

export interface AttackOutcome<T> {
  /** What the attack function returned (its responses, for the caller's own assertions). */
  result: T;
  /** Every probe that ran while the attack was under way (and until `minProbes` were done). */
  probes: ProbeRecord[];
  rssBeforeKiB: number;
  rssAfterKiB: number;
  /** The server process exists after the attack. */
  alive: boolean;
  /** How loaded the machine was around the attack (cpuSlowdown: 1 when idle): before, or the median of what was read during and after (at most twice before), whichever is more. */
  slowdown: number;
}

/**
 * Run `attack` while probes play episodes back to back. Probing starts (and one probe completes)
 * before the attack, and goes on after it until at least `minProbes` probes have completed since
 * the attack started; the probe in flight when the attack ends is waited for, so a server that
 * stalled is seen as a slow probe rather than missed.
 */
export async function underAttack<T>(server: LiveServer, attack: () => Promise<T>, opts: AttackOptions = {}): Promise<AttackOutcome<T>> {
  const minProbes = opts.minProbes ?? 3;
  await opts.warmUp?.();
  const warm = await probeOnce(server);
  if (warm.error) throw new Error(`the server is not serving before the attack: ${warm.error}`);
  const rssBeforeKiB = server.rssKiB();
  const slowdownBefore = cpuSlowdown();
  const probes: ProbeRecord[] = [];
  let attackDone = false;
  // The server's main thread (where the probes' requests are served): its waits for a CPU.
  const serverWait = delayProbe(`/proc/${server.pid}/schedstat`);
  const probing = (async () => {
    while (!attackDone || probes.length < minProbes) {
      const waited0 = serverWait();
      const probe = await probeOnce(server);
      probes.push({ ...probe, serverWaitMs: serverWait() - waited0 });
      if (!server.alive()) break;
    }
  })();
  // The load is read while the attack runs too, every second: the machine's other work (a second
  // copy of the suite) comes and goes, and two reads, before and after, missed its peak (a probe of
  // 3.5 s at load factor 2.27). Their median, so one read in a burst does not set it.
  const loadReads = loadDuring({ afterMs: 1000, everyMs: 1000 });
  let result: T;
  let during: number[];
  try {
    result = await attack();
  } finally {
    attackDone = true;
    await probing;
    serverWait.close();
    during = loadReads.stop();
  }
  const alive = server.alive();
  const rssAfterKiB = alive ? server.rssKiB() : 0;
  // The machine's other work may have grown meanwhile, but the attack's own load (sandbox
  // processes spinning until their watchdog) must not excuse a slow probe: what is read during and
  // after counts for at most twice what was read before.
  const slowdown = Math.max(slowdownBefore, Math.min(median([...during, cpuSlowdown()]), 2 * slowdownBefore));
  return { result, probes, rssBeforeKiB, rssAfterKiB, alive, slowdown };
}

/** The service goal: every probe served within this many milliseconds (of an idle machine: see expectServed). */
export const PROBE_DEADLINE_MS = 1000;

/**
 * The attack did not take the server down or stall it: alive, at least `minProbes` probes ran,
 * each served correctly within PROBE_DEADLINE_MS, scaled by how loaded the machine was around the
 * attack (outcome.slowdown: exactly PROBE_DEADLINE_MS on an idle machine, twice it at load 4 on
 * 2 cores, where a probe under a CPU-heavy attack waits for a core as often as it gets one); with `maxRssGrowthMiB`, the server's resident
 * memory grew by less than that. Prints the figures (for the report).
 */
export function expectServed(
  label: string,
  outcome: AttackOutcome<unknown>,
  /**
   * `deadlineMs`: a wider bound for an attack that is mostly raw traffic through the loop (say why
   * where it is used). `ownWaits`: the attack makes the server's own threads busy (environment
   * threads, sandbox hosts), so its main thread's waits for a CPU are the server's doing and count.
   */
  opts: { minProbes?: number; maxRssGrowthMiB?: number; deadlineMs?: number; ownWaits?: boolean } = {},
): void {
  const deadline = Math.round((opts.deadlineMs ?? PROBE_DEADLINE_MS) * outcome.slowdown);
  // A probe's time without its server's waits for a CPU: on a machine whose load rose during the
  // attack (other test files, the trainers' torch beside them) those waits are not the server's
  // doing, and the load factor, read before and after, does not see them (seen: a probe of 4.5 s
  // at load factor 1.73). A server that blocks its own loop is running, not waiting: that counts.
  const served = (p: ProbeRecord) => p.ms - (opts.ownWaits ? 0 : (p.serverWaitMs ?? 0));
  const ms = outcome.probes.map((p) => p.ms);
  const growthMiB = (outcome.rssAfterKiB - outcome.rssBeforeKiB) / 1024;
  console.log(
    `[hostile] ${label}: ${outcome.probes.length} probes, slowest ${Math.max(...ms).toFixed(0)} ms ` +
      `(${Math.max(...outcome.probes.map(served)).toFixed(0)} ms without the server's waits for a CPU), ` +
      `RSS ${(outcome.rssBeforeKiB / 1024).toFixed(0)} → ${(outcome.rssAfterKiB / 1024).toFixed(0)} MiB, ` +
      `deadline ${deadline} ms (load factor ${outcome.slowdown.toFixed(2)})`,
  );
  expect(outcome.alive, `${label}: the server process is gone`).toBe(true);
  expect(outcome.probes.length, `${label}: probes that ran`).toBeGreaterThanOrEqual(opts.minProbes ?? 3);
  expect(outcome.probes.filter((p) => p.error).map((p) => p.error), `${label}: probes not served`).toEqual([]);
  const slow = outcome.probes.filter((p) => served(p) >= deadline).map((p) => `${Math.round(p.ms)} ms (${Math.round(p.serverWaitMs ?? 0)} ms waiting for a CPU)`);
  expect(slow, `${label}: probes slower than ${deadline} ms`).toEqual([]);
  if (opts.maxRssGrowthMiB !== undefined) expect(growthMiB, `${label}: RSS growth (MiB)`).toBeLessThan(opts.maxRssGrowthMiB);
}
