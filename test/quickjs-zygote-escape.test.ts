/**
 * "A broken engine gains nothing", for the QuickJS sandbox on Node: a guest that broke out of
 * QuickJS and WebAssembly into its child's host-side Python (test/fixtures/quickjs-escape/
 * escape_qjs_zygote.py: the real zygote, started through the real launcher and profile, where a
 * run's code can be such host-side Python) tries everything its process allows, then scribbles over
 * its own memory (QuickJS, the warm guest context, and the page it shares with its zygote), and:
 *
 * - the next run of the same client, on the same zygote, is genuine (its result, its globals, its
 *   prototypes), and so is every later one;
 * - the server's channel is not reachable from the child (no descriptor of it is open; a frame
 *   written to every descriptor reaches nobody);
 * - the zygote survives (same process, not replaced): it cannot be signalled, traced or read.
 *
 * The hardening is the Python sandbox's (python-zygote/harden.py, test/python-zygote-escape.test.ts);
 * this is the QuickJS zygote's child path on top of it. With and without bubblewrap.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeConfinement, type ProgramProfile } from "../src/sandbox/confine.ts";
import { createQuickJSProcessSandbox, QUICKJS_PROFILE, type QuickJSProcessSandbox } from "../src/sandbox/quickjs-process.ts";
import { QUICKJS_ZYGOTE_DIR } from "../src/sandbox/quickjs-runtime.ts";

const FIXTURE = resolve(import.meta.dirname, "fixtures/quickjs-escape/escape_qjs_zygote.py");
const HAS_BWRAP = describeConfinement().bwrap;

/** The real profile with the escape's entry: the same interpreter, binds, limits and zygote code. */
const escapeProfile = (...extra: string[]): ProgramProfile => ({
  ...QUICKJS_PROFILE,
  name: "quickjs-escape",
  async command() {
    const real = await QUICKJS_PROFILE.command();
    const [cwasm, assets] = real.args.slice(-2);
    return { ...real, args: ["-I", "-B", FIXTURE, QUICKJS_ZYGOTE_DIR, cwasm!, assets!, ...extra], readable: [...real.readable, dirname(FIXTURE)] };
  },
});
const ESCAPE_PROFILE = escapeProfile();

/** Host-side Python in the escaped child (test/python-zygote-escape.test.ts's): every attempt and what became of it. */
const ATTACKS = String.raw`#escape
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
report["escaped"] = {"pid": os.getpid(), "zygote": zpid, "wasmMemory": engine.memory.data_len(engine.store)}
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
# What it may still do: its own memory. QuickJS is in it, with the zygote's warm state as this child
# sees it (the guest context, the prelude, sucrase), and the page of pending-signal bits it shares
# with the zygote: scribble over all of it.
def scribble():
    base = ctypes.addressof(engine.memory.data_ptr(engine.store).contents)
    ctypes.memset(base + 65536, 0x41, 4 << 20)
    return True
attempt("scribbleOwnMemory", scribble)
result = report
`;

