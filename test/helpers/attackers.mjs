/**
 * What every attacker process of test/hostile-memory.test.ts shares (one-byte-pieces.mjs,
 * slow-senders.mjs, score-flood.mjs): connections that send something and wait, each counted as
 * "waiting" or by how it was answered (an HTTP status line, "close CODE", "error"), reported as
 * one JSON line after HOLD_MS, then every connection closed.
 */
import { connect } from "node:net";

const outcomes = [];
const closers = [];

/** Reports `outcome` ("waiting" if nothing settled it within holdMs); `close` ends its connection. */
function track(holdMs, settle, close) {
  outcomes.push(
    new Promise((done) => {
      settle(done);
      setTimeout(() => done("waiting"), holdMs);
    }),
  );
  closers.push(close);
}

/** A raw TCP client: `send(socket)` once connected; its outcome is the first line it is answered. */
export function rawClient({ origin, holdMs, localAddress, send }) {
  const { hostname, port } = new URL(origin);
  const sock = connect({ port: Number(port), host: hostname, ...(localAddress ? { localAddress } : {}) }, () => send(sock));
  track(
    holdMs,
    (done) => {
      let got = "";
      sock.on("data", (d) => {
        got += d.toString();
        done(got.split("\r\n")[0]);
      });
      sock.on("error", () => done(got.split("\r\n")[0] || "error"));
    },
    () => sock.destroy(),
  );
}

/** A WebSocket client (the `ws` package's, made by the caller); its outcome is how it was closed. */
export function wsClient(ws, holdMs) {
  track(
    holdMs,
    (done) => {
      ws.on("close", (code) => done(`close ${code}`));
      ws.on("error", () => done("error"));
    },
    () => ws.terminate(),
  );
}

/** Waits for every outcome, prints {"waiting", ...extra(), "answers"}, closes everything and exits. */
export async function report(extra = () => ({})) {
  const results = await Promise.all(outcomes);
  const answers = {};
  for (const r of results.filter((r) => r !== "waiting")) answers[r] = (answers[r] ?? 0) + 1;
  console.log(JSON.stringify({ waiting: results.filter((r) => r === "waiting").length, ...extra(), answers }));
  for (const close of closers) close();
  setTimeout(() => process.exit(0), 100);
}
