#!/usr/bin/env node
// The `envworker` command. Installed from the package, it runs the compiled JavaScript (dist/). In
// this repository it runs dist/ too when dist/ is the build of the sources as they are now
// (src/node/dist-stamp.ts), and the TypeScript sources (src/) through tsx otherwise. Compiled code
// registers tsx only when it imports a module that is not envworker's own (a user's environment
// or config, src/node/typescript-loader.ts): tsx's loader hooks make every import cost about
// three times as much, and a server of the shipped environments has no TypeScript to load.
// It makes sure Node runs with --no-node-snapshot, which isolated-vm requires on Node >= 20
// (re-executing itself once with the flag if it is missing).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const FLAG = "--no-node-snapshot";
const nodeFlags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
const hasFlag = nodeFlags.includes(FLAG);
const source = new URL("../src/cli/main.ts", import.meta.url);
const compiled = new URL("../dist/src/cli/main.js", import.meta.url);
const fromCheckout = existsSync(source);
// Run from the sources, "envworker" and its subpaths (imported by the shipped environments and by a
// package made with `init` from the checkout) resolve to src/ through package.json's
// "envworker-source" export condition. Given by the caller (a Node flag, or in NODE_OPTIONS), it
// asks for the sources.
const CONDITION = "--conditions=envworker-source";
const sourceAsked = nodeFlags.includes(CONDITION);
const runsSource = fromCheckout && (sourceAsked || !(await distIsFresh()));
const needs = [...(hasFlag ? [] : [FLAG]), ...(runsSource && !sourceAsked ? [CONDITION] : [])];

/** A checkout's dist/ is the build of its sources now (what `envworker build --check` says). */
async function distIsFresh() {
  if (!existsSync(compiled)) return false;
  try {
    const { distState } = await import(new URL("../dist/src/node/dist-stamp.js", import.meta.url).href);
    return distState(fileURLToPath(new URL("..", import.meta.url))).state === "fresh";
  } catch {
    return false;
  }
}

if (needs.length > 0) {
  // The IPC channel is how the child knows this process is alive: when it closes (this process
  // died, even of SIGKILL), the child stops too, so a server never outlives the command that ran it.
  const child = spawn(process.execPath, [...needs, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: ["inherit", "inherit", "inherit", "ipc"],
    env: { ...process.env, ENVWORKER_SHIM_PARENT: "1" },
  });
  const forward = (sig) => child.kill(sig);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(sig, forward);
  child.on("exit", (code, signal) => {
    if (signal) {
      // Die of the same signal, as the child did: drop our own handler first or we would catch it.
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
} else {
  if (process.env.ENVWORKER_SHIM_PARENT === "1" && process.channel) {
    delete process.env.ENVWORKER_SHIM_PARENT;
    // The channel must not keep this process alive; its end means the shim is gone: stop as on
    // SIGTERM (a server finishes its in-flight requests; other commands end).
    process.channel.unref();
    process.once("disconnect", () => process.kill(process.pid, "SIGTERM"));
  }
  if (runsSource) {
    const { register } = await import("tsx/esm/api");
    register();
  }
  const { main } = await import(runsSource ? source.href : compiled.href);
  const code = await main(process.argv.slice(2));
  if (code !== 0) process.exitCode = code;
}
