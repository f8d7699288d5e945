/**
 * The second wall (src/wall/confine.ts): every sandbox host runs in a child process with least
 * privilege, and a guest that fully escapes its engine is still inside it.
 *
 * - The escape: test/fixtures/confine/escape-host.ts runs a run's code as host-side JavaScript in
 *   the sandbox process, started through the very launcher of the real hosts with each real host's
 *   profile (isolated-vm, QuickJS, Python), with bubblewrap and without. From there it tries what the
 *   issue's attacker did: read the server's environment and files, start a process, open a
 *   connection, signal the server, open the inspector, and forge the result of another key's run.
 * - The real hosts: which process they are, which uid, their (empty) environment, their limits.
 * - Distrust: replies that are too large, malformed, for another run or over the output cap end
 *   their host, never the server.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeConfinement, HOST_UID_BASE, type NodeProfile } from "../../src/wall/confine.ts";
import type { HostPoolSandbox } from "../../src/sandbox/host/host-pool.ts";
import { createIsolatedVmProcessSandbox, ISOLATED_VM_PROFILE } from "../../src/sandbox/engines/isolated-vm/isolated-vm-process.ts";
import { createPythonSandbox, PYTHON_PROFILE } from "../../src/sandbox/engines/python/python.ts";
import { QUICKJS_INSTANCE_PROFILE } from "../../src/sandbox/engines/quickjs/quickjs-instances.ts";
import { createQuickJSProcessSandbox, QUICKJS_PROFILE } from "../../src/sandbox/engines/quickjs/quickjs-process.ts";
import type { Sandbox } from "../../src/sandbox/types.ts";
import { editReplies } from "../fixtures/confine/edit-replies.ts";
import { escapePool } from "../fixtures/confine/escape-pool.ts";
import { processesBelow } from "../helpers/processes.ts";

const REPO_FILE = resolve(import.meta.dirname, "../../package.json");
/** A native addon of a package no host loads (bufferutil's prebuilt one for this machine), when there is one. */
const OTHER_ADDON = (() => {
  const path = resolve(dirname(createRequire(import.meta.url).resolve("bufferutil/package.json")), `prebuilds/${process.platform}-${process.arch}/bufferutil.node`);
  return existsSync(path) ? path : undefined;
})();
const HAS_BWRAP = describeConfinement().bwrap;
const AS_ROOT = process.getuid?.() === 0;

/** Host-side JavaScript the escaped guest runs: every attempt, and what became of it. */
const ATTACKS = `
export default async ({ serverPid, secretFile, secretDir, port, repoFile, otherAddon }) => {
  const report = {};
  const attempt = async (name, f) => {
    try { report[name] = { ok: true, value: await f() }; }
    catch (e) { report[name] = { ok: false, code: String(e?.code ?? e?.name ?? e) }; }
  };
  const fs = await import("node:fs");
  await attempt("env", () => ({ ...process.env }));
  await attempt("ids", () => ({ uid: process.getuid(), gid: process.getgid() }));
  await attempt("readShadow", () => fs.readFileSync("/etc/shadow", "utf8").length);
  await attempt("readPasswd", () => fs.readFileSync("/etc/passwd", "utf8").length);
  await attempt("readSecret", () => fs.readFileSync(secretFile, "utf8"));
  await attempt("readRepo", () => fs.readFileSync(repoFile, "utf8").length);
  await attempt("listRoot", () => fs.readdirSync("/"));
  await attempt("writeTmp", () => fs.writeFileSync("/tmp/escaped", "x"));
  await attempt("writeSecretDir", () => fs.writeFileSync(secretDir + "/planted", "x"));
  await attempt("spawn", async () => (await import("node:child_process")).execFileSync("/bin/sh", ["-c", "id"]).toString());
  await attempt("fork", async () => (await import("node:child_process")).fork("/dev/null").pid);
  await attempt("signalServer", () => process.kill(serverPid, 0));
  await attempt("usr1Server", () => process.kill(serverPid, "SIGUSR1"));
  await attempt("inspector", async () => (await import("node:inspector")).open(0));
  await attempt("worker", async () => { const { Worker } = await import("node:worker_threads"); const w = new Worker("0", { eval: true }); await w.terminate(); return "started"; });
  await attempt("addon", () => process.dlopen({ exports: {} }, "/usr/lib/x86_64-linux-gnu/libc.so.6"));
  await attempt("otherAddon", () => { const m = { exports: {} }; process.dlopen(m, otherAddon); return Object.keys(m.exports).length > 0 ? "loaded" : "empty"; });
  await attempt("connect", async () => {
    const net = await import("node:net");
    return await new Promise((ok, fail) => {
      const socket = net.connect(port, "127.0.0.1", () => { socket.end(); ok("connected"); });
      socket.on("error", fail);
      setTimeout(() => fail(new Error("timeout")), 3000);
    });
  });
  return report;
};`;

