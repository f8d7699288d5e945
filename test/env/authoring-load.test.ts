/**
 * Authoring mistakes are found at load or by `envworker validate`, in the author's terms: an
 * empty dataset (not a 400 blaming the first client), a missing rubric (not "spec.rubric is not
 * iterable"), state that is not JSON (naming the author's module, with no stack into the engine),
 * and validate's server log after the PASS/FAIL lines it explains, not before.
 */
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { validateCommand } from "../../src/cli/validate.ts";
import { defineEnvironment, z } from "../../src/index.ts";
import { startEpisode } from "../../src/testing.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const DIR = resolve(import.meta.dirname, "../fixtures/authoring-mistakes");
const envworker = (args: string[]) => spawnSync(process.execPath, [resolve(ROOT, "bin/envworker.js"), ...args], { encoding: "utf8", cwd: DIR, timeout: 120_000 });

describe("authoring mistakes at load", () => {
  it("an empty dataset (with the default args) is refused when the module loads, naming the split", () => {
    const r = envworker(["list", "./empty-dataset.ts"]);
    expect(r.status).toBe(2);
    expect(r.stderr.trim()).toBe('envworker: ./empty-dataset.ts: empty-dataset: dataset({ split: "train" }) gives no examples with the default args');
  }, 60_000);

  it("a missing rubric is refused by defineEnvironment, saying what to write", () => {
    const r = envworker(["validate", "./no-rubric.ts"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^envworker validate: \.\/no-rubric\.ts: no-rubric: give a rubric: rubric: \[\{ name: "correct", weight: 1, fn: /);
    expect(r.stderr).not.toMatch(/is not iterable/);
    const base = { name: "x", description: "d", version: "0", dataset: () => [{ prompt: "p" }], maxTurns: 1 };
    expect(() => defineEnvironment({ ...base, rubric: [] })).toThrow(/x: give a rubric/);
    expect(() => defineEnvironment({ ...base, rubric: [{ name: "r" }] } as never)).toThrow("x: rubric[0] needs a name (string) and fn (a function; group for a group reward)");
  }, 60_000);

  it("an empty dataset reached at reset with the default args is the environment's error (422), with the client's args a 400", async () => {
    const env = defineEnvironment({
      name: "filtered",
      description: "d",
      version: "0",
      args: z.object({ n: z.number().default(0) }).strict(),
      dataset: ({ args }) => (args.n === 1 ? [{ prompt: "p", answer: "a" }] : []),
      maxTurns: 1,
      rubric: [{ name: "one", fn: () => 1 }],
    });
    await expect(startEpisode(env)).rejects.toMatchObject({ code: "EXECUTION_ERROR", status: 422, message: expect.stringContaining("its dataset gives no train examples with the default args") });
    await expect(startEpisode(env, { args: { n: 2 } })).rejects.toMatchObject({ code: "VALIDATION_ERROR", status: 400 });
    expect((await startEpisode(env, { args: { n: 1 } })).episode.turn).toBe(0);
  });
});

describe("validate reports state that is not JSON in the author's terms", () => {
  it("names the author's module and the path; the server log follows the FAIL lines and has no engine stack", async () => {
    const lines: string[] = [];
    const cwd = process.cwd();
    process.chdir(DIR);
    let code: number;
    try {
      code = await validateCommand(["./map-state.ts"], (l) => lines.push(`out ${l}`), (t) => lines.push(`err ${t}`));
    } finally {
      process.chdir(cwd);
    }
    expect(code).toBe(1);
    const text = lines.join("\n");
    expect(lines[0]).toBe("out FAIL map-state");
    expect(text).toContain(`step 1: HTTP 422 EXECUTION_ERROR: map-state: after its respond (${DIR}/map-state.ts), state.seen: Map is not JSON`);
    const log = lines.findIndex((l) => l.startsWith("err "));
    expect(log).toBeGreaterThan(lines.findIndex((l) => l.includes("FAIL an episode played")));
    expect(lines[log]).toMatch(/^err {3}server log:\n {4}\S+ error step failed: map-state: after its respond/);
    expect(lines[log]).not.toMatch(/env-threads|\n\s+at /);
  }, 60_000);
});
