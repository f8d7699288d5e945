#!/usr/bin/env node
// `npm test`: every half of the suite runs and reports, whatever the others did; the exit status is
// non-zero when any half failed. (`a && b` skipped the Python client's suite whenever vitest failed.)
// Each half is an npm script, run in order; arguments after `npm test --` go to vitest.
import { spawnSync } from "node:child_process";

const halves = [
  { script: "test:vitest", forwardArgs: true },
  { script: "test:python", forwardArgs: false },
];

const npm = process.env.npm_execpath;
const args = process.argv.slice(2);
const extra = (forward) => (forward && args.length > 0 ? ["--", ...args] : []);
const outcomes = [];
for (const { script, forwardArgs } of halves) {
  console.log(`\n> npm run ${script}${extra(forwardArgs).map((a) => ` ${a}`).join("")}`);
  const started = performance.now();
  // Through the npm that runs this script (npm_execpath) when there is one, else npm on PATH.
  const run = npm
    ? spawnSync(process.execPath, [npm, "run", "--silent", script, ...extra(forwardArgs)], { stdio: "inherit" })
    : spawnSync("npm", ["run", "--silent", script, ...extra(forwardArgs)], { stdio: "inherit", shell: process.platform === "win32" });
  const seconds = (performance.now() - started) / 1000;
  const status = run.error ? `could not start (${run.error.message})` : run.signal ? `killed by ${run.signal}` : run.status === 0 ? "passed" : `failed (exit ${run.status})`;
  outcomes.push({ script, ok: !run.error && run.status === 0, status, seconds });
}

console.log("\nnpm test:");
for (const o of outcomes) console.log(`  ${o.ok ? "ok  " : "FAIL"} ${o.script.padEnd(12)} ${o.status}, ${o.seconds.toFixed(0)} s`);
process.exitCode = outcomes.every((o) => o.ok) ? 0 : 1;
