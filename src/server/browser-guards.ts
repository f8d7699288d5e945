/**
 * What keeps a web page from driving the server through its visitor's browser (a token-less
 * server on the visitor's own machine, most of all):
 *
 * - Origin: a browser names the page's origin on every request a page makes other than a plain
 *   GET (and on every WebSocket upgrade). A request whose Origin is neither the server's own (its
 *   Host) nor one the operator listed (ENVWORKER_ALLOWED_ORIGINS) is refused 403 `FORBIDDEN`.
 *   Clients that are not browsers (Python trainers, curl) send no Origin and are not affected.
 * - Host: a page on evil.example can make its own name resolve to 127.0.0.1 (DNS rebinding): its
 *   requests are then same-origin to it, Origin and all, but they carry `Host: evil.example`. A
 *   server listening on a loopback address answers only Host names that are loopback ones
 *   (localhost, 127.x.y.z, [::1], any port), those of the listed origins and hosts
 *   (ENVWORKER_ALLOWED_HOSTS: a proxy in front of it passing its public name on). A Worker does the
 *   same, its own names (`*.workers.dev`) added: workerd cannot tell where it listens, and
 *   `wrangler dev` on 127.0.0.1 is as reachable by a rebound name as a Node server.
 * - Content-Type: JSON routes take only `application/json` bodies (app.ts, 415), so a form post or
 *   a `text/plain` fetch (CORS "simple" requests, sent without asking first) is never parsed.
 *
 * A listed origin gets CORS headers (and its preflights are answered), so a page there can call
 * the server with `fetch`.
 */
import type { Context, MiddlewareHandler } from "hono";
import { ApiError } from "../env/errors.ts";

export interface BrowserGuardOptions {
  /** Origins besides the server's own that may call it (ENVWORKER_ALLOWED_ORIGINS, as parsed by allowedOrigins). */
  allowedOrigins?: readonly string[] | undefined;
  /**
   * Refuse Host names other than loopback ones, the listed origins' and hosts' (`allowedHosts`),
   * and the server's own (`ownHost`): a Node server listening on a loopback address, any Worker.
   */
  loopbackOnly?: boolean | undefined;
  /** Host names (or `*.suffix` patterns) answered besides (ENVWORKER_ALLOWED_HOSTS, as parsed by allowedHosts). */
  allowedHosts?: readonly string[] | undefined;
  /** Names that are the server's own wherever it runs (a Worker's `*.workers.dev`). */
  ownHost?: ((hostname: string) => boolean) | undefined;
}

/**
 * The host names a setting lists (comma-separated, e.g. `envs.example.com,*.corp.example`): a name,
 * or `*.` and a suffix its subdomains share; lower-cased, no port. Throws on anything else.
 */
export function allowedHosts(setting: string | undefined): string[] {
  const out: string[] = [];
  for (const raw of (setting ?? "").split(",").map((s) => s.trim().toLowerCase()).filter((s) => s !== "")) {
    const name = raw.startsWith("*.") ? raw.slice(2) : raw;
    if (!/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(name)) {
      throw new Error(`ENVWORKER_ALLOWED_HOSTS takes host names such as envs.example.com or *.example.com (no scheme, port or path), got ${JSON.stringify(raw)}`);
    }
    out.push(raw);
  }
  return out;
}

/** The host name of a Host header (lower-cased, no port, no trailing dot), or undefined when it is not one. */
export function hostnameOf(host: string): string | undefined {
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::\d{1,5})?$/i.exec(host.trim());
  return m ? m[1]!.toLowerCase().replace(/\.$/, "") : undefined;
}

/** Whether `hostname` is one `patterns` (allowedHosts) name: exactly, or under a `*.` suffix. */
export function hostListed(patterns: readonly string[], hostname: string): boolean {
  return patterns.some((p) => (p.startsWith("*.") ? hostname.endsWith(p.slice(1)) : hostname === p));
}

/**
 * The origins a setting lists (comma-separated, e.g. `https://a.example,http://localhost:5173`),
 * each as the browser sends it: scheme, host and a port other than the scheme's default, no path.
 * Throws on one that is not such an origin.
 */
