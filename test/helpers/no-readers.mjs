/**
 * Clients that stop reading their answers (test/hostile/hostile-memory.test.ts), from their own process.
 * Usage: node no-readers.mjs ws|http ORIGIN COUNT STEP_CHARS HOLD_MS
 *   ws:   COUNT WebSockets (each from its own address, 127.0.0.10 on) each play a reset and a step of STEP_CHARS characters (so the episode's
 *         state is that large), stop reading, then ask for the state every 3 ms for HOLD_MS.
 *   http: one episode is played so; then COUNT connections each send five pipelined requests for
 *         its state and read nothing for HOLD_MS.
 * Prints one JSON line, {"asked": n, "ready": k}: state requests sent, and how many sockets or
 * connections got as far as asking.
 */
import { connect } from "node:net";
import WebSocket from "ws";

const [mode, origin, count, stepChars, holdMs] = [process.argv[2], process.argv[3], ...process.argv.slice(4).map(Number)];
const env = `${origin}/envs/reverse-text`;
let asked = 0;
let ready = 0;
const closers = [];
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

if (mode === "ws") {
  const next = (ws) => new Promise((done) => ws.once("message", (m) => done(JSON.parse(String(m)))));
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      // Each from an address of its own: clients of their own, each with its share of the budget.
      const ws = new WebSocket(`${env.replace("http", "ws")}/ws`, { localAddress: `127.0.0.${10 + i}` });
      closers.push(() => ws.terminate());
      ws.on("error", () => {});
      await new Promise((done) => ws.once("open", done));
      ws.send(JSON.stringify({ type: "reset", data: {} }));
      await next(ws);
      ws.send(JSON.stringify({ type: "step", data: { content: "y".repeat(stepChars) } }));
      if ((await next(ws)).type !== "observation") return;
      ready++;
      ws._socket.pause(); // reads nothing from here on
      const until = Date.now() + holdMs;
      while (Date.now() < until && ws.readyState === WebSocket.OPEN) {
        ws.send(JSON.stringify({ type: "state" }));
        asked++;
        await sleep(3);
      }
    }),
  );
} else {
  const post = (path, body) => fetch(`${env}/${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json());
  const { episode_id } = await post("reset", {});
  await post("step", { episode_id, action: { content: "y".repeat(stepChars) } });
  const { hostname, port } = new URL(origin);
  for (let i = 0; i < count; i++) {
    const sock = connect(Number(port), hostname, () => {
      sock.pause(); // reads nothing
      ready++;
      for (let k = 0; k < 5; k++) sock.write(`GET /envs/reverse-text/state?episode_id=${episode_id} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      asked += 5;
    });
    sock.on("error", () => {});
    closers.push(() => sock.destroy());
  }
  await sleep(holdMs);
}
console.log(JSON.stringify({ asked, ready }));
for (const close of closers) close();
setTimeout(() => process.exit(0), 100);
