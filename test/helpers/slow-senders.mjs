/**
 * Clients that each send all but the last byte of a large request body or WebSocket frame, then
 * wait (test/hostile-memory.test.ts), from their own process: writing hundreds of MB from the test
 * process would stall the probe that measures the server. Usage:
 *   node slow-senders.mjs http|ws ORIGIN COUNT BYTES HOLD_MS
 * After HOLD_MS it prints one JSON line, {"waiting": n, "answers": {...}}: how many were still
 * waiting (their bytes held by the server) and how the others were answered (an HTTP status line,
 * or "close CODE"), then closes every connection.
 */
import { connect } from "node:net";
import WebSocket from "ws";

const [mode, origin, count, bytes, holdMs] = [process.argv[2], process.argv[3], ...process.argv.slice(4).map(Number)];
const { hostname, port } = new URL(origin);
const outcomes = [];
const closers = [];

for (let i = 0; i < count; i++) {
  outcomes.push(
    new Promise((done) => {
      if (mode === "http") {
        const sock = connect(Number(port), hostname, () => {
          sock.write(`POST /envs/reverse-text/reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`);
          sock.write(Buffer.alloc(bytes - 1, 32));
        });
        let got = "";
        sock.on("data", (d) => {
          got += d.toString();
          done(got.split("\r\n")[0]);
        });
        sock.on("error", () => done(got.split("\r\n")[0] || "error"));
        closers.push(() => sock.destroy());
      } else {
        const ws = new WebSocket(`${origin.replace("http", "ws")}/envs/reverse-text/ws`);
        ws.on("open", () => {
          // A text frame header declaring BYTES (masked, key 0), then all but its last byte.
          const header = Buffer.alloc(14);
          header[0] = 0x81;
          header[1] = 0x80 | 127;
          header.writeBigUInt64BE(BigInt(bytes), 2);
          ws._socket.write(header);
          ws._socket.write(Buffer.alloc(bytes - 1, 32));
        });
        ws.on("close", (code) => done(`close ${code}`));
        ws.on("error", () => done("error"));
        closers.push(() => ws.terminate());
      }
      setTimeout(() => done("waiting"), holdMs);
    }),
  );
}
const results = await Promise.all(outcomes);
const answers = {};
for (const r of results.filter((r) => r !== "waiting")) answers[r] = (answers[r] ?? 0) + 1;
console.log(JSON.stringify({ waiting: results.filter((r) => r === "waiting").length, answers }));
for (const close of closers) close();
setTimeout(() => process.exit(0), 100);
