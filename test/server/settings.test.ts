/**
 * Every row of the README's settings table, set through the real environment variable on a real
 * server (`envworker serve` in a child process), observed where it takes effect: exactly the
 * limit passes, one more fails. The table is read from README.md, and the last test fails when a
 * row has no test here (or a test names a setting the README does not have), so the two cannot
 * drift apart. (test/server/config.test.ts checks configFromEnv in process against the table's defaults.)
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conversationChars } from "../../src/env/episode.ts";
import { childPids, startLiveServer, type LiveServer } from "../helpers/hostile.ts";
import { processesBelow } from "../helpers/processes.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { freePort, spawnServe } from "../helpers/serve-process.ts";
import { OpenEnvWsClient } from "../helpers/ws-client.ts";
import { readmeSettings } from "../helpers/readme.ts";
import { postFrom, requestFrom } from "../helpers/http.ts";
import { buildWorkerBundle, startWorkerd } from "../helpers/workerd.ts";
import { judgeEnv, startMockJudge, type MockJudge } from "../helpers/mock-judge.ts";
import { grader } from "../../envs/open-qa/index.ts";

const DOCUMENTED = readmeSettings().flatMap((r) => r.names);

/** Settings with a live test below (filled while the tests are collected). */
const TESTED = new Set<string>();
/** A test of a setting: registers it, so the drift check knows it is covered. */
// 180 s: a test starts live servers of its own (and sandbox processes); at load ~20 (CI's suite beside
// other work on 2 cores) two of them in turn took more than a minute.
function setting(names: string[], title: string, fn: () => Promise<void>, timeout = 180_000) {
  for (const n of names) TESTED.add(n);
  it(`${names.join(", ")}: ${title}`, fn, timeout);
}

// ---------------------------------------------------------------------------------------------
// Live servers, one per group of settings that do not disturb each other.

const LIMITS = { ENVWORKER_MAX_BODY_BYTES: "4096", ENVWORKER_MAX_WS_MESSAGE_BYTES: "2048", ENVWORKER_MAX_STEPS: "2", ENVWORKER_MAX_EPISODE_CHARS: "3000" };
// Every client may hold all of the episodes and of the budget on these two (ENVWORKER_CLIENT_SHARE has its own server).
const SESSIONS = { ENVWORKER_MAX_EPISODES: "2", ENVWORKER_IDLE_TIMEOUT_S: "3", ENVWORKER_TOKEN: "settings-token", ENVWORKER_CLIENT_SHARE: "100" };
const CODE = { ENVWORKER_ENV_TIMEOUT_S: "5", ENVWORKER_SANDBOX: "quickjs", ENVWORKER_SANDBOX_CONCURRENCY: "1", ENVWORKER_MAX_MEMORY_MB: "1", ENVWORKER_CLIENT_SHARE: "100" };

let limits: LiveServer;
let sessions: LiveServer;
let code: LiveServer;

beforeAll(async () => {
  [limits, sessions, code] = await Promise.all([startLiveServer(LIMITS), startLiveServer(SESSIONS), startLiveServer(CODE)]);
}, 120_000);
afterAll(async () => {
  await Promise.all([limits?.stop(), sessions?.stop(), code?.stop()]);
});

