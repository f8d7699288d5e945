/**
 * The launcher every sandbox host goes through (Node only): it starts a host entry as a child
 * process with least privilege. The engine's own sandbox (an isolate, QuickJS, WebAssembly) is the
 * first wall; this is the second, for a guest that breaks the first. A host is either a Node entry
 * of this repository (`NodeProfile`: isolated-vm, QuickJS) or another program (`ProgramProfile`:
 * the Python zygote, a Python interpreter running wasmtime), which gets everything below except
 * what is Node's own (the permission model and its flags, the bundle). All at once:
 *
 * - an EMPTY environment: no ENVWORKER_TOKEN, no secrets, no PATH (the wire is stdin/stdout,
 *   host-channel.ts, so not even Node's IPC variables);
 * - Node's PERMISSION MODEL (`--experimental-permission`): reads only of the host's own bundle and
 *   the packages its engine loads; no writes, no child processes, no inspector, no WASI; addons only
 *   for isolated-vm, worker threads only where a profile asks (none does now);
 * - a UID/GID OF ITS OWN when the server runs as root (HOST_UID_BASE + n, a different one for each
 *   live host: hosts cannot signal, ptrace or read each other either);
 * - RESOURCE LIMITS (prlimit, util-linux): address space, file size 0, no core dumps, a process
 *   (thread) count;
 * - BUBBLEWRAP: no network, its own PID/IPC/UTS/user namespaces, a file system made only of
 *   read-only binds of what Node (or the program) and the engine need, a fresh /proc, /dev and
 *   (Node hosts) an empty /tmp, killed with the server (`--die-with-parent`). Required: without it
 *   (not installed, failing, turned off) a host is refused unless ENVWORKER_UNCONFINED=1 (or
 *   ConfineOptions.unconfined) says otherwise.
 *
 * The entries are TypeScript in this repository and tsx cannot work inside the permission model
 * (its loader thread stats paths outside the allowed ones, and esbuild transforms in a child
 * process), so each profile's entries are bundled once per server process with esbuild into a
 * private directory (node_modules packages stay external, imported by absolute URL, which is also
 * exactly the list of package directories the host may read).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { resolve as resolveModule } from "import-meta-resolve";
import { RUN_DELAY_FILE } from "../sched/run-delay.ts";
import { readSetting } from "../settings/settings.ts";

export interface NodeProfile {
  kind?: "node";
  /** Names the bundle (one per profile and server process). */
  name: string;
  /** The host's entry modules by name; the first is the process's main, the others (worker threads) sit beside it as `<name>.mjs`. */
  entries: Record<string, URL>;
  /** Packages left out of the bundle (native addons, wasm they load from their own directory); the host may read their directories. */
  packages: string[];
  /** Native addons (isolated-vm). */
  addons?: boolean;
  /** Directories the host may read beyond its bundle and packages (a native addon of this repository). */
  readable?: string[];
  /** Worker threads (the Pyodide host once ran its interrupt timer on one; no profile asks now). */
  workers?: boolean;
  /**
   * `--disallow-code-generation-from-strings`: no eval/Function in the host's own JavaScript, so a
   * guest that reaches a host object's constructor cannot turn strings into host code (isolated-vm
   * cannot have it: the flag is V8's, and guests' own eval would go with it).
   */
  noEval?: boolean;
  /** Other Node flags (heap size, --no-node-snapshot, ...). */
  nodeFlags?: string[];
  /** RLIMIT_AS in MiB: measured per engine (README.md "Confinement"). */
  addressSpaceMb: number;
  /**
   * Native stack of the main thread, MiB (RLIMIT_STACK, and V8's limit just under it), where the
   * engine runs deep native recursion there. Without prlimit the OS default (8 MiB) stays
   * and V8's limit follows it.
   */
  stackMb?: number;
}

/**
 * A host that is not Node (the Python zygote): no permission model, no bundle. bubblewrap binds
 * only the system's libraries and `readable`; no /tmp; prlimit, the uid and the empty environment
 * as for every host.
 */
