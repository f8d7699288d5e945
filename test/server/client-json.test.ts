/** JSON from clients: parsed, and refused past MAX_JSON_DEPTH levels of nesting (src/server/client-json.ts). */
import { describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { createApp } from "../../src/server/app.ts";
import { depthOver, MAX_JSON_DEPTH, NotJsonError, parseClientJson } from "../../src/server/client-json.ts";
import { inlineEngine } from "../../src/server/engine.ts";
import { StoreEpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";

const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels);

describe("parseClientJson", () => {
  it("takes exactly MAX_JSON_DEPTH levels and refuses one more, arrays and objects alike", () => {
    expect(MAX_JSON_DEPTH).toBe(100);
    expect(parseClientJson(nested(100))).toBeDefined();
    expect(() => parseClientJson(nested(101))).toThrow(expect.objectContaining({ code: "VALIDATION_ERROR", message: "JSON nested deeper than 100 levels of arrays and objects" }));
    const objects = (levels: number) => '{"a":'.repeat(levels - 1) + "{}" + "}".repeat(levels - 1);
    expect(parseClientJson(objects(100))).toBeDefined();
    expect(() => parseClientJson(objects(101))).toThrow(/nested deeper/);
    // Depth counts levels, not size: a wide, shallow value is fine.
    expect(parseClientJson(JSON.stringify({ a: Array.from({ length: 10_000 }, (_, i) => ({ i })) }))).toBeDefined();
  });

  it("text that is not JSON is a NotJsonError (each protocol answers it its own way)", () => {
    expect(() => parseClientJson("{")).toThrow(NotJsonError);
    expect(() => parseClientJson("{")).toThrow(expect.objectContaining({ name: "NotJsonError" }));
    expect(parseClientJson("7")).toBe(7);
    expect(parseClientJson("null")).toBe(null);
  });

  it("depthOver asks about any depth without recursing, and finds depth in any branch", () => {
    let deep: unknown[] = [];
    for (let i = 0; i < 1_000_000; i++) deep = [deep];
    expect(depthOver(deep, 100)).toBe(true);
    expect(depthOver([1, "x", null, [[2]], { a: { b: [] } }], 4)).toBe(false); // the deepest: root, {a}, {b}, []
    expect(depthOver([1, "x", null, [[2]], { a: { b: [] } }], 3)).toBe(true);
    expect(depthOver("scalar", 0)).toBe(false);
    expect(depthOver({}, 1)).toBe(false);
    expect(depthOver({}, 0)).toBe(true);
  });
});

describe("the app's answers to JSON nested too deep", () => {
  const app = createApp({ envs: environments, host: new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({})) });
  const post = async (path: string, body: string) => {
    const r = await app.request(path, { method: "POST", body, headers: { "content-type": "application/json" } });
    return { status: r.status, body: (await r.json()) as any };
  };
  const message = "JSON nested deeper than 100 levels of arrays and objects";

  it("a route's body: 400 VALIDATION_ERROR; MCP: JSON-RPC invalid request (-32600), not a parse error", async () => {
    expect(await post("/envs/reverse-text/reset", `{"args":{"a":${nested(100)}}}`)).toEqual({ status: 400, body: { error: { code: "VALIDATION_ERROR", message } } });
    expect(await post("/envs/math-tools/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"a":${nested(100)}}}`)).toEqual({
      status: 200,
      body: { jsonrpc: "2.0", id: null, error: { code: -32600, message } },
    });
    expect((await post("/envs/math-tools/mcp", "{")).body.error.code).toBe(-32700);
    expect((await post("/envs/reverse-text/reset", "{")).body.error.code).toBe("INVALID_JSON");
  });
});
