/**
 * Load, bounded: 1,000 WebSocket sessions held open at once, each plays an episode to the end;
 * and a burst of HTTP episodes over many connections. Counts are fixed, nothing is timed: the
 * assertions are that everything completes, correctly, with nothing lost or leaked.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { post } from "../helpers/http.ts";
import { reverseTextGold } from "../helpers/oracles.ts";
import { OpenEnvWsClient } from "../helpers/ws-client.ts";

let server: RunningServer;
beforeAll(async () => {
  server = await startServer(environments, { port: 0 });
});
afterAll(() => server?.close());

describe("load", () => {
  it("holds 1,000 concurrent WebSocket sessions and completes every episode", async () => {
    const base = `${server.url}/envs/reverse-text`;
    const clients: OpenEnvWsClient[] = [];
    for (let i = 0; i < 1000; i += 100) {
      clients.push(...(await Promise.all(Array.from({ length: 100 }, () => OpenEnvWsClient.connect(base)))));
    }
    const resets = await Promise.all(clients.map((c, i) => c.reset({ seed: i })));
    expect(new Set(resets.map((r) => r.data.episode_id)).size).toBe(1000);
    expect(server.store.size).toBeGreaterThanOrEqual(1000);
    // Half answer correctly, half wrongly: each gets its own episode's reward.
    const steps = await Promise.all(
      clients.map((c, i) => c.step({ content: i % 2 ? "wrong" : reverseTextGold(resets[i]!.data.observation.messages) })),
    );
    steps.forEach((s, i) => {
      expect(s.type).toBe("observation");
      expect(s.data.done).toBe(true);
      expect(s.data.reward).toBe(i % 2 ? 0 : 1);
    });
    for (const c of clients) c.close();
    await Promise.all(clients.map((c) => c.closed));
    for (let i = 0; i < 100 && server.store.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(server.store.size).toBe(0);
  }, 120_000);

  it("plays 2,000 HTTP episodes over 50 concurrent clients", async () => {
    const base = `${server.url}/envs/reverse-text`;
    let next = 0;
    let ok = 0;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < 2000) {
          const seed = next++;
          const r = await post(`${base}/reset`, { seed });
          const s = await post(`${base}/step`, { episode_id: r.body.episode_id, action: { content: reverseTextGold(r.body.observation.messages) } });
          if (s.body.reward === 1) ok++;
          await post(`${base}/close`, { episode_id: r.body.episode_id });
        }
      }),
    );
    expect(ok).toBe(2000);
    expect(server.store.size).toBe(0);
  }, 120_000);
});
