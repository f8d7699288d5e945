/**
 * `envworker serve` exactly as a user runs it (any arguments, any environment; startLiveServer
 * always adds `--port 0`), for the tests of PORT/HOST and of serve's flags.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

export interface ServeProcess {
  /** The origin the server printed. */
  url: string;
  /** The server's pid (the process spawned is the server: SERVER_NODE_FLAGS). */
  pid: number;
  stdout(): string;
  /** What it wrote on stderr so far. */
  stderr(): string;
  /** SIGTERM and wait for the exit; resolves with the exit code or signal. */
  stop(): Promise<string>;
}

/**
 * The Node flag bin/envworker.js would otherwise re-execute itself to add (isolated-vm's
 * --no-node-snapshot): given directly, the spawned process is the server itself, so its pid, RSS
 * and liveness are the server's. dist/ is fresh (test/global-setup.ts), so it runs the compiled
 * code of these sources (`--conditions=envworker-source` would ask for the sources through tsx).
 */
export const SERVER_NODE_FLAGS = ["--no-node-snapshot"];

export async function spawnServe(args: string[], env: Record<string, string> = {}): Promise<ServeProcess> {
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, "bin/envworker.js", "serve", ...args], {
    cwd: ROOT,
    env: { ...process.env, PORT: "", HOST: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<string>((res) => child.once("exit", (code, signal) => res(String(signal ?? code))));
  const url = await new Promise<string>((res, rej) => {
    const onData = () => {
      const m = /serving \d+ environment\(s\) on (http:\/\/\S+)/.exec(stdout);
      if (m) {
        child.stdout.off("data", onData);
        res(m[1]!);
      }
    };
    child.stdout.on("data", onData);
    void exited.then((how) => rej(new Error(`envworker serve exited (${how}) before listening:\n${stdout}\n${stderr}`)));
  });
  return {
    url,
    pid: child.pid!,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      const how = await exited;
      clearTimeout(timer);
      return how;
    },
  };
}

/** A TCP port nobody listens on right now (the kernel's pick, released again). */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, host, () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}
