/**
 * Memory per open episode at 10,000 open episodes: server RSS before and after, divided by the
 * count. The baseline in the same run is the server's RSS with no episodes.
 */
import { fmt, startBenchServer } from "./server.ts";

const EPISODES = Number(process.env.BENCH_EPISODES ?? 10_000);

async function openEpisodes(url: string, env: string, count: number): Promise<void> {
  const batch = 100;
  for (let i = 0; i < count; i += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, count - i) }, async () => {
        const res = await fetch(`${url}/envs/${env}/reset`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
        if (res.status !== 200) throw new Error(`reset failed: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      }),
    );
  }
}

export async function benchMemory(): Promise<void> {
  console.log(`\n## Memory per open episode (${fmt(EPISODES)} open episodes)`);
  console.log("| environment | RSS idle MiB | RSS with episodes MiB | KiB per episode |");
  console.log("| --- | ---: | ---: | ---: |");
  for (const env of ["reverse-text", "alphabet-sort"]) {
    const server = await startBenchServer({ ENVWORKER_MAX_EPISODES: String(EPISODES) });
    try {
      await openEpisodes(server.url, env, 200); // warm up code paths and caches first
      const idle = server.rssBytes();
      await openEpisodes(server.url, env, EPISODES - 200);
      await new Promise((r) => setTimeout(r, 500));
      const full = server.rssBytes();
      console.log(`| ${env} | ${fmt(idle / 2 ** 20, 1)} | ${fmt(full / 2 ** 20, 1)} | ${fmt((full - idle) / 1024 / (EPISODES - 200), 2)} |`);
    } finally {
      await server.stop();
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchMemory();
