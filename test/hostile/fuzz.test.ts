/**
 * Property-based fuzzing of every route and the WebSocket with fast-check: random bodies, JSON
 * types, sizes, encodings, methods and message sequences. Whatever arrives, the answer is 2xx or
 * a documented 4xx JSON error, the server stays up, and an episode played alongside is undisturbed.
 * Counts are bounded so the suite stops by itself within CI's time.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { get, post } from "../helpers/http.ts";
import { alphabetSortGold } from "../helpers/oracles.ts";
import { OpenEnvWsClient } from "../helpers/ws-client.ts";

const MAX_BODY = 16 * 1024;
const DOCUMENTED: Record<number, string[]> = {
  400: ["INVALID_JSON", "VALIDATION_ERROR"],
  401: ["UNAUTHORIZED"],
  404: ["UNKNOWN_ENV", "UNKNOWN_EPISODE", "NOT_FOUND"],
  405: ["METHOD_NOT_ALLOWED"],
  409: ["EPISODE_DONE", "EPISODE_EXISTS"],
  413: ["PAYLOAD_TOO_LARGE"],
  415: ["UNSUPPORTED_MEDIA_TYPE"],
  426: ["VALIDATION_ERROR"],
  429: ["CAPACITY_REACHED"],
};
const WS_CODES = ["INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR", "SESSION_ERROR", "CAPACITY_REACHED"];

let server: RunningServer;
beforeAll(async () => {
  server = await startServer(environments, { port: 0, maxBodyBytes: MAX_BODY, maxEpisodes: 2000 });
});
afterAll(() => server?.close());

async function expectDocumented(res: Response): Promise<void> {
  const text = await res.text();
  if (res.status < 300) return;
  expect(Object.keys(DOCUMENTED)).toContain(String(res.status));
  const body = JSON.parse(text);
  expect(DOCUMENTED[res.status]).toContain(body.error.code);
  expect(typeof body.error.message).toBe("string");
}

/** A JSON value likely to poke at schemas: right keys with wrong values, wrong keys, deep nesting. */
const keys = fc.constantFrom("seed", "episode_id", "index", "split", "args", "action", "content", "tool_calls", "items", "completion", "answer", "type", "data", "__proto__", "constructor", "");
const jsonish = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    fc.string({ unit: "binary" }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.oneof(keys, fc.string()), tie("value"), { maxKeys: 5 }),
  ),
})).value;

const body = fc.oneof(
  jsonish.map((v) => JSON.stringify(v)),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString("latin1")),
  fc.constantFrom("", "{", "null", "[]", '{"episode_id":', '{"a":1}'.repeat(3), "\u0000", "\ud800"),
  fc.integer({ min: MAX_BODY - 50, max: MAX_BODY * 2 }).map((n) => JSON.stringify({ action: { content: "x".repeat(n) } })),
);

const route = fc.constantFrom(
  ["POST", "/envs/reverse-text/reset"],
  ["POST", "/envs/alphabet-sort/reset"],
  ["POST", "/envs/reverse-text/step"],
  ["POST", "/envs/alphabet-sort/step"],
  ["POST", "/envs/reverse-text/close"],
  ["POST", "/envs/reverse-text/score"],
  ["POST", "/envs/alphabet-sort/score"],
  ["POST", "/envs/reverse-text/mcp"],
  ["GET", "/envs/reverse-text/state"],
  ["GET", "/envs/reverse-text/metadata"],
  ["POST", "/envs/%ff/reset"],
  ["PUT", "/envs/reverse-text/reset"],
  ["DELETE", "/envs/reverse-text/step"],
  ["POST", "/envs/reverse-text/ws"],
  ["GET", "/envs/reverse-text/ws"],
  ["POST", "/health"],
) as fc.Arbitrary<[string, string]>;

const contentType = fc.constantFrom("application/json", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "");

