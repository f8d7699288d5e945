/** Small JSON-over-HTTP helpers for the protocol tests. */
export interface JsonResponse {
  status: number;
  body: any;
  headers: Headers;
}

export async function request(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] ??= "application/json";
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

export const get = (url: string, headers?: Record<string, string>) => request("GET", url, undefined, headers);
export const post = (url: string, body?: unknown, headers?: Record<string, string>) => request("POST", url, body, headers);

/**
 * A request from another loopback address (127.0.0.2, …): another client to the server, which tells
 * clients apart by address (src/server/client-id.ts). A body is sent as JSON (application/json).
 */
export async function requestFrom(localAddress: string, method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Record<string, string | string[] | undefined> }> {
  const { request: httpRequest } = await import("node:http");
  const text = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  const sent: Record<string, string> = { ...(text === undefined ? {} : { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) }), ...headers };
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, localAddress, agent: false, headers: sent }, (res) => {
      let got = "";
      res.on("data", (d: Buffer) => (got += d.toString()));
      res.on("end", () => {
        let parsed: unknown;
        try {
          parsed = got ? JSON.parse(got) : undefined;
        } catch {
          parsed = got;
        }
        resolve({ status: res.statusCode!, body: parsed, headers: res.headers });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(text);
  });
}

/** POST JSON from another loopback address (requestFrom). */
export async function postFrom(localAddress: string, url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const { status, body: answer } = await requestFrom(localAddress, "POST", url, body, headers);
  return { status, body: answer };
}
