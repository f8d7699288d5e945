/** ENVWORKER_TOKEN: every route but /health needs the bearer token; WebSockets can use the path. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { tokensEqual } from "../../src/server/auth.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { get, post } from "../helpers/http.ts";
import { reverseTextGold } from "../helpers/oracles.ts";
import { OpenEnvWsClient } from "../helpers/ws-client.ts";

const TOKEN = "s3cret-token-with-some-length";
let server: RunningServer;

beforeAll(async () => {
  server = await startServer(environments, { port: 0, token: TOKEN });
});
afterAll(() => server?.close());

describe("access control", () => {
  it("leaves /health open and closes everything else", async () => {
    expect((await get(`${server.url}/health`)).status).toBe(200);
    for (const res of [
      await get(`${server.url}/envs`),
      await get(`${server.url}/envs/reverse-text/metadata`),
      await post(`${server.url}/envs/reverse-text/reset`, {}),
      await get(`${server.url}/nope`),
    ]) {
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe("UNAUTHORIZED");
    }
    expect(await (await fetch(`${server.url}/envs`)).headers.get("www-authenticate")).toMatch(/^Bearer/);
  });

  it("accepts the right bearer token and refuses a wrong or malformed one", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await get(`${server.url}/envs`, auth)).status).toBe(200);
    // The scheme in any case, and any run of blanks after it.
    for (const header of [`bearer ${TOKEN}`, `Bearer   ${TOKEN}`, `Bearer\t${TOKEN}`]) {
      expect((await get(`${server.url}/envs`, { authorization: header })).status).toBe(200);
    }
    const reset = await post(`${server.url}/envs/reverse-text/reset`, { seed: 1 }, auth);
    expect(reset.status).toBe(200);
    for (const header of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, TOKEN, "Basic abc", "Bearer "]) {
      expect((await get(`${server.url}/envs`, { authorization: header })).status).toBe(401);
    }
  });

  it("takes the token in the path (/t/{token}/) and as ?token=", async () => {
    expect((await get(`${server.url}/t/${TOKEN}/envs`)).status).toBe(200);
    expect((await get(`${server.url}/t/wrong/envs`)).status).toBe(401);
    expect((await get(`${server.url}/envs?token=${TOKEN}`)).status).toBe(200);
    expect((await get(`${server.url}/envs?token=nope`)).status).toBe(401);
  });

  it("refuses near misses of the right token in the path and the query: prefix, one more character, other case, padded, doubled", async () => {
    const misses = [
      TOKEN.slice(0, -1),
      TOKEN.slice(0, 1),
      TOKEN.slice(1),
      `${TOKEN}x`,
      `${TOKEN}/`,
      TOKEN + TOKEN,
      TOKEN.toUpperCase(),
      TOKEN[0]!.toUpperCase() + TOKEN.slice(1),
      ` ${TOKEN}`,
      `${TOKEN} `,
      `${TOKEN}\0`,
      `${TOKEN}\n`,
    ];
    for (const miss of misses) {
      const enc = encodeURIComponent(miss);
      for (const url of [`${server.url}/t/${enc}/envs`, `${server.url}/envs?token=${enc}`, `${server.url}/t/${enc}/envs/reverse-text/ws`]) {
        const res = await get(url);
        expect(res.status, `${url}`).toBe(401);
        expect(res.body.error.code).toBe("UNAUTHORIZED");
      }
    }
    // The right token, percent-encoded, is still the right token; a second ?token= does not override the first.
    const encoded = [...TOKEN].map((c) => "%" + c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
    expect((await get(`${server.url}/t/${encoded}/envs`)).status).toBe(200);
    expect((await get(`${server.url}/envs?token=${encoded}`)).status).toBe(200);
    expect((await get(`${server.url}/envs?token=wrong&token=${TOKEN}`)).status).toBe(401);
    // A wrong bearer header is not rescued by a right token in the path or query.
    expect((await get(`${server.url}/t/${TOKEN}/envs`, { authorization: "Bearer wrong" })).status).toBe(401);
    expect((await get(`${server.url}/envs?token=${TOKEN}`, { authorization: `Bearer ${TOKEN.slice(0, -1)}` })).status).toBe(401);
  });

  it("lets OpenEnv's header-less WebSocket client in through the path, and nobody without it", async () => {
    await expect(OpenEnvWsClient.connect(`${server.url}/envs/reverse-text`)).rejects.toThrow(/401/);
    const ws = await OpenEnvWsClient.connect(`${server.url}/t/${TOKEN}/envs/reverse-text`);
    try {
      const r = await ws.reset({ seed: 2 });
      const s = await ws.step({ content: reverseTextGold(r.data.observation.messages) });
      expect(s.data.reward).toBe(1);
    } finally {
      ws.close();
    }
  });

  it("compares tokens without regard to where they differ", async () => {
    expect(await tokensEqual("abc", "abc")).toBe(true);
    expect(await tokensEqual("abc", "abd")).toBe(false);
    expect(await tokensEqual("", "abc")).toBe(false);
    expect(await tokensEqual("abc", "abcd")).toBe(false);
  });
});
