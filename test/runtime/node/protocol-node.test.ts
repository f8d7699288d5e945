/** The conformance suite against the Node server, plus what only the Node store can show. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importEnvironments } from "../../../src/env/source.ts";
import { startServer, type RunningServer } from "../../../src/node/server.ts";
import { conformanceSuite } from "../../conformance.ts";
import { get, post } from "../../helpers/http.ts";
import { OpenEnvWsClient } from "../../helpers/ws-client.ts";

// Loaded by module, as `envworker serve` loads them: the server runs their code in its threads.
const environments = await importEnvironments(new URL("../../../envs/index.ts", import.meta.url).href);
const MAX_BODY = 64 * 1024;
const TOKEN = "conformance-token";
const OTHER_TOKEN = "second-client-secret";
let server: RunningServer;
let tokenServer: RunningServer;

beforeAll(async () => {
  server = await startServer(environments, { port: 0, maxBodyBytes: MAX_BODY });
  tokenServer = await startServer(environments, { port: 0, token: `${TOKEN},${OTHER_TOKEN}` });
});
afterAll(async () => {
  await server?.close();
  await tokenServer?.close();
});

conformanceSuite("node", { origin: () => server.url, maxBodyBytes: MAX_BODY, withToken: () => ({ origin: tokenServer.url, token: TOKEN, otherToken: OTHER_TOKEN }) });

describe("node sessions", () => {
  it("refuses episodes past capacity with 429 CAPACITY_REACHED, over HTTP and WebSocket", async () => {
    const small = await startServer(environments, { port: 0, maxEpisodes: 2, clientShare: 1 });
    try {
      const base = `${small.url}/envs/reverse-text`;
      const a = await post(`${base}/reset`, {});
      await post(`${base}/reset`, {});
      const full = await post(`${base}/reset`, {});
      expect(full.status).toBe(429);
      expect(full.body.error.code).toBe("CAPACITY_REACHED");
      expect(full.body.error.details).toEqual({ active_sessions: 2, max_sessions: 2 });

      const ws = await OpenEnvWsClient.connect(base);
      const refused = await ws.reset({});
      expect(refused.type).toBe("error");
      expect(refused.data).toMatchObject({ code: "CAPACITY_REACHED", active_sessions: 2, max_sessions: 2 });

      // Closing one frees a slot for the socket.
      await post(`${base}/close`, { episode_id: a.body.episode_id });
      const ok = await ws.reset({});
      expect(ok.type).toBe("observation");
      ws.close();
    } finally {
      await small.close();
    }
  });

  it("expires idle episodes", async () => {
    const quick = await startServer(environments, { port: 0, idleTimeoutMs: 150 });
    try {
      const base = `${quick.url}/envs/reverse-text`;
      const r = await post(`${base}/reset`, {});
      expect((await get(`${base}/state?episode_id=${r.body.episode_id}`)).status).toBe(200);
      await new Promise((res) => setTimeout(res, 400));
      const gone = await post(`${base}/step`, { episode_id: r.body.episode_id, action: { content: "late" } });
      expect(gone.status).toBe(404);
      expect(gone.body.error.code).toBe("UNKNOWN_EPISODE");
      expect(quick.store.size).toBe(0);
    } finally {
      await quick.close();
    }
  });

  it("frees a WebSocket's episode when the client disconnects", async () => {
    const before = server.store.size;
    const ws = await OpenEnvWsClient.connect(`${server.url}/envs/reverse-text`);
    await ws.reset({});
    expect(server.store.size).toBe(before + 1);
    ws.close();
    await ws.closed;
    for (let i = 0; i < 50 && server.store.size > before; i++) await new Promise((r) => setTimeout(r, 20));
    expect(server.store.size).toBe(before);
  });
});
