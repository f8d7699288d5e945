/**
 * A minimal OpenEnv-style WebSocket client, written from OpenEnv's protocol description rather
 * than from our server: http(s) → ws(s) + "/ws", strictly one request in flight, `error` replies
 * surfaced as data so tests can assert on them.
 */
import WebSocket from "ws";

export interface WsReply {
  type: string;
  data: any;
}

export class OpenEnvWsClient {
  private readonly queue: WsReply[] = [];
  private waiter: ((m: WsReply) => void) | undefined;
  closed: Promise<{ code: number }>;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (raw) => {
      const msg = JSON.parse(String(raw)) as WsReply;
      const w = this.waiter;
      if (w) {
        this.waiter = undefined;
        w(msg);
      } else this.queue.push(msg);
    });
    this.closed = new Promise((resolve) => ws.on("close", (code) => resolve({ code })));
  }

  /**
   * `options.localAddress`: connect from another loopback address (another client); `options.query`:
   * added to the URL (`session_id=S`: OpenEnv 0.10's MCPToolClient attaching to its HTTP session).
   */
  static connect(baseUrl: string, headers?: Record<string, string>, options: { localAddress?: string; query?: string } = {}): Promise<OpenEnvWsClient> {
    const url = baseUrl.replace(/^http/, "ws") + "/ws" + (options.query ? `?${options.query}` : "");
    const ws = new WebSocket(url, { ...(headers ? { headers } : {}), ...(options.localAddress ? { localAddress: options.localAddress } : {}) });
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(new OpenEnvWsClient(ws)));
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
    });
  }

  /** Send a raw frame (tests use this for malformed input) and wait for the reply. */
  sendRaw(text: string, timeoutMs = 60_000): Promise<WsReply> {
    this.ws.send(text);
    return this.next(timeoutMs);
  }

  send(message: unknown, timeoutMs?: number): Promise<WsReply> {
    return this.sendRaw(JSON.stringify(message), timeoutMs);
  }

  next(timeoutMs = 60_000): Promise<WsReply> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no reply within timeout")), timeoutMs);
      this.waiter = (m) => {
        clearTimeout(timer);
        resolve(m);
      };
    });
  }

  reset(data: Record<string, unknown> = {}) {
    return this.send({ type: "reset", data });
  }

  step(action: Record<string, unknown>) {
    return this.send({ type: "step", data: action });
  }

  close(): void {
    this.ws.close();
  }
}

/** The status of a WebSocket upgrade: 101 when the socket opened (then closed), else the HTTP status the server answered. */
export function upgradeStatus(url: string, headers: Record<string, string> = {}, localAddress?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, "ws"), { headers, ...(localAddress ? { localAddress } : {}) });
    ws.once("open", () => {
      ws.close();
      resolve(101);
    });
    ws.once("unexpected-response", (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
    });
    ws.once("error", reject);
  });
}