type Attempt = { ok: true; value: unknown } | { ok: false; code: string };

describe("a guest that escaped its engine, confined", () => {
  let listener: Server;
  let port = 0;
  let connections = 0;
  let secretDir: string;
  let secretFile: string;
  const savedToken = process.env.ENVWORKER_TOKEN;

  beforeAll(async () => {
    // The server's secrets: a token in its environment, a file only it should read (world-readable,
    // so only the confinement stands between it and the guest), a port on loopback.
    process.env.ENVWORKER_TOKEN = "server-secret-token";
    secretDir = mkdtempSync(join(tmpdir(), "envworker-secret-"));
    secretFile = join(secretDir, "secret.txt");
    writeFileSync(secretFile, "the server's secret", { mode: 0o644 });
    listener = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((ok) => listener.listen(0, "127.0.0.1", ok));
    port = (listener.address() as { port: number }).port;
  });
  afterAll(() => {
    if (savedToken === undefined) delete process.env.ENVWORKER_TOKEN;
    else process.env.ENVWORKER_TOKEN = savedToken;
    listener.close();
    rmSync(secretDir, { recursive: true, force: true });
  });

  // The Node hosts. The zygotes (Python, QuickJS) are not Node: their escape (guest code run as the
  // child's own host-side Python) is test/sandbox/python-zygote-escape.test.ts.
  const PROFILES = [ISOLATED_VM_PROFILE].flatMap((profile) =>
    [true, false].map((bwrap) => ({ profile, bwrap, name: `${profile.name}, ${bwrap ? "with" : "without"} bubblewrap` })),
  );

  describe.each(PROFILES)("$name", ({ profile, bwrap }) => {
    const skip = bwrap && !HAS_BWRAP;
    let report: Record<string, Attempt>;
    let connectionsBefore = 0;

    beforeAll(async () => {
      if (skip) return;
      const pool = escapePool(profile, { bwrap });
      try {
        connectionsBefore = connections;
        const r = await pool.run(ATTACKS, { timeoutMs: 20_000, globals: { serverPid: process.pid, secretFile, secretDir, port, repoFile: REPO_FILE, otherAddon: OTHER_ADDON ?? "/nonexistent.node" } });
        expect(r.ok, JSON.stringify(r)).toBe(true);
        report = r.result as Record<string, Attempt>;
      } finally {
        await pool.dispose();
      }
    }, 60_000);

    it.skipIf(skip)("sees an empty environment: not the server's token, nothing else", () => {
      // bubblewrap always sets PWD (to "/", where it starts the host): the one variable there is.
      expect(report.env).toEqual({ ok: true, value: bwrap ? { PWD: "/" } : {} });
    });

    it.skipIf(skip)("runs as a user of its own, not root", () => {
      const ids = report.ids as { ok: true; value: { uid: number; gid: number } };
      if (AS_ROOT) {
        expect(ids.value.uid).toBeGreaterThanOrEqual(HOST_UID_BASE);
        expect(ids.value.gid).toBeGreaterThanOrEqual(HOST_UID_BASE);
      } else expect(ids.value.uid).toBe(process.getuid!());
    });

    it.skipIf(skip)("reads no file outside its engine: not /etc, not the repository, not the server's secret", () => {
      for (const name of ["readShadow", "readPasswd", "readSecret", "readRepo", "listRoot"]) {
        expect(report[name], name).toEqual({ ok: false, code: "ERR_ACCESS_DENIED" });
      }
    });

    it.skipIf(skip)("writes nothing anywhere (so nothing persists for a later run)", () => {
      expect(report.writeTmp).toEqual({ ok: false, code: "ERR_ACCESS_DENIED" });
      expect(report.writeSecretDir).toEqual({ ok: false, code: "ERR_ACCESS_DENIED" });
      expect(readdirSync(secretDir)).toEqual(["secret.txt"]);
    });

    it.skipIf(skip)("starts no process, opens no inspector, loads no addon it does not need, starts no thread it does not need", () => {
      expect(report.spawn).toEqual({ ok: false, code: "ERR_ACCESS_DENIED" });
      expect(report.fork).toEqual({ ok: false, code: "ERR_ACCESS_DENIED" });
      expect(report.inspector).toEqual({ ok: false, code: "ERR_ACCESS_DENIED" });
      if (!profile.addons) expect(report.addon).toEqual({ ok: false, code: "ERR_DLOPEN_DISABLED" });
      if (!profile.workers) expect(report.worker).toEqual({ ok: false, code: "ERR_ACCESS_DENIED" });
    });

    it.skipIf(skip || !OTHER_ADDON)(
      bwrap || !profile.addons
        ? "loads no native addon of another package"
        : "without bubblewrap, loads another package's native addon where addons are allowed (why hosts need it: confine.ts confinementRefusal)",
      () => {
        if (!profile.addons) expect(report.otherAddon).toEqual({ ok: false, code: "ERR_DLOPEN_DISABLED" });
        else if (bwrap) expect(report.otherAddon?.ok, JSON.stringify(report.otherAddon)).toBe(false);
        else expect(report.otherAddon).toEqual({ ok: true, value: "loaded" });
      },
    );

    it.skipIf(skip)("cannot signal the server (not even to ask whether it exists)", () => {
      // With bubblewrap the server is not in its PID namespace (ESRCH); without, it is another user (EPERM).
      const expected = bwrap ? "ESRCH" : "EPERM";
      if (AS_ROOT || bwrap) {
        expect(report.signalServer).toEqual({ ok: false, code: expected });
        expect(report.usr1Server).toEqual({ ok: false, code: expected });
      }
    });

    it.skipIf(skip)(
      bwrap ? "opens no connection, not even to the server's loopback" : "without bubblewrap, reaches the network (README: what holds without it)",
      () => {
        if (bwrap) {
          expect(report.connect?.ok).toBe(false);
          expect(connections).toBe(connectionsBefore);
        } else {
          expect(report.connect).toEqual({ ok: true, value: "connected" });
        }
      },
    );
  });

  /** Escaped host-side code that forges the result of every later run its process serves. */
  const FORGE = `
export default () => {${editReplies(`
    if (message.type !== "result") return false;
    message.result = { ...message.result, ok: true, result: "forged" };
    return true;`)}
  return "poisoned";
};`;
  const GENUINE = `export default () => "genuine";`;

  it.each(["client", "episode", "off"] as const)(
    "an escaped guest cannot change another client's results: hosts are dedicated to a client (affinity %s)",
    async (affinity) => {
      const pool = escapePool(ISOLATED_VM_PROFILE, { bwrap: HAS_BWRAP, affinity });
      try {
        await pool.warm(2);
        // Client A's episode 1 takes over its process; its own later runs are the residual (README "The residual").
        await pool.run(FORGE, { client: "client-a", queueKey: "a-1" });
        expect((await pool.run(GENUINE, { client: "client-a", queueKey: "a-1" })).result).toBe("forged");
        // Another episode of the same client: in A's hosts with client affinity, in its own with episode affinity.
        const sameClient = (await pool.run(GENUINE, { client: "client-a", queueKey: "a-2" })).result;
        expect(sameClient).toBe(affinity === "episode" ? "genuine" : "forged");
        // Other clients' runs, one after another and concurrently with A's.
        const others = await Promise.all([
          pool.run(GENUINE, { client: "client-b", queueKey: "b-1" }),
          pool.run(GENUINE, { client: "client-c", queueKey: "c-1" }),
          pool.run(GENUINE, { client: "client-b", queueKey: "b-2" }),
          pool.run(GENUINE, { client: "client-a", queueKey: "a-1" }),
        ]);
        const results = others.slice(0, 3).map((r) => r.result);
        if (affinity !== "off") expect(results).toEqual(["genuine", "genuine", "genuine"]);
        // Without affinity the poisoned process serves other clients too: the control that shows this test can fail.
        else expect(results).toContain("forged");
      } finally {
        await pool.dispose();
      }
    },
    90_000,
  );

  describe("the server measures what a host holds: a host's own report is not believed", () => {
    const MiB = 1024 * 1024;
    /** Host-side code that reports 0 bytes from now on (ready, usage, results), then allocates `mb` MiB it keeps. */
    const LIAR = `
export default async ({ mb, holdMs, laterMb }) => {${editReplies(`
    if (typeof message.bytes !== "number") return false;
    message.bytes = 0;
    return true;`)}
  process.memoryUsage.rss = () => 0;
  globalThis.held ??= [];
  globalThis.id ??= Math.random();
  const hold = (n) => { for (let i = 0; i < n; i++) globalThis.held.push(Buffer.alloc(MiB, 1)); };
  const MiB = 1024 * 1024;
  hold(mb);
  // After the run is answered, while its host is idle.
  if (laterMb) setTimeout(() => hold(laterMb), 300);
  await new Promise((ok) => setTimeout(ok, holdMs));
  return globalThis.id;
};`;
    const ID = `export default () => globalThis.id ?? null;`;
    const BWRAP = HAS_BWRAP ? [true, false] : [false];

    it.each(BWRAP)("a run that allocates far past its limit while its host reports 0 bytes is killed, a MemoryLimitError (bubblewrap %s)", async (bwrap) => {
      const pool = escapePool(ISOLATED_VM_PROFILE, { bwrap });
      try {
        const before = pool.replaced;
        // memoryMb 16: the host may grow by 2 × 16 + 96 MiB while running; it takes 400 MiB and holds it.
        const r = await pool.run(LIAR, { memoryMb: 16, timeoutMs: 15_000, globals: { mb: 400, holdMs: 8000 } });
        expect(r.ok, JSON.stringify(r)).toBe(false);
        expect(r.error?.name).toBe("MemoryLimitError");
        expect(r.error?.message).toMatch(/grew by \d+ MiB and was replaced/);
        expect(r.elapsedMs).toBeLessThan(8000);
        // Counted once: when its run releases the dead host (the memory watch that killed it does not count it too).
        await expect.poll(() => pool.replaced, { timeout: 10_000, interval: 50 }).toBe(before + 1);
        expect((await pool.run("export default () => 2")).result).toBe(2);
        expect(pool.replaced).toBe(before + 1);
      } finally {
        await pool.dispose();
      }
    }, 60_000);

    it.each(BWRAP)("what a host keeps after its run is counted in memoryBytes(), whatever it reports (bubblewrap %s)", async (bwrap) => {
      const pool = escapePool(ISOLATED_VM_PROFILE, { bwrap });
      try {
        await pool.warm(1);
        const before = pool.memoryBytes();
        expect(before).toBeGreaterThan(10 * MiB); // a Node process, measured
        // memoryMb 512: 300 MiB is within what a run may use and keep; the host says 0.
        const r = await pool.run(LIAR, { memoryMb: 512, timeoutMs: 15_000, globals: { mb: 300, holdMs: 0 } });
        expect(r.ok, JSON.stringify(r)).toBe(true);
        await expect.poll(() => pool.memoryBytes() - before, { timeout: 5000, interval: 100 }).toBeGreaterThan(280 * MiB);
      } finally {
        await pool.dispose();
      }
    }, 60_000);

    it.each(BWRAP)("a host that grows while idle, after its run was answered, is killed and replaced (bubblewrap %s)", async (bwrap) => {
      // The pool's default bounds (a real backend's): an idle host may keep memoryMb + 64 MiB.
      const pool = escapePool(ISOLATED_VM_PROFILE, { bwrap, memory: {} });
      try {
        const first = await pool.run(LIAR, { memoryMb: 16, timeoutMs: 15_000, globals: { mb: 0, holdMs: 0, laterMb: 400 } });
        expect(first.ok, JSON.stringify(first)).toBe(true);
        // The idle check (every ~0.5 s) kills it once it holds more than memoryMb + 64 MiB past its idle size.
        await expect.poll(() => pool.replaced, { timeout: 10_000, interval: 100 }).toBeGreaterThan(0);
        expect(pool.memoryBytes()).toBeLessThan(200 * MiB);
        const next = await pool.run(ID);
        expect(next.result).not.toBe(first.result); // a fresh process (the id lived in the old one)
      } finally {
        await pool.dispose();
      }
    }, 60_000);
  });

  describe("the server trusts nothing a host sends back", () => {
    let pool: HostPoolSandbox;
    beforeAll(() => {
      pool = escapePool(ISOLATED_VM_PROFILE, { bwrap: HAS_BWRAP });
    });
    afterAll(() => pool.dispose());

    const raw = (body: string) => `
export default () => {
  ${body}
  return new Promise(() => {});
};`;
    const frame = (json: string) => `const b = Buffer.from(${JSON.stringify(json)}); const h = Buffer.alloc(4); h.writeUInt32BE(b.length); process.stdout.write(Buffer.concat([h, b]));`;

    it.each([
      ["a reply far larger than the run allows", `const h = Buffer.alloc(4); h.writeUInt32BE(2 ** 31); process.stdout.write(h);`, /sent a message of 2147483648 bytes/],
      ["a reply that is not JSON", frame("{not json"), /not JSON/],
      ["a reply of the wrong shape", frame('{"type":"result","id":1,"result":{"ok":true},"bytes":1}'), /refuses/],
      ["a reply with fields no reply has", frame('{"type":"ready","bytes":1,"exec":"rm -rf /"}'), /refuses/],
      ["a reply to a run it was not sent", frame('{"type":"failed","id":999999,"message":"x","bytes":1}'), /answered run 999999, which it was not running/],
      ["a second ready (resetting the size it is measured from)", frame('{"type":"ready","bytes":1099511627776}'), /ready a second time/],
    ])("%s: the host is killed, its run is a SandboxError", async (_name, body, why) => {
      const before = pool.replaced;
      const r = await pool.run(raw(body), { timeoutMs: 5000 });
      expect(r.ok).toBe(false);
      expect(r.error?.name).toBe("SandboxError");
      expect(r.error?.message).toMatch(why);
      expect(pool.replaced).toBeGreaterThan(before);
      expect((await pool.run(`export default () => 2`)).result).toBe(2);
    }, 30_000);

    it("a result with more output than the run's cap: the host is killed, its run is a SandboxError", async () => {
      const before = pool.replaced;
      const oversize = `
export default () => {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = (chunk, ...rest) => {
    const message = JSON.parse(Buffer.from(chunk).subarray(4).toString("utf8"));
    if (message.type === "result") message.result.stdout = "x".repeat(5000);
    const body = Buffer.from(JSON.stringify(message));
    const head = Buffer.alloc(4);
    head.writeUInt32BE(body.length);
    return write(Buffer.concat([head, body]), ...rest);
  };
  return 1;
};`;
      const r = await pool.run(oversize, { maxOutputBytes: 100, timeoutMs: 5000 });
      expect(r).toMatchObject({ ok: false, stdout: "", error: { name: "SandboxError" } });
      expect(r.error?.message).toMatch(/more output than the run allows/);
      expect(pool.replaced).toBeGreaterThan(before);
    }, 30_000);
  });
});

