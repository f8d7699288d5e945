/**
 * The access matrix, generated rather than written: every route of the app (ENV_ROUTES, the
 * table the app itself answers 405 from, plus the two root routes) × its method, HEAD where GET is
 * served, and one wrong method × every way of presenting a token (none; bearer header, /t/{token}/
 * path and ?token= query, each wrong and right), plus the WebSocket upgrade in each form. A new
 * route in ENV_ROUTES is covered without touching this file.
 *
 * What must hold: without the right token every route but GET/HEAD /health is 401 UNAUTHORIZED
 * (with WWW-Authenticate); with it, the answer is exactly the one a server without a token gives
 * the same request (the token grants access and changes nothing else).
 */
import { describe, expect, it } from "vitest";
import { upgradeStatus } from "./helpers/ws-client.ts";
import { ENV_ROUTES } from "../src/server/app.ts";

export interface AccessTarget {
  /** A server of this platform without a token. */
  open: () => string;
  /** A server of this platform with ENVWORKER_TOKEN. */
  guarded: () => { origin: string; token: string };
}

const ENV = "reverse-text";

/** Every (method, path) the server serves, from the app's own table. */
export function routeRequests(): { method: string; path: string; served: boolean }[] {
  const out: { method: string; path: string; served: boolean }[] = [];
  const routes: [string, string][] = [
    ["/health", "GET"],
    ["/envs", "GET"],
    ...Object.entries(ENV_ROUTES).map(([r, m]): [string, string] => [`/envs/${ENV}/${r}`, m]),
  ];
  for (const [path, method] of routes) {
    out.push({ method, path, served: true });
    if (method === "GET") out.push({ method: "HEAD", path, served: true });
    out.push({ method: method === "GET" ? "POST" : "GET", path, served: false });
  }
  return out;
}

type Form = { name: string; right: boolean; url: (origin: string, path: string, token: string) => string; headers: (token: string) => Record<string, string> };

const WRONG = "not-the-token";

/** Ways to get the right token almost right. */
const NEAR_MISSES: [string, (token: string) => string][] = [
  ["its prefix", (t) => t.slice(0, -1)],
  ["its first character", (t) => t.slice(0, 1)],
  ["one character more", (t) => `${t}x`],
  ["itself twice", (t) => t + t],
  ["case changed", (t) => (t.toUpperCase() === t ? t.toLowerCase() : t.toUpperCase())],
  ["last character changed", (t) => t.slice(0, -1) + (t.endsWith("a") ? "b" : "a")],
  ["a NUL after it", (t) => `${t}\0`],
  ["its suffix", (t) => t.slice(1)],
];
export const FORMS: Form[] = [
  { name: "no token", right: false, url: (o, p) => o + p, headers: () => ({}) },
  { name: "wrong bearer", right: false, url: (o, p) => o + p, headers: () => ({ authorization: `Bearer ${WRONG}` }) },
  { name: "right token, other scheme", right: false, url: (o, p) => o + p, headers: (t) => ({ authorization: `Token ${t}` }) },
  { name: "right token after other text", right: false, url: (o, p) => o + p, headers: (t) => ({ authorization: `xBearer ${t}` }) },
  { name: "right bearer", right: true, url: (o, p) => o + p, headers: (t) => ({ authorization: `Bearer ${t}` }) },
  { name: "wrong /t/ path", right: false, url: (o, p) => `${o}/t/${WRONG}${p}`, headers: () => ({}) },
  { name: "right /t/ path", right: true, url: (o, p, t) => `${o}/t/${t}${p}`, headers: () => ({}) },
  { name: "wrong ?token=", right: false, url: (o, p) => `${o}${p}?token=${WRONG}`, headers: () => ({}) },
  { name: "right ?token=", right: true, url: (o, p, t) => `${o}${p}?token=${t}`, headers: () => ({}) },
  // Near misses of the right token, in each form: a check that compared only a prefix, ignored
  // case or trimmed what it was given would let these in.
  ...NEAR_MISSES.flatMap(([miss, change]): Form[] => [
    // (A NUL cannot be sent in a header.)
    ...(change("t").includes("\0") ? [] : [{ name: `bearer: ${miss}`, right: false, url: (o: string, p: string) => o + p, headers: (t: string) => ({ authorization: `Bearer ${change(t)}` }) }]),
    { name: `/t/ path: ${miss}`, right: false, url: (o, p, t) => `${o}/t/${encodeURIComponent(change(t))}${p}`, headers: () => ({}) },
    { name: `?token=: ${miss}`, right: false, url: (o, p, t) => `${o}${p}?token=${encodeURIComponent(change(t))}`, headers: () => ({}) },
  ]),
];

async function send(method: string, url: string, headers: Record<string, string>) {
  const withBody = method !== "GET" && method !== "HEAD";
  const res = await fetch(url, { method, headers: withBody ? { "content-type": "application/json", ...headers } : headers, ...(withBody ? { body: "{}" } : {}) });
  const text = await res.text();
  let error: { code?: string; message?: string } | undefined;
  try {
    error = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
  } catch {
    error = undefined;
  }
  return { status: res.status, code: error?.code, message: error?.message, wwwAuthenticate: res.headers.get("www-authenticate"), bytes: text.length };
}

export function routeAccessSuite(platform: string, target: AccessTarget): void {
  describe(`route access matrix (${platform})`, () => {
    for (const { method, path, served } of routeRequests()) {
      it(`${method} ${path}: 401 without the right token in every form, the open server's answer with it`, async () => {
        const { origin, token } = target.guarded();
        const expected = await send(method, target.open() + path, {});
        if (!served && path.startsWith("/envs/")) expect(expected.status).toBe(405);
        for (const form of FORMS) {
          const got = await send(method, form.url(origin, path, token), form.headers(token));
          const exempt = path === "/health" && served && !form.name.includes("/t/");
          const label = `${method} ${path} with ${form.name}`;
          if (form.right || exempt) {
            expect(got.status, label).toBe(expected.status);
            expect(got.code, label).toBe(expected.code);
          } else {
            expect(got.status, label).toBe(401);
            expect(got.wwwAuthenticate, label).toMatch(/^Bearer /);
            if (method !== "HEAD") {
              expect(got.code, label).toBe("UNAUTHORIZED");
              expect(got.message, label).toContain("missing or wrong token: send Authorization: Bearer <token>");
            }
            else expect(got.bytes, label).toBe(0);
          }
        }
      });
    }

    it("upgrades a WebSocket only with the right token, in every form", async () => {
      const { origin, token } = target.guarded();
      const path = `/envs/${ENV}/ws`;
      expect(await upgradeStatus(target.open() + path, {})).toBe(101);
      for (const form of FORMS) {
        expect(await upgradeStatus(form.url(origin, path, token), form.headers(token)), form.name).toBe(form.right ? 101 : 401);
      }
    });
  });
}
