/**
 * The end of `npm test`'s output (scripts/test-summary.mjs, issue 40, 4): the failures again, a
 * failure on a bound scaled by the machine's load said to be one with the load the test measured
 * and the run's, and the slowest files. Read from a report in the shape vitest's JSON reporter writes.
 */
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module of the scripts, without types
import { loadSummary, slowestFiles, vitestFailures } from "../../scripts/test-summary.mjs";

const CWD = "/repo";
const report = {
  testResults: [
    {
      name: "/repo/test/fast.test.ts",
      status: "passed",
      startTime: 1_000,
      endTime: 3_000,
      assertionResults: [{ status: "passed", fullName: "fast works" }],
    },
    {
      name: "/repo/test/loaded.test.ts",
      status: "failed",
      startTime: 1_000,
      endTime: 91_000,
      assertionResults: [
        { status: "failed", fullName: "steps are served promptly", failureMessages: ["AssertionError: steps (ms): 5880; load factor 2.40: expected 5880 to be less than 3598\n    at test/loaded.test.ts:81:70"] },
        { status: "failed", fullName: "answers 42", failureMessages: ["AssertionError: expected 41 to be 42"] },
        { status: "failed", fullName: "starts", failureMessages: ["Error: Hook timed out in 180000ms."] },
      ],
    },
    { name: "/repo/test/broken.test.ts", status: "failed", message: "SyntaxError: Unexpected token", startTime: 1_000, endTime: 1_500, assertionResults: [] },
  ],
};

describe("npm test's summary", () => {
  it("says which failures were bounds scaled by load, with the load the test measured and the run's, and how to rerun them", () => {
    const load = loadSummary([3, 9, 12], 2);
    expect(load).toBe("8.0 (max 12.0) on 2 CPUs");
    const lines: string[] = vitestFailures(report, CWD, load);
    const at = (test: string) => lines.findIndex((l) => l.includes(test));
    const noteAfter = (test: string) => lines.slice(at(test) + 1).find((l) => l.trimStart().startsWith("->") || l.startsWith("  test/"));
    expect(lines).toContain("  test/loaded.test.ts > steps are served promptly");
    expect(noteAfter("steps are served promptly")).toBe(
      "      -> a bound scaled by the machine's load (the test measured 2.40), on a machine whose load averaged 8.0 (max 12.0) on 2 CPUs: run the file alone to tell load from a fault: npx vitest run test/loaded.test.ts",
    );
    expect(noteAfter("starts")).toMatch(/^ {6}-> a timeout, on a machine whose load averaged 8\.0/);
    // A plain failure is not excused by the load.
    expect(noteAfter("answers 42")).toBe("  test/loaded.test.ts > starts");
    expect(lines).toContain("  test/broken.test.ts");
    expect(lines).toContain("      SyntaxError: Unexpected token");
  });

  it("lists the slowest files first, and says when there is no report or no load", () => {
    expect(slowestFiles(report, CWD, 2)).toEqual(["    90 s  test/loaded.test.ts", "     2 s  test/fast.test.ts"]);
    expect(vitestFailures(undefined, CWD, "(unknown)")).toEqual(["  (vitest wrote no report: it stopped before the end)"]);
    expect(loadSummary([], 2)).toBe("(unknown)");
  });
});
