/**
 * Clients that each send a request body (chunked, one byte per chunk) or a WebSocket text message
 * (one byte per fragment), then wait without finishing it (test/hostile/hostile-memory.test.ts). From its
 * own process, like the other attackers. Usage:
 *   node one-byte-pieces.mjs chunked|fragments ORIGIN COUNT PIECES HOLD_MS
 * Once the server has been quiet for HOLD_MS it prints one JSON line, {"waiting": n, "answers": {...}} (attackers.mjs): how many
 * were still waiting (their pieces held by the server) and how the others were answered. A
 * WebSocket sends a ping after its fragments: one still waiting whose pong came back is "held" (the
 * server has parsed all of its fragments, and holds them); the others still waiting were not read
 * that far yet.
 */
import WebSocket from "ws";
import { rawClient, report, wsClient } from "./attackers.mjs";

const [mode, origin, count, pieces, holdMs] = [process.argv[2], process.argv[3], ...process.argv.slice(4).map(Number)];
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
  if (mode === "chunked") {
    rawClient({
      origin,
      holdMs,
      send(sock) {
        sock.write("POST /envs/reverse-text/reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
        sock.write(wire);
      },
    });
  } else {
    const ws = new WebSocket(`${origin.replace("http", "ws")}/envs/reverse-text/ws`);
    // A masked ping (key 0, no payload) after the fragments: its pong says they were all parsed.
    ws.on("open", () => ws._socket.write(Buffer.concat([wire, Buffer.from([0x89, 0x80, 0, 0, 0, 0])])));
    ws.on("pong", () => (held += 1));
    ws.on("close", () => (held -= ws.pongSeen ? 1 : 0));
    ws.once("pong", () => (ws.pongSeen = true));
    wsClient(ws, holdMs);
  }
}
await report(() => (mode === "fragments" ? { held } : {}));
