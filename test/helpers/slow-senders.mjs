/**
 * Clients that each send all but the last byte of a large request body or WebSocket frame, then
 * wait (test/hostile/hostile-memory.test.ts), from their own process: writing hundreds of MB from the test
 * process would stall the probe that measures the server. Usage:
 *   node slow-senders.mjs http|ws ORIGIN COUNT BYTES HOLD_MS
 * Once the server has been quiet for HOLD_MS it prints one JSON line, {"waiting": n, "answers": {...}} (attackers.mjs): how many
 * were still waiting (their bytes held by the server) and how the others were answered.
 */
import WebSocket from "ws";
import { rawClient, report, wsClient } from "./attackers.mjs";

const [mode, origin, count, bytes, holdMs] = [process.argv[2], process.argv[3], ...process.argv.slice(4).map(Number)];

for (let i = 0; i < count; i++) {
  if (mode === "http") {
    rawClient({
      origin,
      holdMs,
      send(sock) {
        sock.write(`POST /envs/reverse-text/reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`);
        sock.write(Buffer.alloc(bytes - 1, 32));
      },
    });
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
    wsClient(ws, holdMs);
  }
}
await report();
