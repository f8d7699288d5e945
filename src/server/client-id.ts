/**
 * Who a client is: the owner of the episodes it makes (only it can play, read, close or attach to
 * them: episode-host.ts episodeKey), and the holder of a fair share of the server's memory budget
 * and episodes (memory.ts, episode-store.ts) and of the work it may have waiting, over HTTP and
 * WebSockets alike: the token it presents when several are configured (ENVWORKER_TOKEN=a,b: each
 * its own client), else the address it connects from.
 * Clients behind one address (a NAT, one machine's trainers) share one share; an attacker with
 * many addresses has as many shares (IPv6 addresses count by /64: addressGroup).
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
    return `address ${addressGroup(address(c))}`;
  };
}

/**
 * The address a client is known by: an IPv4 address as it is; an IPv6 address by its /64 prefix,
 * the block one host or one subscriber usually gets (so one machine cannot be many clients, each
 * with its own share and, with sandbox affinity, its own sandbox processes to start and evict).
 */
export function addressGroup(address: string | undefined): string {
  if (!address) return "unknown";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(":")) return address;
  const [head = "", tail] = address.split("%")[0]!.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined ? left : [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups.slice(0, 4).map((g) => (parseInt(g, 16) || 0).toString(16)).join(":")}::/64`;
}

/** The remote address of a request on @hono/node-server (and of a WebSocket upgrade through @hono/node-ws). */
export function nodeAddress(c: Context): string | undefined {
  return (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress;
}
