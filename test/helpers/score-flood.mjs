/**
 * Clients that each send a ~1 MiB js-code `/score` of 1,024 items whose code never ends
 * (test/hostile-memory.test.ts), from their own process and from their own loopback address (the
 * server tells clients apart by address). Usage:
 *   node score-flood.mjs ORIGIN COUNT HOLD_MS LOCAL_ADDRESS
 * After HOLD_MS it prints one JSON line, {"waiting": n, "answers": {...}} (attackers.mjs), with the
 * body's size.
 */
import { rawClient, report } from "./attackers.mjs";

const [origin, count, holdMs, localAddress] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), process.argv[5]];
const code = "```js\nwhile (true) {}\n// " + "x".repeat(900) + "\n```";
const body = JSON.stringify({ items: Array.from({ length: 1024 }, () => ({ completion: code, answer: "fizzbuzz" })) });
const request = Buffer.from(`POST /envs/js-code/score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
for (let i = 0; i < count; i++) rawClient({ origin, holdMs, localAddress, send: (sock) => sock.write(request) });
await report(() => ({ bodyBytes: Buffer.byteLength(body) }));
