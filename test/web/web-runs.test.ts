/** The viewer's reading of saved runs: long lines, a half-written last line, growth, replacement. */
import { appendFile, mkdir, mkdtemp, rename, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunStore } from "../../src/web/viewer/runs.ts";
import { histogram, runStats } from "../../src/web/viewer/stats.ts";

let root: string;
const row = (example_id: number, rollout: number, reward: number | null, content = "ok", error: string | null = null) => ({
  example_id,
  rollout,
  prompt: [{ role: "user", content: `question ${example_id}` }],
  completion: [{ role: "assistant", content }],
  reward,
  metrics: reward === null ? null : { m: reward },
  done: true,
  truncated: false,
  turns: 1,
  error,
  retries: 0,
  usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
});
const line = (r: unknown) => `${JSON.stringify(r)}\n`;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "envworker-runs-"));
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe("RunStore", () => {
  it("reads rows across chunk boundaries, skips a half-written line, then reads on as the file grows", async () => {
    const dir = join(root, "env--m", "run1");
    await mkdir(dir, { recursive: true });
    const long = "x".repeat(2_500_000); // longer than the 1 MiB read chunk
    const file = join(dir, "results.jsonl");
    await writeFile(file, line(row(1, 0, 0.5, long)) + line(row(0, 0, 1)) + line(row(0, 1, 0.25)).slice(0, 30));
    const store = new RunStore(root);
    let run = (await store.get("env--m/run1"))!;
    expect(run.rows.map((r) => [r.example_id, r.rollout, r.reward])).toEqual([
      [0, 0, 1],
      [1, 0, 0.5],
    ]);
    expect(run.complete).toBe(false);
    expect([run.env, run.model]).toEqual(["env", "m"]);
    const full = await store.row(run, 1, 0);
    expect(full?.completion[0]?.content).toBe(long);

    await writeFile(file, line(row(1, 0, 0.5, long)) + line(row(0, 0, 1)) + line(row(0, 1, 0.25)) + "not json\n");
    run = (await store.get("env--m/run1"))!;
    expect(run.rows).toHaveLength(3);
    expect(run.badLines).toBe(1);

    // Replaced by a rename (the end of `eval -s`): read again from the start.
    await writeFile(`${file}.tmp`, line(row(0, 0, 1)) + line(row(0, 1, 0.25)) + line(row(1, 0, null, "", "model: 500")) + line(row(1, 1, 0)));
    await rename(`${file}.tmp`, file);
    await writeFile(join(dir, "metadata.json"), JSON.stringify({ env: "env", model: "m/x", num_examples: 2, rollouts_per_example: 2, avg_reward: 0.3125 }));
    run = (await store.get("env--m/run1"))!;
    expect(run.complete).toBe(true);
    expect(run.badLines).toBe(0);
    const stats = runStats(run);
    expect(stats.reward.avg).toBe(0.3125); // the failed rollout counts as 0, as eval does
    expect(stats.errors).toBe(1);
    expect(stats.passAtK).toEqual({ "1": 0.25, "2": 0.5 });
    expect(stats.examples.map((e) => e.mean)).toEqual([0.625, 0]);

    await appendFile(file, line(row(2, 0, 1)));
    expect((await store.get("env--m/run1"))!.rows).toHaveLength(5);
  });

  it("reads metadata.json again once it is written, though it was read empty in the moment of its rewrite, at the same mtime", async () => {
    // writeFile truncates, then writes: a read in between sees nothing, and both can fall in one
    // tick of the kernel's file clock (a live run's page showed "2 of 2 rollouts", never 24).
    const own = await mkdtemp(join(tmpdir(), "envworker-runs-meta-"));
    const dir = join(own, "env--m", "run-meta");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "results.jsonl"), line(row(0, 0, 1)));
    const meta = join(dir, "metadata.json");
    const tick = new Date("2026-01-01T00:00:00.000Z");
    await writeFile(meta, "");
    await utimes(meta, tick, tick);
    const store = new RunStore(own);
    const before = await store.get("env--m/run-meta");
    expect(before!.meta.num_examples).toBeUndefined();
    await writeFile(meta, JSON.stringify({ env: "env", model: "m", num_examples: 8, rollouts_per_example: 3 }));
    await utimes(meta, tick, tick);
    const after = await store.get("env--m/run-meta");
    await rm(own, { recursive: true, force: true });
    expect(after!.meta).toMatchObject({ num_examples: 8, rollouts_per_example: 3 });
    expect(after!.version).not.toBe(before!.version);
  });

  it("finds only run directories under the root: no path from an id", async () => {
    const store = new RunStore(root);
    for (const id of ["../x", "env--m/../../etc", "env--m", "env--m/run1/..", "./env--m/run1", "env--m/.hidden", "nope/run1"]) {
      expect(await store.get(id), id).toBeUndefined();
    }
    expect((await store.list()).map((r) => r.id)).toEqual(["env--m/run1"]);
  });
});

describe("histogram", () => {
  it("bins [0, 1] in tenths, the top bin closed, and widens to values outside", () => {
    expect(histogram([0, 0.05, 0.1, 0.95, 1]).counts).toEqual([2, 1, 0, 0, 0, 0, 0, 0, 0, 2]);
    const wide = histogram([-1, 1], { lo: -1, hi: 1 });
    expect(wide.counts[0]).toBe(1);
    expect(wide.counts[9]).toBe(1);
    expect(wide.labels[0]).toBe("\u22121 – \u22120.8");
    expect(histogram([2]).labels.at(-1)).toBe("1.8 – 2");
    // Edges are exact decimals, and a value on an edge is in the bin that starts there.
    const h = histogram([0.3, 0.7, 0.6999999]);
    expect(h.edges[3]).toEqual([0.3, 0.4]);
    expect(h.counts.slice(2, 8)).toEqual([0, 1, 0, 0, 1, 1]);
  });
});
