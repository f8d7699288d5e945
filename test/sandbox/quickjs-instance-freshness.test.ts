/**
 * "Nothing a run does is seen by a later run", at the new boundary (issue 42): QuickJS on Node makes
 * every run a fresh wasm instance of the warm engine's snapshot (src/sandbox/engines/quickjs/quickjs-instances.ts,
 * zygote/quickjs/qjs_instances.py), in a host process that serves one client. The fork zygote's
 * escape tests (quickjs-zygote-escape.test.ts) become instance tests here:
 *
 * - run N plants markers everywhere a guest can write (its heap, globals and prototypes, the
 *   engine's atoms, shapes and symbol registry, the compiled-function and regexp caches, the
 *   interrupt bit, the memory's size, Math.random's state) and run N+1, same client (same host
 *   process) or another client (another host), sees none of them: a test-only scan of the fresh
 *   instance's whole linear memory, before the run, finds no byte of the marker (and the same scan
 *   at the end of run N does: the control);
 * - a test-only hook that overwrites the whole of run N's instance memory (what a guest that took
 *   QuickJS over could do to it at worst) leaves run N+1 correct, on the same host;
 * - the process bound: a host never serves a second client (even with affinity "off"), is replaced
 *   after recycleAfterRuns runs or maxAgeS seconds, grading runs never enter a host where a
 *   candidate's code ran, and a guest that escaped into the host's Python finds it hardened.
 *
 * The hooks exist only with `--test-hooks` in the host's argv (quickjsInstanceProfile's `extra`),
 * which nothing in src/ passes.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createQuickJSInstanceSandbox, quickjsInstanceProfile, type QuickJSInstanceSandbox } from "../../src/sandbox/engines/quickjs/quickjs-instances.ts";
import type { RunResult } from "../../src/sandbox/types.ts";

const HOOKS = quickjsInstanceProfile(600, ["--test-hooks"]);

interface Scan {
  before: number;
  after: number;
  size: number;
  host: string;
}

function scanOf(r: RunResult): Scan {
  const m = /\[scan before=(\d) after=(\d) size=(\d+) host=([0-9a-f]+)\]/.exec(r.stderr);
  expect(m, JSON.stringify(r).slice(0, 500)).not.toBeNull();
  return { before: Number(m![1]), after: Number(m![2]), size: Number(m![3]), host: m![4]! };
}

const token = () => "M" + randomBytes(12).toString("hex");

/** Run N's code: the marker in every place a guest can write. */
function plant(marker: string): string {
  return `/*scan:${marker}*/
globalThis.${marker} = "${marker}-global";
Object.prototype.polluted = "${marker}"; JSON.stringify = () => "${marker}";
String.prototype.trim = function () { return "${marker}"; };
const heap = []; for (let i = 0; i < 200; i++) heap.push("${marker}-heap-" + i + "x".repeat(100));
const atoms = {}; for (let i = 0; i < 50; i++) atoms["${marker}_atom_" + i] = i;           // atoms and shapes
Symbol.for("${marker}-registry");                                                         // the symbol registry
new Function("return '${marker}-fn'")(); eval("'${marker}-eval'");                        // compiled code
new RegExp("${marker}-re+").test("${marker}-reee");                                       // regexp bytecode
class K_${marker} { ${marker}_field = 1 } new K_${marker}();
for (let i = 0; i < 20; i++) Math.random();
Array.prototype.push = null;
heap.length`;
}

/** Run N+1's checks: a fresh global scope, prototypes, builtins. */
const CHECK = `[typeof globalThis[Object.keys(globalThis).find((k) => k.startsWith("M")) ?? "none"], ({}).polluted ?? null, typeof [].push, JSON.stringify({a: 1}), " x ".trim(), Object.getOwnPropertyNames(globalThis).length]`;

