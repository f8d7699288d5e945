/**
 * Bearer-token access control. When a token is configured every route but `GET /health` (and
 * `HEAD /health`: load balancers probe with HEAD) needs it. HEAD follows the rules of GET
 * everywhere: Hono answers a HEAD with the GET route, body dropped. Clients that cannot set headers (OpenEnv's WebSocket client sends none) put it in the
 * path instead: base URL `http://host/t/{token}/envs/{name}`, which OpenEnv turns into
 * `ws://host/t/{token}/envs/{name}/ws` unchanged; `?token=` works too.
 */
import type { MiddlewareHandler } from "hono";
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

function presentedToken(authorization: string | undefined, pathToken: string | undefined, queryToken: string | undefined) {
  if (authorization) {
    const m = /^Bearer\s+(.+)$/i.exec(authorization);
    return m ? m[1]!.trim() : undefined;
  }
  return pathToken ?? queryToken;
}

export function requireToken(token: string): MiddlewareHandler {
  return async (c, next) => {
    if ((c.req.method === "GET" || c.req.method === "HEAD") && c.req.path === "/health") return next();
    const given = presentedToken(c.req.header("authorization"), c.req.param("token"), c.req.query("token"));
    if (given === undefined || !(await tokensEqual(given, token))) {
      const err = new ApiError("UNAUTHORIZED", "missing or wrong token: send Authorization: Bearer <token> (or use the /t/{token}/ path prefix)");
      return c.json(err.toJSON(), 401, { "www-authenticate": 'Bearer realm="envworker"' });
    }
    return next();
  };
}
