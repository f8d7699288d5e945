/**
 * Clients that each send a ~1 MiB js-code `/score` of 1,024 items whose code never ends
 * (test/hostile-memory.test.ts), from their own process and from their own loopback address (the
 * server tells clients apart by address). Usage:
 *   node score-flood.mjs ORIGIN COUNT HOLD_MS LOCAL_ADDRESS
 * After HOLD_MS it prints one JSON line, {"waiting": n, "answers": {...}}: how many have no answer
 * yet (their work queued) and how the others were answered (the HTTP status line), then closes
 * every connection.
 */
import { connect } from "node:net";

const [origin, count, holdMs, localAddress] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), process.argv[5]];
const { hostname, port } = new URL(origin);
const code = "```js\nwhile (true) {}\n// " + "x".repeat(900) + "\n```";
const body = JSON.stringify({ items: Array.from({ length: 1024 }, () => ({ completion: code, answer: "fizzbuzz" })) });
const request = Buffer.from(`POST /envs/js-code/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
const outcomes = [];
const closers = [];
for (let i = 0; i < count; i++) {
  outcomes.push(
    new Promise((done) => {
      const sock = connect({ port: Number(port), host: hostname, localAddress }, () => sock.write(request));
      let got = "";
      sock.on("data", (d) => {
        got += d.toString();
        done(got.split("\r\n")[0]);
      });
      sock.on("error", () => done(got.split("\r\n")[0] || "error"));
      closers.push(() => sock.destroy());
      setTimeout(() => done("waiting"), holdMs);
    }),
  );
}
const results = await Promise.all(outcomes);
const answers = {};
for (const r of results.filter((r) => r !== "waiting")) answers[r] = (answers[r] ?? 0) + 1;
console.log(JSON.stringify({ waiting: results.filter((r) => r === "waiting").length, answers, bodyBytes: Buffer.byteLength(body) }));
for (const close of closers) close();
setTimeout(() => process.exit(0), 100);