describe("fuzz", () => {
  it("answers random HTTP requests with 2xx or documented 4xx JSON errors, never disturbing a live episode", async () => {
    const reset = await post(`${server.url}/envs/alphabet-sort/reset`, { seed: 1 });
    const id = reset.body.episode_id as string;
    const history = [...reset.body.observation.messages];

    await fc.assert(
      fc.asyncProperty(route, body, contentType, fc.string({ maxLength: 40 }), async ([method, path], payload, ctype, query) => {
        const url = `${server.url}${path}${method === "GET" && query ? `?episode_id=${encodeURIComponent(query)}` : ""}`;
        const init: RequestInit = { method, headers: ctype ? { "content-type": ctype } : {} };
        if (method !== "GET") init.body = payload;
        const res = await fetch(url, init);
        expect(res.status).not.toBeGreaterThanOrEqual(500);
        await expectDocumented(res);
      }),
      { numRuns: 400, seed: 20261122 },
    );

    // The live episode is exactly where it was, and plays to a full score.
    const state = await get(`${server.url}/envs/alphabet-sort/state?episode_id=${id}`);
    expect(state.body).toMatchObject({ step_count: 0, done: false });
    let result = reset.body;
    while (!result.done) {
      const answer = alphabetSortGold(history);
      history.push({ role: "assistant", content: answer });
      result = (await post(`${server.url}/envs/alphabet-sort/step`, { episode_id: id, action: { content: answer } })).body;
      history.push(...result.observation.messages);
    }
    expect(result.reward).toBe(1);
  }, 120_000);

  it("steps random actions into real episodes: only 200, 400 or 409", async () => {
    const action = fc.oneof(
      fc.record({ content: fc.oneof(fc.string({ maxLength: 300 }), fc.constant(null)) }),
      fc.record({ content: fc.string(), tool_calls: fc.array(fc.record({ id: fc.string(), type: fc.constant("function"), function: fc.record({ name: fc.string(), arguments: fc.string() }) }), { maxLength: 2 }) }),
      jsonish,
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("reverse-text", "alphabet-sort"), fc.array(action, { minLength: 1, maxLength: 5 }), async (env, actions) => {
        const r = await post(`${server.url}/envs/${env}/reset`, {});
        for (const a of actions) {
          const res = await post(`${server.url}/envs/${env}/step`, { episode_id: r.body.episode_id, action: a });
          expect([200, 400, 409]).toContain(res.status);
          if (res.status === 200 && res.body.done) {
            expect(res.body.reward).toBeGreaterThanOrEqual(0);
            expect(res.body.reward).toBeLessThanOrEqual(1);
          }
        }
        await post(`${server.url}/envs/${env}/close`, { episode_id: r.body.episode_id });
      }),
      { numRuns: 150, seed: 7 },
    );
  }, 120_000);

  it("answers random WebSocket message sequences with OpenEnv messages, and the socket survives", async () => {
    const message = fc.oneof(
      jsonish.map((v) => JSON.stringify(v)),
      fc.string({ unit: "binary", maxLength: 100 }),
      fc.record({ type: fc.constantFrom("reset", "step", "state", "mcp", "nope"), data: jsonish }).map((m) => JSON.stringify(m)),
      fc.constant(JSON.stringify({ type: "reset", data: { seed: 3 } })),
      fc.record({ content: fc.string() }).map((d) => JSON.stringify({ type: "step", data: d })),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 12 }), async (messages) => {
        const ws = await OpenEnvWsClient.connect(`${server.url}/envs/reverse-text`);
        try {
          for (const m of messages) {
            const reply = await ws.sendRaw(m);
            expect(["observation", "state", "mcp", "error"]).toContain(reply.type);
            if (reply.type === "error") expect(WS_CODES).toContain(reply.data.code);
          }
          // Still a working session.
          const r = await ws.reset({ seed: 1 });
          expect(r.type).toBe("observation");
        } finally {
          ws.close();
        }
      }),
      { numRuns: 60, seed: 99 },
    );
  }, 120_000);
});
