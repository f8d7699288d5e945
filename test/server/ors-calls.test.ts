/**
 * ORS tool calls that take long (src/server/ors.ts, ors-tasks.ts), over a real socket, as ORS's
 * client reads them (ors/client/_http.py `resumable_sse`): it gives up on a stream silent for 30 s
 * (aiohttp's sock_read), ORS's server says it is alive every 10 s, and a client whose stream broke
 * posts the call again with its `task_id` to get the same call's answer.
 *
 * Time is scaled: the heartbeat here is HEARTBEAT_MS (x the machine's slowdown), the client's read
 * timeout three of them (ORS's 10 s and 30 s), a slow tool eight.
 */
import { serve, type ServerType } from "@hono/node-server";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readNodeBody } from "../../src/node/node-body.ts";
import { createApp } from "../../src/server/app.ts";
import { inlineEngine } from "../../src/server/engine.ts";
import { StoreEpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import reverseText from "../../envs/reverse-text/index.ts";
import slowTools, { runs } from "../fixtures/ors-slow-env.ts";
import { cpuSlowdown } from "../helpers/slowdown.ts";

const HEARTBEAT_MS = Math.round(200 * cpuSlowdown());

interface Served {
  url: string;
  server: ServerType;
}

function start(heartbeatMs: number): Promise<Served> {
  // Resets take a few turns of the event loop, as they do through the environment threads: a
  // request whose body was not read before is then left without it.
  const host = new (class extends StoreEpisodeHost {
    override async reset(...args: Parameters<StoreEpisodeHost["reset"]>) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return super.reset(...args);
    }
  })(new MemoryEpisodeStore(), inlineEngine({}));
  // Bodies read as the Node server reads them (straight from the IncomingMessage). Two
  // environments: a session created without naming one starts its episode at its first use.
  const app = createApp({ envs: [slowTools, reverseText], host, clientOf: (c) => c.req.header("x-who") ?? "a", orsHeartbeatMs: heartbeatMs, readBody: (c, max) => readNodeBody(c, max) });
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info: AddressInfo) => resolve({ url: `http://127.0.0.1:${info.port}`, server }));
  });
}

interface Streamed {
  /** The SSE events read (comments as `{event: ":"}`). */
  events: { event: string; data: string }[];
  /** How the stream ended: "end" (the whole answer), "timeout" (silent past the read timeout), "closed". */
  how: "end" | "timeout" | "closed";
}

/**
 * POST a call as ORS's client does and read its stream: a socket silent for `readTimeoutMs` is
 * given up on (sock_read); `leaveAfterTaskId` drops the connection once the task id is in.
 */
function postCall(url: string, sid: string, body: unknown, opts: { readTimeoutMs: number; who?: string; leaveAfterTaskId?: boolean }): Promise<Streamed> {
  return new Promise((resolve, reject) => {
    const events: Streamed["events"] = [];
    let settled = false;
    const done = (how: Streamed["how"]) => {
      if (settled) return;
      settled = true;
      req.destroy();
      resolve({ events, how });
    };
    const req = httpRequest(`${url}/slow-tools/call`, { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream", "x-session-id": sid, "x-who": opts.who ?? "a" } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        let at: number;
        while ((at = buffer.indexOf("\n\n")) !== -1) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          if (block.startsWith(":")) events.push({ event: ":", data: block });
          else {
            const lines = block.split("\n");
            const event = { event: lines.find((l) => l.startsWith("event:"))?.slice(7) ?? "", data: lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(6)).join("\n") };
            events.push(event);
            if (event.event === "task_id" && opts.leaveAfterTaskId) return done("closed");
            if (event.event === "end" || event.event === "error") return done("end");
          }
        }
      });
      res.on("end", () => done("closed"));
    });
    req.setTimeout(opts.readTimeoutMs, () => done("timeout"));
    req.on("error", (err) => (settled ? undefined : reject(err)));
    req.end(JSON.stringify(body));
  });
}

