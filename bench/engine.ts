/**
 * The episode engine in process, per environment: reset and reset+step (a fixed wrong answer,
 * so every env runs its full rubric), against a baseline in the same run: structuredClone of a
 * fresh episode state, the copy every step makes anyway.
 */
import { environments } from "../envs/index.ts";
import { resetEpisode, stepEpisode } from "../src/env/episode.ts";
import { fmt } from "./server.ts";

const ITERATIONS = Number(process.env.BENCH_ENGINE_RUNS ?? 2000);

async function perOp(fn: () => unknown | Promise<unknown>): Promise<number> {
  for (let i = 0; i < 100; i++) await fn(); // warm-up
  const t = performance.now();
  for (let i = 0; i < ITERATIONS; i++) await fn();
  return ((performance.now() - t) / ITERATIONS) * 1000;
}

export async function benchEngine(): Promise<void> {
  console.log(`\n## Episode engine in process (${fmt(ITERATIONS)} iterations each)`);
  console.log("| environment | clone µs (baseline) | reset µs | reset+step µs | reset vs clone |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const env of environments) {
    const { state } = resetEpisode(env, "bench", { seed: 1 });
    const clone = await perOp(() => structuredClone(state));
    const reset = await perOp(() => resetEpisode(env, "bench", {}));
    // No sandbox here: js-code's reward reports sandbox_error; its sandbox cost is bench/sandbox.ts's.
    const episode = await perOp(async () => stepEpisode(env, resetEpisode(env, "bench", {}).state, { content: "42" }));
    console.log(`| ${env.name} | ${fmt(clone, 1)} | ${fmt(reset, 1)} | ${fmt(episode, 1)} | ${(reset / clone).toFixed(1)}x |`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchEngine();
