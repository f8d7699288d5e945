/**
 * "A broken engine gains nothing", for a zygote backend (Python: test/sandbox/python-zygote-escape.test.ts;
 * QuickJS: test/sandbox/quickjs-zygote-escape.test.ts): a guest that broke out of its engine and of
 * WebAssembly into its child's host-side Python (a test-only zygote under test/fixtures/: the real
 * zygote, started through the real launcher and profile, where a run's code that starts with
 * "#escape\n" is such host-side Python) tries everything its process allows, scribbles over its own
 * memory, and then:
 *
 * - the next run of the same client, on the same zygote, is genuine, and so is every later one;
 * - the server's channel is not reachable from the child (no descriptor of it is open; a frame
 *   written to every descriptor reaches nobody);
 * - the zygote survives (same process, not replaced): it cannot be signalled, traced or read;
 * - garbage, a flood or a hang on its result pipe costs only its own run;
 * - the control: without the child's hardening (harden.py), the same escape kills its zygote.
 *
 * With and without bubblewrap: the measures inside the zygote hold alone. Each test file gives its
 * engine's profile, fixture and its own cases; the rest is here.
 */
import { readFileSync } from "node:fs";
import { basename, dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeConfinement, type ProgramProfile } from "../../src/wall/confine.ts";
import type { HostPoolSandbox } from "../../src/sandbox/host/host-pool.ts";
import type { ZygoteSandboxOptions } from "../../src/sandbox/host/zygote-pool.ts";
import { processesBelow } from "./processes.ts";

/** What an attempt of ATTACKS became. */
export type Attempts = Record<string, { ok: boolean; value?: unknown; code?: string }>;

export interface EscapeContext {
  sandbox: HostPoolSandbox;
  /** The zygote whose child escaped (its pid as this process sees it). */
  zygotePid: number;
  /** The escape fixture's zygotes below this process now. */
  zygotes(): number[];
}

export interface EscapeSpec {
  /** "Python", "QuickJS": names the describe blocks. */
  engine: string;
  /** The test-only zygote (test/fixtures/…): `FIXTURE ZYGOTE_DIR ARGS… [--unhardened]`. */
  fixture: string;
  /** The backend's real profile: its interpreter, binds and limits, and the zygote's arguments. */
  profile: ProgramProfile;
  create(options: ZygoteSandboxOptions): HostPoolSandbox;
  /** The magic that starts the zygote's result frame (garbage after it must be refused). */
  resultMagic: string;
  /** More checks of the escape's report["escaped"] (what only this fixture says of itself). */
  escaped?(facts: Record<string, unknown>): void;
  /** The next runs of the same client, after the escape: each checked genuine. */
  genuine(sandbox: HostPoolSandbox): Promise<void>;
  /** This engine's own cases, after the common ones, on the same zygote. */
  cases?: { name: string; timeoutMs?: number; run(ctx: EscapeContext): Promise<void> }[];
}

/**
 * Host-side Python in the escaped child: every attempt and what became of it. The fixture gives it
 * `request` (the run's), `memory` and `store` (its wasm memory), and `facts` (what it says of itself).
 */
