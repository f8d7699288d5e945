/**
 * WebSocket clients that stop reading their answers (test/hostile-memory.test.ts), from their own
 * process. Each plays a reset and a step of STEP_CHARS characters (so its episode's state is that
 * large), stops reading, then asks for the state every 3 ms for HOLD_MS. Usage:
 *   node no-readers.mjs WS_URL COUNT STEP_CHARS HOLD_MS
 * Prints one JSON line, {"asked": n, "ready": k}: state requests sent over all sockets, and how many
 * sockets got as far as asking.
 */
import WebSocket from "ws";

const [url, count, stepChars, holdMs] = [process.argv[2], ...process.argv.slice(3).map(Number)];
let asked = 0;
let ready = 0;
const sockets = [];
const next = (ws) => new Promise((done) => ws.once("message", (m) => done(JSON.parse(String(m)))));

await Promise.all(
  Array.from({ length: count }, async () => {
    const ws = new WebSocket(url);
    sockets.push(ws);
    ws.on("error", () => {});
    await new Promise((done) => ws.once("open", done));
    ws.send(JSON.stringify({ type: "reset", data: {} }));
    await next(ws);
    ws.send(JSON.stringify({ type: "step", data: { content: "y".repeat(stepChars) } }));
    const stepped = await next(ws);
    if (stepped.type !== "observation") return;
    ready++;
    ws._socket.pause(); // reads nothing from here on
    const until = Date.now() + holdMs;
    while (Date.now() < until && ws.readyState === WebSocket.OPEN) {
      ws.send(JSON.stringify({ type: "state" }));
      asked++;
      await new Promise((done) => setTimeout(done, 3));
    }
  }),
);
console.log(JSON.stringify({ asked, ready }));
for (const ws of sockets) ws.terminate();
setTimeout(() => process.exit(0), 100);
