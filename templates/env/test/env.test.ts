/** Unit tests of __NAME__, played in process with scripted turns (envworker/testing). */
import { describe, expect, it } from "vitest";
import { playEpisode, scoreCompletion, startEpisode } from "envworker/testing";
import env, { parseGuess } from "../src/index.ts";

/** A player that halves the interval with every reply. */
function bisect() {
  let lo = 1;
  let hi = 100;
  let last = 0;
  return ({ reply }: { reply: string }) => {
    if (reply.startsWith("Higher")) lo = last + 1;
    if (reply.startsWith("Lower")) hi = last - 1;
    last = Math.floor((lo + hi) / 2);
    return `<guess>${last}</guess>`;
  };
}

describe("__NAME__", () => {
  it("parses guesses", () => {
    expect(parseGuess("<guess> 42 </guess>")).toBe(42);
    expect(parseGuess("forty-two")).toBeUndefined();
  });

  it("is won by bisection within 7 guesses", async () => {
    const episode = await playEpisode(env, { seed: 1, player: bisect() });
    expect(episode.done).toBe(true);
    expect(episode.metrics.solved).toBe(1);
    expect(episode.reward).toBeGreaterThan(1);
  });

  it("answers higher or lower, and ends after max_guesses", async () => {
    const episode = await playEpisode(env, { seed: 1, args: { max_guesses: 2 }, actions: ["<guess>0</guess>", "<guess>0</guess>"] });
    expect(episode.observations[0]!.messages[0]!.content).toBe("Higher.");
    expect(episode.turns).toBe(2);
    expect(episode.reward).toBe(0);
  });

  it("plays the README's example (seed 7)", async () => {
    const guesses = [50, 25, 37, 43, 40, 42].map((n) => `<guess>${n}</guess>`);
    const episode = await playEpisode(env, { seed: 7, actions: guesses });
    expect(episode.answer).toBe("42");
    expect(episode.completion.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["Lower.", "Higher.", "Higher.", "Lower.", "Higher.", "Correct!"]);
    expect(episode.reward).toBe(1.0833333333333333);
  });

  it("gives the same prompt for the same seed", async () => {
    const a = await startEpisode(env, { seed: 5 });
    const b = await startEpisode(env, { seed: 5 });
    expect(a.prompt).toEqual(b.prompt);
  });

  it("scores a completion statelessly (POST /score) like the episode", async () => {
    const episode = await playEpisode(env, { seed: 3, player: bisect() });
    const score = await scoreCompletion(env, { completion: episode.completion, answer: episode.answer });
    expect(score.reward).toBe(episode.reward);
  });
});