export interface ProgramProfile {
  kind: "program";
  name: string;
  /** What to run and what it reads, resolved at every start (the first may prepare it: python-runtime.ts). */
  command(): Promise<ProgramCommand>;
  /** RLIMIT_AS in MiB. */
  addressSpaceMb: number;
  /** RLIMIT_STACK in MiB (the main thread's native stack), when not the OS default. */
  stackMb?: number;
  /**
   * The program forks a fresh process per run below itself (the Python zygote): the server then
   * measures the host's tree by the zygote's RSS and its children's page faults (pages a child
   * shares with its zygote are not counted twice) and times a run on the run clock of that child
   * (host-handles.ts).
   */
  forksPerRun?: boolean;
  /**
   * The network namespace is shared (no `--unshare-net`) and the files name resolution and TLS read
   * (/etc/resolv.conf, /etc/hosts, /etc/ssl, ...) are bound: only for a Python environment's worker
   * whose operator allows it (ENVWORKER_PYTHON_NETWORK=1, a judge model's API). Never for a sandbox host.
   */
  network?: boolean;
}

export interface ProgramCommand {
  executable: string;
  args: string[];
  /** Files and directories the program reads, bound read-only (real paths). */
  readable: string[];
}

export type ConfinementProfile = NodeProfile | ProgramProfile;

export interface ConfineOptions {
  /** Use bubblewrap (default true). Off: everything else still applies, and `unconfined` must say so. */
  bwrap?: boolean;
  /**
   * Start hosts without bubblewrap (turned off, not installed, or failing here); without this, or
   * ENVWORKER_UNCONFINED=1, such a host is refused (confinementRefusal). Default false.
   */
  unconfined?: boolean;
}

/** The opt-in for machines without bubblewrap: sandbox hosts then start without it (README.md "Confinement"). */
export const UNCONFINED_ENV = "ENVWORKER_UNCONFINED" as const;

function unconfinedAllowed(options: ConfineOptions): boolean {
  return options.unconfined === true || readSetting(UNCONFINED_ENV) === "1";
}

/**
 * Why a host must not start with these options on this machine, or undefined when it may. Without
 * bubblewrap what the README promises does not hold: an escaped guest opens connections (the
 * server's own port included) and loads any native addon on the machine (Node 20's permission
 * model does not check an addon's path once addons are allowed: isolated-vm, Python's restore), so
 * a host starts without it only on an explicit opt-in.
 */
export function confinementRefusal(options: ConfineOptions = {}): string | undefined {
  const c = describeConfinement(options);
  if (c.bwrap || unconfinedAllowed(options)) return undefined;
  return (
    `sandbox hosts are not started without bubblewrap (${c.bwrapMissing}): without it a guest that escaped its engine ` +
    `could open network connections, the server's own port included, and load native addons of any installed package. ` +
    `Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or set ${UNCONFINED_ENV}=1 to run sandbox hosts without it`
  );
}

/** How a host is confined on this machine: what the README's table and the start-up warning say. */
export interface Confinement {
  bwrap: boolean;
  /** Why bubblewrap is not used, when it is not. */
  bwrapMissing?: string;
  prlimit: boolean;
  /** A uid/gid of its own per host (the server runs as root). */
  ownUid: boolean;
}

/** First uid/gid of the hosts when the server runs as root; not a user of a usual system. */
export const HOST_UID_BASE = 61_000;
const HOST_UIDS = 10_000;
/** RLIMIT_NPROC: threads count against it (Node: main, libuv, V8 platform; isolated-vm's own). */
const MAX_PROCESSES = 128;

/**
 * Where this process starts looking for a free uid: random, so that two servers on one machine
 * (or two test workers) rarely even look at the same ones; a uid that any process runs as is
 * never taken (uidsOfProcesses), so they do not share one.
 */
let nextUid = Math.floor(Math.random() * HOST_UIDS);
/** Uids of hosts alive now: a uid goes to one live host at a time (hosts with one can signal each other without bubblewrap). */
const uidsInUse = new Set<number>();

