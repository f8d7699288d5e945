#!/usr/bin/env node
// `npm run build` (and `prepack`): compile the package's JavaScript and .d.ts into dist/ with tsc,
// so `npm pack` ships code a consumer runs without tsx or this repository's tsconfig.
// Two passes: Node + the shipped environments, then envworker/workers with the Workers types.
import { execFileSync } from "node:child_process";
import { existsSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = createRequire(join(root, "package.json")).resolve("typescript/bin/tsc");

// Built beside dist/ and swapped in at the end: processes run from a checkout's dist/ while it is
// fresh (bin/envworker.js), and a server that starts a thread or a sandbox host while this builds
// must find the old dist/ whole, not a half-written one.
const dist = join(root, "dist");
const building = join(root, `dist.building-${process.pid}`);
// What is about to be compiled, for `envworker build --if-stale` and the compiled entries' check
// (src/node/dist-stamp.ts): a package linked to this checkout never runs a dist/ older than it, and
// neither does bin/envworker.js, which runs dist/ while it is fresh. Taken before tsc reads a file:
// a source edited during the build then differs from its stamp, so dist/ counts as stale.
const { register } = await import("tsx/esm/api");
register();
const { stampText, STAMP_FILE } = await import(pathToFileURL(join(root, "src", "node", "dist-stamp.ts")).href);
const stamp = stampText(root);
rmSync(building, { recursive: true, force: true });
try {
  for (const project of ["tsconfig.build.json", "tsconfig.build-worker.json"]) {
    // tsc's report to stderr: stdout stays clean for `npm pack --json`, which runs this as prepack.
    execFileSync(process.execPath, [tsc, "-p", join(root, project), "--outDir", building], { cwd: root, stdio: ["ignore", process.stderr, process.stderr] });
  }
  // The zygotes (Python and QuickJS) are Python, not compiled: zygote/ ships as it is, beside dist/
  // (package.json "files"), and the compiled code finds it there as the sources do.
  writeFileSync(join(building, STAMP_FILE), stamp);
  const old = `${dist}.old-${process.pid}`;
  if (existsSync(dist)) renameSync(dist, old);
  renameSync(building, dist);
  rmSync(old, { recursive: true, force: true });
} catch (err) {
  rmSync(building, { recursive: true, force: true });
  throw err;
}
console.error("build: dist/ written");
