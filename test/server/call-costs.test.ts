/**
 * What every reset and step computes besides the environment's own work, made cheap (bench/ws.ts):
 * the size a state is counted at (a walk, not JSON.stringify), random bytes drawn in blocks, and
 * example references of dataset rows kept rather than re-hashed, as long as the row is the same.
 * And `/examples` in slices (a large request holds a shared thread a slice at a time).
 */
import { describe, expect, it } from "vitest";
import { randomBytes, randomUint32 } from "../../src/env/entropy.ts";
import type { EpisodeState } from "../../src/env/episode.ts";
import { resetEpisode } from "../../src/env/episode.ts";
import { importEnvironments } from "../../src/env/source.ts";
import { stateBytes } from "../../src/server/engine.ts";
import { examplesInSlices, listExamples, referencedExample, withReference } from "../../src/server/examples.ts";
import type { ExamplesRequest } from "../../src/server/protocol.ts";

describe("stateBytes", () => {
  it("counts strings by length, other values as 24 characters, keys and punctuation, at two bytes each", () => {
    // {"a":"xy","b":[1,null]}: braces 2; "a": 1+4 + "xy" 4; "b": 1+4 + [ ] 2 + (24+1) × 2
    expect(stateBytes({ a: "xy", b: [1, null] } as unknown as EpisodeState)).toBe(2 * (2 + 5 + 4 + 5 + 2 + 50));
    // Memory holds a string unescaped: a newline is one character, not JSON's two.
    expect(stateBytes({ s: "\n" } as unknown as EpisodeState)).toBe(2 * (2 + 5 + 3));
  });

  it("is never less than the state's JSON without escapes (an upper bound for the budget)", async () => {
    const [env] = (await importEnvironments(new URL("../../envs/index.ts", import.meta.url).href)).filter((e) => e.name === "word-groups");
    const { state } = resetEpisode(env!, "x", { seed: 3 });
    expect(stateBytes(state)).toBeGreaterThanOrEqual(2 * JSON.stringify(state).replace(/\\./g, "_").length);
    expect(stateBytes(state)).toBeLessThan(4 * JSON.stringify(state).length);
  });
});

describe("entropy", () => {
  it("hands out fresh bytes from blocks, never the same view twice, and refills past a block", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 600; i++) {
      const b = randomBytes(18); // 600 × 18 bytes: two refills of the 4,096-byte block
      expect(b.length).toBe(18);
      seen.add(Buffer.from(b).toString("hex"));
    }
    expect(seen.size).toBe(600);
    const a = randomBytes(8);
    const b = randomBytes(8);
    expect(a.buffer === b.buffer && a.byteOffset === b.byteOffset).toBe(false);
    expect(() => randomBytes(4097)).toThrow(RangeError);
  });

  it("randomUint32 covers the unsigned 32-bit range", () => {
    const values = Array.from({ length: 2000 }, randomUint32);
    expect(values.every((v) => Number.isInteger(v) && v >= 0 && v < 2 ** 32)).toBe(true);
    expect(values.some((v) => v >= 2 ** 31)).toBe(true);
    expect(new Set(values).size).toBeGreaterThan(1990);
  });
});

/** A reset request that names nothing (what `POST /reset {}` parses to). */
const PLAIN = { seed: undefined, episode_id: undefined, index: undefined, split: undefined, args: undefined };

describe("example references of dataset rows", () => {
  it("the same row gets the same reference; a row whose prompt changed gets a new one that resolves", async () => {
    const [env] = (await importEnvironments(new URL("../../envs/index.ts", import.meta.url).href)).filter((e) => e.name === "reverse-text");
    const { result } = resetEpisode(env!, "x", { index: 5 });
    const first = await withReference(env!, PLAIN, result);
    const again = await withReference(env!, PLAIN, resetEpisode(env!, "y", { index: 5 }).result);
    const ref = first.observation.info!.example as string;
    expect(ref).toMatch(/^ex1\./);
    expect(again.observation.info!.example).toBe(ref);
    expect((await referencedExample(env!, ref, "example")).prompt).toEqual(result.observation.messages);

    // The row's prompt is not what was kept: the reference is computed again from this prompt.
    const changed = structuredClone(result);
    changed.observation.messages.at(-1)!.content = "something else";
    const other = await withReference(env!, PLAIN, changed);
    expect(other.observation.info!.example).not.toBe(ref);
    // ...and it is the reference of that prompt (which the server no longer has: refused as changed).
    await expect(referencedExample(env!, other.observation.info!.example as string, "example")).rejects.toThrow(/changed/);
    // The row as it is gets its own reference again.
    expect((await withReference(env!, PLAIN, resetEpisode(env!, "z", { index: 5 }).result)).observation.info!.example).toBe(ref);
  });
});

describe("examplesInSlices", () => {
  it("joins slices into exactly what one listExamples call answers, ending at the dataset's end", async () => {
    const envs = await importEnvironments(new URL("../../envs/index.ts", import.meta.url).href);
    const dataset = envs.find((e) => e.name === "reverse-text")!;
    const generated = envs.find((e) => e.name === "alphabet-sort")!;
    const total = (await listExamples(dataset, { count: 0 })).total!;
    const cases: [typeof dataset, ExamplesRequest, number[]][] = [
      [dataset, { start: total - 30, count: 100 }, [50]], // 30 left: one slice, shorter than asked
      [dataset, { start: 5, count: 120 }, [50, 50, 20]],
      [dataset, { count: 0 }, [0]],
      [dataset, {}, [50, 50]], // the default count, 100
      [generated, { start: 7, count: 101 }, [50, 50, 1]],
      [generated, { seeds: Array.from({ length: 120 }, (_, i) => 1000 - i) }, [50, 50, 20]],
    ];
    for (const [env, req, expectedSlices] of cases) {
      const slices: number[] = [];
      const joined = await examplesInSlices(req, 50, (slice) => {
        slices.push(slice.seeds?.length ?? slice.count!);
        return listExamples(env, slice);
      });
      expect(slices, JSON.stringify(req)).toEqual(expectedSlices);
      expect(joined).toEqual(await listExamples(env, req));
    }
  });
});