export const ATTACKS = String.raw`#escape
import ctypes, errno, os, resource, signal, struct, json
report = {}
def attempt(name, f):
    try:
        report[name] = {"ok": True, "value": f()}
    except BaseException as e:
        report[name] = {"ok": False, "code": getattr(e, "errno", None) and errno.errorcode.get(e.errno) or type(e).__name__}
libc = ctypes.CDLL(None, use_errno=True)
def raw(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
zpid = os.getppid()
report["escaped"] = dict(facts, pid=os.getpid(), zygote=zpid, wasmMemory=memory.data_len(store))
# The descriptors this process holds: the server's channel (the zygote's 0 and 1) must not be one.
def open_fds():
    found = []
    for fd in range(1024):
        try:
            os.fstat(fd)
            found.append(fd)
        except OSError:
            pass
    return found
attempt("fds", open_fds)
# A forged reply for the next run, written to every descriptor but this run's own result pipe.
forged = json.dumps({"type": "result", "id": request["id"] + 1, "result": {"ok": True, "result": "forged", "stdout": "", "stderr": "", "elapsedMs": 1}, "bytes": 0}).encode()
frame = struct.pack(">I", len(forged)) + forged
def forge_everywhere():
    written = []
    for fd in range(1024):
        if fd == 1:
            continue
        try:
            os.write(fd, frame)
            written.append(fd)
        except OSError:
            pass
    return written
attempt("forgeFrames", forge_everywhere)
attempt("openZygoteStdout", lambda: os.open("/proc/%d/fd/1" % zpid, os.O_WRONLY))
attempt("openZygoteMem", lambda: os.open("/proc/%d/mem" % zpid, os.O_RDWR))
attempt("openPasswd", lambda: open("/etc/passwd").read()[:10])
attempt("killZygote", lambda: os.kill(zpid, signal.SIGKILL))
attempt("stopZygote", lambda: os.kill(zpid, signal.SIGSTOP))
attempt("probeZygote", lambda: os.kill(zpid, 0))
attempt("rawKill", lambda: raw(62 if os.uname().machine == "x86_64" else 129, zpid, 9))
attempt("rawTgkill", lambda: raw(234 if os.uname().machine == "x86_64" else 131, zpid, zpid, 9))
attempt("ptraceAttach", lambda: raw(101 if os.uname().machine == "x86_64" else 117, 16, zpid, 0, 0))
attempt("fork", lambda: os.fork())
attempt("socket", lambda: __import__("socket").socket().fileno())
attempt("raiseFileLimit", lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
attempt("dumpable", lambda: raw(157 if os.uname().machine == "x86_64" else 167, 4, 1, 0, 0))
attempt("mkdirTmp", lambda: os.mkdir("/tmp/planted"))
attempt("mkdirRoot", lambda: os.mkdir("/planted"))
# What it may still do: its own memory. The engine is in it, with the zygote's warm state as this
# child sees it (and, for QuickJS, the page of pending-signal bits it shares with the zygote):
# scribble over all of it.
def scribble():
    base = ctypes.addressof(memory.data_ptr(store).contents)
    ctypes.memset(base + 65536, 0x41, 4 << 20)
    return True
attempt("scribbleOwnMemory", scribble)
result = report
`;

/** The real profile with the escape's entry: the same interpreter, binds, limits and zygote code. */
export function escapeProfile(real: ProgramProfile, fixture: string, ...extra: string[]): ProgramProfile {
  return {
    ...real,
    name: `${real.name}-escape`,
    async command() {
      const command = await real.command();
      // The real arguments: -I -B ZYGOTE_FILE ARGS…; the fixture takes the zygote's folder, then the same ARGS.
      const [isolated, noBytecode, zygoteFile, ...args] = command.args;
      return { ...command, args: [isolated!, noBytecode!, fixture, dirname(zygoteFile!), ...args, ...extra], readable: [...command.readable, dirname(fixture)] };
    },
  };
}

/** Zygote processes of an escape fixture below this test process. */
export function fixtureZygotes(fixture: string): number[] {
  const file = basename(fixture);
  const below = processesBelow();
  return [...below].flatMap(([pid, parent]) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      // The zygote (run by python), not bubblewrap nor the zygote's children (whose parent is python).
      const parentArgv = readFileSync(`/proc/${parent}/cmdline`, "utf8").split("\0");
      return argv[0]!.includes("python") && argv.some((a) => a.endsWith(file)) && !parentArgv[0]!.includes("python") ? [pid] : [];
    } catch {
      return [];
    }
  });
}

