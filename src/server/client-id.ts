/**
 * Who a client is, for its fair share of the server's memory budget and episodes (memory.ts,
 * episode-store.ts) and of the work it may have waiting: the token it presents when several are
 * configured (ENVWORKER_TOKEN=a,b: each its own client), else the address it connects from.
 * Clients behind one address (a NAT, one machine's trainers) share one share; an attacker with
 * many addresses has as many shares.
 */
import type { Context } from "hono";
import { configuredTokens, tokenOf } from "./auth.ts";

export type ClientOf = (c: Context) => string;

/** `address`: the platform's remote address of a request (Node: its socket's). */
export function clientIdentity(tokenSetting: string | undefined, address: (c: Context) => string | undefined): ClientOf {
  const tokens = configuredTokens(tokenSetting);
  return (c) => {
    // Past the token check, so the token presented is one of them.
    if (tokens.length > 1) {
      const i = tokens.indexOf(tokenOf(c) ?? "");
      if (i >= 0) return `token ${i + 1}`;
    }
    return `address ${address(c) ?? "unknown"}`;
  };
}

/** The remote address of a request on @hono/node-server (and of a WebSocket upgrade through @hono/node-ws). */
export function nodeAddress(c: Context): string | undefined {
  return (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress;
}
