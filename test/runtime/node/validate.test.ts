/** `envworker validate` reports each failing check, not just success. */
import { describe, expect, it } from "vitest";
import { validateBase } from "../../../src/cli/validate.ts";
import { exampleOf } from "../../../src/cli/schema-example.ts";

describe("validate", () => {
  it("names what a non-conforming server gets wrong", async () => {
    const fake = async (url: string): Promise<Response> => {
      const path = new URL(url).pathname.replace(/^\/envs\/x/, "");
      const bodies: Record<string, unknown> = {
        "/openapi.json": { info: { version: "2.0.0" }, paths: { "/reset": {}, "/step": {} } },
        "/health": { status: "degraded" },
        "/metadata": { name: "x" },
        "/schema": { action: {}, observation: {} },
        "/mcp": { jsonrpc: "2.0", id: null, error: { code: -32600, message: "bad" } },
        "/reset": { observation: { messages: [] }, reward: 0, done: false, episode_id: "e" },
      };
      return Response.json(bodies[path] ?? {}, { status: path in bodies ? 200 : 404 });
    };
    const checks = await validateBase("http://fake/envs/x", fake);
    expect(checks.map((c) => c.ok)).toEqual([false, false, false, false, true, false, false]);
    expect(checks[0]!.detail).toBe('info.version is "2.0.0"');
    expect(checks[3]!.detail).toBe("missing state");
    expect(checks[5]!.detail).toBe("missing /state");
  });
});

// Generous: it starts environment threads and sandbox hosts for four environments; at load ~20 (the
// suite beside four other jobs on 2 cores) that took more than the default 90 s.
describe("validate plays an episode", { timeout: 240_000 }, () => {
  it("passes a sound environment and names what a broken one gets wrong", async () => {
    const { buildNodeApp } = await import("../../../src/node/server.ts");
    const { importEnvironments } = await import("../../../src/env/source.ts");
    const here = (p: string) => new URL(p, import.meta.url).href;
    const envs = [...(await importEnvironments(here("../../fixtures/user-project/env.ts"))), ...(await importEnvironments(here("../../fixtures/user-project/broken.ts")))];
    const { app, sandboxes } = buildNodeApp(envs);
    const fetcher = async (url: string, init?: RequestInit) => app.request(url, init);
    const failing = async (name: string) => (await validateBase(`http://x/envs/${name}`, fetcher)).filter((c) => !c.ok);
    try {
      expect(await failing("echo-fixture")).toEqual([]);
      // The scripted turn is what validate plays: "yes" wins echo-fixture, and /score agrees.
      const won = await validateBase("http://x/envs/echo-fixture", fetcher, { action: "yes" });
      expect(won.filter((c) => !c.ok)).toEqual([]);

      const respond = await failing("throws-in-respond");
      expect(respond).toHaveLength(1);
      expect(respond[0]!.detail).toBe("step 1: HTTP 422 EXECUTION_ERROR: throws-in-respond: respond failed: respond exploded");

      const state = await failing("reward-needs-state");
      expect(state.map((c) => c.name)).toEqual(["POST /score of the played completion gives the episode's reward"]);
      expect(state[0]!.detail).toMatch(/^\/score gives 0, the episode gave 2/);

      const random = await failing("not-deterministic");
      expect(random.map((c) => c.name)).toEqual(["POST /reset with the same seed gives the same prompt"]);
    } finally {
      await Promise.all(sandboxes.map((s) => s.dispose()));
    }
  });

  it("reports a reward that is not finite and a reward function that throws", async () => {
    const fake = async (url: string, init?: RequestInit): Promise<Response> => {
      const path = new URL(url).pathname.replace(/^\/envs\/x/, "");
      const ok: Record<string, unknown> = {
        "/openapi.json": { info: { version: "1.0.0" }, paths: { "/reset": {}, "/step": {}, "/state": {} } },
        "/health": { status: "healthy" },
        "/metadata": { name: "x", description: "d" },
        "/schema": { action: {}, observation: {}, state: {} },
        "/mcp": { jsonrpc: "2.0", id: null, result: {} },
        "/reset": { observation: { messages: [{ role: "user", content: "hi" }] }, reward: null, done: false, episode_id: "e" },
        "/step": { observation: { messages: [], metrics: { a: null }, info: { reward_errors: { b: "Error: no" } } }, reward: null, done: true, episode_id: "e" },
        "/close": {},
      };
      void init;
      return Response.json(ok[path] ?? {}, { status: path in ok ? 200 : 404 });
    };
    const checks = await validateBase("http://fake/envs/x", fake);
    const episode = checks.find((c) => c.name.startsWith("an episode played"))!;
    expect(episode.ok).toBe(false);
    expect(episode.detail).toBe("reward is null, not a finite number; metric a is null; reward function b failed: Error: no");
    // This fake has no /state: reported against the /score check, not lost.
    expect(checks.at(-1)).toMatchObject({ ok: false, detail: "GET /state: HTTP 404 {}" });
  });
});

describe("validate calls each tool", { timeout: 240_000 }, () => {
  it("with arguments from its schema, and fails an environment whose tool errors", async () => {
    const { buildNodeApp } = await import("../../../src/node/server.ts");
    const { importEnvironments } = await import("../../../src/env/source.ts");
    const { environments } = await import("../../../envs/index.ts");
    const tools = await importEnvironments(new URL("../../fixtures/tool-envs.ts", import.meta.url).href);
    const { app, sandboxes } = buildNodeApp([...tools, ...environments.filter((e) => e.name === "math-tools-python")]);
    const fetcher = async (url: string, init?: RequestInit) => app.request(url, init);
    try {
      const works = await validateBase("http://x/envs/tool-works", fetcher);
      expect(works.filter((c) => !c.ok)).toEqual([]);
      expect(works.map((c) => c.name)).toContain('tool square answers a call with arguments from its schema ({"n":2})');

      const fails = (await validateBase("http://x/envs/tool-fails", fetcher)).filter((c) => !c.ok);
      expect(fails).toEqual([{ name: 'tool lookup answers a call with arguments from its schema ({"word":"1"})', ok: false, detail: "the tool failed: Error: the dictionary service is down" }]);

      // The shipped python tool runs in the Python sandbox of the in-process server.
      const python = await validateBase("http://x/envs/math-tools-python", fetcher);
      expect(python.filter((c) => !c.ok)).toEqual([]);
      expect(python.map((c) => c.name)).toContain('tool python answers a call with arguments from its schema ({"code":"1"})');
    } finally {
      await Promise.all(sandboxes.map((s) => s.dispose()));
    }
  });

  it("builds arguments from defaults, enums, bounds, nullable and nested objects", () => {
    expect(
      exampleOf({
        type: "object",
        properties: {
          a: { type: "string", minLength: 3 },
          b: { type: "integer", minimum: 5 },
          c: { enum: ["x", "y"] },
          d: { anyOf: [{ type: "null" }, { type: "boolean" }] },
          e: { type: "object", properties: { f: { type: "number", exclusiveMaximum: 0 } }, required: ["f"] },
          g: { type: "array", items: { type: "string" }, minItems: 1 },
          h: { type: "string", default: "dflt" },
          optional: { type: "string" },
        },
        required: ["a", "b", "c", "d", "e", "g", "h"],
      }),
    ).toEqual({ a: "111", b: 5, c: "x", d: true, e: { f: -1 }, g: ["1"], h: "dflt" });
  });
});
