#!/usr/bin/env node
// The `envworker` command. In this repository it runs the TypeScript sources (src/) through tsx;
// installed from the package, the compiled JavaScript (dist/). Either way tsx is registered, so
// environments written in TypeScript load as they are. It makes sure Node runs with
// --no-node-snapshot, which isolated-vm requires on Node >= 20 (re-executing itself once with the
// flag if it is missing).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const FLAG = "--no-node-snapshot";
const nodeFlags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
const hasFlag = nodeFlags.includes(FLAG);
// Run from a checkout (src/ is there, dist/ maybe not): "envworker" and its subpaths, imported by the
// shipped environments and by a package made with `init` from the checkout, resolve to src/
// through package.json's "envworker-source" export condition.
const source = new URL("../src/cli/main.ts", import.meta.url);
const fromCheckout = existsSync(source);
const CONDITION = "--conditions=envworker-source";
const needs = [...(hasFlag ? [] : [FLAG]), ...(fromCheckout && !nodeFlags.includes(CONDITION) ? [CONDITION] : [])];

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
  const { register } = await import("tsx/esm/api");
  register();
  const { main } = await import(fromCheckout ? source.href : "../dist/src/cli/main.js");
  const code = await main(process.argv.slice(2));
  if (code !== 0) process.exitCode = code;
}
