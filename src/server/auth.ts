/**
 * Bearer-token access control. When a token is configured every route but `GET /health` (and
 * `HEAD /health`: load balancers probe with HEAD) needs it. HEAD follows the rules of GET
 * everywhere: Hono answers a HEAD with the GET route, body dropped. Clients that cannot set headers (OpenEnv's WebSocket client sends none) put it in the
 * path instead: base URL `http://host/t/{token}/envs/{name}`, which OpenEnv turns into
 * `ws://host/t/{token}/envs/{name}/ws` unchanged; `?token=` works too.
 *
 * Several tokens, comma-separated (`ENVWORKER_TOKEN=a,b`), give each client one of its own: any of
 * them is let in, and each is a client of its own for its share of the memory budget (clientOf).
 */
import type { Context, MiddlewareHandler } from "hono";
import { ApiError } from "../env/errors.ts";

const encoder = new TextEncoder();

/**
 * Constant-time comparison that works on every platform: comparing SHA-256 digests makes the
 * work independent of where (or whether) the strings differ, and of their lengths.
 */
export async function tokensEqual(given: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([
    crypto.subtle.digest("SHA-256", encoder.encode(given)),
    crypto.subtle.digest("SHA-256", encoder.encode(expected)),
  ]);
  const x = new Uint8Array(a);
  const y = new Uint8Array(b);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}

/** The tokens a setting names: comma-separated, blanks around them ignored. */
export function configuredTokens(setting: string | undefined): string[] {
  return (setting ?? "").split(",").map((t) => t.trim()).filter((t) => t !== "");
}

/** The token a request presents (header, path or query), if any. */
export function tokenOf(c: Context): string | undefined {
  // X-API-Key: what the Open Reward Standard's clients send (ors.ts).
  return presentedToken(c.req.header("authorization"), c.req.param("token"), c.req.query("token")) ?? c.req.header("x-api-key")?.trim();
}

function presentedToken(authorization: string | undefined, pathToken: string | undefined, queryToken: string | undefined) {
  if (authorization) {
    const m = /^Bearer\s+(.+)$/i.exec(authorization);
    return m ? m[1]!.trim() : undefined;
  }
  return pathToken ?? queryToken;
}

export function requireToken(setting: string): MiddlewareHandler {
  const tokens = configuredTokens(setting);
  return async (c, next) => {
    if ((c.req.method === "GET" || c.req.method === "HEAD") && c.req.path === "/health") return next();
    const given = tokenOf(c);
    // Compared with every token, whichever matches: the time says nothing about which.
    const matches = given === undefined ? [] : await Promise.all(tokens.map((t) => tokensEqual(given, t)));
    if (!matches.includes(true)) {
      const err = new ApiError("UNAUTHORIZED", "missing or wrong token: send Authorization: Bearer <token> (or use the /t/{token}/ path prefix)");
      return c.json(err.toJSON(), 401, { "www-authenticate": 'Bearer realm="envworker"' });
    }
    return next();
  };
}
