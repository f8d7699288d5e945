/**
 * Model text never becomes code in environment threads (src/node/no-code-from-strings.ts): a reward
 * function that runs the completion (eval, new Function, any function's constructor, a string timer,
 * node:vm) fails its step with a coded error instead of scoring, the code does not run, and the
 * same thread then scores another client's answers as before. The server's own thread (this one) is
 * not affected.
 */
import { runInThisContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importEnvironments } from "../../../src/env/source.ts";
import { startServer, type RunningServer } from "../../../src/node/server.ts";
import { MARKER } from "../../fixtures/codegen-env.ts";
import { get, post } from "../../helpers/http.ts";
import { reverseTextGold } from "../../helpers/oracles.ts";

const A = { authorization: "Bearer codegen-a" };
const B = { authorization: "Bearer codegen-b" };
const WAYS = ["eval", "indirect", "function", "call", "ctor", "arrow", "async", "generator", "reflect", "timeout", "vm", "script", "context", "caught"];

let server: RunningServer;

beforeAll(async () => {
  const shipped = await importEnvironments(new URL("../../../envs/index.ts", import.meta.url).href);
  const fixtures = await importEnvironments(new URL("../../fixtures/codegen-env.ts", import.meta.url).href);
  // One thread: the attacks and the later probes run in the same one, where a marker would stay.
  server = await startServer([shipped.find((e) => e.name === "reverse-text")!, ...fixtures], { port: 0, envThreads: 1, token: "codegen-a,codegen-b" });
  await server.engine.warm();
}, 60_000);
afterAll(() => server?.close());

describe("code generation from strings in environment threads", () => {
  it.each(WAYS)("a reward that runs the completion through %s fails the step with EXECUTION_ERROR/CODE_FROM_STRINGS; the episode is kept", async (way) => {
    const base = `${server.url}/envs/codegen-reward`;
    const r = await post(`${base}/reset`, { seed: 1 }, A);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const s = await post(`${base}/step`, { episode_id: r.body.episode_id, action: { content: `${way} globalThis.${MARKER} = ${JSON.stringify(way)}; 1` } }, A);
    expect(s.status, JSON.stringify(s.body)).toBe(422);
    expect(s.body.error.code).toBe("EXECUTION_ERROR");
    expect(s.body.error.details.reason).toBe("CODE_FROM_STRINGS");
    expect(s.body.reward).toBeUndefined();
    const st = await get(`${base}/state?episode_id=${r.body.episode_id}`, A);
    expect(st.status).toBe(200);
    expect(st.body.done).toBe(false);
    expect(st.body.step_count).toBe(0);
  });

  it("a reward that turns no string into code scores as usual (the refusal is per call)", async () => {
    const base = `${server.url}/envs/codegen-reward`;
    const r = await post(`${base}/reset`, { seed: 2 }, A);
    const s = await post(`${base}/step`, { episode_id: r.body.episode_id, action: { content: "plain text" } }, A);
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    expect(s.body.reward).toBe(0);
  });

  it("afterwards the same thread scores another client honestly: no marker, zod parses, reverse-text pays", async () => {
    const probe = `${server.url}/envs/codegen-probe`;
    const r = await post(`${probe}/reset`, { seed: 3 }, B);
    const s = await post(`${probe}/step`, { episode_id: r.body.episode_id, action: { content: JSON.stringify({ answer: "ok", extra: [1, 2] }) } }, B);
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    expect(s.body.observation.metrics).toMatchObject({ no_marker: 1, zod_parsed: 1 });
    expect(s.body.reward).toBe(2);
    const rt = `${server.url}/envs/reverse-text`;
    const r2 = await post(`${rt}/reset`, {}, B);
    const s2 = await post(`${rt}/step`, { episode_id: r2.body.episode_id, action: { content: reverseTextGold(r2.body.observation.messages) } }, B);
    expect(s2.status, JSON.stringify(s2.body)).toBe(200);
    expect(s2.body.reward).toBe(1);
  });

  it("the server's own thread keeps eval and the Function constructor (only environment threads refuse them)", () => {
    expect(MARKER in globalThis).toBe(false);
    expect(eval("1 + 1")).toBe(2);
    expect(new Function("return 3")()).toBe(3);
    expect(runInThisContext("4")).toBe(4);
  });
});
