/**
 * A steady client beside a stream of new clients, on a live server (src/sandbox/README.md, "The
 * residual": which host is stopped to make room). The steady client scores a py-code answer from
 * 127.0.0.1 every GAP ms; ATT attackers each send the same request from a new loopback address
 * every time (127.0.x.y: a new client each, so each asks for a host of its own). Prints the steady
 * client's latency alone and beside the attackers, and their ratio (same process, same server).
 *
 *   node --no-node-snapshot --conditions=envworker-source --import tsx bench/affinity-churn.ts
 *   (GAP=3000 ATT=1 by default; ENVWORKER_SANDBOX_CONCURRENCY=2)
 */
import http from "node:http";
import { startLiveServer } from "../test/helpers/hostile.ts";

const GAP = Number(process.env.GAP ?? 3000);
const ATTACKERS = Number(process.env.ATT ?? 1);
const server = await startLiveServer({ ENVWORKER_SANDBOX_CONCURRENCY: "2" }, ["py-code"]);
const url = new URL(server.url);
const body = JSON.stringify({ items: [{ completion: "```python\nimport math\ndef gcd(a, b):\n    return math.gcd(a, b)\n```", info: { task_id: "gcd" } }] });

function score(localAddress: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, path: "/envs/py-code/score", method: "POST", localAddress, headers: { "content-type": "application/json", ...server.headers } },
      (res) => {
        res.resume();
        res.on("end", () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`HTTP ${res.statusCode}`))));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function steady(ms: number): Promise<number[]> {
  const latencies: number[] = [];
  for (const end = performance.now() + ms; performance.now() < end; ) {
    latencies.push(await score("127.0.0.1"));
    await new Promise((r) => setTimeout(r, GAP));
  }
  return latencies;
}

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const show = (xs: number[]) => `p50 ${p50(xs).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms (${xs.length} requests)`;

await score("127.0.0.1");
const alone = await steady(4 * GAP);
let stop = false;
let next = 0;
const attacks: number[] = [];
const attackers = Array.from({ length: ATTACKERS }, async () => {
  while (!stop) {
    const n = next++;
    attacks.push(await score(`127.0.${1 + (n >> 8)}.${1 + (n & 255)}`));
  }
});
const beside = await steady(8 * GAP);
stop = true;
await Promise.all(attackers);
console.log(`steady client, py-code /score every ${GAP} ms, ${ATTACKERS} attacker(s) with a new address per request`);
console.log(`  alone:               ${show(alone)}`);
console.log(`  beside the attackers: ${show(beside)}`);
console.log(`  attackers' requests:  ${show(attacks)} (${next} addresses)`);
console.log(`  ratio (beside / alone, p50): ${(p50(beside) / p50(alone)).toFixed(1)}x`);
await server.stop();
