/**
 * What a Python environment's worker process may do: no network (unless the operator sets
 * ENVWORKER_PYTHON_NETWORK=1), no writes to its files, an empty environment (no ENVWORKER_TOKEN,
 * no PATH), a user of its own when the server runs as root. Asked of the worker itself through
 * reward functions (test/fixtures/python/probe_env.py) on live servers.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WORKER_PYTHON } from "../helpers/python-workers.ts";
import { spawnServe, type ServeProcess } from "../helpers/serve-process.ts";

const FIXTURE = "./test/fixtures/python/probe_env.py";
let confined: ServeProcess;
let networked: ServeProcess;

beforeAll(async () => {
  [confined, networked] = await Promise.all([
    spawnServe([FIXTURE, "--port", "0"], { ...WORKER_PYTHON, ENVWORKER_TOKEN: "probe-secret" }),
    spawnServe([FIXTURE, "--port", "0"], { ...WORKER_PYTHON, ENVWORKER_TOKEN: "probe-secret", ENVWORKER_PYTHON_NETWORK: "1" }),
  ]);
}, 180_000);
afterAll(async () => {
  await Promise.all([confined?.stop(), networked?.stop()]);
});

async function probe(server: ServeProcess): Promise<Record<string, number>> {
  const port = new URL(server.url).port;
  const res = await fetch(`${server.url}/envs/py-probe/score`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer probe-secret" },
    body: JSON.stringify({ items: [{ completion: "x", info: { port } }] }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { results: { metrics: Record<string, number> }[] }).results[0]!.metrics;
}

describe("a Python environment's worker is confined", () => {
  it("has no network, writes nothing, sees no environment variables, runs as its own user", async () => {
    const m = await probe(confined);
    expect(m.no_network).toBe(1);
    expect(m.read_only).toBe(1);
    expect(m.empty_environment).toBe(1);
    if (process.getuid?.() === 0) expect(m.own_user).toBe(1);
    expect(existsSync(resolve(import.meta.dirname, "../fixtures/python/written-by-the-worker.txt"))).toBe(false);
  }, 60_000);

  it("reaches the network when the operator allows it (ENVWORKER_PYTHON_NETWORK=1), and nothing else changes", async () => {
    const m = await probe(networked);
    expect(m.no_network).toBe(0);
    expect(m.read_only).toBe(1);
    expect(m.empty_environment).toBe(1);
  }, 60_000);
});
