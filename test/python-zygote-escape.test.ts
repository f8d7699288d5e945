/**
 * "A broken engine gains nothing", for the Python sandbox: a guest that broke out of WebAssembly
 * into its child's host-side Python (test/fixtures/python-escape/escape_zygote.py: the real zygote,
 * started through the real launcher and profile, where a run's code can be such host-side Python)
 * tries everything its process allows, and then:
 *
 * - the next run of the same client, on the same zygote, is genuine (its result, its builtins,
 *   modules and globals), and so is every later one;
 * - the server's channel is not reachable from the child (no descriptor of it is open; a frame
 *   written to every descriptor reaches nobody);
 * - the zygote survives (same process, not replaced): it cannot be signalled, traced or read.
 *
 * With and without bubblewrap: the measures inside the zygote (harden.py) hold alone.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeConfinement, type ProgramProfile } from "../src/sandbox/confine.ts";
import { createPythonSandbox, PYTHON_PROFILE, type PythonSandbox } from "../src/sandbox/python.ts";
import { ZYGOTE_DIR } from "../src/sandbox/python-runtime.ts";

const FIXTURE = resolve(import.meta.dirname, "fixtures/python-escape/escape_zygote.py");
const HAS_BWRAP = describeConfinement().bwrap;

/** The real profile with the escape's entry: the same interpreter, binds, limits and zygote code. */
const escapeProfile = (...extra: string[]): ProgramProfile => ({
  ...PYTHON_PROFILE,
  name: "python-escape",
  async command() {
    const real = await PYTHON_PROFILE.command();
    const cwasm = real.args.at(-1)!;
    return { ...real, args: ["-I", "-B", FIXTURE, ZYGOTE_DIR, cwasm, ...extra], readable: [...real.readable, dirname(FIXTURE)] };
  },
});
const ESCAPE_PROFILE = escapeProfile();

/** Host-side Python in the escaped child: every attempt and what became of it. */
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
report["escaped"] = {"pid": os.getpid(), "zygote": zpid, "child": zygote.child, "wasmMemory": zygote.memory.data_len(zygote.store)}
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
# What it may still do: its own memory. The guest's interpreter is in it, and so is the zygote's
# copy of the warm interpreter as this child sees it: scribble over all of it.
def scribble():
    base = ctypes.addressof(zygote.memory.data_ptr(zygote.store).contents)
    ctypes.memset(base + 65536, 0x41, 4 << 20)
    return True
