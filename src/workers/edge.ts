/**
 * Who a Worker's client is, and which Host names are its own.
 *
 * Cloudflare's edge sets `CF-Connecting-IP` itself (a client's own value is replaced), so there
 * it is the client's address. Anywhere else it is whatever the client sent: Miniflare, under
 * `wrangler dev`, keeps a client's `CF-Connecting-IP` and fills it in only when absent, and takes
 * `request.cf` whole from a client's `MF-CF-Blob` header (measured: both reach the Worker as sent),
 * so nothing in a request proves it came through the edge. The decision is the deployment's:
 * trusted in a bundle `wrangler deploy` built (it replaces `process.env.NODE_ENV` with
 * "production" there, "development" under `wrangler dev`), or as ENVWORKER_CF_CONNECTING_IP says;
 * and even then never for a request the edge could not have delivered: one without `request.cf`
 * (plain workerd behind another front), with a Miniflare `MF-CF-Blob`, or addressed to a loopback
 * name or a bare IP address (the edge routes only by a DNS name). Untrusted, the client is its
 * token when several are configured, else one client for all.
 */
import type { Context } from "hono";
import { hostnameOf, isLoopbackHostHeader } from "../server/browser-guards.ts";

/** The bundler's `process.env.NODE_ENV` (wrangler replaces the expression); undefined unbundled. */
declare const process: { env: { NODE_ENV?: string } };

function builtForDeploy(): boolean {
  try {
    return process.env.NODE_ENV === "production";
  } catch {
    return false; // no `process` (workerd without nodejs_compat, not bundled by wrangler)
  }
}

/** Whether the bare host name is an IPv4 or bracketed IPv6 address. */
function isIpLiteral(hostname: string): boolean {
  return hostname.startsWith("[") || /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname);
}

/**
 * The address function for clientIdentity (client-id.ts): the request's `CF-Connecting-IP` where
 * it can have come from the edge, else undefined ("unknown": one client, or its token).
 */
export function edgeAddress(setting: "trust" | "ignore" | undefined): (c: Context) => string | undefined {
  const trusted = setting === undefined ? builtForDeploy() : setting === "trust";
  return (c) => {
    if (!trusted) return undefined;
    const cf = (c.req.raw as { cf?: unknown }).cf;
    if (typeof cf !== "object" || cf === null || c.req.header("mf-cf-blob") !== undefined) return undefined;
    const host = c.req.header("host") ?? new URL(c.req.url).host;
    const name = hostnameOf(host);
    if (name === undefined || isLoopbackHostHeader(host) || isIpLiteral(name)) return undefined;
    return c.req.header("cf-connecting-ip");
  };
}

/**
 * A Worker's own names wherever it runs: `*.workers.dev` resolves only to Cloudflare, so no page
 * can rebind it to a local server. Routes and custom domains are the operator's to list
 * (ENVWORKER_ALLOWED_HOSTS): a Worker cannot see them.
 */
export function isWorkersDevHost(hostname: string): boolean {
  return hostname.endsWith(".workers.dev");
}
