/**
 * The files an environment module's code is (Node only; src/env/source.ts imports this by a computed name).
 *
 * A module's environments are loaded again by every environment thread (src/node/env-threads.ts).
 * A thread must run the code the server loaded, not a file edited since: the server's own copies
 * of its environments (the main thread's: metadata, schemas, the playground) would then differ
 * from what the threads run, the threads started before the edit from those started after. So the
 * URL a thread gets carries the server's fingerprint of the module's folder, and a thread whose
 * files differ refuses to start, saying so; the threads already running go on with the code the
 * server has. `envworker serve --watch` restarts the server on every change instead.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, type Dirent } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const SKIPPED_DIRS = new Set(["node_modules", "dist", "outputs", "coverage"]);
const CODE = /\.(?:[cm]?[jt]sx?|json)$/;
/** Beyond this many files the folder is not a module's own: no fingerprint, no check. */
const MAX_FILES = 2000;

/**
 * A fingerprint of the code a module's environments run: every code file (.ts, .js, .json, ...)
 * under the module's folder, by path and content, without node_modules, dist, outputs and
 * dot-folders (`code`: which files are code; a Python environment's are .py files and their data).
 * Undefined when the folder is not a module's own (too many files) or unreadable.
 */
export function filesStamp(moduleUrl: string, code: RegExp = CODE): string | undefined {
  const root = dirname(fileURLToPath(moduleUrl));
  const files: string[] = [];
  const walk = (dir: string): boolean => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return false;
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (e.name.startsWith(".")) continue;
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        if (!SKIPPED_DIRS.has(e.name) && !walk(path)) return false;
      } else if (code.test(e.name)) {
        files.push(path);
        if (files.length > MAX_FILES) return false;
      }
    }
    return true;
  };
  if (!walk(root)) return undefined;
  const hash = createHash("sha256");
  for (const f of files) {
    hash.update(`${f.slice(root.length)}\0`);
    try {
      hash.update(readFileSync(f));
    } catch {
      hash.update("(unreadable)");
    }
    hash.update("\0");
  }
  return hash.digest("hex").slice(0, 32);
}

/** Throws, saying why, when the module's files are no longer those of `stamp`. */
export function checkStamp(moduleUrl: string, stamp: string, code: RegExp = CODE): void {
  if (filesStamp(moduleUrl, code) === stamp) return;
  const file = fileURLToPath(moduleUrl);
  throw new Error(
    `${file}: the environment's files (under ${dirname(file)}) changed since the server loaded them; the server keeps running the code it loaded, which a new environment thread cannot load again: restart the server (envworker serve --watch restarts it on every change)`,
  );
}