describe("QuickJS instances: freshness at the instance", () => {
  let sandbox: QuickJSInstanceSandbox;
  let globalsCount: number;
  beforeAll(async () => {
    sandbox = createQuickJSInstanceSandbox({ maxConcurrency: 2, profile: HOOKS });
    await sandbox.warm(2);
    const r = await sandbox.run("Object.getOwnPropertyNames(globalThis).length", { client: "probe" });
    globalsCount = r.result as number;
  });
  afterAll(() => sandbox?.dispose());

  it("run N's markers (heap, globals, atoms, shapes, caches) are in its instance and in no later one, same client or another", async () => {
    const marker = token();
    const n = await sandbox.run(plant(marker), { client: "a" });
    expect(n).toMatchObject({ ok: true, result: 200 });
    const planted = scanOf(n);
    // The control: the scan finds the marker in run N's own memory at its end, not before it.
    expect(planted).toMatchObject({ before: 0, after: 1 });

    const same = await sandbox.run(`/*scan:${marker}*/ ${CHECK}`, { client: "a" });
    expect(same).toMatchObject({ ok: true, result: ["undefined", null, "function", '{"a":1}', "x", globalsCount] });
    const sameScan = scanOf(same);
    expect(sameScan.host, "the same client's run is served by the same host process").toBe(planted.host);
    expect(sameScan.before, "the fresh instance of run N+1 holds no byte of run N's marker").toBe(0);

    const other = await sandbox.run(`/*scan:${marker}*/ ${CHECK}`, { client: "b" });
    expect(other).toMatchObject({ ok: true, result: ["undefined", null, "function", '{"a":1}', "x", globalsCount] });
    const otherScan = scanOf(other);
    expect(otherScan.host, "another client never enters a host that served this one").not.toBe(planted.host);
    expect(otherScan.before).toBe(0);
  });

  it("host-side state is the snapshot's in every run: memory size, interrupt bit, limits, Math.random", async () => {
    const marker = token();
    // Run N grows its memory by ~40 MiB (under the pool's bound on what a host may keep: it would be
    // replaced) and ends at its time limit with the interrupt bit set.
    const grown = await sandbox.run(`/*scan:${marker}*/ const a = []; for (let i = 0; i < 40; i++) a.push(new Uint8Array(1 << 20).fill(1)); for (;;) {}`, { client: "c", memoryMb: 128, timeoutMs: 300 });
    expect(grown).toMatchObject({ ok: false, error: { name: "TimeoutError" } });
    const big = scanOf(grown);
    const next = await sandbox.run(`/*scan:${marker}*/ 1 + 1`, { client: "c", memoryMb: 16 });
    expect(next).toMatchObject({ ok: true, result: 2 });
    const fresh = scanOf(next);
    expect(fresh.host).toBe(big.host);
    expect(fresh.size, "the next instance starts at the snapshot's size").toBeLessThan(big.size - 30 * 1024 * 1024);
    // The next run's own limit holds (not the former run's 128 MiB).
    const capped = await sandbox.run("const b = []; for (let i = 0; i < 40; i++) b.push(new Uint8Array(1 << 20).fill(1)); b.length", { client: "c", memoryMb: 16 });
    expect(capped).toMatchObject({ ok: false, error: { name: "MemoryLimitError" } });
    // Every instance starts from identical bytes; Math.random is reseeded for each.
    const draws = [];
    for (let i = 0; i < 4; i++) draws.push((await sandbox.run("[Math.random(), Math.random()]", { client: "c" })).result);
    expect(new Set(draws.map((d) => JSON.stringify(d))).size).toBe(4);
  });

  it("a run that overwrites its whole engine memory (test-only hook) leaves the next run correct, on the same host", async () => {
    const marker = token();
    const before = sandbox.replaced;
    const broken = await sandbox.run(`/*scan:${marker}*/ // __envworker_corrupt__\n"${marker}"`, { client: "d" });
    expect(broken).toMatchObject({ ok: true, result: marker });
    const host = scanOf(broken).host;
    for (let i = 0; i < 3; i++) {
      const r = await sandbox.run(`/*scan:${marker}*/ ${CHECK}`, { client: "d" });
      expect(r).toMatchObject({ ok: true, result: ["undefined", null, "function", '{"a":1}', "x", globalsCount] });
      expect(scanOf(r)).toMatchObject({ host, before: 0 });
    }
    expect(await sandbox.run("interface P { x: number }\nconst p: P = { x: 41 };\np.x + 1", { client: "d", ts: true })).toMatchObject({ ok: true, result: 42 });
    expect(await sandbox.run("console.log('in'); for (;;) {}", { client: "d", timeoutMs: 200 })).toMatchObject({ ok: false, stdout: "in\n", error: { name: "TimeoutError" } });
    expect(await sandbox.run("[3, 1, 2].sort().join()", { client: "d" })).toMatchObject({ ok: true, result: "1,2,3" });
    expect(sandbox.replaced, "no host was replaced").toBe(before);
  });
});