attempt("scribbleOwnMemory", scribble)
result = report
`;

describe.each(HAS_BWRAP ? [true, false] : [false])("the Python zygote with an escaped guest (bubblewrap %s)", (bwrap) => {
  let python: PythonSandbox;
  let report: Record<string, { ok: boolean; value?: unknown; code?: string }>;
  let zygotePid = 0;

  beforeAll(async () => {
    // One zygote serves every run (no affinity: no spare zygote either), so each later run is
    // served by the very zygote whose child escaped.
    python = createPythonSandbox({ maxConcurrency: 1, profile: ESCAPE_PROFILE, confine: { bwrap, unconfined: !bwrap }, affinity: "off" });
    const first = await python.run("1 + 1", { client: "a" });
    expect(first, JSON.stringify(first)).toMatchObject({ ok: true, result: 2 });
    zygotePid = zygotes()[0]!;
    const r = await python.run(ATTACKS, { client: "a", timeoutMs: 20_000 });
    expect(r.ok, JSON.stringify(r).slice(0, 1000)).toBe(true);
    report = r.result as typeof report;
  }, 120_000);
  afterAll(() => python?.dispose());

  it("ran as host-side Python in a forked child of the zygote, not in the zygote", () => {
    const escaped = report.escaped as unknown as { pid: number; zygote: number; child: boolean; wasmMemory: number };
    expect(escaped.child).toBe(true);
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
    const next = await python.run("import builtins, sys\n[1 + 1, len([1, 2, 3]), 'json' in sys.modules, sorted(k for k in globals() if not k.startswith('__'))]", { client: "a" });
    expect(next).toMatchObject({ ok: true, result: [2, 3, true, ["builtins", "sys"]] });
    expect(await python.run("print('out')\n'genuine'", { client: "a" })).toMatchObject({ ok: true, result: "genuine", stdout: "out\n" });
    expect(python.replaced).toBe(0);
    expect(python.started).toBe(1);
    expect(zygotes()).toEqual([zygotePid]);
  });

  it("garbage or a flood on its result pipe, or hanging, costs only its own run", async () => {
    const flood = await python.run("#escape\nimport os\nwhile True: os.write(1, b'x' * 65536)", { client: "a", timeoutMs: 5000, maxOutputBytes: 1000 });
    expect(flood).toMatchObject({ ok: false, error: { name: "SandboxError" } });
    const garbage = await python.run("#escape\nimport os\nos.write(1, b'EWZ1' + b'\\xff' * 40)\nos._exit(0)", { client: "a" });
    expect(garbage).toMatchObject({ ok: false, error: { name: "SandboxError" } });
    const hang = await python.run("#escape\nimport time\nwhile True: time.sleep(1)", { client: "a", timeoutMs: 300 });
    expect(hang).toMatchObject({ ok: false, error: { name: "TimeoutError" } });
    expect(await python.run("1 + 1", { client: "a" })).toMatchObject({ ok: true, result: 2 });
    expect(python.replaced).toBe(0);
    expect(zygotes()).toEqual([zygotePid]);
  }, 60_000);

  it("a spare that died while it waited (killed from outside) is replaced by a fresh child for the run", async () => {
    await python.run("0", { client: "a" });
    // The spare is forked once the last run's child is reaped, just after its answer.
    const children = () => readFileSync(`/proc/${zygotePid}/task/${zygotePid}/children`, "utf8").trim().split(" ").filter(Boolean).map(Number);
    await expect.poll(() => children().length, { timeout: 5000, interval: 20 }).toBe(1);
    const spares = children();
    process.kill(spares[0]!, "SIGKILL");
    // Dead, or still on its way out: either way it must not be handed the run.
    const fresh = await python.run("'fresh'", { client: "a" });
    expect(fresh, JSON.stringify(fresh)).toMatchObject({ ok: true, result: "fresh" });
    expect(zygotes()).toEqual([zygotePid]);
  });

  it("memory taken outside the interpreter's limit is the server's to see: counted by its page faults, its zygote replaced", async () => {
    // The store limit bounds the guest's wasm memory; host-side memory of an escaped child is not
    // under it. The server measures the tree (process-memory.ts ForkingHost: a child's private
    // pages count in full) and kills the host past 2 x memoryMb + 96 MiB.
    const before = python.replaced;
    const r = await python.run("#escape\nimport time\nheld = b'\\x01' * (400 << 20)\ntime.sleep(8)\nresult = len(held)", { client: "a", memoryMb: 16, timeoutMs: 15_000 });
    expect(r).toMatchObject({ ok: false, error: { name: "MemoryLimitError" } });
    expect(r.error?.message).toMatch(/grew by \d+ MiB and was replaced/);
    expect(python.replaced).toBeGreaterThan(before);
    expect(await python.run("1 + 1", { client: "a" })).toMatchObject({ ok: true, result: 2 });
    expect(python.memoryBytes()).toBeLessThan(200 * 1024 * 1024);
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
  const found = [...parents.keys()].filter((pid) => {
    if (!below(pid)) return false;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      // The zygote (run by python), not bubblewrap nor the zygote's children (whose parent is python).
      const parentArgv = readFileSync(`/proc/${parents.get(pid)!}/cmdline`, "utf8").split("\0");
      return argv[0]!.includes("python") && argv.some((a) => a.endsWith("escape_zygote.py")) && !parentArgv[0]!.includes("python");
    } catch {
      return false;
    }
  });
  return found;
}

describe("the control: without the child's hardening (harden.py), the same escape kills its zygote", () => {
  it("an unhardened child signals its zygote to death: the zygote is replaced", async () => {
    const python = createPythonSandbox({ maxConcurrency: 1, profile: escapeProfile("--unhardened"), affinity: "off" });
    try {
      expect(await python.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
      const r = await python.run("#escape\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time\ntime.sleep(5)", { timeoutMs: 10_000 });
      expect(r).toMatchObject({ ok: false, error: { name: "SandboxError" } });
      expect(python.replaced).toBe(1);
      expect(await python.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
    } finally {
      await python.dispose();
    }
  }, 60_000);
});
