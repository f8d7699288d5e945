/**
 * The conformance suite against workerd (the deployable bundle in Miniflare), plus what only
 * Durable Objects can show: an episode survives its object being restarted.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conformanceSuite } from "../../conformance.ts";
import { get, post } from "../../helpers/http.ts";
import { alphabetSortGold } from "../../helpers/oracles.ts";
import { buildWorkerBundle, startWorkerd, type Bundle, type WorkerdServer } from "../../helpers/workerd.ts";
import { OpenEnvWsClient } from "../../helpers/ws-client.ts";
import { REFERENCE } from "../../../envs/js-code/reference.ts";
import { TASKS } from "../../../envs/js-code/tasks.ts";

const MAX_BODY = 64 * 1024;
const FREE_PLAN_LIMIT = 3 * 1024 * 1024;
const vars = { ENVWORKER_MAX_BODY_BYTES: String(MAX_BODY) };
const TOKEN = "conformance-token";
const OTHER_TOKEN = "second-client-secret";

let tmp: string;
let bundle: Bundle;
let server: WorkerdServer;
let tokenServer: WorkerdServer;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "envworker-workerd-"));
  bundle = await buildWorkerBundle(join(tmp, "dist"));
  console.log(
    `worker bundle: ${(bundle.rawBytes / 1024).toFixed(0)} KiB raw, ${(bundle.gzipBytes / 1024).toFixed(0)} KiB gzip ` +
      `(free-plan limit ${FREE_PLAN_LIMIT / 1024} KiB gzip)`,
  );
  server = await startWorkerd(bundle, join(tmp, "do"), vars);
  tokenServer = await startWorkerd(bundle, join(tmp, "do-token"), { ...vars, ENVWORKER_TOKEN: `${TOKEN},${OTHER_TOKEN}` });
}, 180_000);

afterAll(async () => {
  await server?.dispose();
  await tokenServer?.dispose();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe("worker bundle", () => {
  it("stays under Cloudflare's free-plan limit of 3 MiB gzip", () => {
    expect(bundle.gzipBytes).toBeGreaterThan(0);
    expect(bundle.gzipBytes).toBeLessThan(FREE_PLAN_LIMIT);
  });
});

conformanceSuite("workerd", { origin: () => server.url, maxBodyBytes: MAX_BODY, withToken: () => ({ origin: tokenServer.url, token: TOKEN, otherToken: OTHER_TOKEN }) });

describe("durable objects", () => {
  it("continues an episode after the runtime restarts (the object is evicted and rebuilt from storage)", async () => {
    const base = () => `${server.url}/envs/alphabet-sort`;
    // A seed with at least two turns, so the episode is mid-way when the runtime restarts.
    let reset;
    for (let seed = 1; seed <= 40; seed++) {
      reset = await post(`${base()}/reset`, { seed });
      const st = await get(`${base()}/state?episode_id=${reset.body.episode_id}`);
      expect(st.status).toBe(200);
      const first = await post(`${base()}/step`, {
        episode_id: reset.body.episode_id,
        action: { content: alphabetSortGold(reset.body.observation.messages) },
      });
      if (!first.body.done) {
        const history = [...reset.body.observation.messages, { role: "assistant", content: alphabetSortGold(reset.body.observation.messages) }, ...first.body.observation.messages];
        await server.dispose();
        server = await startWorkerd(bundle, join(tmp, "do"), vars);
        let result = first.body;
        while (!result.done) {
          const answer = alphabetSortGold(history);
          history.push({ role: "assistant", content: answer });
          const step = await post(`${base()}/step`, { episode_id: reset.body.episode_id, action: { content: answer } });
          expect(step.status).toBe(200);
          result = step.body;
          history.push(...result.observation.messages);
        }
        expect(result.reward).toBe(1);
        const state = await get(`${base()}/state?episode_id=${reset.body.episode_id}`);
        expect(state.body.step_count).toBeGreaterThanOrEqual(2);
        return;
      }
    }
    throw new Error("no seed in 1..40 gave a multi-turn alphabet-sort episode");
  }, 120_000);

  it("expires idle episodes (Durable Object alarm, and on access)", async () => {
    const quick = await startWorkerd(bundle, join(tmp, "do-idle"), { ...vars, ENVWORKER_IDLE_TIMEOUT_S: "1" });
    try {
      const base = `${quick.url}/envs/reverse-text`;
      const r = await post(`${base}/reset`, {});
      expect((await get(`${base}/state?episode_id=${r.body.episode_id}`)).status).toBe(200);
      await new Promise((res) => setTimeout(res, 1500));
      const gone = await post(`${base}/step`, { episode_id: r.body.episode_id, action: { content: "late" } });
      expect(gone.status).toBe(404);
      expect(gone.body.error.code).toBe("UNKNOWN_EPISODE");
    } finally {
      await quick.dispose();
    }
  });

  it("reaches a WebSocket's episode over HTTP as well (same object)", async () => {
    const ws = await OpenEnvWsClient.connect(`${server.url}/envs/reverse-text`);
    try {
      const r = await ws.reset({ seed: 4 });
      const st = await get(`${server.url}/envs/reverse-text/state?episode_id=${encodeURIComponent(r.data.episode_id)}`);
      expect(st.status).toBe(200);
      expect(st.body.step_count).toBe(0);
    } finally {
      ws.close();
    }
  });
});

describe("Node-only environments on Workers", () => {
  it("py-code and math-tools-python are absent from /envs, and a request for one says they are Node only", async () => {
    const names = (await get(`${server.url}/envs`)).body.envs.map((e: { name: string }) => e.name);
    expect(names).not.toContain("py-code");
    for (const name of ["py-code", "math-tools-python"]) {
      const r = await post(`${server.url}/envs/${name}/reset`, {});
      expect(r.status).toBe(404);
      expect(r.body.error).toEqual({ code: "UNKNOWN_ENV", message: `"${name}" is not served here: it runs Python, whose sandbox forks a process per run, which a Worker cannot: Node only (envworker serve)` });
    }
    expect((await post(`${server.url}/envs/nope/reset`, {})).body.error.message).toBe('unknown environment "nope"; GET /envs lists them');
  });
});

describe("code execution in workerd (QuickJS from the imported wasm, interrupt-call budget)", () => {
  const FIZZ = TASKS.findIndex((t) => t.id === "fizzbuzz");
  const GOLD = REFERENCE.fizzbuzz!.code;
  const fence = (code: string) => "```javascript\n" + code + "\n```";
  const play = async (code: string, args: Record<string, unknown> = {}) => {
    const base = `${server.url}/envs/js-code`;
    const r = await post(`${base}/reset`, { index: FIZZ, args });
    return (await post(`${base}/step`, { episode_id: r.body.episode_id, action: { content: fence(code) } })).body;
  };

  it("grades a correct, a partly correct and a malicious js-code solution, and keeps serving", async () => {
    expect((await play(GOLD)).reward).toBe(1);
    const partial = await play(GOLD.replace('i % 15 === 0 ? "FizzBuzz" : ', ""));
    expect(partial.reward).toBeGreaterThan(0);
    expect(partial.reward).toBeLessThan(1);
    const loop = await play("function fizzBuzz(n) { while (true) {} }", { timeout_ms: 500 });
    expect(loop.reward).toBe(0);
    expect(loop.observation.metrics.timed_out).toBe(1);
    const escape = await play("function fizzBuzz(n) { return [typeof process, typeof require, typeof fetch].join(); }");
    expect(escape.reward).toBe(0);
    expect((await play(GOLD)).reward).toBe(1);
  }, 120_000);

  it("answers math-tools' calculator and javascript tool calls", async () => {
    const base = `${server.url}/envs/math-tools`;
    const r = await post(`${base}/reset`, { seed: 1 });
    const call = (id: string, name: string, args: unknown) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });
    const step = await post(`${base}/step`, {
      episode_id: r.body.episode_id,
      action: { content: null, tool_calls: [call("a", "calculator", { expression: "6 * 7" }), call("b", "javascript", { code: "console.log(6 * 7); 6 * 7" })] },
    });
    expect(step.status).toBe(200);
    const [calc, js] = step.body.observation.messages;
    expect(calc.content).toMatch(/42/);
    expect(js.content).toMatch(/42/);
    expect(js.content).not.toMatch(/^Error/);
  });
});