/** A session; without `env_name` (as ORS's client creates one from a split and an index) its episode starts at its first use. */
async function session(url: string, who = "a", named = true): Promise<string> {
  const sid = `s-${who}-${Math.random().toString(36).slice(2)}`;
  const res = await fetch(`${url}/create`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": sid, "x-who": who }, body: JSON.stringify({ ...(named ? { env_name: "slow-tools" } : {}), split: "train", index: 0 }) });
  expect(res.status).toBe(200);
  return sid;
}

const answer = (s: Streamed) => JSON.parse(s.events.filter((e) => e.event === "chunk" || e.event === "end").map((e) => e.data).join(""));

describe("ORS: a tool call longer than the client's read timeout", () => {
  let live: Served;
  let silent: Served;
  beforeAll(async () => {
    live = await start(HEARTBEAT_MS);
    silent = await start(0);
  });
  afterAll(() => {
    live?.server.close();
    silent?.server.close();
  });

  it("keeps its stream alive with a comment every heartbeat, and answers", async () => {
    const sid = await session(live.url);
    const got = await postCall(live.url, sid, { name: "wait", input: { ms: 8 * HEARTBEAT_MS, tag: "alive" } }, { readTimeoutMs: 3 * HEARTBEAT_MS });
    expect(got.how).toBe("end");
    expect(got.events[0]!.event).toBe("task_id");
    expect(got.events.filter((e) => e.event === ":").length).toBeGreaterThanOrEqual(2);
    expect(answer(got)).toMatchObject({ ok: true, output: { blocks: [{ text: `waited ${8 * HEARTBEAT_MS} ms` }], finished: false } });
  });

  it("the first call of a session created without its environment starts the episode and is answered at once", async () => {
    // ORS's client creates sessions so. The episode's start read the request's abort signal
    // before its body, and the body then never came: the stream stayed silent until the client's
    // read timeout (30 s with ORS's client), and its retry was answered.
    const sid = await session(live.url, "a", false);
    const got = await postCall(live.url, sid, { name: "nope", input: {} }, { readTimeoutMs: 3 * HEARTBEAT_MS });
    expect(got.how).toBe("end");
    expect(answer(got)).toMatchObject({ ok: false, error: expect.stringMatching(/^tool_not_found/) });
  });

  it("the control: the same call on a stream without heartbeats is given up on by the client", async () => {
    const sid = await session(silent.url);
    const got = await postCall(silent.url, sid, { name: "wait", input: { ms: 8 * HEARTBEAT_MS, tag: "silent" } }, { readTimeoutMs: 3 * HEARTBEAT_MS });
    expect(got.how).toBe("timeout");
    expect(got.events.map((e) => e.event)).toEqual(["task_id"]);
  });

  it("a client whose stream broke gets the same call's answer with its task_id: the tool ran once", async () => {
    const sid = await session(live.url);
    const call = { name: "wait", input: { ms: 4 * HEARTBEAT_MS, tag: "resumed" } };
    const first = await postCall(live.url, sid, call, { readTimeoutMs: 60_000, leaveAfterTaskId: true });
    const taskId = first.events[0]!.data;
    expect(taskId).toMatch(/\S/);
    // Gone while the call runs (and its stream's heartbeats would come): the server carries on.
    await new Promise((resolve) => setTimeout(resolve, 2 * HEARTBEAT_MS));
    const again = await postCall(live.url, sid, { ...call, task_id: taskId }, { readTimeoutMs: 60_000 });
    expect(again.how).toBe("end");
    expect(again.events[0]).toEqual({ event: "task_id", data: taskId });
    expect(answer(again)).toMatchObject({ ok: true, output: { blocks: [{ text: `waited ${4 * HEARTBEAT_MS} ms` }] } });
    // Once more after it finished: the same answer, still one run.
    expect(answer(await postCall(live.url, sid, { ...call, task_id: taskId }, { readTimeoutMs: 60_000 }))).toEqual(answer(again));
    expect(runs.get("resumed")).toBe(1);
    // The episode had one step.
    const prompt = await fetch(`${live.url}/slow-tools/prompt`, { headers: { "x-session-id": sid } });
    expect(prompt.status).toBe(200);
  });

  it("a task id that is not the client's own (unknown, another session's, another client's) is an error, not a call", async () => {
    const sid = await session(live.url);
    const call = { name: "wait", input: { ms: 0, tag: "owned" } };
    const mine = await postCall(live.url, sid, call, { readTimeoutMs: 60_000 });
    const taskId = mine.events[0]!.data;
    const unknown = await postCall(live.url, sid, { ...call, task_id: "nope" }, { readTimeoutMs: 60_000 });
    expect(unknown.events).toEqual([{ event: "error", data: "unknown task_id" }]);
    const otherSession = await postCall(live.url, await session(live.url), { ...call, task_id: taskId }, { readTimeoutMs: 60_000 });
    expect(otherSession.events).toEqual([{ event: "error", data: "unknown task_id" }]);
    const bSid = await session(live.url, "b");
    const otherClient = await postCall(live.url, bSid, { ...call, task_id: taskId }, { readTimeoutMs: 60_000, who: "b" });
    expect(otherClient.events).toEqual([{ event: "error", data: "unknown task_id" }]);
    expect(runs.get("owned")).toBe(1);
  });
});
