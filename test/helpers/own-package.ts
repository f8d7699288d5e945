/**
 * A package made by `envworker init` outside this checkout, set up as `npm install` sets up its
 * `file:CHECKOUT` dependency (node_modules/envworker a symlink to the checkout), and the command
 * run from the package's own directory as a user runs `npx envworker ...` there. Nothing is
 * fetched: the package's other dependencies (vitest, typescript) are only linked when a test asks.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "../..");

/** The environment without vitest's variables, so a command starts as from a terminal. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("VITEST") && k !== "NODE_OPTIONS" && k !== "TINYPOOL_WORKER_ID") env[k] = v;
  return { ...env, NO_COLOR: "1", PORT: "", HOST: "", ...extra };
}

export interface OwnPackage {
  /** The temporary folder holding the package (removed by `remove`). */
  tmp: string;
  /** The package's directory. */
  dir: string;
  /** node_modules/envworker/bin/envworker.js of the package: what `npx envworker` runs there. */
  bin: string;
  /** `npx envworker ARGS` in the package's directory, to its end. */
  run(args: string[], env?: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }>;
  /**
   * `npx envworker ARGS` in the package's directory, left running; `group`: in a process group of
   * its own, as a terminal runs a command (a signal to `-pid` reaches every process of it, as Ctrl-C does).
   */
  spawn(args: string[], env?: Record<string, string>, opts?: { group?: boolean }): LiveCommand;
  /** Link these packages of the checkout's node_modules into the package's (vitest, typescript, ...). */
  link(...names: string[]): void;
  remove(): void;
}

export interface LiveCommand {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `re` in stdout, or stderr (rejects if the command exits first). */
  waitFor(re: RegExp, stream?: "stdout" | "stderr"): Promise<RegExpExecArray>;
  /** Its exit code or signal, once it exits. */
  exited: Promise<string>;
  /** SIGTERM (or `signal`), then its exit code or signal. */
  stop(signal?: NodeJS.Signals): Promise<string>;
}

export function liveCommand(child: ChildProcess): LiveCommand {
  let out = "";
  let err = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<string>((res) => child.once("exit", (code, signal) => res(String(signal ?? code))));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor: (re, stream = "stdout") =>
      new Promise((res, rej) => {
        const source = stream === "stdout" ? child.stdout! : child.stderr!;
        const check = () => {
          const m = re.exec(stream === "stdout" ? out : err);
          if (!m) return false;
          source.off("data", check);
          res(m);
          return true;
        };
        if (check()) return;
        source.on("data", check);
        void exited.then((how) => rej(new Error(`the command exited (${how}) before printing ${re}:\n${out}\n${err}`)));
      }),
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      const how = await exited;
      clearTimeout(timer);
      return how;
    },
  };
}

/**
 * `envworker init NAME` (`python`: `init --python NAME`) in a new temporary folder, installed as
 * `npm install` would link it.
 */
export async function makeOwnPackage(name = "my-env", opts: { python?: boolean } = {}): Promise<OwnPackage> {
  const tmp = mkdtempSync(join(tmpdir(), "envworker-own-"));
  // As a home folder is (mkdtemp makes 0700): sandbox processes, a user of their own under root, reach through it.
  chmodSync(tmp, 0o755);
  const dir = join(tmp, name);
  await new Promise<void>((res, rej) =>
    execFile(process.execPath, [join(ROOT, "bin/envworker.js"), "init", ...(opts.python ? ["--python"] : []), name], { cwd: tmp, env: cleanEnv() }, (err) => (err ? rej(err) : res())),
  );
  mkdirSync(join(dir, "node_modules", ".bin"), { recursive: true });
  symlinkSync(ROOT, join(dir, "node_modules", "envworker"));
  const bin = join(dir, "node_modules", "envworker", "bin", "envworker.js");
  return {
    tmp,
    dir,
    bin,
    run: (args, env = {}) =>
      new Promise((res) =>
        execFile(process.execPath, [bin, ...args], { cwd: dir, env: cleanEnv(env), maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
          res({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
        ),
      ),
    spawn: (args, env = {}, opts = {}) =>
      liveCommand(spawn(process.execPath, [bin, ...args], { cwd: dir, env: cleanEnv(env), stdio: ["ignore", "pipe", "pipe"], detached: opts.group === true })),
    link(...names) {
      for (const n of names) {
        mkdirSync(join(dir, "node_modules", n, ".."), { recursive: true });
        symlinkSync(join(ROOT, "node_modules", n), join(dir, "node_modules", n));
      }
    },
    remove: () => rmSync(tmp, { recursive: true, force: true }),
  };
}
