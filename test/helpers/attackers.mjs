/**
 * What every attacker process of test/hostile/hostile-memory.test.ts shares (one-byte-pieces.mjs,
 * slow-senders.mjs, score-flood.mjs): connections that send something and wait, each counted as
 * "waiting" or by how it was answered (an HTTP status line, "close CODE", "error"), reported as
 * one JSON line once the server has been quiet for HOLD_MS, then every connection closed.
 *
 * Quiet, not HOLD_MS after each connection was made: with a second copy of the suite running (load
 * ~20), the server had not yet read the sockets' data 2 s after they were opened, and all 300 were
 * reported waiting where it refuses all but 69. Anything the server does to a connection (an
 * answer, a close, a pong) restarts the wait.
 */
import { connect } from "node:net";

const outcomes = [];
const closers = [];
/** Connections not settled yet: each resolves "waiting" once the server has been quiet for its hold. */
const unsettled = new Set();
let lastActivity = performance.now();
let quietTimer;

/** The server did something to one of the connections (or one was opened): the quiet starts again. */
export function activity() {
  lastActivity = performance.now();
}

function settleQuiet(holdMs) {
  quietTimer ??= setInterval(() => {
    if (performance.now() - lastActivity < holdMs) return;
    for (const done of unsettled) done("waiting");
    clearInterval(quietTimer);
    quietTimer = undefined; // a connection tracked after this waits for a quiet of its own
  }, 50);
}

/** Reports `outcome` ("waiting" if nothing settled it before the server was quiet for holdMs); `close` ends its connection. */
function track(holdMs, settle, close) {
  activity();
  outcomes.push(
    new Promise((resolve) => {
      const done = (outcome) => {
        if (!unsettled.delete(done)) return;
        activity();
        resolve(outcome);
      };
      unsettled.add(done);
      settle(done);
    }),
  );
  closers.push(close);
  settleQuiet(holdMs);
}

/** A raw TCP client: `send(socket)` once connected; its outcome is the first line it is answered. */
export function rawClient({ origin, holdMs, localAddress, send }) {
  const { hostname, port } = new URL(origin);
  const sock = connect({ port: Number(port), host: hostname, ...(localAddress ? { localAddress } : {}) }, () => {
    activity();
    send(sock);
  });
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
      ws.on("open", activity);
      ws.on("pong", activity);
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
