/**
 * `envworker serve --watch`: the server runs in a child process (this command without --watch),
 * restarted when a file in the folders of the loaded modules changes. A fresh process is the one
 * reload that is always complete: Node caches every imported module (the module's own imports
 * included), and environments may hold state of their own. A child that fails to start (a syntax
 * error being fixed) is started again on the next change; open episodes do not survive a restart.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, statSync, watch, type Dirent, type FSWatcher } from "node:fs";
import { dirname, join, relative } from "node:path";

/** Changes under these folders never restart the server (installs, builds, eval outputs, VCS). */
const IGNORED_DIRS = new Set(["node_modules", "dist", "outputs", "coverage"]);
const IGNORED = /(^|[\\/])(node_modules|\.[^\\/]+|dist|outputs|coverage)([\\/]|$)/;
const DEBOUNCE_MS = 200;
/** Folders watched at most (each is an inotify watch on Linux): a module's folder is a project, not a disk. */
const MAX_DIRS = 2000;

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

/**
 * Watches folders and calls `onChange` with the path of whatever changed in them, however it was
 * written. Each folder gets a watch of its own (not fs.watch's `recursive`), and a folder that
 * appears is watched when it does: on Linux, Node's recursive watch follows each file, and an
 * editor that saves by writing a new file and renaming it over the old one (sed -i, vim) left it
 * following the replaced file, so no later save restarted anything. A folder's own watch sees
 * every write, rename and new file in it.
 */
class FolderWatch {
  private readonly watchers = new Map<string, FSWatcher>();
  private warned = false;

  constructor(private readonly onChange: (path: string) => void) {}

  add(dir: string, recursive: boolean): void {
    if (this.watchers.has(dir)) return;
    if (this.watchers.size >= MAX_DIRS) {
      if (!this.warned) console.error(`envworker: --watch: more than ${MAX_DIRS} folders; changes in the others are not seen`);
      this.warned = true;
      return;
    }
    let w: FSWatcher;
    try {
      w = watch(dir, (_event, name) => {
        const file = name ? String(name) : "";
        if (IGNORED.test(file)) return;
        const path = file ? join(dir, file) : dir;
        // A new folder (made, or renamed into place): watch it and what it holds.
        if (recursive && file && isDir(path)) this.add(path, true);
        this.onChange(path);
      });
    } catch (err) {
      // Gone before it could be watched (a temporary folder): nothing to see there.
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") console.error(`envworker: --watch: ${dir}: ${(err as Error).message}`);
      return;
    }
    w.on("error", (err) => {
      // The folder itself went away (deleted, or renamed): forget it; a new one of that name is
      // seen by its parent's watch.
      this.watchers.get(dir)?.close();
      this.watchers.delete(dir);
      if ((err as NodeJS.ErrnoException).code !== "ENOENT" && (err as NodeJS.ErrnoException).code !== "EPERM") console.error(`envworker: --watch: ${dir}: ${err.message}`);
    });
    this.watchers.set(dir, w);
    if (!recursive) return;
    let entries: Dirent[] = [];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const d of entries) if (d.isDirectory() && !IGNORED_DIRS.has(d.name) && !d.name.startsWith(".")) this.add(join(dir, d.name), true);
  }

  close(): void {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
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

  // One restart at a time: a change during one (the old server still finishing its requests)
  // restarts again once it is done, so the server always ends up running the latest files.
  let inProgress: Promise<void> | undefined;
  let again: string | undefined;
  const restart = async (why: string): Promise<void> => {
    if (inProgress) {
      again = why;
      return;
    }
    console.error(`envworker: ${why} changed; restarting the server`);
    inProgress = (async () => {
      const old = child;
      if (old && old.exitCode === null && old.signalCode === null) {
        restarting.add(old);
        const exited = new Promise((r) => old.once("exit", r));
        old.kill("SIGTERM");
        await exited;
      }
      if (!stopping) start();
    })();
    await inProgress;
    inProgress = undefined;
    if (again !== undefined && !stopping) {
      const next = again;
      again = undefined;
      await restart(next);
    }
  };

  const watching = new FolderWatch((path) => {
    clearTimeout(restartTimer);
    restartTimer = setTimeout(() => void restart(relative(process.cwd(), path) || path), DEBOUNCE_MS);
  });
  for (const [dir, recursive] of targets) watching.add(dir, recursive);
  start();

  return new Promise((resolve) => {
    const stop = () => {
      if (stopping) return;
      stopping = true;
      clearTimeout(restartTimer);
      watching.close();
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return resolve(0);
      c.once("exit", () => resolve(0));
      c.kill("SIGTERM");
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
