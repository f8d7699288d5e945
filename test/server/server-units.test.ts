/**
 * The episode store and the memory budget at their exact boundaries (found by mutation testing:
 * `npm run mutate`): idle expiry at exactly the timeout, the sweep's interval, byte accounting
 * through create / put / delete / expiry, and the budget's refusal and its error.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError } from "../../src/env/errors.ts";
import type { EpisodeState } from "../../src/env/episode.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { Arriving, MemoryBudget, OVERLOADED_RETRY_AFTER_S, SMALL_ARRIVING_BYTES } from "../../src/server/memory.ts";

const state = (id: string) => ({ episode_id: id }) as unknown as EpisodeState;

afterEach(() => {
  vi.useRealTimers();
});

describe("MemoryEpisodeStore", () => {
  it("drops an episode untouched for exactly the idle timeout, keeps one a millisecond younger", () => {
    let t = 1000;
    const store = new MemoryEpisodeStore({ idleTimeoutMs: 100, now: () => t });
    store.create(state("a"));
    t += 99;
    expect(store.get("a")).toBeDefined(); // touched at 1099
    t += 100;
    expect(store.get("a")).toBeUndefined();
    store.create(state("b"));
    t += 100;
    expect(store.expireIdle()).toBe(1);
    expect(store.size).toBe(0);
  });

  it("expires only the episodes past the timeout, in order of last use", () => {
    let t = 0;
    const store = new MemoryEpisodeStore({ idleTimeoutMs: 100, now: () => t });
    store.create(state("a"));
    t = 10;
    store.create(state("b"));
    t = 50;
    store.get("a"); // a is now the most recent
    t = 111;
    expect(store.expireIdle()).toBe(1);
    expect(store.get("b")).toBeUndefined();
    expect(store.get("a")).toBeDefined();
  });

  it("counts the bytes of every stored state through create, put, delete and expiry", () => {
    let t = 0;
    const store = new MemoryEpisodeStore({ idleTimeoutMs: 100, now: () => t });
    store.create(state("a"), 10);
    store.create(state("b"), 7);
    expect(store.bytes).toBe(17);
    expect(store.bytesOf("a")).toBe(10);
    expect(store.bytesOf("nope")).toBe(0);
    store.put(state("a"), 25);
    expect(store.bytes).toBe(32);
    expect(store.bytesOf("a")).toBe(25);
    store.put(state("gone"), 1000); // not stored: nothing counted
    expect(store.bytes).toBe(32);
    expect(store.delete("b")).toBe(true);
    expect(store.delete("b")).toBe(false);
    expect(store.bytes).toBe(25);
    t = 500;
    store.expireIdle();
    expect(store.bytes).toBe(0);
  });

  it("refuses a second episode with the same id and one past capacity, with the counts", () => {
    const store = new MemoryEpisodeStore({ maxEpisodes: 1 });
    store.create(state("a"));
    expect(() => store.create(state("a"))).toThrow(expect.objectContaining({ code: "EPISODE_EXISTS", message: "episode a already exists" }));
    try {
      store.create(state("b"));
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toMatchObject({ code: "CAPACITY_REACHED", details: { active_sessions: 1, max_sessions: 1 } });
      expect((err as Error).message).toContain("maximum of 1 open episodes");
    }
  });

  it("has the documented defaults", () => {
    const store = new MemoryEpisodeStore();
    expect(store.maxEpisodes).toBe(10_000);
    expect(store.idleTimeoutMs).toBe(600_000);
  });

  it("sweeps every quarter of the timeout, at least every second and at most every 30 s", () => {
    vi.useFakeTimers();
    for (const [idle, interval] of [
      [8000, 2000],
      [1000, 1000],
      [3_600_000, 30_000],
    ] as const) {
      const store = new MemoryEpisodeStore({ idleTimeoutMs: idle });
      const sweep = vi.spyOn(store, "expireIdle");
      store.startSweeping();
      vi.advanceTimersByTime(interval - 1);
      expect(sweep, `idle ${idle}`).toHaveBeenCalledTimes(0);
      vi.advanceTimersByTime(1);
      expect(sweep, `idle ${idle}`).toHaveBeenCalledTimes(1);
      store.stopSweeping();
      vi.advanceTimersByTime(interval * 3);
      expect(sweep).toHaveBeenCalledTimes(1);
    }
  });

  it("restarting the sweep replaces the old timer", () => {
    vi.useFakeTimers();
    const store = new MemoryEpisodeStore({ idleTimeoutMs: 8000 });
    const sweep = vi.spyOn(store, "expireIdle");
    store.startSweeping(100);
    store.startSweeping(100);
    vi.advanceTimersByTime(100);
    expect(sweep).toHaveBeenCalledTimes(1);
    store.stopSweeping();
  });
});

describe("MemoryBudget", () => {
  it("refuses with OVERLOADED, the budget in MiB and a retry delay", () => {
    let stored = 0;
    const budget = new MemoryBudget(3 * 2 ** 20, () => stored);
    stored = 3 * 2 ** 20;
    try {
      budget.admit(1);
      expect.unreachable();
    } catch (err) {
      expect(err).toMatchObject({ code: "OVERLOADED", details: { retry_after_s: OVERLOADED_RETRY_AFTER_S } });
      expect((err as Error).message).toContain("memory budget (3 MiB for episodes and queued messages) is used up");
    }
    expect(OVERLOADED_RETRY_AFTER_S).toBe(5);
  });

  it("holds request bodies in their own share, a quarter of the limit, beside what is kept", () => {
    const budget = new MemoryBudget(400, () => 400); // the kept part is full
    budget.holdBody(60);
    budget.holdBody(40); // exactly the share
    expect(budget.bodyBytes).toBe(100);
    try {
      budget.holdBody(1);
      expect.unreachable();
    } catch (err) {
      expect(err).toMatchObject({ code: "OVERLOADED", details: { retry_after_s: OVERLOADED_RETRY_AFTER_S } });
      expect((err as Error).message).toContain("request bodies arriving at once have used up their share");
    }
    expect(budget.bodyBytes).toBe(100); // a refused hold keeps nothing
    budget.releaseBody(60);
    budget.holdBody(60);
    expect(budget.bodyBytes).toBe(100);
    expect(budget.usedBytes).toBe(400); // bodies are not what is kept
    // A body arriving alone is taken whatever its size: a small budget still serves large bodies.
    budget.releaseBody(100);
    budget.holdBody(1000);
    budget.holdBody(500, 1000); // the same body, growing as it arrives: still alone
    expect(() => budget.holdBody(1)).toThrow(/share/);
    expect(() => budget.holdBody(1, 1499)).toThrow(/share/); // not the whole of what is held
  });

  it("holds small bodies in pieces in a share of their own, a sixteenth of the limit, that large ones cannot crowd", () => {
    const budget = new MemoryBudget(1600, () => 1600); // the kept part is full
    budget.holdBody(400); // the bodies' share is full too
    budget.holdSmallBody(60);
    budget.holdSmallBody(40); // exactly the small share
    expect(budget.smallBodyBytes).toBe(100);
    try {
      budget.holdSmallBody(1);
      expect.unreachable();
    } catch (err) {
      expect(err).toMatchObject({ code: "OVERLOADED", details: { retry_after_s: OVERLOADED_RETRY_AFTER_S } });
      expect((err as Error).message).toContain("small request bodies and messages arriving in pieces have used up their share");
    }
    expect(budget.smallBodyBytes).toBe(100);
    expect(budget.bodyBytes).toBe(400);
    budget.releaseSmallBody(100);
    budget.holdSmallBody(500); // alone: always taken
    budget.holdSmallBody(10, 500); // the same one growing
    expect(() => budget.holdSmallBody(1)).toThrow(/small request bodies/);
    expect(budget.smallBodyBytes).toBe(510);
  });

  it("Arriving: small sizes in the small share, larger ones in the bodies' share, moving between them both ways", () => {
    const budget = new MemoryBudget(4 * 2 ** 20, () => 0); // 1 MiB for bodies, 256 KiB for small ones
    const a = new Arriving(budget);
    a.resize(SMALL_ARRIVING_BYTES);
    expect([budget.smallBodyBytes, budget.bodyBytes]).toEqual([SMALL_ARRIVING_BYTES, 0]);
    a.resize(SMALL_ARRIVING_BYTES + 1);
    expect([budget.smallBodyBytes, budget.bodyBytes]).toEqual([0, SMALL_ARRIVING_BYTES + 1]);
    a.resize(300_000);
    expect(budget.bodyBytes).toBe(300_000);
    const b = new Arriving(budget);
    b.resize(700_000);
    expect(budget.bodyBytes).toBe(1_000_000);
    expect(() => b.resize(800_000)).toThrow(/share/); // 1.1 MB with a's: over the 1 MiB share
    expect(budget.bodyBytes).toBe(1_000_000); // b keeps what it held
    a.resize(10); // a message used most of what had arrived
    expect([budget.smallBodyBytes, budget.bodyBytes]).toEqual([10, 700_000]);
    // Growing and shrinking within the small share holds the difference each way.
    const c = new Arriving(budget);
    c.resize(5000);
    c.resize(9000);
    expect(budget.smallBodyBytes).toBe(9010);
    c.resize(1000);
    expect(budget.smallBodyBytes).toBe(1010);
    c.release();
    // The small share holds four frames of 64 KiB; a fifth does not fit, and keeps nothing.
    const small = Array.from({ length: 4 }, () => new Arriving(budget));
    small[0]!.resize(SMALL_ARRIVING_BYTES - 10);
    for (const s of small.slice(1)) s.resize(SMALL_ARRIVING_BYTES);
    expect(budget.smallBodyBytes).toBe(4 * SMALL_ARRIVING_BYTES);
    const fifth = new Arriving(budget);
    expect(() => fifth.resize(1)).toThrow(/small request bodies/);
    fifth.release();
    for (const s of small) s.release();
    b.release();
    a.release();
    expect([budget.smallBodyBytes, budget.bodyBytes]).toEqual([0, 0]);
    new Arriving(undefined).resize(10 ** 9); // no budget (Workers, app.request): nothing counted
  });

  it("Arriving: gives back only what it no longer holds when it shrinks but is still counted", () => {
    const budget = new MemoryBudget(4 * 2 ** 20, () => 0);
    const a = new Arriving(budget);
    a.resize(300_000);
    a.resize(200_000);
    expect(budget.bodyBytes).toBe(200_000);
    a.resize(200_000);
    expect(budget.bodyBytes).toBe(200_000);
    a.release();
    expect(budget.bodyBytes).toBe(0);
  });

  it("Arriving: a body of up to 64 KiB is taken even while one large body holds more than the share", () => {
    const budget = new MemoryBudget(4 * 2 ** 20, () => 0); // a 1 MiB share
    const large = new Arriving(budget);
    large.resize(2 * 2 ** 20); // alone: taken whatever its size
    const small = new Arriving(budget);
    expect(() => small.resize(10)).not.toThrow();
    expect(() => small.resize(SMALL_ARRIVING_BYTES)).not.toThrow();
    expect(() => small.resize(SMALL_ARRIVING_BYTES + 1)).toThrow(/share/);
    expect(budget.bodyBytes).toBe(2 * 2 ** 20);
  });

  it("names the bodies' share in MiB when it refuses one", () => {
    const budget = new MemoryBudget(64 * 2 ** 20, () => 0);
    budget.holdBody(16 * 2 ** 20);
    expect(() => budget.holdBody(1)).toThrow(
      "request bodies arriving at once have used up their share of the server's memory budget (16 MiB); retry later",
    );
  });

  it("admits a negative size as nothing, and counts held bytes until released", () => {
    let stored = 50;
    const budget = new MemoryBudget(100, () => stored);
    expect(() => budget.admit(-1000)).not.toThrow();
    budget.hold(30);
    expect(budget.usedBytes).toBe(80);
    expect(() => budget.hold(21)).toThrow(/memory budget/);
    expect(budget.usedBytes).toBe(80); // a refused hold keeps nothing
    budget.release(30);
    expect(budget.usedBytes).toBe(50);
    stored = 99;
    expect(() => budget.admit(0)).not.toThrow();
    stored = 100;
    expect(() => budget.admit(0)).toThrow(/memory budget/);
    // A step that shrinks an episode is not refused even when the budget is used up.
    expect(() => budget.admit(-5)).not.toThrow();
  });
});
