#!/usr/bin/env node
// `npm test`: every half of the suite runs and reports, whatever the others did, and the exit
// status is non-zero when any half failed. (`a && b` skipped the Python client's suite whenever
// vitest failed.) Each half is an npm script. They run at the same time: vitest's output streams
// to the terminal, the others' is held and printed, whole, once vitest is done. Arguments after
// `npm test --` go to vitest.
import { spawn } from "node:child_process";

const halves = [
  { script: "test:vitest", stream: true, forwardArgs: true },
  // One thread per math library in the Python half: the trainer tests' torch would otherwise take
  // both cores of a 2-core machine for its tiny model while vitest's files run beside it.
  { script: "test:python", stream: false, forwardArgs: false, env: { OMP_NUM_THREADS: "1", MKL_NUM_THREADS: "1" } },
];

const args = process.argv.slice(2);

/** Runs `npm run <script>` (through the npm that runs this script, when there is one). */
function runScript({ script, stream, forwardArgs, env }) {
  const npmArgs = ["run", "--silent", script, ...(forwardArgs && args.length > 0 ? ["--", ...args] : [])];
  const npm = process.env.npm_execpath;
  const [command, argv] = npm ? [process.execPath, [npm, ...npmArgs]] : ["npm", npmArgs];
  const started = performance.now();
  const child = spawn(command, argv, { stdio: stream ? "inherit" : ["ignore", "pipe", "pipe"], shell: !npm && process.platform === "win32", env: { ...process.env, ...env } });
  let output = "";
  if (!stream) {
    // One buffer for both streams, in the order they were written.
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
  }
  return new Promise((resolve) => {
    const done = (status) => resolve({ script, ok: status === "passed", status, seconds: (performance.now() - started) / 1000, output });
    child.once("error", (err) => done(`could not start (${err.message})`));
    child.once("close", (code, signal) => done(signal ? `killed by ${signal}` : code === 0 ? "passed" : `failed (exit ${code})`));
  });
}

const running = halves.map((h) => runScript(h));
const outcomes = [];
for (const [i, h] of halves.entries()) {
  const outcome = await running[i];
  if (!h.stream) process.stdout.write(`\n> npm run ${h.script}\n${outcome.output}`);
  outcomes.push(outcome);
}

console.log("\nnpm test:");
for (const o of outcomes) console.log(`  ${o.ok ? "ok  " : "FAIL"} ${o.script.padEnd(12)} ${o.status}, ${o.seconds.toFixed(0)} s`);
process.exitCode = outcomes.every((o) => o.ok) ? 0 : 1;
