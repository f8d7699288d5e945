#!/usr/bin/env node
// `npm test`: every half of the suite runs and reports, whatever the others did, and the exit
// status is non-zero when any half failed. (`a && b` skipped the Python client's suite whenever
// vitest failed.) Each half is an npm script. They run at the same time: vitest's output streams
// to the terminal, the others' is held and printed, whole, once vitest is done. Arguments after
// `npm test --` go to vitest.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
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

const running = halves.map((h) => runScript(h));
const outcomes = [];
for (const [i, h] of halves.entries()) {
  const outcome = await running[i];
  if (!h.stream) process.stdout.write(`\n> npm run ${h.script}\n${outcome.output}`);
  outcomes.push(outcome);
}

/** vitest's failed files and tests, from its JSON report, each with the first lines of its error. */
function vitestFailures() {
  let report;
  try {
    report = JSON.parse(readFileSync(vitestReport, "utf8"));
  } catch {
    return ["  (vitest wrote no report: it stopped before the end)"];
  }
  const firstLines = (text) => String(text ?? "").split("\n").slice(0, 6).map((l) => `      ${l}`);
  const lines = [];
  for (const file of report.testResults ?? []) {
    const name = file.name.replace(`${process.cwd()}/`, "");
    const failed = (file.assertionResults ?? []).filter((t) => t.status === "failed");
    if (file.status === "failed" && failed.length === 0) lines.push(`  ${name}`, ...firstLines(file.message));
    for (const t of failed) lines.push(`  ${name} > ${t.fullName}`, ...firstLines(t.failureMessages?.[0]));
  }
  return lines;
}

console.log("\nnpm test:");
for (const o of outcomes) console.log(`  ${o.ok ? "ok  " : "FAIL"} ${o.script.padEnd(12)} ${o.status}, ${o.seconds.toFixed(0)} s`);
if (!outcomes[0].ok) console.log("\nvitest's failures:\n" + vitestFailures().join("\n"));
rmSync(reportDir, { recursive: true, force: true });
process.exitCode = outcomes.every((o) => o.ok) ? 0 : 1;