function takeUid(): number {
  const running = uidsOfProcesses();
  for (let i = 0; i < HOST_UIDS; i++) {
    const uid = HOST_UID_BASE + ((nextUid + i) % HOST_UIDS);
    if (!uidsInUse.has(uid) && !running.has(uid)) {
      nextUid = (nextUid + i + 1) % HOST_UIDS;
      uidsInUse.add(uid);
      return uid;
    }
  }
  throw new Error(`more than ${HOST_UIDS} sandbox processes alive: no uid of their own is left`);
}

/** Pids of /proc's processes with the uid each runs as (the owner of its /proc directory). */
function* processesByUid(): Generator<[pid: number, uid: number]> {
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return;
  }
  for (const name of names) {
    const first = name.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    try {
      yield [Number(name), statSync(`/proc/${name}`).uid];
    } catch {
      // Gone meanwhile.
    }
  }
}

/** The hosts' uids that some process runs as now (this server's hosts, another server's). */
function uidsOfProcesses(): Set<number> {
  const uids = new Set<number>();
  for (const [, uid] of processesByUid()) if (uid >= HOST_UID_BASE && uid < HOST_UID_BASE + HOST_UIDS) uids.add(uid);
  return uids;
}

function which(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(delimiter)) {
    const path = join(dir, name);
    try {
      if (statSync(path).isFile()) return path;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

type Tools = { bwrap?: string; bwrapMissing?: string; prlimit?: string };
let probed: Tools | undefined;

/** bubblewrap and prlimit, looked up once; bubblewrap is tried once (user namespaces may be off). */
function tools(): Tools {
  if (probed) return probed;
  const bwrap = which("bwrap");
  const prlimit = which("prlimit");
  let bwrapMissing: string | undefined;
  if (!bwrap) bwrapMissing = "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)";
  else {
    const uid = runAsRoot() ? { uid: HOST_UID_BASE, gid: HOST_UID_BASE } : {};
    const args = [...namespaceArgs(uid.uid), "--ro-bind", "/", "/", process.execPath, "-e", "0"];
    const probe = spawnSync(bwrap, args, { env: {}, stdio: ["ignore", "ignore", "pipe"], timeout: 10_000, ...uid });
    if (probe.status !== 0) bwrapMissing = `bwrap failed: ${probe.stderr?.toString().trim().slice(0, 200) || probe.error?.message || `exit ${probe.status}`}`;
  }
  probed = { ...(bwrap && !bwrapMissing ? { bwrap } : {}), ...(bwrapMissing ? { bwrapMissing } : {}), ...(prlimit ? { prlimit } : {}) };
  return probed;
}

function runAsRoot(): boolean {
  return process.getuid?.() === 0;
}

export function describeConfinement(options: ConfineOptions = {}): Confinement {
  const t = tools();
  const useBwrap = options.bwrap !== false && t.bwrap !== undefined;
  return {
    bwrap: useBwrap,
    ...(useBwrap ? {} : { bwrapMissing: options.bwrap === false ? "turned off" : t.bwrapMissing }),
    prlimit: t.prlimit !== undefined,
    ownUid: runAsRoot(),
  };
}

let warned = false;
/**
 * Says once, on stderr, what is missing from the confinement of sandbox hosts on this machine: an
 * error when hosts will be refused (confinementRefusal), warnings for what is weaker.
 */
export function warnIfWeaklyConfined(log: (line: string) => void = (l) => console.warn(l)): void {
  if (warned) return;
  warned = true;
  const refusal = confinementRefusal();
  if (refusal) log(`envworker: error: ${refusal}; until then every sandboxed run fails (SandboxError)`);
  const c = describeConfinement();
  const missing = [
    ...(c.bwrap || refusal ? [] : [`no bubblewrap (${c.bwrapMissing}; ${UNCONFINED_ENV}=1): sandbox hosts share the server's network and see its processes, and may load any native addon`]),
    ...(c.prlimit ? [] : ["no prlimit (util-linux): sandbox hosts run without address-space, file-size and process limits"]),
    ...(c.ownUid ? [] : ["the server does not run as root: sandbox hosts run as the server's own user"]),
  ];
  for (const line of missing) log(`envworker: warning: ${line}`);
}

function namespaceArgs(uid: number | undefined, network = false): string[] {
  return [
    "--unshare-user",
    "--unshare-ipc",
    "--unshare-pid",
    ...(network ? [] : ["--unshare-net"]),
    "--unshare-uts",
    "--unshare-cgroup-try",
    ...(uid !== undefined ? ["--uid", String(uid), "--gid", String(uid)] : []),
    "--die-with-parent",
    // Not --new-session: a session of its own put each host in a scheduler autogroup of its own,
    // which made runs ~1.5-2x slower on this loaded machine (measured). What it protects against,
    // TIOCSTI on the server's terminal, needs a terminal fd: the host's stdio are pipes, and the
    // permission model refuses to open /dev/tty.
    "--cap-drop",
    "ALL",
  ];
}

interface Bundle {
  dir: string;
  /** File of each entry. */
  files: Record<string, string>;
  /** Directories the host may read: its bundle and the external packages (real paths). */
  readable: string[];
}

const bundles = new Map<string, Promise<Bundle>>();
let bundleRoot: string | undefined;

function root(): string {
  if (bundleRoot) return bundleRoot;
  bundleRoot = bundleDirectory();
  // Hosts run as other users: they must be able to read (never write) the bundles.
  chmodSync(bundleRoot, 0o755);
  process.once("exit", () => rmSync(bundleRoot!, { recursive: true, force: true }));
  return bundleRoot;
}

/**
 * A new directory for this server's bundles: in the node_modules the host packages come from
 * (`.cache/`) where it can write there, else in the temporary directory. Why not always the
 * temporary directory: Node 20's permission model lets a process list "/" once its allowed paths
 * span three or more top-level directories (measured: /tmp/a, /work/b and /proc/x do; any two do
 * not, nor three under one). The bundles, the packages and /proc/thread-self/schedstat were three
 * wherever the checkout is not under /tmp; beside the packages they are two.
 */
function bundleDirectory(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    const modules = basename(dir) === "node_modules" ? dir : join(dir, "node_modules");
    if (!existsSync(modules)) continue;
    try {
      const cache = join(modules, ".cache");
      mkdirSync(cache, { recursive: true });
      // Hosts may run as other users: they must be able to pass through it (the packages beside it
      // they read already).
      if ((statSync(cache).mode & 0o001) === 0) break;
      removeAbandonedBundles(cache);
      return mkdtempSync(join(cache, `${BUNDLE_PREFIX}${process.pid}-`));
    } catch {
      break; // not writable: the temporary directory
    }
  }
  return mkdtempSync(join(tmpdir(), `${BUNDLE_PREFIX}${process.pid}-`));
}

const BUNDLE_PREFIX = "envworker-hosts-";
/** A bundle directory's name: its server's pid, then mkdtemp's suffix. */
const BUNDLE_NAME = new RegExp(`^${BUNDLE_PREFIX}(\\d+)-`);
/** A bundle directory is removed at its server's exit; one a killed server left is removed later, once this old. */
const ABANDONED_AFTER_MS = 60 * 60 * 1000;

/**
 * Bundle directories of servers that are gone: a server killed outright (SIGKILL) cannot remove
 * its own, and nothing else ever would in node_modules. Only directories over an hour old whose
 * server's pid no longer exists here (a directory name carries its server's pid).
 */
function removeAbandonedBundles(cache: string): void {
  for (const name of readdirSync(cache)) {
    const pid = Number(BUNDLE_NAME.exec(name)?.[1]);
    if (!pid) continue;
    const path = join(cache, name);
    try {
      if (Date.now() - statSync(path).mtimeMs < ABANDONED_AFTER_MS) continue;
      process.kill(pid, 0);
      continue; // its server (or a process with its pid) is alive
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ESRCH") continue;
    }
    rmSync(path, { recursive: true, force: true });
  }
}

/** The directory of the package a resolved file belongs to, and those of its dependencies. */
function packageDirs(file: string, into: Set<string>): void {
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (!existsSync(manifest)) continue;
    let pkg: { name?: string; dependencies?: Record<string, string> };
    try {
      pkg = JSON.parse(readFileSync(manifest, "utf8")) as typeof pkg;
    } catch {
      continue;
    }
    if (!pkg.name) continue; // a nested package.json that only sets "type"
    const real = realpathSync(dir);
    if (into.has(real)) return;
    into.add(real);
    for (const dep of Object.keys(pkg.dependencies ?? {})) {
      try {
        packageDirs(fileURLToPath(resolveModule(`${dep}/package.json`, pathToFileURL(manifest).href)), into);
      } catch {
        // Not installed, or no package.json export: the host will not get to read it.
      }
    }
    return;
  }
}