describe("the checks on replies refuse no genuine guest result", () => {
  it("an error whose name is long (a guest may name its class anything) comes back as the guest's, its host kept", async () => {
    const sandbox = createIsolatedVmProcessSandbox({ maxConcurrency: 1 });
    try {
      const name = `E${"x".repeat(400)}`;
      const r = await sandbox.run(`class ${name} extends Error { constructor() { super("boom"); this.name = "${name}"; } }; throw new ${name}()`);
      // The guest's prelude clips it (to ~200 characters and "…"); the reply schema must not refuse that.
      expect(r).toMatchObject({ ok: false, error: { name: expect.stringMatching(/^Exxxx+…?$/), message: "boom" } });
      expect(r.error!.name.length).toBeGreaterThan(200);
      expect(sandbox.replaced).toBe(0);
    } finally {
      await sandbox.dispose();
    }
  }, 60_000);
});

describe("the real hosts are confined", () => {
  const sandboxes: { name: string; entry: string; profile: NodeProfile; create(): Sandbox; code: string }[] = [
    { name: "isolated-vm", entry: "isolated-vm-host.mjs", profile: ISOLATED_VM_PROFILE, create: () => createIsolatedVmProcessSandbox({ maxConcurrency: 1 }), code: "1 + 1" },
  ];

  /** Processes below this one whose command line names `entry` (run by `program`). */
  function hostProcesses(entry: string, program = "node"): number[] {
    const parents = processesBelow();
    const found = [...parents.keys()].filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        return argv[0]?.includes(program) === true && argv.some((a) => a.endsWith(`/${entry}`));
      } catch {
        return false;
      }
    });
    // A zygote's children (its spare, a run's process) are forks of it, with its command line: the host is the topmost.
    return found.filter((pid) => !found.includes(parents.get(pid)!));
  }

  it.each(sandboxes)(
    "$name: a child process of another user, with an empty environment, the permission model and its limits",
    async ({ entry, profile, create, code }) => {
      const sandbox = create();
      try {
        expect((await sandbox.run(code)).result).toBe(2);
        const pids = hostProcesses(entry);
        expect(pids.length).toBe(1);
        const pid = pids[0]!;
        expect(pid).not.toBe(process.pid);
        const status = readFileSync(`/proc/${pid}/status`, "utf8");
        const uid = Number(/^Uid:\s+(\d+)/m.exec(status)![1]);
        if (AS_ROOT) expect(uid).toBeGreaterThanOrEqual(HOST_UID_BASE);
        expect(readFileSync(`/proc/${pid}/environ`, "utf8")).toBe(HAS_BWRAP ? "PWD=/\0" : "");
        const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        expect(argv).toContain("--experimental-permission");
        expect(argv.some((a) => a.startsWith("--allow-fs-write") || a === "--allow-child-process")).toBe(false);
        expect(argv.includes("--allow-addons")).toBe(profile.addons === true);
        expect(argv.includes("--allow-worker")).toBe(profile.workers === true);
        // Node 20 lets a process list "/" once its allowed paths span three top-level directories
        // (confine.ts bundleDirectory): wherever the checkout is, they span at most two.
        const tops = new Set(argv.filter((a) => a.startsWith("--allow-fs-read=")).map((a) => a.slice("--allow-fs-read=".length).split("/")[1]));
        expect([...tops].length, [...tops].join(", ")).toBeLessThanOrEqual(2);
        if (describeConfinement().prlimit) {
          const limits = readFileSync(`/proc/${pid}/limits`, "utf8");
          expect(limits).toMatch(/^Max file size\s+0\s+0\s/m);
          expect(limits).toMatch(/^Max core file size\s+0\s+0\s/m);
          expect(limits).toMatch(new RegExp(`^Max address space\\s+${profile.addressSpaceMb * 1024 * 1024}\\s`, "m"));
          expect(limits).toMatch(/^Max processes\s+\d+\s/m);
        }
        if (HAS_BWRAP) {
          // Its own namespaces: not the server's network, PIDs or mounts.
          for (const ns of ["net", "pid", "mnt"]) expect(readlinkNs(pid, ns)).not.toBe(readlinkNs(process.pid, ns));
        }
      } finally {
        await sandbox.dispose();
      }
    },
    120_000,
  );

  const ZYGOTES = [
    { name: "Python", file: "zygote.py", profile: PYTHON_PROFILE, create: (): Sandbox => createPythonSandbox({ maxConcurrency: 1 }) },
    { name: "QuickJS", file: "qjs_zygote.py", profile: QUICKJS_PROFILE, create: (): Sandbox => createQuickJSProcessSandbox({ maxConcurrency: 1, mode: "fork" }) },
    // The instance host (the default): a host for the client and a spare started ahead.
    { name: "QuickJS instances", file: "qjs_instances.py", profile: QUICKJS_INSTANCE_PROFILE, create: (): Sandbox => createQuickJSProcessSandbox({ maxConcurrency: 1 }), hosts: 2 },
  ];
  it.each(ZYGOTES)("$name: a zygote of another user, with an empty environment and its limits; no process of it is Node", async ({ file, profile, create, hosts }) => {
    const sandbox = create();
    try {
      expect((await sandbox.run("1 + 1")).result).toBe(2);
      if (hosts) await expect.poll(() => hostProcesses(file, "python").length).toBe(hosts);
      const pids = hostProcesses(file, "python");
      expect(pids.length).toBe(hosts ?? 1);
      const pid = pids[0]!;
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)![1]);
      if (AS_ROOT) expect(uid).toBeGreaterThanOrEqual(HOST_UID_BASE);
      // Not dumpable (harden.py): /proc/<pid>/environ of a non-dumpable process is root's to read.
      expect(readFileSync(`/proc/${pid}/environ`, "utf8")).toBe(HAS_BWRAP ? "PWD=/\0" : "");
      expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
      if (hosts) {
        // The instance host runs guests in its own process: every thread of it filtered (seccomp TSYNC).
        const tasks = readdirSync(`/proc/${pid}/task`);
        expect(tasks.length).toBe(2);
        for (const tid of tasks) expect(readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8")).toMatch(/^Seccomp:\s+2$/m);
      }
      if (describeConfinement().prlimit) {
        const limits = readFileSync(`/proc/${pid}/limits`, "utf8");
        expect(limits).toMatch(/^Max file size\s+0\s+0\s/m);
        expect(limits).toMatch(/^Max core file size\s+0\s+0\s/m);
        expect(limits).toMatch(new RegExp(`^Max address space\\s+${profile.addressSpaceMb * 1024 * 1024}\\s`, "m"));
      }
      if (HAS_BWRAP) for (const ns of ["net", "pid", "mnt"]) expect(readlinkNs(pid, ns)).not.toBe(readlinkNs(process.pid, ns));
    } finally {
      await sandbox.dispose();
    }
  }, 120_000);
});

function readlinkNs(pid: number, ns: string): string {
  return readlinkSync(`/proc/${pid}/ns/${ns}`);
}
