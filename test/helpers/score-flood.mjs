/**
 * Clients that each send a js-code `/score` of ITEMS items (default 1,024: ~1 MiB) whose code never
 * ends (test/hostile/hostile-memory.test.ts, test/hostile/hostile-score.test.ts), from their own process and from
 * their own loopback addresses (the server tells clients apart by address). Usage:
 *   node score-flood.mjs ORIGIN COUNT HOLD_MS LOCAL_ADDRESS[,LOCAL_ADDRESS...] [ITEMS]
 * Connections take the addresses in turn. Once the server has been quiet for HOLD_MS it prints one JSON line,
 * {"waiting": n, "answers": {...}} (attackers.mjs), with the body's size.
 */
import { rawClient, report } from "./attackers.mjs";

const [origin, count, holdMs, localAddresses, items] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), process.argv[5].split(","), Number(process.argv[6] ?? 1024)];
const code = "```js\nwhile (true) {}\n// " + "x".repeat(900) + "\n```";
const body = JSON.stringify({ items: Array.from({ length: items }, () => ({ completion: code, answer: "fizzbuzz" })) });
const request = Buffer.from(`POST /envs/js-code/score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
for (let i = 0; i < count; i++) rawClient({ origin, holdMs, localAddress: localAddresses[i % localAddresses.length], send: (sock) => sock.write(request) });
await report(() => ({ bodyBytes: Buffer.byteLength(body) }));
