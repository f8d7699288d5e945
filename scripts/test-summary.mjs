// The end of `npm test`'s output (scripts/test.mjs), from vitest's JSON report and the load read
// over the run: what failed, which failures were bounds scaled by load, and the slowest files.
// Tested in test/package/test-summary.test.ts.

const fileName = (file, cwd) => file.name.replace(`${cwd}/`, "");

/** The load a test measured, where its failure says it (the load-scaled bounds' messages do: "load factor 2.40"). */
const LOAD_SAID = /load factor (\d+(?:\.\d+)?)|at load (\d+(?:\.\d+)?)/;

/**
 * vitest's failed files and tests, from its JSON report, each with the first lines of its error;
 * a failure on a bound scaled by the machine's load says so, with the load it measured.
 */
export function vitestFailures(report, cwd, load) {
  if (!report) return ["  (vitest wrote no report: it stopped before the end)"];
  const firstLines = (text) => String(text ?? "").split("\n").slice(0, 6).map((l) => `      ${l}`);
  const lines = [];
  for (const file of report.testResults ?? []) {
    const name = fileName(file, cwd);
    const failed = (file.assertionResults ?? []).filter((t) => t.status === "failed");
    if (file.status === "failed" && failed.length === 0) lines.push(`  ${name}`, ...firstLines(file.message));
    for (const t of failed) {
      const message = t.failureMessages?.[0];
      lines.push(`  ${name} > ${t.fullName}`, ...firstLines(message));
      const said = LOAD_SAID.exec(String(message ?? ""));
      const timedOut = /Test timed out|Hook timed out/.test(String(message ?? ""));
      if (said || timedOut) {
        lines.push(
          `      -> ${said ? `a bound scaled by the machine's load (the test measured ${said[1] ?? said[2]})` : "a timeout"}, on a machine whose load averaged ${load}: run the file alone to tell load from a fault: npx vitest run ${name}`,
        );
      }
    }
  }
  return lines;
}

/** The load averages read over a run, in a few words. */
export function loadSummary(loads, cpus) {
  if (loads.length === 0) return "(unknown)";
  const mean = loads.reduce((a, b) => a + b, 0) / loads.length;
  return `${mean.toFixed(1)} (max ${Math.max(...loads).toFixed(1)}) on ${cpus} CPUs`;
}

/** The files that took longest, from vitest's report. */
export function slowestFiles(report, cwd, n = 5) {
  const files = (report?.testResults ?? []).filter((f) => f.startTime && f.endTime).map((f) => ({ name: fileName(f, cwd), seconds: (f.endTime - f.startTime) / 1000 }));
  return files.sort((a, b) => b.seconds - a.seconds).slice(0, n).map((f) => `  ${f.seconds.toFixed(0).padStart(4)} s  ${f.name}`);
}

