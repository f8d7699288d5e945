/**
 * How Python environments' workers are run (Node only): the interpreter, the deadlines, the size of
 * a message, the memory and the network, from the ENVWORKER_PYTHON* variables (README.md,
 * "Python environments"). Read where a worker starts, so a test can set them per server.
 */
import { execFileSync } from "node:child_process";
import { existsSync, realpathSync, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ProgramProfile } from "../../wall/confine.ts";
import { processSettings, readSetting, type SettingsSource } from "../../settings/settings.ts";

export interface PythonSettings {
  /** ENVWORKER_PYTHON (default python3, looked up on PATH). */
  python: string;
  /** ENVWORKER_PYTHON_TIMEOUT_S (default 20): one call's deadline, time waiting for sandbox runs not counted. */
  timeoutMs: number;
  /** ENVWORKER_PYTHON_START_TIMEOUT_S (default 120): the worker's start, its module's import included. */
  startTimeoutMs: number;
  /** ENVWORKER_PYTHON_MAX_MESSAGE_MB (default 64): the largest message either way (a dataset is one). */
  maxMessageBytes: number;
  /** ENVWORKER_PYTHON_MEMORY_MB (default 4096): the worker's address space. */
  memoryMb: number;
  /** ENVWORKER_PYTHON_NETWORK=1: the worker may open connections (a judge's API); off by default. */
  network: boolean;
  /** ENVWORKER_PYTHON_CALLS (default 16): respond/reward/tool calls a worker runs at once (a process each). */
  calls: number;
  /** ENVWORKER_PYTHON_CALLS_PER_CLIENT (default 2): of those, one client's at most; the rest queue in turn with other clients'. */
  callsPerClient: number;
}

function seconds(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw === "") return fallback * 1000;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name}=${raw}: give a positive number of seconds`);
  return n * 1000;
}

function positive(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name}=${raw}: give a positive integer`);
  return n;
}

export function pythonSettings(env: SettingsSource = processSettings()): PythonSettings {
  return {
    python: readSetting("ENVWORKER_PYTHON", env) || "python3",
    timeoutMs: seconds(readSetting("ENVWORKER_PYTHON_TIMEOUT_S", env), 20, "ENVWORKER_PYTHON_TIMEOUT_S"),
    startTimeoutMs: seconds(readSetting("ENVWORKER_PYTHON_START_TIMEOUT_S", env), 120, "ENVWORKER_PYTHON_START_TIMEOUT_S"),
    maxMessageBytes: positive(readSetting("ENVWORKER_PYTHON_MAX_MESSAGE_MB", env), 64, "ENVWORKER_PYTHON_MAX_MESSAGE_MB") * 1024 * 1024,
    memoryMb: positive(readSetting("ENVWORKER_PYTHON_MEMORY_MB", env), 4096, "ENVWORKER_PYTHON_MEMORY_MB"),
    network: readSetting("ENVWORKER_PYTHON_NETWORK", env) === "1",
    calls: positive(readSetting("ENVWORKER_PYTHON_CALLS", env), 16, "ENVWORKER_PYTHON_CALLS"),
    callsPerClient: positive(readSetting("ENVWORKER_PYTHON_CALLS_PER_CLIENT", env), 2, "ENVWORKER_PYTHON_CALLS_PER_CLIENT"),
  };
}

/** clients/python/src: the `envworker` package the worker imports (the server's own, ahead of any installed one). */
export function clientSource(): string {
  // src/node/python-envs/ (or dist/src/node/python-envs/) -> the repository (or package) root.
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++, dir = dirname(dir)) {
    const candidate = join(dir, "clients", "python", "src");
    if (existsSync(join(candidate, "envworker", "worker.py"))) return candidate;
  }
  throw new Error("the envworker Python package (clients/python/src) is not where envworker is installed");
}

/** Every `name` on PATH (or `name` itself when it is a path). */
function candidates(name: string): string[] {
  if (name.includes("/")) {
    if (!existsSync(name)) throw new Error(`ENVWORKER_PYTHON=${name} does not exist`);
    return [name];
  }
  const found = (process.env.PATH ?? "/usr/bin:/bin").split(delimiter).map((dir) => join(dir, name)).filter((p) => existsSync(p));
  if (found.length === 0) throw new Error(`${name} is not on PATH: Python environments need Python 3.10+ (set ENVWORKER_PYTHON to its path)`);
  return found;
}

/**
 * Why a worker could not read `path` (a uid of its own when the server is root: it reads only what
 * every user may), or undefined when it can: the first folder above it others cannot enter, or the
 * path itself.
 */
export function unreadableBecause(path: string, withFix = false): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return `${path} does not exist`;
  }
  const mode = (q: string) => (statSync(q).mode & 0o777).toString(8).padStart(4, "0");
  // The folders above the path as given (a symlink's own) and above what it points to.
  const above = new Set<string>();
  for (const p of [path, real]) for (let q = dirname(p); q !== "/" && q !== "."; q = dirname(q)) above.add(q);
  for (const q of [...above].sort((a, b) => a.length - b.length)) {
    if ((statSync(q).mode & 0o001) === 0) return `${q} is ${mode(q)}: others cannot enter it${withFix ? ` (chmod o+x ${q})` : ""}`;
  }
  const st = statSync(real);
  if ((st.mode & 0o004) === 0 || (st.isDirectory() && (st.mode & 0o001) === 0)) return `${real} is ${mode(real)}: others cannot read it${withFix ? ` (chmod ${st.isDirectory() ? "-R " : ""}o+rX ${real})` : ""}`;
  return undefined;
}

export interface Interpreter {
  /** sys.executable (a venv's own, so its packages are the ones seen). */
  executable: string;
  /** What it reads: its prefixes and sys.path (real paths). */
  readable: string[];
  /** Its version, "3.11". */
  version: string;
  /** Why this one, in a line: how it was named, and the ones passed over with why. */
  why: string;
}

