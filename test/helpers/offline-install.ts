/**
 * Install a package tarball into a project without the network, on a machine that has run
 * `npm ci` in this repository: the project's node_modules is first filled (hard links where the
 * file system allows) with the packages it will need, taken from this repository's node_modules
 * through package-lock.json, so `npm install --offline TARBALL` finds every dependency already
 * in place and only unpacks the tarball. An empty npm cache is used, so nothing is taken from a
 * cache a developer's machine happens to have.
 */
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

interface LockEntry {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** Top-level packages of `repo`'s node_modules that `roots` need (their dependency closure). */
export function dependencyClosure(repo: string, roots: readonly string[]): string[] {
  const lock = (JSON.parse(readFileSync(join(repo, "package-lock.json"), "utf8")) as { packages: Record<string, LockEntry> }).packages;
  // Node's lookup over lockfile paths: from/node_modules/name, then each folder up.
  const locate = (name: string, from: string): string | undefined => {
    let base = from;
    for (;;) {
      const p = `${base ? `${base}/` : ""}node_modules/${name}`;
      if (lock[p]) return p;
      if (!base) return undefined;
      const i = base.lastIndexOf("/node_modules/");
      base = i === -1 ? "" : base.slice(0, i);
    }
  };
  const need = new Set<string>();
  const queue = roots.map((r) => {
    const p = locate(r, "");
    if (!p) throw new Error(`${r} is not in ${repo}/package-lock.json`);
    return p;
  });
  while (queue.length > 0) {
    const p = queue.pop()!;
    if (need.has(p)) continue;
    need.add(p);
    const e = lock[p]!;
    for (const dep of Object.keys({ ...e.dependencies, ...e.optionalDependencies, ...e.peerDependencies })) {
      const q = locate(dep, p);
      if (q) queue.push(q);
    }
  }
  const top = new Set<string>();
  for (const p of need) top.add(/^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(p)![1]!);
  // Optional packages for other platforms are in the lockfile but not installed: skip them.
  return [...top].filter((name) => existsSync(join(repo, "node_modules", name))).sort();
}

function linkOrCopy(from: string, to: string): Promise<unknown> {
  mkdirSync(dirname(to), { recursive: true });
  // Hard links: instant, and npm never writes into an installed package's files.
  return run("cp", ["-al", from, to]).catch(() => cpSync(from, to, { recursive: true, verbatimSymlinks: true }));
}

/** Fill `project`/node_modules from `repo` for these roots, bin links included. */
export async function prepopulate(repo: string, project: string, roots: readonly string[]): Promise<string[]> {
  const packages = dependencyClosure(repo, roots);
  await Promise.all(packages.map((name) => linkOrCopy(join(repo, "node_modules", name), join(project, "node_modules", name))));
  // npm counts a package whose bin links are missing as not installed: bring the links along.
  const bin = join(repo, "node_modules", ".bin");
  mkdirSync(join(project, "node_modules", ".bin"), { recursive: true });
  for (const name of readdirSync(bin)) {
    const target = readlinkSync(join(bin, name));
    const owner = /^\.\.\/((?:@[^/]+\/)?[^/]+)\//.exec(target)?.[1];
    if (owner && packages.includes(owner)) symlinkSync(target, join(project, "node_modules", ".bin", name));
  }
  return packages;
}

/** `npm install --offline TARBALL` in `project`, with an empty cache in `cacheDir`. */
export async function installOffline(project: string, tarball: string, cacheDir: string, env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout, stderr } = await run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--cache", cacheDir, tarball], {
    cwd: project,
    env,
    maxBuffer: 16 << 20,
  });
  return stdout + stderr;
}
