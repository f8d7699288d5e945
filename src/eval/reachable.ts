/**
 * Can the model server be reached at all? One TCP connection (no HTTP request, so the server sees
 * nothing it would log or bill): a wrong -b (nothing listening, a name that does not resolve) is
 * then one clear line at once, not a run whose every rollout retries five times before failing.
 */
import { connect } from "node:net";

/** Undefined when `url`'s host accepts a connection; else why not, in words. */
export function unreachable(url: string, timeoutMs = 10_000): Promise<string | undefined> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return Promise.resolve("not a URL");
  }
  const port = Number(u.port || (u.protocol === "https:" ? 443 : 80));
  const host = u.hostname.replace(/^\[|\]$/g, "");
  return new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (why: string | undefined) => {
      socket.destroy();
      done(why);
    };
    socket.setTimeout(timeoutMs, () => finish(`no answer from ${host}:${port} within ${timeoutMs / 1000} s`));
    socket.once("connect", () => finish(undefined));
    socket.once("error", (err: NodeJS.ErrnoException) => finish(connectionCause(err, host, port)));
  });
}

/** A connection failure in words: what it is, not only its code. */
export function connectionCause(err: NodeJS.ErrnoException, host: string, port: number | string): string {
  switch (err.code) {
    case "ECONNREFUSED":
      return `connection refused by ${host}:${port} (nothing listening there?)`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `${host} does not resolve (${err.code})`;
    case "ETIMEDOUT":
      return `connecting to ${host}:${port} timed out`;
    case "ECONNRESET":
      return `${host}:${port} closed the connection`;
    default:
      return err.message || String(err.code);
  }
}