const interpreters = new Map<string, Interpreter>();

/**
 * The interpreter ENVWORKER_PYTHON names, asked once for where it is and what it reads. A `python3`
 * the worker's own user could not read (pyenv's under /root, when the server runs as root) is passed
 * over for the next one on PATH, saying so (describeInterpreter); a path given in ENVWORKER_PYTHON
 * is taken as it is, or refused in a line that says what to do.
 */
export function pythonInterpreter(name: string): Interpreter {
  const known = interpreters.get(name);
  if (known) return known;
  const skipped: string[] = [];
  for (const candidate of candidates(name)) {
    const out = execFileSync(
      candidate,
      ["-I", "-c", "import sys, json; print(json.dumps([sys.executable, sys.version_info[:2], sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, *[p for p in sys.path if p]})]))"],
      { env: { PATH: process.env.PATH ?? "" }, encoding: "utf8", timeout: 60_000 },
    );
    const [executable, version, paths] = JSON.parse(out) as [string, [number, number], string[]];
    if (version[0]! < 3 || (version[0] === 3 && version[1]! < 10)) throw new Error(`${candidate} is Python ${version.join(".")}; Python environments need 3.10 or newer (set ENVWORKER_PYTHON)`);
    const blocked = unreadableBecause(executable);
    if (blocked) {
      if (!name.includes("/")) {
        skipped.push(`${executable} (${blocked})`);
        continue;
      }
      throw new Error(`ENVWORKER_PYTHON=${name} (${executable}) cannot be read by the Python workers' own user (the server runs as root, each worker as a user of its own): ${blocked}. ${VENV_HINT}`);
    }
    const readable = [realpathSync(executable), executable, ...paths.filter((p) => existsSync(p) && unreadableBecause(p) === undefined).map((p) => realpathSync(p))];
    const how = name.includes("/") ? `ENVWORKER_PYTHON=${name}` : `${name}, the first on PATH ${process.getuid?.() === 0 ? "the workers' own user can read" : ""}`.trim();
    const why = skipped.length > 0 ? `${how}; passed over ${skipped.join(", ")}` : readSetting("ENVWORKER_PYTHON") ? how : `${how} (ENVWORKER_PYTHON chooses another)`;
    const found = { executable, readable: [...new Set(readable)], version: version.join("."), why };
    interpreters.set(name, found);
    return found;
  }
  throw new Error(`no ${name} on PATH can be read by the Python workers' own user (the server runs as root, each worker as a user of its own): ${skipped.join(", ")}. ${VENV_HINT}`);
}

/** What to do when the Python a root user has is under /root (pyenv, conda, a venv there). */
const VENV_HINT =
  "Make a venv every user can read and name it: `/usr/bin/python3 -m venv /opt/envworker-python && /opt/envworker-python/bin/pip install <your packages>`, then `export ENVWORKER_PYTHON=/opt/envworker-python/bin/python` (Debian: apt-get install python3-venv)";

/** The line a server says at start when it serves Python environments: which interpreter, and why. */
export function describeInterpreter(settings: PythonSettings = pythonSettings()): string {
  const i = pythonInterpreter(settings.python);
  return `envworker: Python environments run on ${i.executable} (Python ${i.version}): ${i.why}`;
}

/**
 * What the worker runs: the bootstrap puts the server's `envworker` package first and starts it.
 * First, a process that hashes strings at random (every `-I` one: it ignores PYTHONHASHSEED) runs
 * itself again with PYTHONHASHSEED=0 as its whole environment and -s -B (-P from 3.11) instead of
 * -I: environments that draw with `random.choice(list(a_set_of_strings))` (five of reasoning-gym's)
 * then give the same task for the same seed in every worker, and a restarted worker scores an
 * episode's item as the one that drew it.
 */
const MAIN = (src: string) => `import sys; sys.path.insert(0, ${JSON.stringify(src)}); import envworker.worker as w; w.main()`;
const BOOT = (src: string) =>
  [
    "import os, sys",
    `if sys.flags.hash_randomization: os.execve(sys.executable, [sys.executable, "-s", "-B", *(["-P"] if sys.version_info >= (3, 11) else []), "-c", ${JSON.stringify(MAIN(src))}, *sys.argv[1:]], {"PYTHONHASHSEED": "0"})`,
    MAIN(src),
  ].join("\n");

/**
 * The confinement profile of a worker for `target` (a file, a folder or a module name), as the
 * sandbox hosts are confined (src/wall/confine.ts): an empty environment, a uid of its own when
 * the server runs as root, resource limits, bubblewrap with read-only binds of the interpreter, its
 * packages, the envworker package and the target's folder, and no network unless allowed.
 */
export function workerProfile(target: string, settings: PythonSettings): ProgramProfile {
  return {
    kind: "program",
    name: "python-env",
    addressSpaceMb: settings.memoryMb,
    network: settings.network,
    async command() {
      const { executable, readable: files } = pythonInterpreter(settings.python);
      const src = clientSource();
      const readable = [...files, src];
      if (target.startsWith("/")) {
        const dir = existsSync(target) && !target.endsWith(".py") ? target : dirname(target);
        const blocked = unreadableBecause(target, true);
        if (blocked) throw new Error(`${target} cannot be read by the Python workers' own user (the server runs as root, each worker as a user of its own): ${blocked}. Move it where every user may read it (under /opt or /srv), or run what the parentheses say`);
        readable.push(dir);
      }
      return { executable, args: ["-I", "-B", "-c", BOOT(src), target, String(settings.maxMessageBytes)], readable: [...new Set(readable)] };
    },
  };
}