function bundle(profile: NodeProfile): Promise<Bundle> {
  let made = bundles.get(profile.name);
  if (!made) {
    made = build(profile);
    bundles.set(profile.name, made);
    made.catch(() => bundles.delete(profile.name));
  }
  return made;
}

async function build(profile: NodeProfile): Promise<Bundle> {
  const { build: esbuild } = await import("esbuild");
  const dir = join(root(), profile.name);
  const readable = new Set<string>();
  const builtins = new Set(builtinModules);
  const isExternal = (spec: string) => profile.packages.some((p) => spec === p || spec.startsWith(`${p}/`));
  await esbuild({
    entryPoints: Object.entries(profile.entries).map(([out, url]) => ({ out, in: fileURLToPath(url) })),
    outdir: dir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    logLevel: "silent",
    // Bundled CommonJS (sucrase) calls require() for Node's own modules.
    banner: { js: 'import { createRequire as __envworkerRequire } from "node:module"; const require = __envworkerRequire(import.meta.url);' },
    plugins: [
      {
        name: "external-packages",
        setup(b) {
          b.onResolve({ filter: /^[^./]/ }, (args) => {
            if (args.path.startsWith("node:") || builtins.has(args.path)) return { path: args.path, external: true };
            if (!isExternal(args.path)) return undefined;
            const url = resolveModule(args.path, pathToFileURL(args.importer).href);
            packageDirs(fileURLToPath(url), readable);
            return { path: url, external: true };
          });
        },
      },
    ],
  });
  chmodTree(dir);
  const files = Object.fromEntries(Object.keys(profile.entries).map((name) => [name, join(dir, `${name}.mjs`)]));
  return { dir, files, readable: [dir, ...readable, ...(profile.readable ?? [])] };
}

