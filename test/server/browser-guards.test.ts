/**
 * The browser guards in process (src/server/browser-guards.ts; the live attacks are in
 * test/hostile/hostile-clients.test.ts): which Host names are loopback ones, which listen addresses are,
 * how ENVWORKER_ALLOWED_ORIGINS is read, and what the app answers each kind of browser request.
 */
import { describe, expect, it } from "vitest";
import { environments } from "../../envs/index.ts";
import { createApp } from "../../src/server/app.ts";
import { allowedHosts, allowedOrigins, hostListed, isLoopbackHostHeader, isLoopbackListen } from "../../src/server/browser-guards.ts";
import { configFromEnv } from "../../src/server/config.ts";
import { inlineEngine } from "../../src/server/engine.ts";
import { StoreEpisodeHost } from "../../src/server/episode-host.ts";
import { MemoryEpisodeStore } from "../../src/server/episode-store.ts";
import { readmeSettings } from "../helpers/readme.ts";
import { mountWeb } from "../../src/web/mount.ts";

const reverseText = environments.filter((e) => e.name === "reverse-text");

describe("what is loopback", () => {
  it("Host headers: localhost, 127.x.y.z and [::1], with or without a port; nothing else", () => {
    for (const ok of ["localhost", "localhost:8000", "LOCALHOST:1", "localhost.:80", "127.0.0.1", "127.0.0.1:8000", "127.1.2.3:65535", "[::1]", "[::1]:8000"]) expect(isLoopbackHostHeader(ok), ok).toBe(true);
    for (const bad of ["evil.example", "evil.example:8000", "localhost.evil.example", "127.0.0.1.evil.example", "evil.localhost:8000x", "10.0.0.1:8000", "[::2]:8000", "::1", "127.0.0.1:", "", " ", "localhost:8000:1"]) expect(isLoopbackHostHeader(bad), bad).toBe(false);
  });

  it("listen addresses: 127.0.0.0/8, ::1 and localhost; 0.0.0.0 and others are not", () => {
    for (const ok of ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"]) expect(isLoopbackListen(ok), ok).toBe(true);
    for (const bad of ["0.0.0.0", "::", "10.1.2.3", "example.com"]) expect(isLoopbackListen(bad), bad).toBe(false);
  });
});

describe("ENVWORKER_ALLOWED_ORIGINS", () => {
  it("reads origins as browsers send them, refuses anything with a path, query or other scheme, and is in the README's settings", () => {
    expect(allowedOrigins(undefined)).toEqual([]);
    expect(allowedOrigins(" https://App.Example , http://localhost:5173/,http://x.example:80")).toEqual(["https://app.example", "http://localhost:5173", "http://x.example"]);
    for (const bad of ["app.example", "https://app.example/path", "https://app.example?x=1", "ftp://app.example", "https://user@app.example", "*"]) {
      expect(() => allowedOrigins(bad), bad).toThrow(/^ENVWORKER_ALLOWED_ORIGINS takes origins/);
    }
    expect(configFromEnv({ ENVWORKER_ALLOWED_ORIGINS: "https://a.example" }).allowedOrigins).toEqual(["https://a.example"]);
    expect(configFromEnv({}).allowedOrigins).toEqual([]);
    expect(readmeSettings().flatMap((r) => r.names)).toContain("ENVWORKER_ALLOWED_ORIGINS");
  });
});

describe("ENVWORKER_ALLOWED_HOSTS", () => {
  it("reads host names and *.suffix patterns, refuses schemes, ports, paths and bare wildcards; a pattern covers subdomains only", () => {
    expect(allowedHosts(undefined)).toEqual([]);
    expect(allowedHosts(" Envs.Example.com , *.corp.example,")).toEqual(["envs.example.com", "*.corp.example"]);
    for (const bad of ["https://envs.example", "envs.example:443", "envs.example/x", "*", "*.", "a..b", "-a.example", "a_b.example", "*.*.example"]) {
      expect(() => allowedHosts(bad), bad).toThrow(/^ENVWORKER_ALLOWED_HOSTS takes host names/);
    }
    const listed = allowedHosts("envs.example.com,*.corp.example");
    for (const ok of ["envs.example.com", "api.corp.example", "a.b.corp.example"]) expect(hostListed(listed, ok), ok).toBe(true);
    for (const bad of ["corp.example", "xcorp.example", "envs.example.com.evil.example", "evil-envs.example.com", "api.corp.example.evil"]) expect(hostListed(listed, bad), bad).toBe(false);
    expect(configFromEnv({ ENVWORKER_ALLOWED_HOSTS: "a.example" }).allowedHosts).toEqual(["a.example"]);
    expect(configFromEnv({}).allowedHosts).toEqual([]);
  });
});

describe("the app's answers", () => {
  const build = (opts: { loopbackOnly?: boolean; allowedOrigins?: string[]; allowedHosts?: string[]; ownHost?: (h: string) => boolean; token?: string } = {}) =>
    createApp({ envs: reverseText, host: new StoreEpisodeHost(new MemoryEpisodeStore(), inlineEngine({})), pages: mountWeb, ...opts });
  const reset = (app: ReturnType<typeof build>, headers: Record<string, string>, body = "{}") =>
    app.request("http://127.0.0.1:8000/envs/reverse-text/reset", { method: "POST", headers: { host: "127.0.0.1:8000", ...headers }, body });

  it("another origin: 403 FORBIDDEN before the token is asked for; its own origin and no origin are served", async () => {
    const app = build({ token: "t" });
    const evil = await reset(app, { origin: "https://evil.example", "content-type": "application/json" });
    expect(evil.status).toBe(403);
    expect(await evil.json()).toMatchObject({ error: { code: "FORBIDDEN", message: expect.stringContaining("https://evil.example") } });
    const auth = { authorization: "Bearer t", "content-type": "application/json" };
    expect((await reset(app, { ...auth, origin: "http://127.0.0.1:8000" })).status).toBe(200);
    // Behind a proxy that ends TLS: the page's https origin names the same host.
    expect((await reset(app, { ...auth, origin: "https://127.0.0.1:8000" })).status).toBe(200);
    expect((await reset(app, { ...auth, host: "envs.example", origin: "https://envs.example" })).status).toBe(200);
    expect((await reset(app, { ...auth, host: "envs.example:443", origin: "https://envs.example" })).status).toBe(200);
    expect((await reset(app, { ...auth, host: "envs.example", origin: "https://envs.example:8443" })).status).toBe(403);
    expect((await reset(app, auth)).status).toBe(200);
    expect((await reset(app, { "content-type": "application/json" })).status).toBe(401);
  });

  it("a listed origin gets CORS headers and its preflight answered (without a token); others' preflights are refused", async () => {
    const app = build({ allowedOrigins: ["https://app.example"], token: "t" });
    const pre = await app.request("http://127.0.0.1:8000/envs/reverse-text/reset", { method: "OPTIONS", headers: { host: "127.0.0.1:8000", origin: "https://app.example", "access-control-request-method": "POST" } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(pre.headers.get("access-control-allow-headers")).toBe("authorization, content-type");
    const ok = await reset(app, { origin: "https://app.example", authorization: "Bearer t", "content-type": "application/json" });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(ok.headers.get("vary")).toMatch(/origin/i);
    // The answer to a request without the token carries them too, so the page can read why.
    const refused = await reset(app, { origin: "https://app.example", "content-type": "application/json" });
    expect([refused.status, refused.headers.get("access-control-allow-origin")]).toEqual([401, "https://app.example"]);
    const other = await app.request("http://127.0.0.1:8000/envs/reverse-text/reset", { method: "OPTIONS", headers: { host: "127.0.0.1:8000", origin: "https://other.example" } });
    expect(other.status).toBe(403);
  });

  it("loopback only: a Host that is not a loopback name is 403 on every route, pages included; without it (0.0.0.0) any Host is served", async () => {
    const guarded = build({ loopbackOnly: true });
    for (const path of ["/envs", "/web", "/health", "/envs/reverse-text/metadata"]) {
      const res = await guarded.request(`http://evil.example${path}`, { headers: { host: "evil.example:8000" } });
      expect(res.status, path).toBe(403);
      expect(((await res.json()) as any).error.code).toBe("FORBIDDEN");
      expect((await guarded.request(`http://localhost${path}`, { headers: { host: "localhost:8000" } })).status, path).toBe(200);
    }
    // A request with no Host header at all (in process, HTTP/1.0) is not a browser's.
    expect((await guarded.request("/envs")).status).toBe(200);
    expect((await build().request("http://evil.example/envs", { headers: { host: "evil.example:8000" } })).status).toBe(200);
    // Behind a proxy that passes the public name on: the listed origin's host is served, pages and all.
    const proxied = build({ loopbackOnly: true, allowedOrigins: ["https://envs.example"] });
    expect((await proxied.request("https://envs.example/web", { headers: { host: "envs.example", origin: "https://envs.example" } })).status).toBe(200);
    expect((await proxied.request("https://envs.example/envs", { headers: { host: "envs.example:443" } })).status).toBe(200);
    expect((await proxied.request("http://evil.example/envs", { headers: { host: "evil.example" } })).status).toBe(403);
    expect((await proxied.request("http://envs.example:8000/envs", { headers: { host: "envs.example:8000" } })).status).toBe(403);
    // Listed hosts (any port) and the server's own names (a Worker's *.workers.dev) are served too.
    const listed = build({ loopbackOnly: true, allowedHosts: ["envs.example", "*.corp.example"], ownHost: (h) => h.endsWith(".workers.dev") });
    for (const host of ["envs.example", "envs.example:8443", "api.corp.example", "me.someone.workers.dev"]) expect((await listed.request("http://x/envs", { headers: { host } })).status, host).toBe(200);
    for (const host of ["corp.example", "workers.dev", "me.workers.dev.evil.example", "evil.example"]) expect((await listed.request("http://x/envs", { headers: { host } })).status, host).toBe(403);
  });

  it("JSON routes: 415 for any other content type (unread), and for a body with none; an empty body with none is {}", async () => {
    const app = build();
    for (const type of ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "text/json"]) {
      const res = await reset(app, { "content-type": type });
      expect(res.status, type).toBe(415);
      expect(res.headers.get("connection"), type).toBe("close");
      expect(await res.json()).toEqual({ error: { code: "UNSUPPORTED_MEDIA_TYPE", message: `this route takes a JSON body: send Content-Type: application/json, not ${JSON.stringify(type)}` } });
    }
    for (const type of ["application/json", "Application/JSON; charset=utf-8", "application/vnd.api+json"]) expect((await reset(app, { "content-type": type })).status, type).toBe(200);
    // No content type: a Blob body without a type is one a page can send without a preflight.
    const none = await app.request("http://127.0.0.1:8000/envs/reverse-text/reset", { method: "POST", headers: { host: "127.0.0.1:8000" }, body: new Uint8Array(new TextEncoder().encode("{}")) });
    expect(none.status).toBe(415);
    expect((await app.request("http://127.0.0.1:8000/envs/reverse-text/reset", { method: "POST" })).status).toBe(200);
    for (const route of ["step", "close", "score", "examples", "mcp"]) {
      const res = await app.request(`http://127.0.0.1:8000/envs/reverse-text/${route}`, { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" });
      expect(res.status, route).toBe(415);
    }
  });
});
