import { describe, expect, it } from "vitest";
import { resetEpisode } from "../../src/env/episode.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { newEpisodeId } from "../../src/server/ids.ts";
import { guessNumber } from "../fixtures/test-envs.ts";

const episode = (id: string) => resetEpisode(guessNumber, id, { seed: 1 }).state;

describe("in-memory episode store", () => {
  it("enforces its capacity", () => {
    const store = new MemoryEpisodeStore({ maxEpisodes: 2 });
    store.create(episode("a"));
    store.create(episode("b"));
    expect(() => store.create(episode("c"))).toThrow(expect.objectContaining({ code: "CAPACITY_REACHED", status: 429 }));
    expect(() => store.create(episode("a"))).toThrow(expect.objectContaining({ code: "EPISODE_EXISTS" }));
    store.delete("a");
    store.create(episode("c"));
    expect(store.size).toBe(2);
  });

  it("expires episodes idle for the timeout, keeping those in use", () => {
    let now = 0;
    const store = new MemoryEpisodeStore({ idleTimeoutMs: 1000, now: () => now });
    store.create(episode("old"));
    store.create(episode("busy"));
    now = 600;
    expect(store.get("busy")).toBeDefined();
    now = 1000;
    expect(store.get("old")).toBeUndefined();
    expect(store.get("busy")).toBeDefined();
    now = 2500;
    expect(store.expireIdle()).toBe(1);
    expect(store.size).toBe(0);
  });

  it("frees capacity held by expired episodes when a new one arrives", () => {
    let now = 0;
    const store = new MemoryEpisodeStore({ maxEpisodes: 1, idleTimeoutMs: 10, now: () => now });
    store.create(episode("a"));
    now = 20;
    store.create(episode("b"));
    expect(store.size).toBe(1);
  });

  it("does not resurrect an episode closed while its step ran", () => {
    const store = new MemoryEpisodeStore();
    const s = episode("a");
    store.create(s);
    store.delete("a");
    store.put(s);
    expect(store.get("a")).toBeUndefined();
  });

  it("makes unguessable ids: 144 random bits, url-safe", () => {
    const ids = new Set(Array.from({ length: 2000 }, newEpisodeId));
    expect(ids.size).toBe(2000);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{24}$/);
    // Every position varies: no fixed prefix or counter.
    const firstChars = new Set([...ids].map((id) => id[0]));
    expect(firstChars.size).toBeGreaterThan(32);
  });
});
