/**
 * `envworker serve --watch`: the server runs in a child process (this command without --watch),
 * restarted when a file in the folders of the loaded modules changes. A fresh process is the one
 * reload that is always complete: Node caches every imported module (the module's own imports
 * included), and environments may hold state of their own. A child that fails to start (a syntax
 * error being fixed) is started again on the next change; open episodes do not survive a restart.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, watch, type FSWatcher } from "node:fs";
import { dirname, join, relative } from "node:path";

/** Changes under these folders never restart the server (installs, builds, eval outputs, VCS). */
const IGNORED_DIRS = new Set(["node_modules", "dist", "outputs", "coverage"]);
const IGNORED = /(^|[\\/])(node_modules|\.[^\\/]+|dist|outputs|coverage)([\\/]|$)/;
const DEBOUNCE_MS = 200;

/**
 * What to watch for a module's folder: all of it, unless it holds node_modules (a project's root,
 * where the config is): then the folder itself and each other subfolder, so no watch is ever set
 * on the thousands of folders of an install.
 */
function watchTargets(dir: string): { path: string; recursive: boolean }[] {
  if (!existsSync(join(dir, "node_modules"))) return [{ path: dir, recursive: true }];
  const subdirs = readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory() && !IGNORED_DIRS.has(d.name) && !d.name.startsWith("."));
  return [{ path: dir, recursive: false }, ...subdirs.map((d) => ({ path: join(dir, d.name), recursive: true }))];
}

export function superviseServe(serveArgs: readonly string[], files: readonly string[]): Promise<number> {
  const dirs = [...new Set(files.map((f) => dirname(f)))];
  const targets = new Map<string, boolean>();
  for (const dir of dirs) for (const { path, recursive } of watchTargets(dir)) targets.set(path, (targets.get(path) ?? false) || recursive);
  if (dirs.length === 0) {
    console.error("envworker: --watch: nothing to watch (the shipped environments are not watched); serving without it");
  }
  // Re-run this same command (bin shim and its flags included: --no-node-snapshot, the tsx loader).
  const command = [...process.execArgv, process.argv[1]!, "serve", ...serveArgs];
  let child: ChildProcess | undefined;
  let stopping = false;
  let restartTimer: ReturnType<typeof setTimeout> | undefined;
  // Children stopped to be restarted: their exit is expected, not reported.
  const restarting = new WeakSet<ChildProcess>();

  const start = () => {
    // The IPC channel ties the server to this supervisor: it stops when the supervisor goes (bin/envworker.js).
    const c = spawn(process.execPath, command, { stdio: ["inherit", "inherit", "inherit", "ipc"], env: { ...process.env, ENVWORKER_SHIM_PARENT: "1" } });
    child = c;
    c.once("exit", (code, signal) => {
      if (child === c) child = undefined;
      if (!stopping && !restarting.has(c)) console.error(`envworker: the server exited (${signal ?? `code ${code}`}); waiting for a change to restart it`);
    });
  };

  const restart = async (why: string) => {
    console.error(`envworker: ${why} changed; restarting the server`);
    const old = child;
    if (old && old.exitCode === null && old.signalCode === null) {
      restarting.add(old);
      const exited = new Promise((r) => old.once("exit", r));
      old.kill("SIGTERM");
      await exited;
    }
    if (!stopping) start();
  };

  const watchers: FSWatcher[] = [];
  for (const [dir, recursive] of targets) {
    const w = watch(dir, { recursive }, (_event, name) => {
      const file = name ? String(name) : "";
      if (IGNORED.test(file)) return;
      clearTimeout(restartTimer);
      restartTimer = setTimeout(() => void restart(relative(process.cwd(), `${dir}/${file}`) || dir), DEBOUNCE_MS);
    });
    w.on("error", (err) => console.error(`envworker: --watch: ${dir}: ${err.message}`));
    watchers.push(w);
  }
  start();

  return new Promise((resolve) => {
    const stop = () => {
      if (stopping) return;
      stopping = true;
      clearTimeout(restartTimer);
      for (const w of watchers) w.close();
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return resolve(0);
      c.once("exit", () => resolve(0));
      c.kill("SIGTERM");
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
