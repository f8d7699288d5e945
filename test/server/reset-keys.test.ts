/**
 * A reset with a key it does not know (`{"sede": 7}`, a typo of seed) is refused with a
 * VALIDATION_ERROR naming the key, on HTTP and on the WebSocket, instead of a random seed without
 * a word. The known keys still work, and so does an empty reset.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { post } from "../helpers/http.ts";
import { OpenEnvWsClient } from "../helpers/ws-client.ts";

const reverseText = environments.find((e) => e.name === "reverse-text")!;
let server: RunningServer;
const base = () => `${server.url}/envs/reverse-text`;

beforeAll(async () => {
  server = await startServer([reverseText], { port: 0 });
});
afterAll(() => server.close());

describe("reset refuses unknown top-level keys", () => {
  it("HTTP: 400 VALIDATION_ERROR naming the key and the keys a reset takes", async () => {
    const r = await post(`${base()}/reset`, { sede: 7 });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
    expect(r.body.error.message).toBe(
      'unknown reset key "sede": a reset takes seed, episode_id, index, split, args, example (the environment\'s own arguments go in "args")',
    );
    expect(r.body.error.details).toEqual([{ path: "", message: expect.stringContaining("sede") }]);
    const two = await post(`${base()}/reset`, { seed: 1, max_words: 3, difficulty: "hard" });
    expect(two.status).toBe(400);
    expect(two.body.error.message).toMatch(/^unknown reset keys "max_words", "difficulty": /);
  });

  it("HTTP: the known keys and an empty body still reset", async () => {
    expect((await post(`${base()}/reset`, {})).status).toBe(200);
    const a = await post(`${base()}/reset`, { seed: 7, episode_id: null, index: null, split: null, args: null });
    const b = await post(`${base()}/reset`, { seed: 7 });
    expect(a.status).toBe(200);
    expect(a.body.observation.messages).toEqual(b.body.observation.messages);
  });

  it("WebSocket: an error message naming the key; the session goes on", async () => {
    const ws = await OpenEnvWsClient.connect(base());
    try {
      const bad = await ws.send({ type: "reset", data: { sede: 7 } });
      expect(bad.type).toBe("error");
      expect(bad.data.code).toBe("VALIDATION_ERROR");
      expect(bad.data.message).toBe('unknown reset key "sede": a reset takes seed, episode_id, index, split, args (the environment\'s own arguments go in "args")');
      const ok = await ws.send({ type: "reset", data: { seed: 7 } });
      expect(ok.type).toBe("observation");
    } finally {
      ws.ws.close();
    }
  });
});
