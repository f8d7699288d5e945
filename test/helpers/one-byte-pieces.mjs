/**
 * Clients that each send a request body (chunked, one byte per chunk) or a WebSocket text message
 * (one byte per fragment), then wait without finishing it (test/hostile-memory.test.ts). From its
 * own process, like the other attackers. Usage:
 *   node one-byte-pieces.mjs chunked|fragments ORIGIN COUNT PIECES HOLD_MS
 * After HOLD_MS it prints one JSON line, {"waiting": n, "answers": {...}}: how many were still
 * waiting (their pieces held by the server) and how the others were answered (an HTTP status
 * line, or "close CODE"), then closes every connection. A WebSocket sends a ping after its
 * fragments: one still waiting whose pong came back is "held" (the server has parsed all of its
 * fragments, and holds them); the others still waiting were not read that far yet.
 */
import { connect } from "node:net";
import WebSocket from "ws";

const [mode, origin, count, pieces, holdMs] = [process.argv[2], process.argv[3], ...process.argv.slice(4).map(Number)];
const { hostname, port } = new URL(origin);
const outcomes = [];
const closers = [];
let held = 0;

/** `{"seed":1,"pad":"xxx…"}` without its closing `"}`: PIECES bytes, each its own chunk ("1\r\nX\r\n"). */
function chunkedBody() {
  const text = `{"seed":1,"pad":"${"x".repeat(pieces - 17)}`;
  const wire = Buffer.alloc(6 * text.length);
  for (let i = 0; i < text.length; i++) wire.write(`1\r\n${text[i]}\r\n`, 6 * i, "latin1");
  return wire;
}

/** PIECES masked frames (key 0) of one byte each: a text frame without FIN, then continuations. */
function fragments() {
  const wire = Buffer.alloc(7 * pieces);
  for (let i = 0; i < pieces; i++) {
    wire[7 * i] = i === 0 ? 0x01 : 0x00;
    wire[7 * i + 1] = 0x81;
    wire[7 * i + 6] = 0x20;
  }
  return wire;
}

const wire = mode === "chunked" ? chunkedBody() : fragments();
for (let i = 0; i < count; i++) {
  outcomes.push(
    new Promise((done) => {
      if (mode === "chunked") {
        const sock = connect(Number(port), hostname, () => {
          sock.write("POST /envs/reverse-text/reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
          sock.write(wire);
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
        // A masked ping (key 0, no payload) after the fragments: its pong says they were all parsed.
        ws.on("open", () => ws._socket.write(Buffer.concat([wire, Buffer.from([0x89, 0x80, 0, 0, 0, 0])])));
        ws.on("pong", () => (held += 1));
        ws.on("close", () => (held -= ws.pongSeen ? 1 : 0));
        ws.once("pong", () => (ws.pongSeen = true));
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
console.log(JSON.stringify({ waiting: results.filter((r) => r === "waiting").length, ...(mode === "fragments" ? { held } : {}), answers }));
for (const close of closers) close();
setTimeout(() => process.exit(0), 100);