export function allowedOrigins(setting: string | undefined): string[] {
  const out: string[] = [];
  for (const raw of (setting ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    let url: URL | undefined;
    try {
      url = new URL(raw);
    } catch {
      url = undefined;
    }
    const bare = url !== undefined && url.pathname === "/" && !/[?#]/.test(raw) && url.username === "" && url.password === "";
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || !bare) {
      throw new Error(`ENVWORKER_ALLOWED_ORIGINS takes origins such as https://app.example or http://localhost:5173 (scheme, host, port; no path), got ${JSON.stringify(raw)}`);
    }
    out.push(url.origin);
  }
  return out;
}

function defaultPort(protocol: string): string {
  return protocol === "https:" ? "443" : protocol === "http:" ? "80" : "";
}

/** Whether the address a server listens on is a loopback one (127.0.0.0/8, ::1, localhost). */
export function isLoopbackListen(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h) || /^::ffff:127\.\d+\.\d+\.\d+$/.test(h);
}

/** Whether a Host header names a loopback host (any port): what a DNS-rebound page cannot send. */
export function isLoopbackHostHeader(host: string): boolean {
  const name = hostnameOf(host);
  if (name === undefined) return false;
  return name === "localhost" || name === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/** Whether `origin` (an Origin header) is the origin the request was sent to (its Host header). */
function isOwnOrigin(origin: string, host: string | undefined): boolean {
  if (!host) return false;
  let o: URL;
  let h: URL;
  try {
    o = new URL(origin);
    h = new URL(`${o.protocol}//${host}`);
  } catch {
    return false;
  }
  if (o.protocol !== "http:" && o.protocol !== "https:") return false;
  // Behind a proxy that ends TLS the scheme differs; the host and port are what a page cannot fake.
  return o.hostname === h.hostname && (o.port || defaultPort(o.protocol)) === (h.port || defaultPort(o.protocol));
}

const CORS_METHODS = "GET, HEAD, POST";
const CORS_HEADERS = "authorization, content-type";

function refuse(c: Context, message: string): Response {
  return c.json(new ApiError("FORBIDDEN", message).toJSON(), 403);
}

export function browserGuards(opts: BrowserGuardOptions): MiddlewareHandler {
  const listed = new Set(opts.allowedOrigins ?? []);
  const hostAnswered = (host: string) => {
    if (isLoopbackHostHeader(host) || (opts.allowedOrigins ?? []).some((o) => isOwnOrigin(o, host))) return true;
    const name = hostnameOf(host);
    return name !== undefined && (hostListed(opts.allowedHosts ?? [], name) || (opts.ownHost?.(name) ?? false));
  };
  return async (c, next) => {
    const host = c.req.header("host");
    // A listed origin's own name is fine too: a proxy in front of a loopback server passes it on.
    if (opts.loopbackOnly && host !== undefined && !hostAnswered(host)) {
      return refuse(c, `Host ${JSON.stringify(host)} is not one of this server's names: it answers only localhost, 127.x.y.z, [::1]${opts.ownHost ? ", its own *.workers.dev names" : ""} and the hosts of ENVWORKER_ALLOWED_HOSTS and ENVWORKER_ALLOWED_ORIGINS (a page whose name was made to resolve here is refused)`);
    }
    const origin = c.req.header("origin");
    if (origin === undefined) return next();
    if (isOwnOrigin(origin, host)) return next();
    if (!listed.has(origin)) {
      return refuse(c, `requests from the origin ${JSON.stringify(origin)} are refused: only the server's own pages, and origins listed in ENVWORKER_ALLOWED_ORIGINS, may call it from a browser`);
    }
    // A listed origin: CORS, preflights answered here (they carry no token).
    if (c.req.method === "OPTIONS") {
      return c.body(null, 204, {
        "access-control-allow-origin": origin,
        "access-control-allow-methods": CORS_METHODS,
        "access-control-allow-headers": CORS_HEADERS,
        "access-control-max-age": "600",
        vary: "origin",
      });
    }
    await next();
    if (c.res.status === 101) return; // a WebSocket: no CORS there
    try {
      c.res.headers.set("access-control-allow-origin", origin);
    } catch {
      c.res = new Response(c.res.body, c.res); // immutable headers (a Durable Object's answer)
      c.res.headers.set("access-control-allow-origin", origin);
    }
    c.res.headers.append("vary", "origin");
  };
}
