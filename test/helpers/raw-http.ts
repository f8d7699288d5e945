/**
 * HTTP/1.1 over a raw TCP socket, for what fetch cannot do deterministically: send a request
 * whose body the server refuses part-way, and still read the answer. fetch fails the whole
 * exchange (`fetch failed`, `write ECONNRESET`) when the server answers and closes while the
 * body is still being written; here writing stops as soon as the answer starts, and a write
 * error after that is irrelevant.
 */
import { connect } from "node:net";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawRequest {
  method: string;
  /** Path and query, e.g. `/envs/reverse-text/step`. */
  path: string;
  headers?: Record<string, string>;
  /**
   * Body pieces sent one after another (each waits for the previous one to be handed to the
   * kernel). Sending stops early once the server has started answering.
   */
  body?: readonly (string | Uint8Array)[];
  /** Send the pieces as HTTP chunks (`Transfer-Encoding: chunked`, no Content-Length). */
  chunked?: boolean;
  /** Finish the body (the terminating chunk); false leaves the request body open. Default true. */
  end?: boolean;
}

/**
 * The response at the front of `buf`, or undefined while more bytes are needed. `closed`: the
 * connection has ended, so a body without a length runs to here.
 */
function parseResponse(buf: Buffer, closed: boolean): RawResponse | undefined {
  const headEnd = buf.indexOf("\r\n\r\n");
  if (headEnd === -1) return undefined;
  const [statusLine, ...lines] = buf.subarray(0, headEnd).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = buf.subarray(headEnd + 4);
  if (headers["transfer-encoding"]?.toLowerCase().includes("chunked")) {
    const parts: Buffer[] = [];
    let at = 0;
    for (;;) {
      const lineEnd = rest.indexOf("\r\n", at);
      if (lineEnd === -1) return undefined;
      const size = parseInt(rest.subarray(at, lineEnd).toString("latin1"), 16);
      if (size === 0) break;
      if (rest.length < lineEnd + 2 + size + 2) return undefined;
      parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
    return { status, headers, body: Buffer.concat(parts).toString("utf8") };
  }
  const length = headers["content-length"] === undefined ? undefined : Number(headers["content-length"]);
  if (length === undefined) return closed ? { status, headers, body: rest.toString("utf8") } : undefined;
  if (rest.length < length) return undefined;
  return { status, headers, body: rest.subarray(0, length).toString("utf8") };
}

/** Send one request on a fresh connection and read the response (the connection is then closed). */
export function rawRequest(origin: string, req: RawRequest): Promise<RawResponse> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port) });
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      const closed = err !== undefined || socket.destroyed || socket.readableEnded;
      const res = parseResponse(received, closed);
      if (!res && !closed) return;
      settled = true;
      socket.destroy();
      if (res) resolve(res);
      else reject(err ?? new Error(`connection closed without a complete HTTP response (${received.length} bytes)`));
    };
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      finish();
    });
    socket.on("end", () => finish());
    socket.on("close", () => finish());
    // A write refused because the server already answered and closed: the answer decides.
    socket.on("error", (err) => finish(err));

    const write = (data: string | Uint8Array) =>
      new Promise<void>((res) => {
        if (socket.destroyed) return res();
        socket.write(data, () => res());
      });
    socket.once("connect", async () => {
      const headers: Record<string, string> = { host: url.host, connection: "close", ...req.headers };
      const pieces = (req.body ?? []).map((p) => (typeof p === "string" ? Buffer.from(p, "utf8") : Buffer.from(p)));
      if (req.chunked) headers["transfer-encoding"] = "chunked";
      else if (req.body !== undefined) headers["content-length"] = String(pieces.reduce((n, p) => n + p.length, 0));
      const head = `${req.method} ${req.path} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n`;
      await write(head);
      for (const piece of pieces) {
        if (received.length > 0 || settled) return; // the server has answered: stop sending
        await write(req.chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")]) : piece);
      }
      if (req.chunked && req.end !== false && received.length === 0) await write("0\r\n\r\n");
    });
  });
}