describe("QuickJS instances: the process bound", () => {
  it("a host serves one client even with affinity off, and is replaced after recycleAfterRuns runs and after maxAgeS", async () => {
    const sandbox = createQuickJSInstanceSandbox({ maxConcurrency: 1, affinity: "off", recycleAfterRuns: 3, profile: HOOKS });
    try {
      const marker = token();
      const hosts: string[] = [];
      for (let i = 0; i < 4; i++) hosts.push(scanOf(await sandbox.run(`/*scan:${marker}*/ ${i}`, { client: "a" })).host);
      expect(hosts[0]).toBe(hosts[1]);
      expect(hosts[1]).toBe(hosts[2]);
      expect(hosts[3], "recycled after 3 runs").not.toBe(hosts[2]);
      const b = scanOf(await sandbox.run(`/*scan:${marker}*/ 0`, { client: "b" })).host;
      expect(hosts).not.toContain(b);
    } finally {
      await sandbox.dispose();
    }
    const aging = createQuickJSInstanceSandbox({ maxConcurrency: 1, profile: quickjsInstanceProfile(0, ["--test-hooks"]) });
    try {
      const marker = token();
      const first = scanOf(await aging.run(`/*scan:${marker}*/ 1`, { client: "a" })).host;
      const second = scanOf(await aging.run(`/*scan:${marker}*/ 2`, { client: "a" })).host;
      expect(second, "a host past maxAgeS asks to be replaced").not.toBe(first);
    } finally {
      await aging.dispose();
    }
    // The server's own bound on a host's age (the host's request above is only its word): the host
    // here would serve 600 s, the pool replaces it after maxAgeS.
    const serverAged = createQuickJSInstanceSandbox({ maxConcurrency: 1, maxAgeS: 0, profile: HOOKS });
    try {
      const marker = token();
      const first = scanOf(await serverAged.run(`/*scan:${marker}*/ 1`, { client: "a" })).host;
      const second = scanOf(await serverAged.run(`/*scan:${marker}*/ 2`, { client: "a" })).host;
      expect(second, "the pool replaces a host past maxAgeS").not.toBe(first);
    } finally {
      await serverAged.dispose();
    }
  });

  it("grading runs never enter a host where a candidate's code ran", async () => {
    const sandbox = createQuickJSInstanceSandbox({ maxConcurrency: 1, profile: HOOKS });
    try {
      const marker = token();
      const candidate = scanOf(await sandbox.run(`/*scan:${marker}*/ 1`, { client: "a" })).host;
      const grading = scanOf(await sandbox.run(`/*scan:${marker}*/ 2`, { client: "a", grading: true })).host;
      expect(grading).not.toBe(candidate);
      expect(scanOf(await sandbox.run(`/*scan:${marker}*/ 3`, { client: "a" })).host).toBe(candidate);
      expect(sandbox.grading).toBeDefined();
    } finally {
      await sandbox.dispose();
    }
  });

  it("a guest that escaped into the host's Python finds it hardened: no file, process, socket, signal or new limit", async () => {
    const sandbox = createQuickJSInstanceSandbox({ maxConcurrency: 1, profile: HOOKS });
    try {
      const r = await sandbox.run(
        String.raw`#escape
import ctypes, errno, os, resource, signal
libc = ctypes.CDLL(None, use_errno=True)
report = {}
def attempt(name, f):
    try:
        f()
        report[name] = "ok"
    except BaseException as e:
        report[name] = getattr(e, "errno", None) and errno.errorcode.get(e.errno) or type(e).__name__
def call(f, *args):
    r = f(*args)
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
attempt("open", lambda: os.open("/etc/passwd", os.O_RDONLY))
attempt("fork", os.fork)
attempt("socket", lambda: call(libc.socket, 2, 1, 0))
attempt("kill", lambda: os.kill(1, signal.SIGTERM))
attempt("rlimit", lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
attempt("pipe-fds", lambda: [os.pipe() for _ in range(64)])
`,
        { client: "a" },
      );
      expect(r.ok, JSON.stringify(r)).toBe(true);
      const report = r.result as Record<string, string>;
      for (const k of ["open", "fork", "socket", "kill", "rlimit", "pipe-fds"]) expect(report[k], `${k}: ${JSON.stringify(report)}`).not.toBe("ok");
      // The host goes on serving its client (the escape could forge that client's later runs: the
      // residual, bounded by the client and by recycling), and another client gets another host.
      expect(await sandbox.run("1 + 1", { client: "a" })).toMatchObject({ ok: true, result: 2 });
    } finally {
      await sandbox.dispose();
    }
  });
});
