/**
 * The protocol conformance suite. It only speaks HTTP and WebSocket to a base URL, so the same
 * suite runs against the Node server and against workerd. Environments used: reverse-text and
 * alphabet-sort (served on every platform).
 */
import { describe, expect, it } from "vitest";
import { get, post, request } from "./helpers/http.ts";
import { rawRequest } from "./helpers/raw-http.ts";
import { alphabetSortGold, reverseTextGold } from "./helpers/oracles.ts";
import { OpenEnvWsClient, upgradeStatus } from "./helpers/ws-client.ts";
import { validateBase } from "../src/cli/validate.ts";
import { routeAccessSuite } from "./routes-auth.ts";

export interface ConformanceTarget {
  /** Server origin, e.g. http://127.0.0.1:8000 */
  origin: () => string;
  /** The largest accepted body, to test 413. */
  maxBodyBytes: number;
  /**
   * A second server of the same platform that requires a bearer token: ENVWORKER_TOKEN names
   * `token` and `otherToken`, two clients.
   */
  withToken: () => { origin: string; token: string; otherToken: string };
}

const rpc = (method: string, params?: Record<string, unknown>) => ({ jsonrpc: "2.0", id: 1, method, ...(params ? { params } : {}) });

const lastUser = (messages: { role: string; content: string }[]) => [...messages].reverse().find((m) => m.role === "user")!.content;

