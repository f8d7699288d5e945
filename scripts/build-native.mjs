#!/usr/bin/env node
// Builds native/wasm-dirty.c into native/build/wasm-dirty.node (run by `npm install` / `npm ci`).
// The Python sandbox uses it to put its interpreter's memory back after a run by copying only the
// pages the run wrote (src/sandbox/memory-image.ts). It is optional: without a C compiler, Node's
// headers or Linux, nothing is built, this says so, and the sandbox copies the whole memory instead
// (correct, slower). A Node-API module needs no node-gyp: one compiler call against Node's headers.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = join(root, "native", "wasm-dirty.c");
const out = join(root, "native", "build", "wasm-dirty.node");

function skip(why) {
  console.log(`envworker: native/wasm-dirty not built (${why}); the Python sandbox restores its whole memory after each run instead.`);
  process.exit(0);
}

if (process.platform !== "linux") skip(`${process.platform} is not Linux`);
if (!existsSync(source)) skip("no source (an installed package without native/)");
// Node's headers: beside this Node (official builds, Debian's nodejs), or where npm was told they are.
const headers = [
  process.env.npm_config_nodedir && join(process.env.npm_config_nodedir, "include", "node"),
  join(dirname(dirname(process.execPath)), "include", "node"),
  "/usr/include/node",
  "/usr/local/include/node",
].find((dir) => dir && existsSync(join(dir, "node_api.h")));
if (!headers) skip("Node's headers (node_api.h) not found");
const cc = process.env.CC || "cc";
mkdirSync(dirname(out), { recursive: true });
// Built beside, then renamed over: a server already running from this checkout keeps the module it
// loaded, and one starting meanwhile finds either the old file or the new one, never half of one.
const partial = `${out}.${process.pid}.tmp`;
const built = spawnSync(cc, ["-O2", "-shared", "-fPIC", "-Wall", `-I${headers}`, "-DNODE_GYP_MODULE_NAME=wasm_dirty", "-o", partial, source], {
  encoding: "utf8",
  timeout: 60_000,
});
if (built.error || built.status !== 0) rmSync(partial, { force: true });
if (built.error) skip(`${cc}: ${built.error.message}`);
if (built.status !== 0) skip(`${cc} failed: ${(built.stderr || "").trim().split("\n").slice(0, 3).join(" / ")}`);
renameSync(partial, out);
console.log(`envworker: built ${out}`);
