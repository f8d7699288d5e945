/**
 * The Open Reward Standard (src/server/ors.ts) on the one app: sessions, splits, tasks, prompt,
 * tools and calls with reward and `finished`, as ORS's clients send them (clients/python/tests/
 * test_trainers_ors.py runs ORS's own client and TRL's against a real server).
 */
import { describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { createApp } from "../../src/server/app.ts";
import { inlineEngine } from "../../src/server/engine.ts";
import { StoreEpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { MemoryOrsSessions, type OrsSession } from "../../src/server/ors.ts";

/** The client createApp's default identity gives a request with no address (app.request). */
const LOCAL = "address unknown";

function server(opts: { clientOf?: (c: any) => string; envs?: typeof environments; orsSessions?: MemoryOrsSessions } = {}) {
  const store = new MemoryEpisodeStore();
  const host = new StoreEpisodeHost(store, inlineEngine({}));
  const app = createApp({ envs: opts.envs ?? environments, host, ...(opts.clientOf ? { clientOf: opts.clientOf } : {}), ...(opts.orsSessions ? { orsSessions: opts.orsSessions } : {}) });
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await app.request(path, { method, headers: { "content-type": "application/json", ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, text, json: res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : undefined };
  };
  /** An SSE answer's events, as ORS's client reads them. */
  const events = (text: string) =>
    text
      .split("\n\n")
      .filter((e) => e.trim() && !e.startsWith(":"))
      .map((e) => {
        const lines = e.split("\n");
        return { event: lines.find((l) => l.startsWith("event:"))!.slice(7), data: lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(6)).join("\n") };
      });
  const sid = async () => events((await call("POST", "/create_session")).text).find((e) => e.event === "task_id")!.data;
  const toolCall = async (s: string, env: string, name: string, input: unknown) => {
    const res = await call("POST", `/${env}/call`, { name, input }, { "x-session-id": s });
    expect(res.status).toBe(200);
    const evs = events(res.text);
    expect(evs[0]!.event).toBe("task_id");
    return JSON.parse(evs.filter((e) => e.event === "chunk" || e.event === "end").map((e) => e.data).join(""));
  };
  return { host, store, app, call, events, sid, toolCall };
}

describe("ORS", () => {
  it("lists environments, splits, tools and tasks; a task is an example reference", async () => {
    const { call } = server();
    expect((await call("GET", "/list_environments")).json).toContain("math-tools");
    expect((await call("GET", "/reverse-text/splits")).json).toEqual(expect.arrayContaining([{ name: "train", type: "train" }]));
    const tools = (await call("GET", "/math-tools/tools")).json.tools;
    expect(tools.map((t: any) => t.name)).toEqual(["calculator", "javascript", "submit"]);
    expect(tools[0].input_schema.properties.expression).toBeDefined();
    const n = (await call("POST", "/reverse-text/num_tasks", { split: "train" })).json.num_tasks;
    expect(n).toBeGreaterThan(10);
    const task = (await call("POST", "/reverse-text/task", { split: "train", index: 2 })).json.task;
    expect(task).toMatchObject({ env: "reverse-text", split: "train", index: 2 });
    expect(task.example).toMatch(/^ex1\./);
    const range = (await call("POST", "/reverse-text/task_range", { split: "train", start: 1, stop: 4 })).json.tasks;
    expect(range.map((t: any) => t.index)).toEqual([1, 2, 3]);
    expect((await call("POST", "/reverse-text/task_range", { split: "train", start: -2 })).json.tasks.map((t: any) => t.index)).toEqual([n - 2, n - 1]);
    expect((await call("POST", "/reverse-text/tasks", { split: "train" })).json.tasks).toHaveLength(n);
    // A generated environment: a task per seed, listed by index only.
    expect((await call("POST", "/math-tools/task", { split: "train", index: 7 })).json.task.seed).toBe(7);
    expect((await call("POST", "/math-tools/tasks", { split: "train" })).status).toBe(400);
    expect((await call("POST", "/reverse-text/task", { split: "nope", index: 0 })).json.detail).toBe("Invalid split");
    expect((await call("POST", "/reverse-text/task", { split: "train", index: 10 ** 9 })).json.detail).toBe("Invalid index");
    expect((await call("GET", "/nope/tools")).status).toBe(404);
  });

  it("plays a session: prompt, tool calls as steps, submit with the episode's reward and finished", async () => {
    const { call, sid, toolCall, host } = server();
    const s = await sid();
    // ORS's client sends split and index without the environment: the episode starts at the first call under /{env}.
    expect((await call("POST", "/create", { split: "train", index: 5 }, { "x-session-id": s })).json).toEqual({ sid: s });
    expect((await call("POST", "/create", { split: "train", index: 5 }, { "x-session-id": s })).status).toBe(400);
    const prompt = (await call("GET", "/math-tools/prompt", undefined, { "x-session-id": s })).json;
    expect(prompt.map((b: any) => b.detail.role)).toEqual(["system", "user"]);
    const env = environments.find((e) => e.name === "math-tools")!;
    expect((await host.state(env, s, LOCAL)).seed).toBe(5);
    const two = await toolCall(s, "math-tools", "calculator", { expression: "6*7" });
    expect(two).toMatchObject({ ok: true, output: { blocks: [{ type: "text", text: "42" }], reward: null, finished: false } });
    const bad = await toolCall(s, "math-tools", "calculator", { expression: "1/" });
    expect(bad.ok).toBe(true);
    expect(bad.output.metadata.error.error_type).toBe("execution_error");
    expect((await toolCall(s, "math-tools", "nope", {})).ok).toBe(false);
    const done = await toolCall(s, "math-tools", "submit", { content: "\\boxed{0}" });
    expect(done.ok).toBe(true);
    expect(done.output.finished).toBe(true);
    const st = await host.state(env, s, LOCAL);
    expect(done.output.reward).toBe(st.reward);
    expect(done.output.metadata.metrics.num_tool_calls).toBe(2);
    expect((await toolCall(s, "math-tools", "submit", { content: "again" })).error).toMatch(/^EPISODE_DONE/);
    // The session is another environment's: refused.
    expect((await call("GET", "/wordle/prompt", undefined, { "x-session-id": s })).status).toBe(404);
    expect((await call("POST", "/ping", undefined, { "x-session-id": s })).json).toEqual({ status: "ok" });
    expect((await call("POST", "/delete", undefined, { "x-session-id": s })).json).toEqual({ sid: s });
    expect((await call("POST", "/ping", undefined, { "x-session-id": s })).status).toBe(404);
    await expect(host.state(env, s, LOCAL)).rejects.toThrow();
  });

  it("a task spec replays its example: the same example and reward as over OpenEnv's HTTP", async () => {
    const { app, call, sid, toolCall } = server();
    const task = (await call("POST", "/reverse-text/task", { split: "train", index: 3 })).json.task;
    const s = await sid();
    expect((await call("POST", "/create", { env_name: "reverse-text", task_spec: task }, { "x-session-id": s })).status).toBe(200);
    const prompt = (await call("GET", "/reverse-text/prompt", undefined, { "x-session-id": s })).json;
    const text = prompt.at(-1).text as string;
    const answer = `<reversed_text>${[...text].reverse().join("").slice(1)}</reversed_text>`;
    const done = await toolCall(s, "reverse-text", "submit", { content: answer });
    const reset = await (await app.request("/envs/reverse-text/reset", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ example: task.example }) })).json() as any;
    expect(reset.observation.messages.at(-1).content).toBe(text);
    const step = await (await app.request("/envs/reverse-text/step", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ episode_id: reset.episode_id, action: { content: answer } }) })).json() as any;
    expect(done.output.reward).toBe(step.reward);
    expect(step.reward).toBeGreaterThan(0.5);
    expect(step.reward).toBeLessThan(1);
  });

  it("a session belongs to its client; the root paths are the first environment's", async () => {
    const { call, sid } = server({ clientOf: (c) => c.req.header("x-who") ?? "?" });
    const s = await sid();
    await call("POST", "/create", { env_name: "wordle", split: "train", index: 0 }, { "x-session-id": s, "x-who": "a" });
    expect((await call("GET", "/wordle/prompt", undefined, { "x-session-id": s, "x-who": "b" })).status).toBe(404);
    expect((await call("POST", "/ping", undefined, { "x-session-id": s, "x-who": "b" })).status).toBe(404);
    expect((await call("GET", "/wordle/prompt", undefined, { "x-session-id": s, "x-who": "a" })).status).toBe(200);
    // Choosing a's id tells b nothing: b's own session of that id is made (not "already exists"), and a's is as it was.
    expect((await call("POST", "/create", { env_name: "reverse-text", split: "train", index: 1 }, { "x-session-id": s, "x-who": "b" })).json).toEqual({ sid: s });
    expect((await call("GET", "/reverse-text/prompt", undefined, { "x-session-id": s, "x-who": "b" })).status).toBe(200);
    expect((await call("GET", "/wordle/prompt", undefined, { "x-session-id": s, "x-who": "a" })).status).toBe(200);
    expect((await call("GET", "/reverse-text/prompt", undefined, { "x-session-id": s, "x-who": "a" })).status).toBe(404);
    expect((await call("GET", "/splits")).json[0].name).toBe(environments[0]!.splits[0]);
    expect((await call("POST", "/create", { split: "train", index: 0 })).status).toBe(400); // no X-Session-ID
    expect((await call("POST", "/create", { split: "train" }, { "x-session-id": "x" })).status).toBe(400);
    expect((await call("POST", "/create", { split: "train", index: 0 }, { "x-session-id": "other.object" })).status).toBe(400);
  });

  it("each client has its share of the sessions: one that fills its share does not stop another opening one", async () => {
    const sessions = new MemoryOrsSessions({ max: 8, maxPerClient: 3 });
    const { call, sid, store } = server({ clientOf: (c) => c.req.header("x-who") ?? "?", orsSessions: sessions });
    const create = async (who: string) => {
      const s = await sid();
      return { s, res: await call("POST", "/create", { env_name: "reverse-text", split: "train", index: 0 }, { "x-session-id": s, "x-who": who }) };
    };
    const mine = [];
    for (let i = 0; i < 3; i++) {
      const { s, res } = await create("a");
      expect(res.status).toBe(200);
      mine.push(s);
    }
    const refused = await create("a");
    expect(refused.res.status).toBe(429);
    expect(refused.res.json.detail).toMatch(/^CAPACITY_REACHED: this client holds its share of 3 ORS sessions/);
    // Refused before its episode was made: a's three episodes only.
    expect(store.episodesFor("a")).toBe(3);
    // b is served, and a's sessions are all still there.
    const theirs = await create("b");
    expect(theirs.res.json).toEqual({ sid: theirs.s });
    expect((await call("GET", "/reverse-text/prompt", undefined, { "x-session-id": theirs.s, "x-who": "b" })).status).toBe(200);
    for (const s of mine) expect((await call("POST", "/ping", undefined, { "x-session-id": s, "x-who": "a" })).status).toBe(200);
    // A session deleted makes room in a's share.
    await call("POST", "/delete", undefined, { "x-session-id": mine[0]!, "x-who": "a" });
    expect((await create("a")).res.status).toBe(200);
  });

  it("a full store refuses a new session rather than drop another client's; idle ones make room", async () => {
    let now = 1_000_000;
    const sessions = new MemoryOrsSessions({ max: 3, idleMs: 60_000, now: () => now });
    const at = () => now;
    const session = (client: string): OrsSession => ({ client, create: { split: "train", index: 0 }, started: false, at: at() });
    await sessions.put("a", "s1", session("a"));
    await sessions.put("a", "s2", session("a"));
    now += 30_000;
    await sessions.put("b", "s1", session("b"));
    await expect(sessions.put("c", "s1", session("c"))).rejects.toMatchObject({ code: "CAPACITY_REACHED" });
    expect(await sessions.get("b", "s1")).toBeDefined();
    expect(await sessions.get("a", "s1")).toBeDefined();
    // A session kept is updated in place, even when the store is full.
    await sessions.put("a", "s1", { ...session("a"), started: true });
    expect((await sessions.get("a", "s1"))?.started).toBe(true);
    // a's s2 was last used 30 s before the rest: idle at 60 s, it makes room; the others stay.
    now += 31_000;
    await sessions.put("c", "s1", session("c"));
    expect(await sessions.get("a", "s2")).toBeUndefined();
    expect(sessions.sessionsOf("a")).toBe(1);
    expect(await sessions.get("b", "s1")).toBeDefined();
  });
});