function chmodTree(dir: string): void {
  chmodSync(dir, 0o755);
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (lstatSync(path).isDirectory()) chmodTree(path);
    else chmodSync(path, 0o644);
  }
}

/**
 * What bubblewrap binds: the system's libraries (Node and Python link to them), Node itself (for
 * Node hosts, which also get an empty /tmp) and the readable directories.
 */
/** What a process with the network reads to resolve names and check certificates. */
const NETWORK_FILES = ["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/usr/share/ca-certificates"];

function bwrapArgs(readable: string[], uid: number | undefined, node: boolean, network = false): string[] {
  const args = [...namespaceArgs(uid, network), "--clearenv", "--proc", "/proc", "--dev", "/dev", ...(node ? ["--tmpfs", "/tmp"] : []), "--chdir", "/"];
  for (const path of ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/lib32", "/usr/lib32"]) {
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) args.push("--symlink", readlinkSync(path), path);
    else args.push("--ro-bind", path, path);
  }
  if (node) {
    const node = realpathSync(process.execPath);
    args.push("--ro-bind", node, node);
    if (process.execPath !== node) args.push("--ro-bind", process.execPath, process.execPath);
  }
  for (const dir of readable) args.push("--ro-bind", dir, dir);
  // bubblewrap binds what a symlink (/etc/resolv.conf -> ../run/...) points to, at the link's path.
  if (network) for (const path of NETWORK_FILES) if (existsSync(path)) args.push("--ro-bind", path, path);
  return args;
}

export interface ConfinedProcess {
  child: ChildProcess;
  confinement: Confinement;
  uid: number | undefined;
}

