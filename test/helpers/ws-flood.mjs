/**
 * A WebSocket flood from its own process (test/hostile/hostile-memory.test.ts): a real attacker is another
 * machine, and masking hundreds of MB in the test process would stall the probe that measures the
 * server. Usage: node ws-flood.mjs URL SOCKETS MESSAGES BYTES. Opens SOCKETS sockets, sends each
 * MESSAGES `state` messages padded to BYTES, waits for every answer, and prints one JSON line:
 * {"answers": N, "reasons": {"OVERLOADED": k, ...}}.
 */
import WebSocket from "ws";

const [url, sockets, messages, bytes] = [process.argv[2], ...process.argv.slice(3).map(Number)];
const message = JSON.stringify({ type: "state", data: {}, pad: "z".repeat(bytes - 60) });
const open = await Promise.all(
  Array.from({ length: sockets }, () => new Promise((ok, fail) => {
    const ws = new WebSocket(url);
    ws.once("open", () => ok(ws));
    ws.once("error", fail);
  })),
);
const reasons = {};
let answers = 0;
const all = new Promise((done) => {
  for (const ws of open) {
    ws.on("message", (raw) => {
      const reason = JSON.parse(String(raw)).data?.reason ?? "none";
      reasons[reason] = (reasons[reason] ?? 0) + 1;
      if (++answers === sockets * messages) done();
    });
  }
});
// A turn of the loop per round, so every socket's frames go out interleaved.
for (let k = 0; k < messages; k++) {
  for (const ws of open) ws.send(message);
  await new Promise((r) => setImmediate(r));
}
await all;
for (const ws of open) ws.close();
console.log(JSON.stringify({ answers, reasons }));
