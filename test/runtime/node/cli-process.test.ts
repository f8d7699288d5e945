/**
 * The `envworker` process as the system sees it: where it cannot listen (a busy port, a host that
 * is not ours) it says so in one line and exits 1; `kill -TERM` of `npm start`'s PID stops the real
 * server (npm → the bin → the re-executed node), and the server never outlives the bin; the banner;
 * `--version`.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../../..");
const BIN = resolve(ROOT, "bin/envworker.js");

const envworker = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
  spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", cwd: ROOT, env, timeout: 120_000 });

/** True while any process of the group is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (ok()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Start a detached process (its own group); resolve with the URL once it prints the banner. */
function started(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; url: string; out: () => string }> {
  const child = spawn(command, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], detached: true, env: { ...process.env, PORT: "0", ...env } });
  let out = "";
  child.stderr!.on("data", (d) => (out += String(d)));
  return new Promise((ok, fail) => {
    child.stdout!.on("data", (d) => {
      out += String(d);
      const m = /serving \d+ environment\(s\) on (http:\/\/\S+)/.exec(out);
      if (m && out.includes("playground:")) ok({ child, url: m[1]!, out: () => out });
    });
    child.once("exit", (code) => fail(new Error(`exited ${code}: ${out}`)));
  });
}

/** PIDs of the processes whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, "SIGKILL");
  } catch {
    // already gone
  }
}

/** /health answers without a token too. */
async function healthy(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) })).ok;
  } catch {
    return false;
  }
}

describe("envworker cannot listen: one line, exit 1, no stack", () => {
  let busy: Server;
  let port: number;
  beforeAll(async () => {
    busy = createServer();
    await new Promise<void>((r) => busy.listen(0, "127.0.0.1", r));
    port = (busy.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((r) => busy.close(() => r())));

  it("a busy port names the port and --port", () => {
    const r = envworker(["serve", "--port", String(port), "reverse-text"]);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split("\n")).toEqual([
      `envworker serve: cannot listen on 127.0.0.1:${port}: the port is already in use (another server running?); pick another with --port N (0 = any free port)`,
    ]);
    expect(r.stdout).toBe("");
  }, 60_000);

  it("a host that does not resolve, or is not this machine's, names --host", () => {
    const bad = envworker(["serve", "--host", "999.1.1.1", "reverse-text"]);
    expect(bad.status).toBe(1);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toMatch(/^envworker serve: cannot listen on 999\.1\.1\.1:8000: "999\.1\.1\.1" is neither an IP address nor a name that resolves; pick one with --host/);
    const notOurs = envworker(["serve", "--host", "10.255.255.254", "--port", "0", "reverse-text"]);
    expect(notOurs.status).toBe(1);
    expect(notOurs.stderr).toMatch(/^envworker serve: cannot listen on 10\.255\.255\.254:0: the host is not an address of this machine; pick one with --host/);
    expect(notOurs.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);

  it("the viewer says the same", () => {
    const r = envworker(["view", "test/fixtures", "--port", String(port)]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^envworker view: cannot listen on 127\.0\.0\.1:\d+: the port is already in use/);
  }, 60_000);
});

describe("envworker's processes stop together", () => {
  it("kill -TERM of npm start's PID stops the server and every process under it", async () => {
    const { child, url, out } = await started("npm", ["start", "--", "reverse-text"]);
    try {
      expect(out()).toContain(`playground: ${url}/web`);
      expect(await healthy(url)).toBe(true);
      process.kill(child.pid!, "SIGTERM"); // npm's PID only, not its group
      await until("every process of npm start to exit", () => !groupAlive(child.pid!));
      expect(await healthy(url)).toBe(false);
    } finally {
      killGroup(child);
    }
  }, 90_000);

  it("the re-executed server does not outlive the bin, even when the bin is SIGKILLed", async () => {
    const { child, url, out } = await started(process.execPath, [BIN, "serve", "--port", "0", "reverse-text"], { ENVWORKER_TOKEN: "s3cret" });
    try {
      // With a token the banner shows the playground's token form, without the token itself.
      expect(out()).toContain(`playground: ${url}/t/<ENVWORKER_TOKEN>/web`);
      expect(out()).not.toContain("s3cret");
      const [server] = childrenOf(child.pid!);
      expect(server).toBeGreaterThan(0);
      process.kill(child.pid!, "SIGKILL");
      await until("the server to exit", () => !groupAlive(child.pid!));
      expect(await healthy(url)).toBe(false);
    } finally {
      killGroup(child);
    }
  }, 90_000);
});

describe("envworker --version", () => {
  it("prints package.json's version", () => {
    const r = envworker(["--version"]);
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")).version);
  }, 60_000);
});
