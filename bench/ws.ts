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

/**
 * Episodes per second of reverse-text over SESSIONS sessions, the server's CPU per episode (every
 * thread), and its event loop's alone: the part every request passes through one at a time, so
 * what bounds episodes/s once environment threads have cores of their own.
 */
async function episodes(clients: OpenEnvWsClient[], server: Awaited<ReturnType<typeof startBenchServer>>) {
  const play = (c: OpenEnvWsClient) => c.reset({}).then((r) => c.step({ content: reverseTextGold(r.data.observation.messages) }));
  // Warm up first: threads compile their code on the first episodes, and resets are made ahead.
  const warmUntil = Date.now() + Math.min(DURATION_MS, 2000);
  await Promise.all(
    clients.map(async (c) => {
      while (Date.now() < warmUntil) await play(c);
    }),
  );
  const [cpu0, loop0] = [server.cpuMicros(), server.eventLoopCpuMicros()];
  const rate = await perSecond(clients, async (c) => ((await play(c)).data.done ? 1 : 0));
  const n = rate * (DURATION_MS / 1000);
  return { rate, cpu: (server.cpuMicros() - cpu0) / n, loop: (server.eventLoopCpuMicros() - loop0) / n };
}

export async function benchWs(): Promise<void> {
  const server = await startBenchServer();
  // The same server with environment code on the event loop (ENVWORKER_ENV_THREADS=0): what the
  // isolation of environment code in threads costs per episode.
  const inline = await startBenchServer({ ENVWORKER_ENV_THREADS: "0" });
  const base = `${server.url}/envs/reverse-text`;
  try {
    console.log(`\n## WebSocket (${SESSIONS} concurrent sessions, ${DURATION_MS / 1000}s each)`);
    const clients = await Promise.all(Array.from({ length: SESSIONS }, () => OpenEnvWsClient.connect(base)));
    for (const c of clients) await c.reset({});
    const cpu0 = server.cpuMicros();
    const stateRate = await perSecond(clients, async (c) => ((await c.send({ type: "state" })).type === "state" ? 1 : 0));
    const stateCpu = (server.cpuMicros() - cpu0) / (stateRate * (DURATION_MS / 1000));
    const threaded = await episodes(clients, server);
    for (const c of clients) c.close();
    const inlineClients = await Promise.all(Array.from({ length: SESSIONS }, () => OpenEnvWsClient.connect(`${inline.url}/envs/reverse-text`)));
    for (const c of inlineClients) await c.reset({});
    const onLoop = await episodes(inlineClients, inline);
    for (const c of inlineClients) c.close();
    console.log("| load | messages/s | vs state | server CPU per message |");
    console.log("| --- | ---: | ---: | ---: |");
    console.log(`| state (baseline) | ${fmt(stateRate)} | 1.00x | ${fmt(stateCpu)} µs |`);
    const row = (label: string, e: { rate: number; cpu: number }) =>
      `| ${label} | ${fmt(e.rate)} episodes/s = ${fmt(e.rate * 2)} msgs/s | ${((e.rate * 2) / stateRate).toFixed(2)}x | ${fmt(e.cpu / 2)} µs (${fmt(e.cpu)} µs per episode, ${(e.cpu / 2 / stateCpu).toFixed(2)}x state's) |`;
    console.log(row("reverse-text reset+step (environment threads, the default)", threaded));
    console.log(row("reverse-text reset+step (ENVWORKER_ENV_THREADS=0: on the event loop)", onLoop));
    console.log(`\n| reverse-text episode | server CPU (every thread) | event loop's CPU |`);
    console.log("| --- | ---: | ---: |");
    console.log(`| environment threads (the default) | ${fmt(threaded.cpu)} µs | ${fmt(threaded.loop)} µs |`);
    console.log(`| ENVWORKER_ENV_THREADS=0 | ${fmt(onLoop.cpu)} µs | ${fmt(onLoop.loop)} µs |`);
    console.log(`\nenvironment threads vs the event loop: ${(threaded.rate / onLoop.rate).toFixed(2)}x the episodes/s, ${(threaded.cpu / onLoop.cpu).toFixed(2)}x the server CPU per episode, ${(threaded.loop / onLoop.loop).toFixed(2)}x the event loop's CPU per episode`);

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
    await Promise.all([server.stop(), inline.stop()]);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchWs();