/**
 * Starts the profile's main entry confined, its stdin/stdout the host channel and its stderr a
 * pipe (V8's last words). Resolves once spawned (the first call bundles, ~0.1–0.5 s).
 */
export async function launchConfined(profile: ConfinementProfile, options: ConfineOptions = {}, args: string[] = []): Promise<ConfinedProcess> {
  const refusal = confinementRefusal(options);
  if (refusal) throw new Error(refusal);
  if (profile.kind === "program") {
    const command = await profile.command();
    return spawnConfined(profile, options, [command.executable, ...command.args, ...args], command.readable, false);
  }
  const made = await bundle(profile);
  const mainEntry = made.files[Object.keys(profile.entries)[0]!]!;
  const node = [
    process.execPath,
    "--experimental-permission",
    ...made.readable.map((dir) => `--allow-fs-read=${dir}`),
    // The host's own thread's wait for a CPU: runs are timed on the run clock (run-delay.ts).
    `--allow-fs-read=${RUN_DELAY_FILE}`,
    ...(profile.addons ? ["--allow-addons"] : []),
    ...(profile.workers ? ["--allow-worker"] : []),
    ...(profile.noEval ? ["--disallow-code-generation-from-strings"] : []),
    "--no-warnings",
    ...(profile.nodeFlags ?? []),
    ...(profile.stackMb ? [`--stack-size=${(tools().prlimit ? profile.stackMb : 8) * 1024 - 1024}`] : []),
    mainEntry,
    ...args,
  ];
  return spawnConfined(profile, options, node, made.readable, true);
}

/** Spawns `command` under prlimit and bubblewrap (where they are), as a uid of its own (as root), with an empty environment. */
function spawnConfined(profile: ConfinementProfile, options: ConfineOptions, command: string[], readable: string[], node: boolean): ConfinedProcess {
  const confinement = describeConfinement(options);
  const uid = confinement.ownUid ? takeUid() : undefined;
  const t = tools();
  const limits = t.prlimit
    ? [
        t.prlimit,
        `--as=${profile.addressSpaceMb * 1024 * 1024}`,
        "--fsize=0",
        "--core=0",
        // RLIMIT_NPROC counts every process of the real uid: only a host with a uid of its own.
        ...(uid !== undefined ? [`--nproc=${MAX_PROCESSES}`] : []),
        ...(profile.stackMb ? [`--stack=${profile.stackMb * 1024 * 1024}`] : []),
        "--",
      ]
    : [];
  const sandbox = confinement.bwrap ? [t.bwrap!, ...bwrapArgs(readable, uid, node, profile.kind === "program" && profile.network === true)] : [];
  // Hosts run at the server's own CPU priority. They ran at niceness +10 for a while: on a busy
  // machine (anything else at the default priority: a trainer, a second test run) that starved
  // them ~10x (a Python host did not start within 60 s beside 6 busy loops on 2 cores), while the
  // server stayed as responsive without it (test/hostile/hostile-code.test.ts: slowest probe 311 ms at load
  // ~10 with hosts at +0). A waking server is scheduled promptly by CFS either way.
  const [first, ...rest] = [...limits, ...sandbox, ...command];
  const child = spawn(first!, rest, {
    env: {},
    cwd: "/",
    stdio: ["pipe", "pipe", "pipe"],
    ...(uid !== undefined ? { uid, gid: uid } : {}),
  });
  if (uid !== undefined) {
    // When the spawned process is gone, so is every process of its uid: bubblewrap killed while it
    // was setting up leaves its namespace's init behind (before --die-with-parent took hold),
    // holding the host's stdio open. Then the uid is free for another host.
    child.once("exit", () => killProcessesOf(uid));
    child.once("close", () => uidsInUse.delete(uid));
    child.once("error", () => uidsInUse.delete(uid));
  }
  return { child, confinement, uid };
}

/** SIGKILL to every process owned by `uid` (a host's own: nothing else runs as it, see takeUid). */
function killProcessesOf(uid: number): void {
  for (const [pid, owner] of processesByUid()) {
    if (owner !== uid) continue;
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
}
