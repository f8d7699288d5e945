#!/usr/bin/env node
// `npm test`: every half of the suite runs and reports, whatever the others did, and the exit
// status is non-zero when any half failed. (`a && b` skipped the Python client's suite whenever
// vitest failed.) Each half is an npm script. They run at the same time: vitest's output streams
// to the terminal, the others' is held and printed, whole, once vitest is done. Arguments after
// `npm test --` go to vitest.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { loadSummary, slowestFiles, vitestFailures } from "./test-summary.mjs";
import { join } from "node:path";

// vitest also writes a JSON report here, so the failures can be listed again at the very end:
// vitest's own list scrolls away under the Python half's output, and a CI log's tail is what
// gets read.
const reportDir = mkdtempSync(join(tmpdir(), "envworker-test-"));
const vitestReport = join(reportDir, "vitest.json");

const halves = [
  { script: "test:vitest", stream: true, forwardArgs: true, extraArgs: ["--reporter=default", "--reporter=json", `--outputFile.json=${vitestReport}`] },
  // One thread per math library in the Python half: the trainer tests' torch would otherwise take
  // both cores of a 2-core machine for its tiny model while vitest's files run beside it.
  { script: "test:python", stream: false, forwardArgs: false, env: { OMP_NUM_THREADS: "1", MKL_NUM_THREADS: "1" } },
];

const args = process.argv.slice(2);

// dist/ first, when it is not the build of the sources: the servers both halves start then run
// compiled code without tsx's loader (bin/envworker.js), and vitest's globalSetup, which would
// build it too (test/global-setup.ts), must not rewrite it under the Python half's servers.
const built = spawnSync(process.execPath, ["bin/envworker.js", "build", "--if-stale"], { stdio: "inherit" });
if (built.status !== 0) {
  console.log(`\nnpm test: building dist/ failed (${built.status ?? built.signal}); no test ran`);
  process.exit(1);
}

/** Runs `npm run <script>` (through the npm that runs this script, when there is one). */
function runScript({ script, stream, forwardArgs, extraArgs = [], env }) {
  const passed = [...extraArgs, ...(forwardArgs ? args : [])];
  const npmArgs = ["run", "--silent", script, ...(passed.length > 0 ? ["--", ...passed] : [])];
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

// The machine's load over the run, read every few seconds: a bound scaled by load that failed is
// read against it (the summary says so), and a slow run says why it was slow.
const loads = [];
const readLoad = () => {
  try {
    loads.push(Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]));
  } catch {
    // Not Linux: no load figures.
  }
};
readLoad();
const loadTimer = setInterval(readLoad, 5000);
const running = halves.map((h) => runScript(h));
const outcomes = [];
for (const [i, h] of halves.entries()) {
  const outcome = await running[i];
  if (!h.stream) process.stdout.write(`\n> npm run ${h.script}\n${outcome.output}`);
  outcomes.push(outcome);
}

function vitestReportRead() {
  try {
    return JSON.parse(readFileSync(vitestReport, "utf8"));
  } catch {
    return undefined;
  }
}

clearInterval(loadTimer);
const report = vitestReportRead();
console.log("\nnpm test:");
for (const o of outcomes) console.log(`  ${o.ok ? "ok  " : "FAIL"} ${o.script.padEnd(12)} ${o.status}, ${o.seconds.toFixed(0)} s`);
const load = loadSummary(loads, availableParallelism());
console.log(`  the machine's load averaged ${load} over the run`);
const slowest = slowestFiles(report, process.cwd());
if (slowest.length > 0) console.log("\nthe slowest vitest files:\n" + slowest.join("\n"));
if (!outcomes[0].ok) console.log("\nvitest's failures:\n" + vitestFailures(report, process.cwd(), load).join("\n"));
rmSync(reportDir, { recursive: true, force: true });
process.exitCode = outcomes.every((o) => o.ok) ? 0 : 1;
