/**
 * Is a checkout's dist/ the build of its sources? A package made by `envworker init` from a
 * checkout depends on it by a `file:` path: its tests (`envworker/testing`), its type checks and
 * its Worker import the checkout's compiled dist/, while `npx envworker` runs the sources. After
 * a `git pull` (or an edit) without `npm run build`, the two would differ. So `npm run build`
 * (scripts/build.mjs) records a fingerprint of what it compiled in dist/build-stamp.json, and:
 *
 *   - `envworker build --if-stale` (the scaffold's pretest, pretypecheck and wrangler build
 *     command) builds dist/ again when the sources changed, and does nothing otherwise;
 *   - `envworker/testing` and `envworker/node`, loaded from a stale dist/ of a checkout, refuse
 *     to load, saying what changed and what to run: a test never runs older code than its checkout.
 *
 * An installed envworker (from the registry or a tarball) has no sources beside dist/: nothing to
 * compare, nothing is checked.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, type Dirent } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

export const STAMP_FILE = "build-stamp.json";
/** What the build compiles (tsconfig.build*.json's include) and what decides how. */
const SOURCE_DIRS = ["src", "envs"];
const CONFIG_FILES = ["package.json", "tsconfig.json", "tsconfig.build.json", "tsconfig.build-worker.json", "tsconfig.worker.json"];

interface Stamp {
  /** path (relative to the checkout) → sha256 of its content, for every input of the build. */
  files: Record<string, string>;
}

/** The build's inputs as they are now: their paths (relative, sorted) and the hash of each. */
export function sourceFiles(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (path: string) => {
    out[relative(root, path)] = createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 16);
  };
  const walk = (dir: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== "node_modules" && !e.name.startsWith(".")) walk(path);
      } else if (e.isFile() && !/\.test\.[cm]?[jt]sx?$/.test(e.name)) add(path);
    }
  };
  for (const d of SOURCE_DIRS) walk(join(root, d));
  for (const f of CONFIG_FILES) if (existsSync(join(root, f))) add(join(root, f));
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Writes dist/build-stamp.json: what the build just compiled (scripts/build.mjs, after tsc). */
export function stampText(root: string): string {
  const stamp: Stamp = { files: sourceFiles(root) };
  return `${JSON.stringify(stamp)}\n`;
}

export type DistState =
  | { state: "fresh" }
  | { state: "installed" }
  | { state: "missing"; root: string }
  | { state: "stale"; root: string; changed: string[] };

/** A checkout's root holds src/index.ts (the installed package has only dist/). */
export const isCheckout = (root: string) => existsSync(join(root, "src", "index.ts"));

/** Whether `root`'s dist/ is the build of its sources now. */
export function distState(root: string): DistState {
  if (!isCheckout(root)) return { state: "installed" };
  let recorded: Stamp;
  try {
    recorded = JSON.parse(readFileSync(join(root, "dist", STAMP_FILE), "utf8")) as Stamp;
  } catch {
    return existsSync(join(root, "dist", "src", "index.js")) ? { state: "stale", root, changed: ["(dist/ was built without a stamp: by an older envworker)"] } : { state: "missing", root };
  }
  const now = sourceFiles(root);
  const changed: string[] = [];
  for (const [path, hash] of Object.entries(now)) if (recorded.files?.[path] !== hash) changed.push(path);
  for (const path of Object.keys(recorded.files ?? {})) if (!(path in now)) changed.push(`${path} (removed)`);
  return changed.length === 0 ? { state: "fresh" } : { state: "stale", root, changed };
}

/** What to tell someone about a dist/ that is not the build of its sources, or undefined when it is. */
export function staleMessage(s: DistState): string | undefined {
  if (s.state === "fresh" || s.state === "installed") return undefined;
  if (s.state === "missing") return `envworker's dist/ in ${s.root} is not built: run \`npx envworker build\` (or \`npm run build\` in ${s.root})`;
  const shown = s.changed.slice(0, 5).join(", ") + (s.changed.length > 5 ? `, and ${s.changed.length - 5} more` : "");
  return `envworker's dist/ in ${s.root} is older than its sources (changed since it was built: ${shown}): run \`npx envworker build\` (or \`npm run build\` in ${s.root}); a package's \`npm test\` does it by itself (its pretest)`;
}

/**
 * For the compiled entries (envworker/testing, envworker/node): throws when `moduleUrl` is in a
 * checkout's dist/ that is not the build of the checkout's sources. Run from the sources (this
 * repository's own tests, `npx envworker`), or from an installed envworker, it checks nothing.
 */
export function assertDistFresh(moduleUrl: string): void {
  if (!moduleUrl.startsWith("file:") || moduleUrl.endsWith(".ts")) return;
  // dist/src/<entry>.js or dist/src/node/<entry>.js: the checkout is the folder that holds dist/.
  let dir = dirname(fileURLToPath(moduleUrl));
  while (dir !== dirname(dir) && !dir.endsWith("/dist")) dir = dirname(dir);
  if (!dir.endsWith("/dist")) return;
  const message = staleMessage(distState(dirname(dir)));
  if (message) throw new Error(message);
}