export function describeZygoteEscape(spec: EscapeSpec): void {
  const hasBwrap = describeConfinement().bwrap;
  const zygotes = () => fixtureZygotes(spec.fixture);

  describe.each(hasBwrap ? [true, false] : [false])(`the ${spec.engine} zygote with an escaped guest (bubblewrap %s)`, (bwrap) => {
    let sandbox: HostPoolSandbox;
    let report: Attempts;
    let zygotePid = 0;

    beforeAll(async () => {
      // One zygote serves every run (no affinity: no spare zygote either), so each later run is
      // served by the very zygote whose child escaped.
      sandbox = spec.create({ maxConcurrency: 1, profile: escapeProfile(spec.profile, spec.fixture), confine: { bwrap, unconfined: !bwrap }, affinity: "off" });
      const first = await sandbox.run("1 + 1", { client: "a" });
      expect(first, JSON.stringify(first)).toMatchObject({ ok: true, result: 2 });
      zygotePid = zygotes()[0]!;
      const r = await sandbox.run(ATTACKS, { client: "a", timeoutMs: 20_000 });
      expect(r.ok, JSON.stringify(r).slice(0, 1000)).toBe(true);
      report = r.result as Attempts;
    }, 120_000);
    afterAll(() => sandbox?.dispose());

    it("ran as host-side Python in a forked child of the zygote, not in the zygote", () => {
      const escaped = report.escaped as unknown as { pid: number; zygote: number; wasmMemory: number };
      expect(escaped.pid).not.toBe(escaped.zygote);
      expect(escaped.wasmMemory).toBeGreaterThan(1 << 20);
      spec.escaped?.(report.escaped as unknown as Record<string, unknown>);
      expect(report.scribbleOwnMemory).toEqual({ ok: true, value: true });
    });

    it("holds no descriptor but its own result pipe: the server's channel is unreachable", () => {
      expect(report.fds).toEqual({ ok: true, value: [1] });
      expect(report.forgeFrames).toEqual({ ok: true, value: [] });
      for (const name of ["openZygoteStdout", "openZygoteMem", "openPasswd"]) expect(report[name], name).toMatchObject({ ok: false });
    });

    it("cannot signal, stop or trace its zygote, nor start a process, a socket or a new descriptor", () => {
      for (const name of ["killZygote", "stopZygote", "probeZygote", "rawKill", "rawTgkill", "ptraceAttach", "fork", "socket", "raiseFileLimit", "dumpable", "mkdirTmp", "mkdirRoot"]) {
        expect(report[name], name).toMatchObject({ ok: false });
      }
      expect(report.killZygote).toEqual({ ok: false, code: "EPERM" });
    });

    it("the zygote survives, and the next runs of the same client are genuine", async () => {
      await spec.genuine(sandbox);
      expect(sandbox.replaced).toBe(0);
      expect(sandbox.started).toBe(1);
      expect(zygotes()).toEqual([zygotePid]);
    });

    it("garbage or a flood on its result pipe, or hanging, costs only its own run", async () => {
      const flood = await sandbox.run("#escape\nimport os\nwhile True: os.write(1, b'x' * 65536)", { client: "a", timeoutMs: 5000, maxOutputBytes: 1000 });
      expect(flood).toMatchObject({ ok: false, error: { name: "SandboxError" } });
      const garbage = await sandbox.run(`#escape\nimport os\nos.write(1, b'${spec.resultMagic}' + b'\\xff' * 40)\nos._exit(0)`, { client: "a" });
      expect(garbage).toMatchObject({ ok: false, error: { name: "SandboxError" } });
      const hang = await sandbox.run("#escape\nimport time\nwhile True: time.sleep(1)", { client: "a", timeoutMs: 300 });
      expect(hang).toMatchObject({ ok: false, error: { name: "TimeoutError" } });
      expect(await sandbox.run("1 + 1", { client: "a" })).toMatchObject({ ok: true, result: 2 });
      expect(sandbox.replaced).toBe(0);
      expect(zygotes()).toEqual([zygotePid]);
    }, 60_000);

    for (const c of spec.cases ?? []) it(c.name, () => c.run({ sandbox, zygotePid, zygotes }), c.timeoutMs);
  });

  describe("the control: without the child's hardening (harden.py), the same escape kills its zygote", () => {
    it("an unhardened child signals its zygote to death: the zygote is replaced", async () => {
      const sandbox = spec.create({ maxConcurrency: 1, profile: escapeProfile(spec.profile, spec.fixture, "--unhardened"), affinity: "off" });
      try {
        expect(await sandbox.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
        const r = await sandbox.run("#escape\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time\ntime.sleep(5)", { timeoutMs: 10_000 });
        expect(r).toMatchObject({ ok: false, error: { name: "SandboxError" } });
        expect(sandbox.replaced).toBe(1);
        expect(await sandbox.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
      } finally {
        await sandbox.dispose();
      }
    }, 60_000);
  });
}
