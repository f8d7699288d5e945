/** The `envworker` command as a user runs it: the bin shim, serve on a free port, list, specs, validate, init, usage errors. */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { get } from "../../helpers/http.ts";

const BIN = resolve(import.meta.dirname, "../../../bin/envworker.js");
const PROJECT = resolve(import.meta.dirname, "../../fixtures/user-project");

const envworker = (args: string[], cwd?: string, env: NodeJS.ProcessEnv = process.env) =>
  spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", cwd, env, timeout: 120_000 });

/** Spawn `envworker serve ...`; resolves with the URL once it prints it. */
function serve(args: string[], cwd?: string): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, [BIN, "serve", ...args], { cwd, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  child.stderr!.on("data", (d) => (out += String(d)));
  return new Promise((resolveUrl, reject) => {
    child.stdout!.on("data", (d) => {
      out += String(d);
      const m = /serving \d+ environment\(s\) on (http:\/\/\S+)/.exec(out);
      if (m) resolveUrl({ child, url: m[1]!, output: () => out });
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
}

async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  process.kill(-child.pid!, "SIGTERM");
  await exited;
}

function freePort(): Promise<number> {
  return new Promise((r) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => r(port));
    });
  });
}

// Each test runs the command as a child, often with spawnSync (120 s limit), which blocks this
// process: vitest's default 30 s would fail a slow-but-finished test after the fact on a busy machine.
describe("envworker command", { timeout: 120_000 }, () => {
  it("serves every environment (what `npm start` runs) and stops on SIGTERM", async () => {
    // detached: its own process group, so the test can signal the group as a terminal or a
    // service manager does (the shim and the server each receive the signal).
    const child = spawn(process.execPath, [BIN, "serve", "--port", "0"], { stdio: ["ignore", "pipe", "pipe"], detached: true });
    try {
      const url = await new Promise<string>((resolveUrl, reject) => {
        let out = "";
        child.stdout.on("data", (d) => {
          out += String(d);
          const m = /serving \d+ environment\(s\) on (http:\/\/\S+)/.exec(out);
          if (m) resolveUrl(m[1]!);
        });
        child.once("exit", (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      expect((await get(`${url}/health`)).body).toEqual({ status: "healthy" });
      const envs = (await get(`${url}/envs`)).body.envs.map((e: { name: string }) => e.name);
      expect(envs).toEqual(expect.arrayContaining(["reverse-text", "alphabet-sort"]));
      const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
      process.kill(-child.pid!, "SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    }
  });

  it("validates every environment with the checks of openenv validate", () => {
    const ok = spawnSync(process.execPath, [BIN, "validate"], { encoding: "utf8", timeout: 120_000 });
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/^PASS reverse-text$/m);
    expect(ok.stdout).toMatch(/^PASS js-code$/m);
    expect(ok.stdout).not.toMatch(/FAIL/);
    const bad = spawnSync(process.execPath, [BIN, "validate", "nope"], { encoding: "utf8", timeout: 120_000 });
    expect(bad.status).toBe(2);
  });

  it("lists environments and rejects unknown commands and environments with usage", () => {
    const list = spawnSync(process.execPath, [BIN, "list"], { encoding: "utf8", timeout: 120_000 });
    expect(list.status).toBe(0);
    expect(list.stdout).toMatch(/reverse-text/);
    expect(list.stdout).toMatch(/alphabet-sort/);
    const bad = spawnSync(process.execPath, [BIN, "frobnicate"], { encoding: "utf8", timeout: 120_000 });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/unknown command/);
    const badEnv = spawnSync(process.execPath, [BIN, "serve", "nope"], { encoding: "utf8", timeout: 120_000 });
    expect(badEnv.status).toBe(2);
    expect(badEnv.stderr).toMatch(/unknown environment "nope"/);
  });

  it("answers --help on every command", () => {
    for (const command of ["serve", "list", "validate", "eval", "init", "run-code"]) {
      const r = envworker([command, "--help"]);
      expect(r.status, command).toBe(0);
      expect(r.stdout, command).toMatch(new RegExp(`usage: envworker ${command}`));
    }
  });

  it("loads environments from a module path, a project's package.json and shipped names", () => {
    const byPath = envworker(["list", "./test/fixtures/user-project/env.ts", "countdown"]);
    expect(byPath.status).toBe(0);
    expect(byPath.stdout.split("\n").filter(Boolean).map((l) => l.split(/\s+/)[0])).toEqual(["echo-fixture", "countdown"]);
    // In the project's folder, its package.json "envworker" field lists what to serve.
    const project = envworker(["list"], PROJECT);
    expect(project.stdout.split("\n").filter(Boolean).map((l) => l.split(/\s+/)[0])).toEqual(["echo-fixture", "wordle"]);
    // ...and its environments are known by name.
    expect(envworker(["list", "echo-fixture"], PROJECT).stdout).toMatch(/^echo-fixture /);
    const missing = envworker(["list", "./nope.ts"]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/\.\/nope\.ts: no such file/);
    const notEnv = envworker(["list", "./test/helpers/http.ts"]);
    expect(notEnv.status).toBe(2);
    expect(notEnv.stderr).toMatch(/must default-export an environment made by defineEnvironment/);
  });

  it("validate fails, naming the error, on environments broken in respond, in stateless scoring and in determinism", () => {
    const r = envworker(["validate", "./broken.ts"], PROJECT);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/^FAIL throws-in-respond$/m);
    expect(r.stdout).toMatch(/step 1: HTTP 422 EXECUTION_ERROR: throws-in-respond: respond failed: respond exploded/);
    expect(r.stdout).toMatch(/^FAIL reward-needs-state$/m);
    expect(r.stdout).toMatch(/\/score gives 0, the episode gave 2/);
    expect(r.stdout).toMatch(/^FAIL not-deterministic$/m);
    expect(r.stdout).toMatch(/FAIL POST \/reset with the same seed gives the same prompt/);
    // The server's log has the stack of the respond that threw.
    expect(r.stderr).toMatch(/respond exploded env=throws-in-respond episode=\S+\n\s+Error: respond exploded\n\s+at /);
  });

  it("validate --url takes an environment's URL, and reports an unreachable server in one line", async () => {
    const server = await serve(["--port", "0", "reverse-text", "countdown"]);
    try {
      const one = envworker(["validate", "--url", `${server.url}/envs/countdown`]);
      expect(one.status).toBe(0);
      expect(one.stdout).toMatch(/^PASS countdown$/m);
      expect(one.stdout).not.toMatch(/reverse-text/);
      const all = envworker(["validate", "--url", server.url]);
      expect(all.stdout).toMatch(/^PASS reverse-text$/m);
      expect(all.stdout).toMatch(/^PASS countdown$/m);
      const wrong = envworker(["validate", "--url", `${server.url}/nothing-here`]);
      expect(wrong.status).toBe(1);
      expect(wrong.stderr).toMatch(/no environments at/);
    } finally {
      await stopGroup(server.child);
    }
    const port = await freePort();
    const down = envworker(["validate", "--url", `http://127.0.0.1:${port}/envs/reverse-text`]);
    expect(down.status).toBe(1);
    expect(down.stdout).toBe("");
    expect(down.stderr.trim().split("\n")).toEqual([expect.stringMatching(new RegExp(`^envworker validate: cannot reach http://127\\.0\\.0\\.1:${port}: fetch failed \\(ECONNREFUSED\\)$`))]);
  });

  it("serve --watch restarts the server with the changed module", async () => {
    const dir = mkdtempSync(join(tmpdir(), "envworker-watch-"));
    try {
      const source = readFileSync(join(PROJECT, "env.ts"), "utf8").replace("../../../src/index.ts", resolve(import.meta.dirname, "../../../src/index.ts"));
      writeFileSync(join(dir, "env.ts"), source);
      writeFileSync(join(dir, "package.json"), '{ "type": "module" }');
      // A project root: its node_modules is not watched, the root folder itself is.
      mkdirSync(join(dir, "node_modules"));
      const port = await freePort();
      const server = await serve(["--watch", "--port", String(port), "./env.ts"], dir);
      try {
        const description = async () => (await get(`${server.url}/envs`)).body.envs[0].description;
        expect(await description()).toBe("Say the word.");
        writeFileSync(join(dir, "env.ts"), source.replace("Say the word.", "Say it again."));
        let now = "";
        for (let i = 0; i < 200 && now !== "Say it again."; i++) {
          await new Promise((r) => setTimeout(r, 100));
          now = await description().catch(() => "");
        }
        expect(now).toBe("Say it again.");
        expect(server.output()).toMatch(/env\.ts changed; restarting the server/);
      } finally {
        await stopGroup(server.child);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("init writes a package, and refuses a bad name or a folder in use", () => {
    const dir = mkdtempSync(join(tmpdir(), "envworker-init-"));
    try {
      const ok = envworker(["init", "my-game"], dir);
      expect(ok.status).toBe(0);
      // From a checkout the package is linked to it: npm resolves it without a registry.
      expect(ok.stdout).toContain(`envworker dependency: file:${resolve(import.meta.dirname, "../../..")} (this checkout)`);
      for (const f of ["package.json", "README.md", "src/index.ts", "src/worker.ts", "test/env.test.ts", "wrangler.toml", ".gitignore", "tsconfig.json"]) {
        expect(existsSync(join(dir, "my-game", f)), f).toBe(true);
      }
      const pkg = JSON.parse(readFileSync(join(dir, "my-game/package.json"), "utf8"));
      expect(pkg).toMatchObject({ name: "my-game", dependencies: { envworker: `file:${resolve(import.meta.dirname, "../../..")}` }, envworker: { environments: ["./src/index.ts"] } });
      // envworker's install script, allowed by the key npm matches a `file:` dependency by: its spec.
      expect(pkg.allowScripts).toMatchObject({ bufferutil: true, [`file:${resolve(import.meta.dirname, "../../..")}`]: true, "isolated-vm": true });
      expect(pkg.allowScripts.envworker).toBeUndefined();
      expect(readFileSync(join(dir, "my-game/README.md"), "utf8")).not.toContain("npmjs.com");
      // --dependency: anything npm takes (a packed tarball, the registry's range).
      expect(envworker(["init", "tarball-game", "--dependency", "file:../envworker-0.1.0.tgz"], dir).status).toBe(0);
      const tarballPkg = JSON.parse(readFileSync(join(dir, "tarball-game/package.json"), "utf8"));
      expect(tarballPkg.dependencies.envworker).toBe("file:../envworker-0.1.0.tgz");
      expect(tarballPkg.allowScripts["file:../envworker-0.1.0.tgz"]).toBe(true);
      expect(envworker(["init", "registry-game", "--dependency", "^0.1.0"], dir).status).toBe(0);
      expect(JSON.parse(readFileSync(join(dir, "registry-game/package.json"), "utf8")).allowScripts.envworker).toBe(true);
      expect(readFileSync(join(dir, "my-game/src/index.ts"), "utf8")).toMatch(/name: "my-game"/);
      expect(envworker(["init", "my-game"], dir).status).toBe(2);
      expect(envworker(["init", "My_Game"], dir).stderr).toMatch(/kebab-case/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("loads a project's envworker.config.ts and an installed package by name", () => {
    const dir = mkdtempSync(join(tmpdir(), "envworker-config-"));
    try {
      const env = readFileSync(join(PROJECT, "env.ts"), "utf8").replace("../../../src/index.ts", resolve(import.meta.dirname, "../../../src/index.ts"));
      writeFileSync(join(dir, "package.json"), '{ "type": "module" }');
      writeFileSync(join(dir, "env.ts"), env);
      writeFileSync(join(dir, "envworker.config.ts"), 'export default { environments: ["./env.ts", "countdown", "packaged-env"] };\n');
      // An installed package whose entry (exports, import condition) default-exports an environment.
      const pkg = join(dir, "node_modules/packaged-env");
      mkdirSync(pkg, { recursive: true });
      writeFileSync(join(pkg, "package.json"), '{ "name": "packaged-env", "type": "module", "exports": { ".": { "import": "./main.ts" } } }');
      writeFileSync(join(pkg, "main.ts"), env.replace('"echo-fixture"', '"packaged-echo"'));
      const r = envworker(["list"], dir);
      expect(r.stderr).toBe("");
      expect(r.stdout.split("\n").filter(Boolean).map((l) => l.split(/\s+/)[0])).toEqual(["echo-fixture", "countdown", "packaged-echo"]);
      expect(envworker(["list", "packaged-env"], dir).stdout).toMatch(/^packaged-echo /);
      writeFileSync(join(dir, "envworker.config.ts"), "export default { environments: [] };\n");
      const bad = envworker(["list"], dir);
      expect(bad.status).toBe(2);
      expect(bad.stderr).toMatch(/envworker\.config\.ts: its default export must be \{ environments: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