export function conformanceSuite(platform: string, target: ConformanceTarget): void {
  const rt = () => `${target.origin()}/envs/reverse-text`;
  const as = () => `${target.origin()}/envs/alphabet-sort`;
  routeAccessSuite(platform, { open: target.origin, guarded: target.withToken });

  describe(`protocol conformance (${platform})`, () => {
    describe("discovery (what `openenv validate --url B` checks)", () => {
      it("serves health and the environment list", async () => {
        expect((await get(`${target.origin()}/health`)).body).toEqual({ status: "healthy" });
        const list = await get(`${target.origin()}/envs`);
        expect(list.status).toBe(200);
        const names = list.body.envs.map((e: { name: string }) => e.name);
        expect(names).toEqual(expect.arrayContaining(["reverse-text", "alphabet-sort"]));
      });

      it("passes each openenv validate check at B, and plays an episode there (envworker validate)", async () => {
        for (const base of [rt(), as()]) {
          const checks = await validateBase(base);
          expect(checks.filter((c) => !c.ok)).toEqual([]);
          // openenv validate's 7, then reset determinism, the played episode, /score = the episode's reward.
          expect(checks).toHaveLength(10);
        }
      });

      it("answers MCP tools/list and unknown methods as JSON-RPC", async () => {
        const list = await post(`${rt()}/mcp`, { jsonrpc: "2.0", method: "tools/list", id: 1 });
        expect(list.body).toEqual({ jsonrpc: "2.0", id: 1, result: { tools: [] } });
        const unknown = await post(`${rt()}/mcp`, { jsonrpc: "2.0", method: "nope", id: "x" });
        expect(unknown.status).toBe(200);
        expect(unknown.body.error.code).toBe(-32601);
        const bad = await post(`${rt()}/mcp`, "{not json");
        expect(bad.status).toBe(200);
        expect(bad.body.error.code).toBe(-32700);
      });
    });

    describe("HTTP episodes", () => {
      it("plays reverse-text: the gold answer scores 1.0, then the episode is finished", async () => {
        const reset = await post(`${rt()}/reset`, { seed: 11 });
        expect(reset.status).toBe(200);
        expect(reset.body.reward).toBeNull();
        expect(reset.body.done).toBe(false);
        const id = reset.body.episode_id as string;
        expect(id.length).toBeGreaterThanOrEqual(22);
        const obs = reset.body.observation;
        expect(obs.messages[0].role).toBe("system");
        expect(obs.turn).toBe(0);
        expect(obs.truncated).toBe(false);

        const step = await post(`${rt()}/step`, { episode_id: id, action: { content: reverseTextGold(obs.messages) } });
        expect(step.status).toBe(200);
        expect(step.body).toMatchObject({ reward: 1, done: true, episode_id: id });
        expect(step.body.observation.metrics).toEqual({ lcs_reward_func: 1 });

        const state = await get(`${rt()}/state?episode_id=${encodeURIComponent(id)}`);
        expect(state.body).toMatchObject({ episode_id: id, step_count: 1, done: true, reward: 1 });

        const again = await post(`${rt()}/step`, { episode_id: id, action: { content: "x" } });
        expect(again.status).toBe(409);
        expect(again.body.error.code).toBe("EPISODE_DONE");

        const closed = await post(`${rt()}/close`, { episode_id: id });
        expect(closed.body).toEqual({ episode_id: id, closed: true });
        const gone = await get(`${rt()}/state?episode_id=${encodeURIComponent(id)}`);
        expect(gone.status).toBe(404);
        expect(gone.body.error.code).toBe("UNKNOWN_EPISODE");
      });

      it("scores a wrong reverse-text answer below 1", async () => {
        const reset = await post(`${rt()}/reset`, { seed: 11 });
        const step = await post(`${rt()}/step`, {
          episode_id: reset.body.episode_id,
          action: { content: `<reversed_text>${lastUser(reset.body.observation.messages)}</reversed_text>` },
        });
        expect(step.body.done).toBe(true);
        expect(step.body.reward).toBeGreaterThanOrEqual(0);
        expect(step.body.reward).toBeLessThan(1);
        const none = await post(`${rt()}/reset`, { seed: 12 });
        const noTag = await post(`${rt()}/step`, { episode_id: none.body.episode_id, action: { content: "no tags at all" } });
        expect(noTag.body.reward).toBe(0);
      });

      it("gives the same prompt for the same seed and reports the seed", async () => {
        const a = await post(`${as()}/reset`, { seed: 1234 });
        const b = await post(`${as()}/reset`, { seed: 1234 });
        const c = await post(`${as()}/reset`, { seed: 1235 });
        expect(a.body.observation.messages).toEqual(b.body.observation.messages);
        expect(a.body.observation.info.seed).toBe(1234);
        expect(c.body.observation.messages).not.toEqual(a.body.observation.messages);
        const d = await post(`${rt()}/reset`, { index: 3, split: "eval" });
        const e = await post(`${rt()}/reset`, { index: 3, split: "eval", seed: 99 });
        expect(d.body.observation.messages).toEqual(e.body.observation.messages);
        expect(d.body.observation.info).toMatchObject({ index: 3, split: "eval" });
      });

      it("plays alphabet-sort over all its turns: gold answers score 1.0", async () => {
        for (const seed of [1, 2, 3, 4, 5]) {
          const reset = await post(`${as()}/reset`, { seed });
          const id = reset.body.episode_id;
          const history: { role: string; content: string }[] = [...reset.body.observation.messages];
          let result = reset.body;
          let turns = 0;
          while (!result.done) {
            const answer = alphabetSortGold(history);
            history.push({ role: "assistant", content: answer });
            const step = await post(`${as()}/step`, { episode_id: id, action: { content: answer } });
            expect(step.status).toBe(200);
            result = step.body;
            history.push(...result.observation.messages);
            turns++;
          }
          expect(turns).toBeGreaterThanOrEqual(1);
          expect(turns).toBeLessThanOrEqual(3);
          expect(result.observation.truncated).toBe(false);
          expect(result.reward).toBe(1);
        }
      });

      it("/state hides the answer and info until the episode is done, over HTTP and WebSocket", async () => {
        // They carry the gold answer (and, in the code environments, which hidden tests grade the
        // reply): a client that could read them mid-episode could forge its reward.
        const hidden = (state: Record<string, unknown>, label: string) => {
          expect(state.done, label).toBe(false);
          expect(Object.keys(state), label).not.toContain("answer");
          expect(Object.keys(state), label).not.toContain("info");
        };
        const reset = await post(`${rt()}/reset`, { seed: 21 });
        const id = reset.body.episode_id as string;
        const stateUrl = `${rt()}/state?episode_id=${encodeURIComponent(id)}`;
        const before = await get(stateUrl);
        expect(before.status).toBe(200);
        hidden(before.body, "reverse-text after reset");
        // The reversed prompt is the gold answer: not anywhere in the state's text either.
        const gold = /<reversed_text>([\s\S]*)<\/reversed_text>/.exec(reverseTextGold(reset.body.observation.messages))![1]!;
        expect(JSON.stringify(before.body)).not.toContain(JSON.stringify(gold).slice(1, 41));
        await post(`${rt()}/step`, { episode_id: id, action: { content: reverseTextGold(reset.body.observation.messages) } });
        const after = await get(stateUrl);
        expect(after.body).toMatchObject({ done: true, answer: gold });
        expect(after.body).toHaveProperty("info");

        // A multi-turn episode, between its turns.
        let mid: Record<string, unknown> | undefined;
        for (let seed = 1; seed <= 40 && !mid; seed++) {
          const r = await post(`${as()}/reset`, { seed });
          const history = [...r.body.observation.messages, { role: "assistant", content: alphabetSortGold(r.body.observation.messages) }];
          const step = await post(`${as()}/step`, { episode_id: r.body.episode_id, action: { content: history.at(-1)!.content } });
          if (!step.body.done) mid = (await get(`${as()}/state?episode_id=${encodeURIComponent(r.body.episode_id)}`)).body;
        }
        expect(mid, "an alphabet-sort seed with more than one turn").toBeDefined();
        hidden(mid!, "alphabet-sort between turns");
        expect(mid!.step_count).toBe(1);

        const ws = await OpenEnvWsClient.connect(rt());
        try {
          const r = await ws.reset({ seed: 22 });
          const st = await ws.send({ type: "state" });
          expect(st.type).toBe("state");
          hidden(st.data, "WebSocket state after reset");
          await ws.step({ content: reverseTextGold(r.data.observation.messages) });
          const done = await ws.send({ type: "state" });
          expect(done.data).toMatchObject({ done: true });
          expect(done.data).toHaveProperty("answer");
        } finally {
          ws.close();
        }
      });

      it("keeps concurrent episodes apart", async () => {
        const resets = await Promise.all([1, 2, 3, 4, 5, 6].map((seed) => post(`${rt()}/reset`, { seed })));
        const steps = await Promise.all(
          resets.map((r, i) =>
            post(`${rt()}/step`, {
              episode_id: r.body.episode_id,
              action: { content: i % 2 === 0 ? reverseTextGold(r.body.observation.messages) : "wrong" },
            }),
          ),
        );
        steps.forEach((s, i) => expect(s.body.reward).toBe(i % 2 === 0 ? 1 : 0));
      });

      it("refuses reset keys it does not know, naming them (a typo of seed must not pass as a random seed)", async () => {
        const r = await post(`${rt()}/reset`, { seed: 3, sede: 3 });
        expect(r.status).toBe(400);
        expect(r.body.error.code).toBe("VALIDATION_ERROR");
        expect(r.body.error.message).toMatch(/^unknown reset key "sede": a reset takes seed, episode_id, index, split, args, example/);
        expect((await post(`${rt()}/reset`, { seed: 3 })).body.observation.info.seed).toBe(3);
      });

      it("scores batches statelessly", async () => {
        const res = await post(`${rt()}/score`, {
          items: [
            { completion: "<reversed_text>olleh</reversed_text>", answer: "olleh" },
            { completion: [{ role: "assistant", content: "<reversed_text>hello</reversed_text>" }], answer: "olleh" },
            { completion: "nothing", answer: "olleh" },
          ],
        });
        expect(res.status).toBe(200);
        expect(res.body.results.map((r: { reward: number }) => r.reward)).toEqual([1, 0.4, 0]);
        expect(res.body.results[0].metrics).toEqual({ lcs_reward_func: 1 });
      });

      it("lists examples without episodes, resets and scores by their reference", async () => {
        const list = await post(`${rt()}/examples`, { split: "eval", start: 2, count: 2 });
        expect(list.status).toBe(200);
        expect(list.body.total).toBeGreaterThan(2);
        expect(list.body.examples.map((e: { index: number }) => e.index)).toEqual([2, 3]);
        const [ex] = list.body.examples;
        expect(JSON.stringify(list.body)).not.toContain('"answer"');
        const reset = await post(`${rt()}/reset`, { example: ex.example });
        expect(reset.status).toBe(200);
        expect(reset.body.observation.messages).toEqual(ex.prompt);
        expect(reset.body.observation.info.example).toBe(ex.example);
        await post(`${rt()}/close`, { episode_id: reset.body.episode_id });
        const scored = await post(`${rt()}/score`, { items: [{ example: ex.example, completion: reverseTextGold(ex.prompt) }, { example: ex.example, completion: "x" }] });
        expect(scored.status).toBe(200);
        expect(scored.body.results.map((r: { reward: number }) => r.reward >= 1)).toEqual([true, false]);
        // A generated environment is listed by seed; its prompts are the ones reset(seed) gives.
        const gen = await post(`${as()}/examples`, { seeds: [5] });
        expect(gen.body.total).toBeNull();
        const genReset = await post(`${as()}/reset`, { seed: 5 });
        expect(gen.body.examples[0].prompt).toEqual(genReset.body.observation.messages);
        await post(`${as()}/close`, { episode_id: genReset.body.episode_id });
        // A reference is re-derived, never trusted: another environment's, or a garbled one, is a 400.
        for (const bad of [gen.body.examples[0].example, ex.example.slice(0, -3), "forged"]) {
          const r = await post(`${rt()}/score`, { items: [{ example: bad, completion: "x" }] });
          expect([r.status, r.body.error?.code]).toEqual([400, "VALIDATION_ERROR"]);
        }
        const tooMany = await post(`${rt()}/examples`, { count: 100_000 });
        expect([tooMany.status, tooMany.body.error?.code]).toEqual([400, "VALIDATION_ERROR"]);
      });
    });

    describe("bad input over HTTP gets the documented JSON error", () => {
      const cases: [string, () => Promise<{ status: number; body: any }>, number, string][] = [
        ["malformed JSON", () => post(`${rt()}/step`, "{oops"), 400, "INVALID_JSON"],
        ["wrong types", () => post(`${rt()}/step`, { episode_id: 5, action: { content: 3 } }), 400, "VALIDATION_ERROR"],
        ["unknown field in an action", () => post(`${rt()}/step`, { episode_id: "x", action: { content: "a", foo: 1 } }), 400, "VALIDATION_ERROR"],
        ["missing action", () => post(`${rt()}/step`, { episode_id: "x" }), 400, "VALIDATION_ERROR"],
        ["a JSON array body", () => post(`${rt()}/reset`, "[]"), 400, "VALIDATION_ERROR"],
        ["negative seed", () => post(`${rt()}/reset`, { seed: -1 }), 400, "VALIDATION_ERROR"],
        ["unknown reset args", () => post(`${rt()}/reset`, { args: { nope: 1 } }), 400, "VALIDATION_ERROR"],
        ["index out of range", () => post(`${rt()}/reset`, { index: 10_000_000 }), 400, "VALIDATION_ERROR"],
        ["unknown split", () => post(`${rt()}/reset`, { split: "nope" }), 400, "VALIDATION_ERROR"],
        ["args that filter the dataset to nothing", () => post(`${rt()}/reset`, { args: { min_words: 100_000 } }), 400, "VALIDATION_ERROR"],
        [
          "args no example can satisfy",
          () => post(`${target.origin()}/envs/countdown/reset`, { args: { target_min: 999_999, target_max: 1_000_000, count: 2, large: 0 } }),
          400,
          "VALIDATION_ERROR",
        ],
        ["unknown environment", () => post(`${target.origin()}/envs/nope/reset`, {}), 404, "UNKNOWN_ENV"],
        ["unknown episode", () => post(`${rt()}/step`, { episode_id: "not-an-episode", action: { content: "a" } }), 404, "UNKNOWN_EPISODE"],
        ["state without an id", () => get(`${rt()}/state`), 400, "VALIDATION_ERROR"],
        ["unknown route", () => get(`${target.origin()}/nope`), 404, "NOT_FOUND"],
        ["unknown route under an environment", () => get(`${rt()}/nope`), 404, "NOT_FOUND"],
        ["a route with the wrong method", () => get(`${rt()}/reset`), 405, "METHOD_NOT_ALLOWED"],
        ["POST to a GET route", () => post(`${rt()}/state`, {}), 405, "METHOD_NOT_ALLOWED"],
        ["empty score batch", () => post(`${rt()}/score`, { items: [] }), 400, "VALIDATION_ERROR"],
        [
          "a body over the size limit",
          // Over a raw socket: the server may answer 413 and close before the whole body is
          // written, which fetch reports as a failed exchange (workerd does, now and then).
          async () => {
            const body = JSON.stringify({ episode_id: "x", action: { content: "a".repeat(target.maxBodyBytes + 10) } });
            const res = await rawRequest(target.origin(), {
              method: "POST",
              path: `${new URL(rt()).pathname}/step`,
              headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) },
              body: [body],
            });
            return { status: res.status, body: JSON.parse(res.body) };
          },
          413,
          "PAYLOAD_TOO_LARGE",
        ],
      ];
      for (const [name, send, status, code] of cases) {
        it(`${name} → ${status} ${code}`, async () => {
          const res = await send();
          expect(res.status).toBe(status);
          expect(res.body.error.code).toBe(code);
          expect(typeof res.body.error.message).toBe("string");
        });
      }

      it("a chunked body over the size limit (no Content-Length) → 413 PAYLOAD_TOO_LARGE", async () => {
        // Over a raw socket: the body is sent in 8 KiB chunks until it just passes the limit and
        // then held open, so the server has read every byte sent when it answers 413 (nothing
        // unread for it to reset the connection over), and the answer is read as it arrives.
        const chunk = "x".repeat(8192);
        const pieces = Array.from({ length: Math.floor(target.maxBodyBytes / chunk.length) + 1 }, () => chunk);
        const url = new URL(rt());
        const res = await rawRequest(target.origin(), {
          method: "POST",
          path: `${url.pathname}/step`,
          headers: { "content-type": "application/json" },
          body: pieces,
          chunked: true,
          end: false,
        });
        expect(res.status).toBe(413);
        expect(JSON.parse(res.body).error.code).toBe("PAYLOAD_TOO_LARGE");
      });

      it("accepts a body of exactly the limit and refuses one byte more, declared and chunked", async () => {
        const body = (n: number) => '{"seed":1}'.padEnd(n, " ");
        const path = `${new URL(rt()).pathname}/reset`;
        for (const chunked of [false, true]) {
          // A server may answer 413 and close before the rest of the body is written; the reset
          // that can then follow (EPIPE/ECONNRESET) may discard the answer: that request is sent
          // again, and a 413 must still be seen.
          const send = async (n: number) => {
            for (let attempt = 1; ; attempt++) {
              try {
                return await rawRequest(target.origin(), { method: "POST", path, headers: { "content-type": "application/json" }, body: [body(n).slice(0, 100), body(n).slice(100)], chunked });
              } catch (err) {
                if (attempt >= 3 || !/EPIPE|ECONNRESET/.test(String((err as Error).message))) throw err;
              }
            }
          };
          expect((await send(target.maxBodyBytes)).status, `exactly the limit, chunked: ${chunked}`).toBe(200);
          expect((await send(target.maxBodyBytes + 1)).status, `one byte more, chunked: ${chunked}`).toBe(413);
        }
      });

      it("an episode in play is undisturbed by all of the above", async () => {
        const reset = await post(`${rt()}/reset`, { seed: 21 });
        for (const [, send] of cases) await send();
        const step = await post(`${rt()}/step`, {
          episode_id: reset.body.episode_id,
          action: { content: reverseTextGold(reset.body.observation.messages) },
        });
        expect(step.body.reward).toBe(1);
      });

      it("an episode id of one environment is unknown to another", async () => {
        const reset = await post(`${rt()}/reset`, {});
        const res = await post(`${as()}/step`, { episode_id: reset.body.episode_id, action: { content: "a" } });
        expect(res.status).toBe(404);
      });
    });

    describe("HEAD answers wherever GET does, with the same access rules", () => {
      const head = (url: string, headers: Record<string, string> = {}) => fetch(url, { method: "HEAD", headers });
      const paths = () => ["/health", "/envs", "/envs/reverse-text/health", "/envs/reverse-text/metadata", "/envs/reverse-text/schema", "/envs/reverse-text/state?episode_id=nope", "/envs/reverse-text/reset", "/envs/nope/metadata", "/nope"];

      it("gives GET's status and headers, with no body", async () => {
        for (const path of paths()) {
          const g = await fetch(`${target.origin()}${path}`);
          const h = await head(`${target.origin()}${path}`);
          expect(h.status, path).toBe(g.status);
          expect(h.headers.get("content-type"), path).toBe(g.headers.get("content-type"));
          expect(await h.text(), path).toBe("");
          await g.arrayBuffer();
        }
        expect((await head(`${target.origin()}/health`)).status).toBe(200);
      });

      it("with a token configured: HEAD /health is open, other routes need the token", async () => {
        const { origin, token } = target.withToken();
        const auth = { authorization: `Bearer ${token}` };
        expect((await head(`${origin}/health`)).status).toBe(200);
        expect((await fetch(`${origin}/health`)).status).toBe(200);
        for (const path of ["/envs", "/envs/reverse-text/metadata", "/envs/reverse-text/health"]) {
          const refused = await head(`${origin}${path}`);
          expect(refused.status, path).toBe(401);
          expect(refused.headers.get("www-authenticate"), path).toMatch(/^Bearer/);
          expect((await head(`${origin}${path}`, auth)).status, path).toBe(200);
          expect((await head(`${origin}/t/${token}${path}`)).status, path).toBe(200);
          expect((await head(`${origin}/t/wrong-${token}${path}`)).status, path).toBe(401);
          expect((await fetch(`${origin}${path}`)).status, path).toBe(401);
        }
      });
    });

    describe("WebSocket (OpenEnv session protocol)", () => {
      it("plays reverse-text and alphabet-sort episodes with OpenEnv message shapes", async () => {
        const client = await OpenEnvWsClient.connect(rt());
        try {
          const r = await client.reset({ seed: 5 });
          expect(r.type).toBe("observation");
          expect(Object.keys(r.data).sort()).toEqual(["done", "episode_id", "observation", "reward"]);
          expect(r.data.reward).toBeNull();
          const s = await client.step({ content: reverseTextGold(r.data.observation.messages) });
          expect(s.type).toBe("observation");
          expect(s.data).toMatchObject({ reward: 1, done: true });
          const st = await client.send({ type: "state" });
          expect(st).toMatchObject({ type: "state", data: { step_count: 1, done: true } });
          // A second reset on the same connection starts a fresh episode.
          const r2 = await client.reset({ seed: 6 });
          expect(r2.data.done).toBe(false);
          expect(r2.data.episode_id).not.toBe(r.data.episode_id);
        } finally {
          client.close();
        }

        const ws = await OpenEnvWsClient.connect(as());
        try {
          let msg = await ws.reset({ seed: 3 });
          const history = [...msg.data.observation.messages];
          while (!msg.data.done) {
            const answer = alphabetSortGold(history);
            history.push({ role: "assistant", content: answer });
            msg = await ws.step({ content: answer });
            expect(msg.type).toBe("observation");
            history.push(...msg.data.observation.messages);
          }
          expect(msg.data.reward).toBe(1);
        } finally {
          ws.close();
        }
      });

      it("answers bad messages with OpenEnv error codes and keeps the session", async () => {
        const client = await OpenEnvWsClient.connect(rt());
        try {
          const expectError = async (p: Promise<{ type: string; data: any }>, code: string) => {
            const m = await p;
            expect(m.type).toBe("error");
            expect(m.data.code).toBe(code);
            expect(typeof m.data.message).toBe("string");
          };
          await expectError(client.sendRaw("{nope"), "INVALID_JSON");
          await expectError(client.send({ type: "dance" }), "UNKNOWN_TYPE");
          await expectError(client.send([1, 2]), "UNKNOWN_TYPE");
          await expectError(client.step({ content: "early" }), "SESSION_ERROR");
          await expectError(client.send({ type: "state" }), "SESSION_ERROR");
          await expectError(client.send({ type: "reset", data: { seed: "x" } }), "VALIDATION_ERROR");
          await expectError(client.send({ type: "reset", data: {}, extra: 1 }), "VALIDATION_ERROR");
          const r = await client.reset({ seed: 8 });
          await expectError(client.step({ content: 1 }), "VALIDATION_ERROR");
          await expectError(client.step({ content: "a", bogus: true }), "VALIDATION_ERROR");
          const ok = await client.step({ content: reverseTextGold(r.data.observation.messages) });
          expect(ok.data.reward).toBe(1);
          await expectError(client.step({ content: "after done" }), "SESSION_ERROR");
          const mcp = await client.send({ type: "mcp", data: { jsonrpc: "2.0", method: "tools/list", id: 7 } });
          expect(mcp).toEqual({ type: "mcp", data: { jsonrpc: "2.0", id: 7, result: { tools: [] } } });
        } finally {
          client.close();
        }
      });

      it("closes the socket on a close message and frees the episode", async () => {
        const client = await OpenEnvWsClient.connect(rt());
        const r = await client.reset({});
        client.ws.send(JSON.stringify({ type: "close" }));
        const { code } = await client.closed;
        expect(code).toBe(1000);
        // the episode is freed (poll briefly: the close is processed asynchronously)
        let status = 200;
        for (let i = 0; i < 50 && status === 200; i++) {
          status = (await get(`${rt()}/state?episode_id=${encodeURIComponent(r.data.episode_id)}`)).status;
          if (status === 200) await new Promise((res) => setTimeout(res, 20));
        }
        expect(status).toBe(404);
      });

      it("refuses the upgrade for an unknown environment", async () => {
        await expect(OpenEnvWsClient.connect(`${target.origin()}/envs/nope`)).rejects.toThrow(/404/);
      });
    });

    it("refuses a body that is not JSON by its content type: 415, before reading it", async () => {
      for (const type of ["application/x-www-form-urlencoded", "text/plain;charset=UTF-8", "multipart/form-data; boundary=x"]) {
        const res = await request("POST", `${rt()}/reset`, type.startsWith("text/") ? "{}" : "seed=1", { "content-type": type });
        expect(res.status, type).toBe(415);
        expect(res.body.error.code, type).toBe("UNSUPPORTED_MEDIA_TYPE");
      }
      expect((await request("POST", `${rt()}/reset`, "{}", { "content-type": "application/json; charset=utf-8" })).status).toBe(200);
    });

    describe("episodes belong to their client; browsers of other origins are refused", () => {
      it("another token (another client) gets 404 for an episode and a session it knows the ids of, on every route, and may use those ids for its own", async () => {
        const { origin, token, otherToken } = target.withToken();
        const a = { authorization: `Bearer ${token}` };
        const b = { authorization: `Bearer ${otherToken}` };
        const base = `${origin}/envs/reverse-text`;
        const reset = await post(`${base}/reset`, { seed: 2 }, a);
        const id = reset.body.episode_id as string;
        const session = await post(`${base}/mcp`, rpc("openenv/session/create", { seed: 3 }), a);
        const sid = session.body.result.session_id as string;
        for (const [what, res] of [
          ["step", await post(`${base}/step`, { episode_id: id, action: { content: "stolen" } }, b)],
          ["state", await get(`${base}/state?episode_id=${encodeURIComponent(id)}`, b)],
          ["close", await post(`${base}/close`, { episode_id: id }, b)],
        ] as const) {
          expect(res.status, what).toBe(404);
          expect(res.body.error.code, what).toBe("UNKNOWN_EPISODE");
        }
        for (const body of [rpc("tools/call", { session_id: sid, name: "submit", arguments: { content: "x" } }), rpc("tools/list", { session_id: sid }), rpc("openenv/session/close", { session_id: sid })]) {
          const res = await post(`${base}/mcp`, body, b);
          expect(res.body.error?.data?.code, body.method).toBe("UNKNOWN_EPISODE");
        }
        expect(await upgradeStatus(`${origin}/t/${otherToken}/envs/reverse-text/ws?session_id=${encodeURIComponent(sid)}`)).toBe(404);
        // B's own episode under A's id; A's is as it was.
        const own = await post(`${base}/reset`, { seed: 5, episode_id: id }, b);
        expect(own.status).toBe(200);
        expect(own.body.episode_id).toBe(id);
        expect((await post(`${base}/step`, { episode_id: id, action: { content: reverseTextGold(own.body.observation.messages) } }, b)).body.reward).toBe(1);
        expect((await get(`${base}/state?episode_id=${encodeURIComponent(id)}`, a)).body).toMatchObject({ step_count: 0, done: false });
        expect((await post(`${base}/step`, { episode_id: id, action: { content: reverseTextGold(reset.body.observation.messages) } }, a)).body.reward).toBe(1);
        expect((await get(`${base}/state?episode_id=${encodeURIComponent(sid)}`, a)).status).toBe(200);
        // A's WebSocket episode: found by A over HTTP, not by B.
        const ws = await OpenEnvWsClient.connect(`${origin}/t/${token}/envs/reverse-text`);
        try {
          const wsId = (await ws.reset({ seed: 4 })).data.episode_id as string;
          expect((await get(`${base}/state?episode_id=${encodeURIComponent(wsId)}`, a)).status).toBe(200);
          expect((await get(`${base}/state?episode_id=${encodeURIComponent(wsId)}`, b)).status).toBe(404);
        } finally {
          ws.close();
        }
      });

      it("B/ws?session_id=S plays the session S: the socket's reset keeps S's id and HTTP tool calls land in it; closing the socket leaves S open", async () => {
        const base = `${target.origin()}/envs/reverse-text`;
        const session = await post(`${base}/mcp`, rpc("openenv/session/create"));
        const sid = session.body.result.session_id as string;
        const ws = await OpenEnvWsClient.connect(base, undefined, { query: `session_id=${encodeURIComponent(sid)}` });
        const r = await ws.reset({ seed: 7 });
        expect(r.data.episode_id).toBe(sid);
        const answer = reverseTextGold(r.data.observation.messages);
        const call = await post(`${base}/mcp`, rpc("tools/call", { session_id: sid, name: "submit", arguments: { content: answer } }));
        expect(call.body.result._meta).toMatchObject({ episode_id: sid, done: true, reward: 1 });
        expect((await ws.send({ type: "state" })).data).toMatchObject({ episode_id: sid, step_count: 1, done: true });
        ws.ws.send(JSON.stringify({ type: "close" }));
        expect((await ws.closed).code).toBe(1000);
        expect((await get(`${base}/state?episode_id=${encodeURIComponent(sid)}`)).status).toBe(200);
        expect((await post(`${base}/mcp`, rpc("openenv/session/close", { session_id: sid }))).body.result).toEqual({ session_id: sid, closed: true });
        expect(await upgradeStatus(`${base}/ws?session_id=${encodeURIComponent(sid)}`)).toBe(404);
        expect(await upgradeStatus(`${base}/ws?session_id=never-made`)).toBe(404);
      });

      it("refuses requests and WebSocket upgrades from another origin (403); serves its own origin and clients that send none", async () => {
        const evil = { origin: "http://evil.example" };
        const refused = await post(`${rt()}/reset`, {}, evil);
        expect(refused.status).toBe(403);
        expect(refused.body.error.code).toBe("FORBIDDEN");
        expect((await get(`${target.origin()}/envs`, evil)).status).toBe(403);
        expect(await upgradeStatus(`${rt()}/ws`, evil)).toBe(403);
        expect((await post(`${rt()}/reset`, {}, { origin: target.origin() })).status).toBe(200);
        expect(await upgradeStatus(`${rt()}/ws`, { origin: target.origin() })).toBe(101);
        expect((await post(`${rt()}/reset`, {})).status).toBe(200);
      });
    });

    describe("the Open Reward Standard (src/server/ors.ts)", () => {
      /** The `task_id` of an SSE answer, and its result (`chunk`s and `end`). */
      const sse = async (res: Response) => {
        const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("event:"));
        const field = (e: string, k: string) => e.split("\n").find((l) => l.startsWith(`${k}:`))!.slice(k.length + 1).trim();
        const data = events.filter((e) => /^event: (chunk|end)/.test(e)).map((e) => e.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(6)).join("\n"));
        return { id: field(events[0]!, "data"), result: data.join("") ? JSON.parse(data.join("")) : undefined };
      };
      const o = () => target.origin();

      it("plays a session made by split and index: the same example and reward as over HTTP", async () => {
        const sid = (await sse(await fetch(`${o()}/create_session`, { method: "POST" }))).id;
        expect(sid).toMatch(/^[A-Za-z0-9_-]+$/);
        const h = { "x-session-id": sid };
        // ORS's client names no environment here: the episode starts at the first call under /{env}.
        expect((await post(`${o()}/create`, { split: "train", index: 4 }, h)).body).toEqual({ sid });
        const prompt = (await get(`${o()}/reverse-text/prompt`, h)).body as { text: string; detail: { role: string } }[];
        expect(prompt.map((b) => b.detail.role)).toEqual(["system", "user"]);
        const task = (await post(`${o()}/reverse-text/task`, { split: "train", index: 4 })).body.task;
        const answer = `<reversed_text>${[...prompt.at(-1)!.text].reverse().join("").slice(2)}</reversed_text>`;
        const call = await fetch(`${o()}/reverse-text/call`, { method: "POST", headers: { ...h, "content-type": "application/json" }, body: JSON.stringify({ name: "submit", input: { content: answer } }) });
        expect(call.headers.get("content-type")).toContain("text/event-stream");
        const { result } = await sse(call);
        expect(result.ok).toBe(true);
        expect(result.output.finished).toBe(true);
        const reset = await post(`${rt()}/reset`, { example: task.example });
        expect(lastUser(reset.body.observation.messages)).toBe(prompt.at(-1)!.text);
        const step = await post(`${rt()}/step`, { episode_id: reset.body.episode_id, action: { content: answer } });
        expect(result.output.reward).toBe(step.body.reward);
        expect(step.body.reward).toBeLessThan(1);
        expect((await post(`${o()}/ping`, undefined, h)).body).toEqual({ status: "ok" });
        expect((await post(`${o()}/delete`, undefined, h)).body).toEqual({ sid });
        expect((await post(`${o()}/ping`, undefined, h)).status).toBe(404);
        expect((await get(`${rt()}/state?episode_id=${sid}`)).status).toBe(404);
      });

      it("serves the catalog and refuses what it does not have", async () => {
        expect((await get(`${o()}/list_environments`)).body).toContain("alphabet-sort");
        expect((await get(`${o()}/alphabet-sort/tools`)).body.tools.map((t: { name: string }) => t.name)).toEqual(["submit"]);
        expect((await post(`${o()}/reverse-text/num_tasks`, { split: "train" })).body.num_tasks).toBeGreaterThan(0);
        expect((await post(`${o()}/reverse-text/task`, { split: "nope", index: 0 })).status).toBe(400);
        expect((await get(`${o()}/nope/tools`)).status).toBe(404);
        expect((await get(`${o()}/reverse-text/prompt`, { "x-session-id": "never-made" })).status).toBe(404);
      });
    });

  });
}
