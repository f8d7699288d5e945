#!/usr/bin/env node
// `npm run build` (and `prepack`): compile the package's JavaScript and .d.ts into dist/ with tsc,
// so `npm pack` ships code a consumer runs without tsx or this repository's tsconfig.
// Two passes: Node + the shipped environments, then envworker/workers with the Workers types.
import { execFileSync } from "node:child_process";
import { cpSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = createRequire(join(root, "package.json")).resolve("typescript/bin/tsc");

rmSync(join(root, "dist"), { recursive: true, force: true });
for (const project of ["tsconfig.build.json", "tsconfig.build-worker.json"]) {
  // tsc's report to stderr: stdout stays clean for `npm pack --json`, which runs this as prepack.
  execFileSync(process.execPath, [tsc, "-p", join(root, project)], { cwd: root, stdio: ["ignore", process.stderr, process.stderr] });
}
// The zygotes (Python and QuickJS) are Python, not compiled: shipped beside the JavaScript that starts them.
for (const dir of ["python-zygote", "quickjs-zygote"]) {
  cpSync(join(root, "src", "sandbox", dir), join(root, "dist", "src", "sandbox", dir), { recursive: true, filter: (src) => !src.includes("__pycache__") && !src.endsWith(".ts") });
}
// What was compiled, for `envworker build --if-stale` and the compiled entries' check
// (src/node/dist-stamp.ts): a package linked to this checkout never runs a dist/ older than it.
const { stampText, STAMP_FILE } = await import(pathToFileURL(join(root, "dist", "src", "node", "dist-stamp.js")).href);
writeFileSync(join(root, "dist", STAMP_FILE), stampText(root));
console.error("build: dist/ written");
