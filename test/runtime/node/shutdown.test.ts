/** Graceful shutdown: in-flight steps finish, new connections are refused, sockets hear 1001. */
import { describe, expect, it } from "vitest";
import { startServer } from "../../../src/node/server.ts";
import { post } from "../../helpers/http.ts";
import { OpenEnvWsClient } from "../../helpers/ws-client.ts";
import { slow } from "../../fixtures/test-envs.ts";

describe("graceful shutdown", () => {
  it("lets an in-flight step finish, then stops", async () => {
    const server = await startServer([slow], { port: 0 });
    const base = `${server.url}/envs/slow`;
    const reset = await post(`${base}/reset`, { args: { delay_ms: 400 } });
    const ws = await OpenEnvWsClient.connect(base);
    const inFlight = post(`${base}/step`, { episode_id: reset.body.episode_id, action: { content: "ok" } });
    await new Promise((r) => setTimeout(r, 100)); // the step is being scored now
    const closed = server.close();
    const step = await inFlight;
    expect(step.status).toBe(200);
    expect(step.body).toMatchObject({ done: true, reward: 1 });
    expect((await ws.closed).code).toBe(1001);
    await closed;
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  });
});
