/**
 * On workerd (the deployable bundle in Miniflare): who a Worker's client is, and which Host names
 * it answers (src/workers/edge.ts, src/server/browser-guards.ts).
 *
 * Miniflare passes a client's own `CF-Connecting-IP` and `MF-CF-Blob` (its `request.cf`) to the
 * Worker as sent, as `wrangler dev` does, so these requests can be shaped like the edge's or like
 * a forger's. A bundle built as `wrangler dev` builds it never takes a client's address from the
 * header (clients are their tokens); one built as `wrangler deploy` builds it does, except for
 * requests the edge cannot have delivered. Every bundle refuses a Host that is not its own
 * (DNS rebinding) with 403.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestFrom } from "../../helpers/http.ts";
import { buildWorkerBundle, startWorkerd, type WorkerdServer } from "../../helpers/workerd.ts";

/** The Host the edge would deliver: one of the Worker's own names. */
const EDGE_HOST = "envworker.someone.workers.dev";
const A_IP = "198.51.100.7";
const B_IP = "203.0.113.9";

let tmp: string;
/** Built as `wrangler dev` builds; two tokens (the way to keep clients apart there) and listed hosts. */
let dev: WorkerdServer;
/** The same bundle without tokens. */
let devOpen: WorkerdServer;
/** Built as `wrangler deploy` builds: the edge's `CF-Connecting-IP` is a client's address. */
let edge: WorkerdServer;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "envworker-identity-"));
  const [devBundle, deployBundle] = await Promise.all([
    buildWorkerBundle(join(tmp, "dev"), undefined, "development"),
    buildWorkerBundle(join(tmp, "deploy"), undefined, ""),
  ]);
  [dev, devOpen, edge] = await Promise.all([
    startWorkerd(devBundle, join(tmp, "do-dev"), { ENVWORKER_TOKEN: "tok-a,tok-b", ENVWORKER_ALLOWED_HOSTS: "envs.example.com,*.corp.example" }),
    startWorkerd(devBundle, join(tmp, "do-dev-open")),
    startWorkerd(deployBundle, join(tmp, "do-edge")),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.all([dev?.dispose(), devOpen?.dispose(), edge?.dispose()]);
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** A request to `server` as sent by a client that sets every header itself (Host included). */
function send(server: WorkerdServer, method: string, path: string, body: unknown, headers: Record<string, string>) {
  return requestFrom("127.0.0.1", method, `${server.url}${path}`, body, headers);
}

/** A client of the edge bundle, as the edge delivers it: its Host, a `request.cf` (Miniflare's), its address. */
const atEdge = (ip: string, extra: Record<string, string> = {}) => ({ host: EDGE_HOST, "cf-connecting-ip": ip, ...extra });

async function resetAs(server: WorkerdServer, headers: Record<string, string>): Promise<string> {
  const r = await send(server, "POST", "/envs/alphabet-sort/reset", { seed: 1 }, headers);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.episode_id as string;
}

const stateAs = (server: WorkerdServer, id: string, headers: Record<string, string>) => send(server, "GET", `/envs/alphabet-sort/state?episode_id=${id}`, undefined, headers);
const stepAs = (server: WorkerdServer, id: string, headers: Record<string, string>) => send(server, "POST", "/envs/alphabet-sort/step", { episode_id: id, action: { content: "x" } }, headers);

describe("a Worker built for deploy: the edge's CF-Connecting-IP is the client", () => {
  it("as the edge delivers them, two addresses are two clients: B gets 404 for A's episode", async () => {
    const id = await resetAs(edge, atEdge(A_IP));
    expect((await stateAs(edge, id, atEdge(B_IP))).status).toBe(404);
    expect((await stepAs(edge, id, atEdge(B_IP))).body.error.code).toBe("UNKNOWN_EPISODE");
    expect((await stateAs(edge, id, atEdge(A_IP))).status).toBe(200);
  });

  it("B claiming A's address in a request the edge cannot have delivered reaches nothing of A's", async () => {
    const id = await resetAs(edge, atEdge(A_IP));
    const forgeries: Record<string, Record<string, string>> = {
      "its own request.cf (Miniflare's MF-CF-Blob)": atEdge(A_IP, { "mf-cf-blob": JSON.stringify({ colo: "SJC", asn: 13335, country: "US" }) }),
      "a loopback Host (a local server)": { host: `127.0.0.1:${new URL(edge.url).port}`, "cf-connecting-ip": A_IP },
      "localhost": { host: "localhost", "cf-connecting-ip": A_IP },
    };
    for (const [how, headers] of Object.entries(forgeries)) {
      expect((await stateAs(edge, id, headers)).status, how).toBe(404);
      expect((await stepAs(edge, id, headers)).status, how).toBe(404);
    }
    // A itself still plays it.
    expect((await stepAs(edge, id, atEdge(A_IP))).status).toBe(200);
  });
});

describe("a Worker built as wrangler dev builds it: CF-Connecting-IP names no client", () => {
  const a = { authorization: "Bearer tok-a" };
  const b = { authorization: "Bearer tok-b" };

  it("B sending A's address (and the edge's Host) gets 404 for A's episode; A is its token whatever address it claims", async () => {
    const id = await resetAs(dev, { ...a, ...atEdge(A_IP) });
    expect((await stateAs(dev, id, { ...b, ...atEdge(A_IP) })).status).toBe(404);
    expect((await stepAs(dev, id, { ...b, ...atEdge(A_IP) })).status).toBe(404);
    expect((await stateAs(dev, id, { ...a, ...atEdge(B_IP) })).status).toBe(200);
  });

  it("without tokens the header makes no client of its own: every address claimed is the one local client", async () => {
    // Where the deploy bundle answers another address 404 (above), here it is the same client:
    // the address a request claims is not believed, so claiming A's gains nothing over claiming none.
    const id = await resetAs(devOpen, atEdge(A_IP));
    expect((await stateAs(devOpen, id, atEdge(B_IP))).status).toBe(200);
    expect((await stateAs(devOpen, id, { host: EDGE_HOST })).status).toBe(200);
  });
});

describe("Host: a Worker answers only its own names (DNS rebinding gets 403)", () => {
  const a = { authorization: "Bearer tok-a" };
  const routes = (id: string): [string, string, unknown][] => [
    ["POST", "/envs/alphabet-sort/reset", { seed: 2 }],
    ["POST", "/envs/alphabet-sort/step", { episode_id: id, action: { content: "x" } }],
    ["POST", "/envs/reverse-text/examples", { count: 1 }],
  ];

  it("a foreign Host gets 403 FORBIDDEN on reset, step and examples, on both bundles", async () => {
    for (const server of [dev, edge]) {
      const id = await resetAs(server, { ...a, host: EDGE_HOST });
      for (const host of ["evil.example", `evil.example:${new URL(server.url).port}`, "workers.dev.evil.example", "envs.example.com.evil.example", "corp.example", "10.0.0.5:8787"]) {
        for (const [method, path, body] of routes(id)) {
          const r = await send(server, method, path, body, { ...a, host });
          expect(r.status, `${host} ${path}`).toBe(403);
          expect(r.body.error.code).toBe("FORBIDDEN");
        }
      }
    }
  });

  it("loopback names, *.workers.dev and the hosts of ENVWORKER_ALLOWED_HOSTS are answered", async () => {
    const port = new URL(dev.url).port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, "[::1]", EDGE_HOST, "envs.example.com", "ENVS.example.com:443", "api.corp.example", "a.b.corp.example"]) {
      const id = await resetAs(dev, { ...a, host });
      for (const [method, path, body] of routes(id)) {
        const r = await send(dev, method, path, body, { ...a, host });
        expect(r.status, `${host} ${path} ${JSON.stringify(r.body)}`).toBe(200);
      }
    }
    // Without ENVWORKER_ALLOWED_HOSTS a listed name is foreign.
    expect((await send(edge, "POST", "/envs/alphabet-sort/reset", {}, { host: "envs.example.com" })).status).toBe(403);
  });
});