async function call(server: Pick<LiveServer, "url" | "headers">, method: string, path: string, body?: unknown) {
  const res = await fetch(server.url + path, {
    method,
    headers: { "content-type": "application/json", ...server.headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** `{"seed":1}` padded with JSON whitespace to exactly `bytes` bytes. */
const paddedReset = (bytes: number) => '{"seed":1}'.padEnd(bytes, " ");

const mcpJs = (server: LiveServer, code: string) =>
  call(server, "POST", "/envs/math-tools/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "javascript", arguments: { code } } });
const mcpText = (r: { body: any }) => r.body.result.content[0].text as string;

describe("settings through the real environment variables (envworker serve)", () => {
  setting(["ENVWORKER_MAX_BODY_BYTES"], "a body of exactly the limit is accepted, one byte more is 413 (declared and chunked)", async () => {
    const rt = "/envs/reverse-text/reset";
    expect((await call(limits, "POST", rt, paddedReset(4096))).status).toBe(200);
    const over = await call(limits, "POST", rt, paddedReset(4097));
    expect(over.status).toBe(413);
    expect(over.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    const origin = limits.url;
    const chunked = (bytes: number) =>
      rawRequest(origin, { method: "POST", path: rt, headers: { "content-type": "application/json" }, chunked: true, body: [paddedReset(bytes).slice(0, 1000), paddedReset(bytes).slice(1000)] });
    expect((await chunked(4096)).status).toBe(200);
    expect((await chunked(4097)).status).toBe(413);
  });

  setting(["ENVWORKER_MAX_WS_MESSAGE_BYTES"], "a message of exactly the limit is served, one more gets a PAYLOAD_TOO_LARGE error reply", async () => {
    const ws = await OpenEnvWsClient.connect(`${limits.url}/envs/reverse-text`);
    const message = (n: number) => JSON.stringify({ type: "reset", data: { seed: 1 } }).padEnd(n, " ");
    const ok = await ws.sendRaw(message(2048));
    expect(ok.type).toBe("observation");
    const over = await ws.sendRaw(message(2049));
    expect(over).toMatchObject({ type: "error", data: { code: "VALIDATION_ERROR", reason: "PAYLOAD_TOO_LARGE" } });
    // The session goes on: the refused message changed nothing.
    expect((await ws.send({ type: "state" })).data.episode_id).toBe(ok.data.episode_id);
    ws.close();
  });

  setting(["ENVWORKER_MAX_STEPS"], "an episode is truncated after exactly that many steps (math-tools allows 8)", async () => {
    const base = "/envs/math-tools";
    const r = await call(limits, "POST", `${base}/reset`, { seed: 3 });
    expect(r.status).toBe(200);
    const toolTurn = (i: number) => ({
      episode_id: r.body.episode_id,
      action: { content: null, tool_calls: [{ id: `c${i}`, type: "function", function: { name: "calculator", arguments: '{"expression":"1+1"}' } }] },
    });
    const first = await call(limits, "POST", `${base}/step`, toolTurn(1));
    expect(first.body).toMatchObject({ done: false });
    const second = await call(limits, "POST", `${base}/step`, toolTurn(2));
    expect(second.body).toMatchObject({ done: true, observation: { truncated: true } });
  });

  setting(["ENVWORKER_MAX_EPISODE_CHARS"], "a step that brings the conversation to exactly the limit passes; one character more is 413 and the episode stays as it was", async () => {
    const base = "/envs/reverse-text";
    const a = await call(limits, "POST", `${base}/reset`, { seed: 5 });
    // (3000 characters fit in the 4096-byte body limit, so the 413 below is the episode cap's.)
    const room = 3000 - conversationChars(a.body.observation.messages);
    expect(room).toBeGreaterThan(0);
    const ok = await call(limits, "POST", `${base}/step`, { episode_id: a.body.episode_id, action: { content: "x".repeat(room) } });
    expect(ok.status).toBe(200);
    const b = await call(limits, "POST", `${base}/reset`, { seed: 5 });
    const over = await call(limits, "POST", `${base}/step`, { episode_id: b.body.episode_id, action: { content: "x".repeat(room + 1) } });
    expect(over.status).toBe(413);
    expect(over.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(over.body.error.message).toContain("more than 3000 characters");
    expect((await call(limits, "GET", `${base}/state?episode_id=${b.body.episode_id}`)).body).toMatchObject({ step_count: 0, done: false });
  });

  setting(["ENVWORKER_TOKEN"], "without the token 401, with it served; /health stays open", async () => {
    const open = { url: sessions.url, headers: {} };
    expect((await call(open, "GET", "/health")).status).toBe(200);
    const refused = await call(open, "GET", "/envs");
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer /);
    expect((await call(sessions, "GET", "/envs")).status).toBe(200);
  });

  setting(["ENVWORKER_MAX_EPISODES", "ENVWORKER_IDLE_TIMEOUT_S"], "exactly that many episodes open, one more is 429; an episode lives the idle timeout in seconds, then is dropped and its slot freed", async () => {
    const base = "/envs/reverse-text";
    const a = await call(sessions, "POST", `${base}/reset`, {});
    const b = await call(sessions, "POST", `${base}/reset`, {});
    expect([a.status, b.status]).toEqual([200, 200]);
    const full = await call(sessions, "POST", `${base}/reset`, {});
    expect(full.status).toBe(429);
    expect(full.body.error).toMatchObject({ code: "CAPACITY_REACHED", details: { max_sessions: 2 } });
    // Still there a second later (the timeout is seconds, not milliseconds)...
    await new Promise((r) => setTimeout(r, 1000));
    expect((await call(sessions, "GET", `${base}/state?episode_id=${a.body.episode_id}`)).status).toBe(200);
    // ...and gone once it has been left alone for longer than 3 s (the sweep runs every second).
    await new Promise((r) => setTimeout(r, 5000));
    const gone = await call(sessions, "GET", `${base}/state?episode_id=${a.body.episode_id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe("UNKNOWN_EPISODE");
    expect((await call(sessions, "POST", `${base}/reset`, {})).status).toBe(200);
  });

  setting(["ENVWORKER_ENV_TIMEOUT_S"], "a call into environment code within the deadline finishes; one past it is 504 EXECUTION_ERROR (TIMEOUT)", async () => {
    // The deadline counts an environment's own computing (waits for sandbox runs have their own
    // limits), so the test serves an environment whose reward spins: test/fixtures/slow-env.ts.
    const own = await startLiveServer({ ENVWORKER_ENV_TIMEOUT_S: "2" }, ["reverse-text", "test/fixtures/slow-env.ts"]);
    try {
      const base = "/envs/slow-reward";
      const reset = await call(own, "POST", `${base}/reset`, { seed: 1 });
      const inside = await call(own, "POST", `${base}/step`, { episode_id: reset.body.episode_id, action: { content: "ok" } });
      expect(inside.status).toBe(200);
      const past = await call(own, "POST", `${base}/step`, { episode_id: reset.body.episode_id, action: { content: "spin" } });
      expect(past.status).toBe(504);
      expect(past.body.error).toMatchObject({ code: "EXECUTION_ERROR", details: { reason: "TIMEOUT" } });
      expect(past.body.error.message).toContain("within 2 s");
      // The episode stays as it was.
      expect((await call(own, "GET", `${base}/state?episode_id=${reset.body.episode_id}`)).body).toMatchObject({ step_count: 1, done: false });
    } finally {
      await own.stop();
    }
  });

  setting(["ENVWORKER_ENV_THREADS"], "the environment threads kept running; 0 runs environment code on the event loop", async () => {
    const onThreads = async (server: LiveServer, n: number) => {
      const base = "/envs/thread-probe";
      const resets = await Promise.all(Array.from({ length: n }, (_, i) => call(server, "POST", `${base}/reset`, { seed: i })));
      const steps = await Promise.all(resets.map((r) => call(server, "POST", `${base}/step`, { episode_id: r.body.episode_id, action: { content: "wait" } })));
      return new Set(steps.map((s) => s.body.observation.metrics.on_thread as number));
    };
    const [three, none] = await Promise.all([
      startLiveServer({ ENVWORKER_ENV_THREADS: "3" }, ["test/fixtures/slow-env.ts"]),
      startLiveServer({ ENVWORKER_ENV_THREADS: "0" }, ["test/fixtures/slow-env.ts"]),
    ]);
    try {
      // Nine 100 ms rewards at once spread over the three threads (the least loaded takes the next).
      // On a busy machine the nine may arrive too far apart to overlap: up to three rounds.
      const ids = new Set<number>();
      for (let round = 0; round < 3 && ids.size < 3; round++) for (const id of await onThreads(three, 9)) ids.add(id);
      expect(ids.size).toBe(3);
      expect(ids.has(0)).toBe(false);
      expect([...(await onThreads(none, 3))]).toEqual([0]);
    } finally {
      await Promise.all([three.stop(), none.stop()]);
    }
  });

  setting(["ENVWORKER_LOG"], "info: one line per request on stderr; the default (warn): none", async () => {
    const own = await startLiveServer({ ENVWORKER_LOG: "info" }, ["reverse-text"]);
    try {
      expect((await call(own, "GET", "/envs/reverse-text/metadata")).status).toBe(200);
      await expect.poll(() => own.stderr()).toMatch(/ info GET \/envs\/reverse-text\/metadata 200/);
    } finally {
      await own.stop();
    }
    expect((await call(limits, "GET", "/envs/reverse-text/metadata")).status).toBe(200);
    expect(limits.stderr()).not.toMatch(/ info GET /);
  });

  setting(["ENVWORKER_SANDBOX"], "chooses the engine that runs model code (QuickJS, the default, has no Intl; V8 does)", async () => {
    expect(mcpText(await mcpJs(code, "console.log(typeof Intl)"))).toContain("stdout:\nundefined");
    expect(mcpText(await mcpJs(limits, "console.log(typeof Intl)"))).toContain("stdout:\nundefined");
    const v8 = await startLiveServer({ ENVWORKER_SANDBOX: "isolated-vm" });
    try {
      expect(mcpText(await mcpJs(v8, "console.log(typeof Intl)"))).toContain("stdout:\nobject");
    } finally {
      await v8.stop();
    }
  });

  setting(["ENVWORKER_QUICKJS_MODE"], "instance (the default): QuickJS runs as a fresh wasm instance per run in instance hosts; fork: in zygotes that fork a child per run", async () => {
    // The host program below the server: qjs_instances.py or qjs_zygote.py.
    const hostPrograms = (server: LiveServer) => {
      const programs = new Set<string>();
      for (const pid of processesBelow(server.pid).keys()) {
        try {
          const m = /qjs_(instances|zygote)\.py/.exec(readFileSync(`/proc/${pid}/cmdline`, "utf8"));
          if (m) programs.add(m[0]);
        } catch {
          // Gone.
        }
      }
      return [...programs];
    };
    expect(mcpText(await mcpJs(code, "6 * 7"))).toContain("42");
    expect(hostPrograms(code)).toEqual(["qjs_instances.py"]);
    const fork = await startLiveServer({ ENVWORKER_SANDBOX: "quickjs", ENVWORKER_QUICKJS_MODE: "fork", ENVWORKER_SANDBOX_CONCURRENCY: "1" });
    try {
      expect(mcpText(await mcpJs(fork, "6 * 7"))).toContain("42");
      expect(hostPrograms(fork)).toEqual(["qjs_zygote.py"]);
    } finally {
      await fork.stop();
    }
  });

  setting(["ENVWORKER_SANDBOX_AFFINITY"], "unset: QuickJS zygotes of each client's own (a new process for a new client), isolated-vm a process per run; client on isolated-vm: one process serves a client's runs, with a warning at start; off: one process serves every client", async () => {
    // The server's direct children are its sandbox processes (bubblewrap or prlimit at their root).
    // Sandbox processes that appear for the second to fourth client, once the first has been served
    // (the second takes the spare started for the first: with one slot, two processes at most).
    const startedForNewClients = async (server: LiveServer) => {
      const seen = new Set<string>();
      let before = 0;
      for (const from of ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"]) {
        const r = await postFrom(from, `${server.url}/envs/math-tools/mcp`, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "javascript", arguments: { code: "6 * 7" } } }, server.headers);
        expect(mcpText(r)).toContain("42");
        for (const c of childPids(server.pid)) seen.add(c);
        if (from === "127.0.0.1") before = seen.size;
      }
      return seen.size - before;
    };
    expect(await startedForNewClients(code), "unset on QuickJS: a zygote for each new client").toBeGreaterThanOrEqual(2);
    // "off" shares the fork zygote between clients; QuickJS instance hosts (the default mode) serve
    // one client whatever the setting (quickjs-instances.ts: test/sandbox/quickjs-instance-freshness.test.ts).
    const off = await startLiveServer({ ENVWORKER_SANDBOX: "quickjs", ENVWORKER_QUICKJS_MODE: "fork", ENVWORKER_SANDBOX_CONCURRENCY: "1", ENVWORKER_SANDBOX_AFFINITY: "off" });
    try {
      expect(await startedForNewClients(off), "off: the same processes serve them").toBe(0);
    } finally {
      await off.stop();
    }
    // isolated-vm: processes that appear for one client's second to fourth runs.
    const startedForLaterRuns = async (server: LiveServer) => {
      const seen = new Set<string>();
      let before = 0;
      for (let i = 0; i < 4; i++) {
        expect(mcpText(await mcpJs(server, "6 * 7"))).toContain("42");
        for (const c of childPids(server.pid)) seen.add(c);
        if (i === 0) before = seen.size;
      }
      return seen.size - before;
    };
    const WARNING = /warn ENVWORKER_SANDBOX_AFFINITY=client with isolated-vm: a sandbox process serves more than one run/;
    const perRun = await startLiveServer({ ENVWORKER_SANDBOX: "isolated-vm", ENVWORKER_SANDBOX_CONCURRENCY: "1" });
    try {
      expect(await startedForLaterRuns(perRun), "unset on isolated-vm: a fresh process for every run").toBeGreaterThanOrEqual(3);
      expect(perRun.stderr()).not.toMatch(/ENVWORKER_SANDBOX_AFFINITY/);
    } finally {
      await perRun.stop();
    }
    const reused = await startLiveServer({ ENVWORKER_SANDBOX: "isolated-vm", ENVWORKER_SANDBOX_CONCURRENCY: "1", ENVWORKER_SANDBOX_AFFINITY: "client" });
    try {
      expect(await startedForLaterRuns(reused), "client on isolated-vm: the client's process serves them").toBe(0);
      expect(reused.stderr()).toMatch(WARNING);
    } finally {
      await reused.stop();
    }
  });

  setting(["ENVWORKER_SANDBOX_CONCURRENCY"], "1 runs model code one at a time; the default runs one per CPU at once", async () => {
    // Each run busy-waits 1 s and prints when it started and ended (by the sandbox's clock).
    const busy = "const s = Date.now(); while (Date.now() - s < 1000) {} console.log(s, Date.now())";
    const intervals = async (server: LiveServer) =>
      (await Promise.all([mcpJs(server, busy), mcpJs(server, busy)])).map((r) => mcpText(r).match(/(\d+) (\d+)/)!.slice(1).map(Number) as [number, number]);
    const [x, y] = (await intervals(code)).sort((p, q) => p[0] - q[0]);
    expect(y![0], "one at a time: the second starts after the first ended").toBeGreaterThanOrEqual(x![1]);
    if (availableParallelism() >= 2) {
      // Sandbox processes start on first use (~0.5 s each): a first round starts both.
      await intervals(limits);
      const [p, q] = (await intervals(limits)).sort((m, n) => m[0] - n[0]);
      expect(q![0], "two at once: the second starts before the first ended").toBeLessThan(p![1]);
    }
  });

  setting(["ENVWORKER_UNCONFINED"], "without bubblewrap (none on PATH) sandbox processes are refused, said at start-up; with 1 they start", async () => {
    // No bwrap (nor prlimit) on the server's PATH: as on a machine without them.
    const start = (unconfined: string) => startLiveServer({ PATH: "/nonexistent", ENVWORKER_SANDBOX: "quickjs", ENVWORKER_SANDBOX_CONCURRENCY: "1", ENVWORKER_UNCONFINED: unconfined });
    for (const [unconfined, said, answer] of [
      ["", /envworker: error: sandbox hosts are not started without bubblewrap.*ENVWORKER_UNCONFINED=1/, /SandboxError.*not started without bubblewrap/],
      ["1", /envworker: warning: no bubblewrap/, /42/],
    ] as const) {
      const server = await start(unconfined);
      try {
        await expect.poll(() => server.stderr()).toMatch(said);
        expect(mcpText(await mcpJs(server, "6 * 7"))).toMatch(answer);
      } finally {
        await server.stop();
      }
    }
  });

  setting(["ENVWORKER_CLIENT_SHARE"], "one client (an address) may hold that percentage of the episodes (and of the memory budget); past it, 429 for that client while another is served", async () => {
    const own = await startLiveServer({ ENVWORKER_MAX_EPISODES: "4", ENVWORKER_CLIENT_SHARE: "50" });
    try {
      const reset = (from: string) => postFrom(from, `${own.url}/envs/reverse-text/reset`, {}).then((r) => r.status);
      expect([await reset("127.0.0.1"), await reset("127.0.0.1"), await reset("127.0.0.1")]).toEqual([200, 200, 429]);
      expect([await reset("127.0.0.2"), await reset("127.0.0.2"), await reset("127.0.0.3")]).toEqual([200, 200, 429]); // 4 in all
    } finally {
      await own.stop();
    }
  });

  setting(["ENVWORKER_MAX_MEMORY_MB"], "past the budget a growing step is 503 OVERLOADED with Retry-After, and the episode keeps working", async () => {
    const base = "/envs/reverse-text";
    const r = await call(code, "POST", `${base}/reset`, { seed: 2 });
    // 600,000 characters are 1.2 MB at two bytes a character: more than 1 MiB.
    const big = await call(code, "POST", `${base}/step`, { episode_id: r.body.episode_id, action: { content: "x".repeat(600_000) } });
    expect(big.status).toBe(503);
    expect(big.body.error.code).toBe("OVERLOADED");
    expect(Number(big.headers.get("retry-after"))).toBeGreaterThan(0);
    const small = await call(code, "POST", `${base}/step`, { episode_id: r.body.episode_id, action: { content: "x".repeat(300_000) } });
    expect(small.status).toBe(200);
    // The same step on a server with the default budget is fine.
    const d = await call(sessions, "POST", `${base}/reset`, { seed: 2 });
    expect(d.status).toBe(200);
    const fine = await call(sessions, "POST", `${base}/step`, { episode_id: d.body.episode_id, action: { content: "x".repeat(600_000) } });
    expect(fine.status).toBe(200);
  });

  setting(["PORT", "HOST"], "serve listens where they say", async () => {
    const port = await freePort("127.0.0.2");
    const s = await spawnServe([], { PORT: String(port), HOST: "127.0.0.2" });
    try {
      expect(s.url).toBe(`http://127.0.0.2:${port}`);
      expect((await fetch(`${s.url}/health`)).status).toBe(200);
    } finally {
      await s.stop();
    }
  });

  setting(["ENVWORKER_SHUTDOWN_GRACE_S"], "on SIGTERM an in-flight request still finishes within the grace, and a stuck one is cut off when it ends", async () => {
    const server = await startLiveServer({ ENVWORKER_SHUTDOWN_GRACE_S: "3" });
    const { port } = new URL(server.url);
    // Warm up first (the first reset starts the environment threads), so the request that must
    // finish within the grace does not pay for that.
    expect((await call(server, "POST", "/envs/reverse-text/reset", {})).status).toBe(200);
    const body = '{"seed":1}';
    // Two requests in flight: their headers sent, the bodies not yet.
    const open = () => {
      const sock = connect(Number(port), "127.0.0.1");
      let received = "";
      sock.on("data", (d) => (received += d.toString()));
      const ended = new Promise<string>((res) => sock.on("close", () => res(received)));
      sock.on("error", () => undefined);
      sock.write(`POST /envs/reverse-text/reset HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 3)}`);
      return { sock, ended };
    };
    const finishing = open();
    const stuck = open();
    await new Promise((r) => setTimeout(r, 300));
    const stopped = server.stop(); // SIGTERM
    await new Promise((r) => setTimeout(r, 300));
    finishing.sock.write(body.slice(3)); // (not end(): a half-closed socket is dropped unanswered)
    expect(await finishing.ended).toMatch(/^HTTP\/1\.1 200 /);
    // The stuck request never completes: the server closes it after the grace and exits by itself.
    expect(await stuck.ended).not.toMatch(/^HTTP\/1\.1 200 /);
    expect(await stopped).toBe("0");
  });
});

describe("judge settings through the real environment variables (envworker serve open-qa)", () => {
  let mock: MockJudge;
  beforeAll(async () => {
    mock = await startMockJudge();
  });
  afterAll(() => mock?.close());

  const reply = (exact: string) => `Exact Answer: ${exact}`;
  // open-qa's row q19: "What is the capital city of Canada?", Ottawa.
  const item = (exact: string) => ({ completion: reply(exact), info: { id: "q19" } });
  const score = async (server: LiveServer, items: unknown[]) => (await call(server, "POST", "/envs/open-qa/score", { items })).body.results;

  setting(
    ["ENVWORKER_JUDGE_URL", "ENVWORKER_JUDGE_MODEL", "ENVWORKER_JUDGE_API_KEY", "ENVWORKER_JUDGE_TIMEOUT_S", "ENVWORKER_JUDGE_RETRIES"],
    "the judge at that URL is asked with that model and key; an attempt past the timeout is retried that many times, then JUDGE_TIMEOUT",
    async () => {
      // 3 s: the mock judge answers from this test's process, which may be slow at load ~20.
      const server = await startLiveServer(judgeEnv(mock, { ENVWORKER_JUDGE_TIMEOUT_S: "3", ENVWORKER_JUDGE_RETRIES: "1" }), ["open-qa"]);
      try {
        const [right] = await score(server, [item("Ottawa")]);
        expect(right).toMatchObject({ reward: 1, metrics: { judge_calls: 1 } });
        const asked = mock.calls.at(-1)!;
        expect([asked.path, asked.body.model, asked.headers.authorization]).toEqual(["/v1/chat/completions", "mock-judge", "Bearer sk-operator"]);
        mock.hang = true;
        const before = mock.calls.length;
        const [timedOut] = await score(server, [item("Ottawa (hang)")]);
        mock.hang = false;
        expect(timedOut.errors.correct).toMatch(/^JUDGE_TIMEOUT: the judge did not answer within 3 s \(2 attempts\)/);
        expect(mock.calls.length - before).toBe(2);
      } finally {
        mock.hang = false;
        await server.stop();
      }
    },
  );

  setting(["ENVWORKER_JUDGE_CONCURRENCY", "ENVWORKER_JUDGE_CLIENT_CONCURRENCY"], "one client's calls run that many at once; the server's, over clients, that many", async () => {
    const server = await startLiveServer(judgeEnv(mock, { ENVWORKER_JUDGE_CONCURRENCY: "3", ENVWORKER_JUDGE_CLIENT_CONCURRENCY: "2", ENVWORKER_JUDGE_CACHE_ENTRIES: "0" }), ["open-qa"]);
    try {
      mock.delayMs = 300;
      mock.maxActive = 0;
      // One client, six judge calls: two at a time.
      await score(server, ["a", "b", "c", "d", "e", "f"].map((x) => item(x)));
      expect(mock.maxActive).toBe(2);
      // Four clients (addresses: src/server/client-id.ts) at once, two calls each: three at a time over the server.
      mock.maxActive = 0;
      await Promise.all([1, 2, 3, 4].map((k) => postFrom(`127.0.0.${k}`, `${server.url}/envs/open-qa/score`, { items: [item(`${k}a`), item(`${k}b`)] })));
      expect(mock.maxActive).toBe(3);
    } finally {
      mock.delayMs = 0;
      await server.stop();
    }
  });

  setting(["ENVWORKER_JUDGE_CACHE_ENTRIES", "ENVWORKER_JUDGE_MAX_REQUEST_CHARS"], "that many answers are cached (the oldest goes); a request of exactly the limit is sent, one character more is JUDGE_INVALID", async () => {
    const limit = 3000;
    // The grader's request for a completion of `n` characters, as open-qa renders it.
    const chars = (n: number) => grader.request({ prompt: [], completion: [{ role: "assistant", content: "x".repeat(n) }], answer: "Ottawa", info: {} }, { question: "What is the capital city of Canada?" }).messages[0]!.content.length;
    const fits = limit - chars(0);
    expect(chars(fits)).toBe(limit);
    const server = await startLiveServer(judgeEnv(mock, { ENVWORKER_JUDGE_CACHE_ENTRIES: "1", ENVWORKER_JUDGE_MAX_REQUEST_CHARS: String(limit) }), ["open-qa"]);
    try {
      const before = mock.calls.length;
      const exact = { completion: "x".repeat(fits), info: { id: "q19" } };
      const [atLimit, over] = await score(server, [exact, { ...exact, completion: "x".repeat(fits + 1) }]);
      expect(atLimit.errors).toBeUndefined();
      expect(over.errors.correct).toMatch(new RegExp(`^JUDGE_INVALID: the judge request holds ${limit + 1} characters`));
      expect(mock.calls.length - before).toBe(1);

      await score(server, [item("Ottawa")]);
      const [hit] = await score(server, [item("Ottawa")]);
      expect(hit.metrics).toMatchObject({ judge_cache_hits: 1, judge_calls: 0 });
      await score(server, [item("Toronto")]); // evicts Ottawa's answer: one entry
      const [again] = await score(server, [item("Ottawa")]);
      expect(again.metrics).toMatchObject({ judge_cache_hits: 0, judge_calls: 1 });
    } finally {
      await server.stop();
    }
  });

  setting(["ENVWORKER_ALLOWED_ORIGINS"], "a listed origin's pages may call the server (CORS headers, preflight answered); any other origin is refused 403", async () => {
    const own = await startLiveServer({ ENVWORKER_ALLOWED_ORIGINS: "https://app.example,http://localhost:5173" }, ["reverse-text"]);
    try {
      const from = (origin: string, method = "POST", headers: Record<string, string> = {}) =>
        fetch(`${own.url}/envs/reverse-text/reset`, { method, headers: { "content-type": "application/json", origin, ...headers }, ...(method === "POST" ? { body: "{}" } : {}) });
      const listed = await from("https://app.example");
      expect(listed.status).toBe(200);
      expect(listed.headers.get("access-control-allow-origin")).toBe("https://app.example");
      const preflight = await from("http://localhost:5173", "OPTIONS", { "access-control-request-method": "POST", "access-control-request-headers": "content-type" });
      expect(preflight.status).toBeLessThan(300);
      expect(preflight.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
      const other = await from("https://evil.example");
      expect(other.status).toBe(403);
      expect(((await other.json()) as { error: { code: string } }).error.code).toBe("FORBIDDEN");
    } finally {
      await own.stop();
    }
  });

  setting(["ENVWORKER_ALLOWED_HOSTS"], "a server on a loopback address answers a listed name (and a *.suffix's subdomains), and refuses any other 403", async () => {
    const own = await startLiveServer({ ENVWORKER_ALLOWED_HOSTS: "envs.example.com,*.corp.example" }, ["reverse-text"]);
    try {
      const as = (host: string) => requestFrom("127.0.0.1", "POST", `${own.url}/envs/reverse-text/reset`, {}, { host });
      for (const host of ["envs.example.com", "envs.example.com:8000", "api.corp.example", "localhost"]) expect((await as(host)).status, host).toBe(200);
      for (const host of ["evil.example", "corp.example", "envs.example.com.evil.example"]) {
        const r = await as(host);
        expect(r.status, host).toBe(403);
        expect(r.body.error.code).toBe("FORBIDDEN");
      }
    } finally {
      await own.stop();
    }
  });

  setting(["ENVWORKER_CF_CONNECTING_IP"], "Workers: trust makes the header's address the client even in a wrangler dev build; ignore makes it no client even in a deploy build", async () => {
    const tmp = await mkdtemp(join(tmpdir(), "envworker-cf-ip-"));
    try {
      const [devBundle, deployBundle] = await Promise.all([buildWorkerBundle(join(tmp, "dev"), undefined, "development"), buildWorkerBundle(join(tmp, "deploy"), undefined, "")]);
      const [trusting, ignoring] = await Promise.all([
        startWorkerd(devBundle, join(tmp, "do-trust"), { ENVWORKER_CF_CONNECTING_IP: "trust" }),
        startWorkerd(deployBundle, join(tmp, "do-ignore"), { ENVWORKER_CF_CONNECTING_IP: "ignore" }),
      ]);
      try {
        // As the edge would deliver them: the Worker's own name, an address each.
        const as = (server: { url: string }, ip: string, method: string, path: string, body?: unknown) => requestFrom("127.0.0.1", method, `${server.url}${path}`, body, { host: "envworker.someone.workers.dev", "cf-connecting-ip": ip });
        const ownedBy = async (server: { url: string }) => {
          const r = await as(server, "198.51.100.7", "POST", "/envs/alphabet-sort/reset", { seed: 1 });
          expect(r.status).toBe(200);
          return (await as(server, "203.0.113.9", "GET", `/envs/alphabet-sort/state?episode_id=${r.body.episode_id}`)).status;
        };
        expect(await ownedBy(trusting)).toBe(404);
        expect(await ownedBy(ignoring)).toBe(200);
      } finally {
        await Promise.all([trusting.dispose(), ignoring.dispose()]);
      }
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });

  setting(["ENVWORKER_JUDGE_CLIENT_CALLS_PER_MIN"], "a client's judge calls a minute: a /score needing more is 429 JUDGE_BUDGET; another client has its own", async () => {
    const server = await startLiveServer(judgeEnv(mock, { ENVWORKER_JUDGE_CLIENT_CALLS_PER_MIN: "2", ENVWORKER_JUDGE_CACHE_ENTRIES: "0" }), ["open-qa"]);
    try {
      const over = await call(server, "POST", "/envs/open-qa/score", { items: [item("a"), item("b"), item("c")] });
      expect(over.status).toBe(429);
      expect(over.body.error).toMatchObject({ code: "CAPACITY_REACHED", details: { reason: "JUDGE_BUDGET" } });
      const other = await postFrom("127.0.0.2", `${server.url}/envs/open-qa/score`, { items: [item("a"), item("b")] });
      expect(other.status).toBe(200);
      expect(other.body.results.map((r: { metrics: Record<string, number> }) => r.metrics.judge_calls)).toEqual([1, 1]);
    } finally {
      await server.stop();
    }
  });
});

describe("the README's settings table and this file", () => {
  it("has a live test for every documented setting, and documents every tested one", () => {
    expect(DOCUMENTED.length).toBeGreaterThanOrEqual(14);
    expect(DOCUMENTED.filter((n) => !TESTED.has(n)), "README rows without a test").toEqual([]);
    expect([...TESTED].filter((n) => !DOCUMENTED.includes(n)), "tested settings the README does not list").toEqual([]);
  });
});
