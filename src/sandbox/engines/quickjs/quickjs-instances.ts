/**
 * QuickJS on Node, a fresh wasm instance per run (issue 42; the default of quickjs-process.ts): a
 * host is a confined Python process (zygote/quickjs/qjs_instances.py) holding the warm engine's
 * snapshot (zygote/quickjs/qjs_snapshot.py: QuickJS's runtime, the guest context with its prelude,
 * sucrase, warmed up, baked into a precompiled module), and every run is a new instance of it, made
 * copy-on-write from the image through wasmtime's pooling allocator and dropped after the run.
 *
 * Freshness holds at the instance: nothing a run does inside QuickJS reaches a later run, same
 * client or another. The process is the second bound, for a guest that broke wasmtime itself: a
 * host serves one client (affinity "client" unless the caller asked for a narrower one, never
 * "off"), is replaced after `recycleAfterRuns` runs (default 2,000) or `maxAgeS` seconds (default
 * 600), and never serves a grading run (`grading: true` goes to hosts of its own), so hidden tests
 * never enter a process where candidate code ran. The host hardens itself before its first run as
 * the fork zygote's children did (seccomp, no new process or thread or descriptor), inside the same
 * launcher's walls (bubblewrap, a uid of its own, the empty environment, rlimits).
 *
 * Limits: time on the run clock of the host's main thread (at timeoutMs QuickJS is interrupted and
 * the run ends as a TimeoutError with its output; a run that does not stop within 250 ms more ends
 * its host), memory by QuickJS's own count and wasmtime's store limit, stack as before; the pool's
 * watchdog, memory watch (the host's tree, by RSS: no forks), fair queues and cancellation as for
 * every host.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import type { ConfinementProfile, ProgramProfile } from "../../../wall/confine.ts";
import { processHost } from "../../host/host-handles.ts";
import { GradingPoolSandbox } from "../../host/grading-pool.ts";
import type { HostAffinity, HostPoolOptions } from "../../host/host-pool.ts";
import { cacheDir, HOW_TO_INSTALL, interpreter, preparedOnce } from "../python/python-runtime.ts";
import { QUICKJS_ZYGOTE_DIR, quickjsRuntime } from "./quickjs-runtime.ts";
import { WATCHDOG_SLACK_MS, type ZygoteSandboxOptions } from "../../host/zygote-pool.ts";

const MiB = 1024 * 1024;

export interface QuickJSInstanceSandboxOptions extends ZygoteSandboxOptions {
  /** A host asks to be replaced after its first answer past this many seconds of its life (default 600). */
  maxAgeS?: number;
  /** Max concurrent grading runs (`RunOptions.grading`; default 1). */
  gradingConcurrency?: number;
}

export interface QuickJSSnapshot {
  executable: string;
  snapshot: string;
  meta: string;
  readable: string[];
}

/** The snapshot, baked once per machine (cached beside the .cwasm; ~3-5 s when missing) and found once per process. */
export const quickjsSnapshot = preparedOnce(async (): Promise<QuickJSSnapshot> => {
  const runtime = await quickjsRuntime();
  const found = interpreter();
  const failure = HOW_TO_INSTALL.replace("the Python sandbox", "the QuickJS sandbox");
  if ("missing" in found) throw new Error(`${failure} (${found.missing})`);
  const script = join(QUICKJS_ZYGOTE_DIR, "qjs_snapshot.py");
  const out = await new Promise<string>((resolve, reject) => {
    execFile(found.executable, ["-I", "-B", script, "prepare", cacheDir(), runtime.assets], { env: {}, timeout: 300_000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`the QuickJS snapshot could not be made (${found.executable}: ${(stderr || err.message).trim().split("\n").slice(-1)[0]?.slice(0, 300)})`));
      else resolve(stdout);
    });
  });
  const info = JSON.parse(out) as { snapshot: string; meta: string };
  return { executable: runtime.executable, snapshot: info.snapshot, meta: info.meta, readable: [...runtime.readable, info.snapshot, info.meta] };
});

/** A host's command: qjs_instances.py on the snapshot. `extra`: arguments after it (tests: `--test-hooks`). */
export function quickjsInstanceProfile(maxAgeS = 600, extra: string[] = []): ProgramProfile {
  return {
    kind: "program",
    name: "quickjs",
    command: async () => {
      const s = await quickjsSnapshot();
      return { executable: s.executable, args: ["-I", "-B", join(QUICKJS_ZYGOTE_DIR, "qjs_instances.py"), s.snapshot, s.meta, String(maxAgeS), ...extra], readable: s.readable };
    },
    // wasmtime's pool reserves two memory slots of 4 GiB + guards, and Python's own.
    addressSpaceMb: 16 * 1024,
    stackMb: 64,
  };
}

export const QUICKJS_INSTANCE_PROFILE: ProgramProfile = quickjsInstanceProfile();

/** A host serves one client at most: "off" (anyone) becomes "client"; "episode" and "run" are narrower and stay. */
export function instanceAffinity(affinity: HostAffinity | undefined): HostAffinity {
  return affinity === undefined || affinity === "off" ? "client" : affinity;
}

function poolOptions(options: QuickJSInstanceSandboxOptions, label: string, maxConcurrency: number | undefined, profile: ConfinementProfile): HostPoolOptions {
  return {
    kind: "quickjs",
    label,
    start: () => processHost(options.profile ?? profile, options.confine),
    maxConcurrency,
    watchdogSlackMs: options.watchdogSlackMs ?? WATCHDOG_SLACK_MS,
    memory: {
      // The host's tree by RSS: a run's instance adds the pages it writes and its growth (at most
      // 1.5 x memoryMb + 8 MiB: the store limit); after the run the slot is reset by wasmtime.
      killAboveBytes: (limits) => 2 * limits.memoryMb * MiB + 96 * MiB,
      retireAboveBytes: () => 64 * MiB,
    },
    cooperativeCancel: true,
    // The process bound: a guest that broke wasmtime reaches at most this many later runs of its own client.
    recycleAfterRuns: options.recycleAfterRuns ?? 2_000,
    // And after maxAgeS, on the server's clock (the host also asks for it, but its word is not the bound).
    recycleAfterMs: (options.maxAgeS ?? 600) * 1000,
    affinity: instanceAffinity(options.affinity),
    // A host starts in ~0.1-0.3 s: a client's second concurrent run takes another slot rather than wait.
    startWhenBusy: true,
  };
}

/** The candidates' hosts (this pool), and grading hosts (`grading: true`) beside it, which never run a candidate's code. */
export class QuickJSInstanceSandbox extends GradingPoolSandbox {
  constructor(options: QuickJSInstanceSandboxOptions = {}) {
    const profile = options.maxAgeS === undefined ? QUICKJS_INSTANCE_PROFILE : quickjsInstanceProfile(options.maxAgeS);
    super(poolOptions(options, "QuickJS process", options.maxConcurrency, profile), () => poolOptions(options, "QuickJS grading process", options.gradingConcurrency ?? 1, profile));
  }
}

export function createQuickJSInstanceSandbox(options: QuickJSInstanceSandboxOptions = {}): QuickJSInstanceSandbox {
  return new QuickJSInstanceSandbox(options);
}