describe.each(HAS_BWRAP ? [true, false] : [false])("the QuickJS zygote with an escaped guest (bubblewrap %s)", (bwrap) => {
  let quickjs: QuickJSProcessSandbox;
  let report: Record<string, { ok: boolean; value?: unknown; code?: string }>;
  let zygotePid = 0;

  beforeAll(async () => {
    // One zygote serves every run (no affinity), so each later run is served by the very zygote
    // whose child escaped.
    quickjs = createQuickJSProcessSandbox({ maxConcurrency: 1, profile: ESCAPE_PROFILE, confine: { bwrap, unconfined: !bwrap }, affinity: "off" });
    const first = await quickjs.run("1 + 1", { client: "a" });
    expect(first, JSON.stringify(first)).toMatchObject({ ok: true, result: 2 });
    zygotePid = zygotes()[0]!;
    const r = await quickjs.run(ATTACKS, { client: "a", timeoutMs: 20_000 });
    expect(r.ok, JSON.stringify(r).slice(0, 1000)).toBe(true);
    report = r.result as typeof report;
  }, 120_000);
  afterAll(() => quickjs?.dispose());

  it("ran as host-side Python in a forked child of the zygote, not in the zygote", () => {
    const escaped = report.escaped as unknown as { pid: number; zygote: number; wasmMemory: number };
    expect(escaped.pid).not.toBe(escaped.zygote);
    expect(escaped.wasmMemory).toBeGreaterThan(1 << 20);
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
    const next = await quickjs.run("[1 + 1, typeof std, typeof print, Object.getOwnPropertyNames(globalThis).includes('leak'), [3, 1, 2].sort().join(), JSON.stringify({ a: 1 })]", { client: "a" });
    expect(next).toMatchObject({ ok: true, result: [2, "undefined", "undefined", false, "1,2,3", '{"a":1}'] });
    expect(await quickjs.run("console.log('out'); 'genuine'", { client: "a" })).toMatchObject({ ok: true, result: "genuine", stdout: "out\n" });
    // The interrupt still works: the escaped child's scribbles on its shared page were its own.
    expect(await quickjs.run("console.log('in'); for (;;) {}", { client: "a", timeoutMs: 300 })).toMatchObject({ ok: false, stdout: "in\n", error: { name: "TimeoutError" } });
    expect(quickjs.replaced).toBe(0);
    expect(quickjs.started).toBe(1);
    expect(zygotes()).toEqual([zygotePid]);
  });

  it("garbage or a flood on its result pipe, or hanging, costs only its own run", async () => {
    const flood = await quickjs.run("#escape\nimport os\nwhile True: os.write(1, b'x' * 65536)", { client: "a", timeoutMs: 5000, maxOutputBytes: 1000 });
    expect(flood).toMatchObject({ ok: false, error: { name: "SandboxError" } });
    const garbage = await quickjs.run("#escape\nimport os\nos.write(1, b'EWQ1' + b'\\xff' * 40)\nos._exit(0)", { client: "a" });
    expect(garbage).toMatchObject({ ok: false, error: { name: "SandboxError" } });
    const hang = await quickjs.run("#escape\nimport time\nwhile True: time.sleep(1)", { client: "a", timeoutMs: 300 });
    expect(hang).toMatchObject({ ok: false, error: { name: "TimeoutError" } });
    expect(await quickjs.run("1 + 1", { client: "a" })).toMatchObject({ ok: true, result: 2 });
    expect(quickjs.replaced).toBe(0);
    expect(zygotes()).toEqual([zygotePid]);
  }, 60_000);
});

/** Zygote processes of the escape fixture below this test process. */
function zygotes(): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // Gone.
    }
  }
  const below = (pid: number): boolean => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) if (p === process.pid) return true;
    return false;
  };
  return [...parents.keys()].filter((pid) => {
    if (!below(pid)) return false;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      // The zygote (run by python), not bubblewrap nor the zygote's children (whose parent is python).
      const parentArgv = readFileSync(`/proc/${parents.get(pid)!}/cmdline`, "utf8").split("\0");
      return argv[0]!.includes("python") && argv.some((a) => a.endsWith("escape_qjs_zygote.py")) && !parentArgv[0]!.includes("python");
    } catch {
      return false;
    }
  });
}

describe("the control: without the child's hardening (harden.py), the same escape kills its zygote", () => {
  it("an unhardened child signals its zygote to death: the zygote is replaced", async () => {
    const quickjs = createQuickJSProcessSandbox({ maxConcurrency: 1, profile: escapeProfile("--unhardened"), affinity: "off" });
    try {
      expect(await quickjs.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
      const r = await quickjs.run("#escape\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time\ntime.sleep(5)", { timeoutMs: 10_000 });
      expect(r).toMatchObject({ ok: false, error: { name: "SandboxError" } });
      expect(quickjs.replaced).toBe(1);
      expect(await quickjs.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
    } finally {
      await quickjs.dispose();
    }
  }, 60_000);
});
