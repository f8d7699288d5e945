/**
 * WebSocket throughput over many concurrent sessions, and many sessions held open at once.
 * Baseline in the same run: `state` messages, which touch the session but do no environment work.
 */
import { reverseTextGold } from "../test/helpers/oracles.ts";
import { OpenEnvWsClient } from "../test/helpers/ws-client.ts";
import { fmt, startBenchServer } from "./server.ts";

// 16 sessions: a trainer's typical concurrency against one server (the reference load).
const SESSIONS = Number(process.env.BENCH_WS_SESSIONS ?? 16);
const HELD = Number(process.env.BENCH_WS_HELD ?? 1000);
const DURATION_MS = Number(process.env.BENCH_DURATION_S ?? 5) * 1000;

async function perSecond(clients: OpenEnvWsClient[], work: (c: OpenEnvWsClient) => Promise<number>): Promise<number> {
  const until = Date.now() + DURATION_MS;
  const counts = await Promise.all(
    clients.map(async (c) => {
      let n = 0;
      while (Date.now() < until) n += await work(c);
      return n;
    }),
  );
  return counts.reduce((a, b) => a + b, 0) / (DURATION_MS / 1000);
}

export async function benchWs(): Promise<void> {
  const server = await startBenchServer();
  const base = `${server.url}/envs/reverse-text`;
  try {
    console.log(`\n## WebSocket (${SESSIONS} concurrent sessions, ${DURATION_MS / 1000}s each)`);
    const clients = await Promise.all(Array.from({ length: SESSIONS }, () => OpenEnvWsClient.connect(base)));
    for (const c of clients) await c.reset({});
    let cpu0 = server.cpuMicros();
    const stateRate = await perSecond(clients, async (c) => ((await c.send({ type: "state" })).type === "state" ? 1 : 0));
    const stateCpu = (server.cpuMicros() - cpu0) / (stateRate * (DURATION_MS / 1000));
    cpu0 = server.cpuMicros();
    const episodeRate = await perSecond(clients, async (c) => {
      const r = await c.reset({});
      const s = await c.step({ content: reverseTextGold(r.data.observation.messages) });
      return s.data.done ? 1 : 0;
    });
    const episodeCpu = (server.cpuMicros() - cpu0) / (episodeRate * (DURATION_MS / 1000));
    for (const c of clients) c.close();
    console.log("| load | messages/s | vs state | server CPU per message |");
    console.log("| --- | ---: | ---: | ---: |");
    console.log(`| state (baseline) | ${fmt(stateRate)} | 1.00x | ${fmt(stateCpu)} µs |`);
    console.log(
      `| reverse-text reset+step | ${fmt(episodeRate)} episodes/s = ${fmt(episodeRate * 2)} msgs/s | ${((episodeRate * 2) / stateRate).toFixed(2)}x | ${fmt(episodeCpu / 2)} µs (${fmt(episodeCpu)} µs per episode, ${(episodeCpu / 2 / stateCpu).toFixed(2)}x state's) |`,
    );

    console.log(`\n## ${HELD} WebSocket sessions held at once, each playing one episode`);
    const rssBefore = server.rssBytes();
    const t0 = performance.now();
    const held = await Promise.all(Array.from({ length: HELD }, () => OpenEnvWsClient.connect(base)));
    const resets = await Promise.all(held.map((c) => c.reset({})));
    const rssHeld = server.rssBytes();
    const steps = await Promise.all(held.map((c, i) => c.step({ content: reverseTextGold(resets[i]!.data.observation.messages) })));
    const completed = steps.filter((s) => s.type === "observation" && s.data.done && s.data.reward === 1).length;
    const ms = performance.now() - t0;
    for (const c of held) c.close();
    console.log(`completed ${completed}/${HELD} episodes in ${fmt(ms)} ms; server RSS +${fmt((rssHeld - rssBefore) / 1024 / HELD, 1)} KiB per open session`);
  } finally {
    await server.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchWs();
