/**
 * A judge model for tests: an OpenAI-compatible `POST /v1/chat/completions` on node:http, no
 * dependency. By default it grades like BrowseComp's grader would: it finds `[response]:` and
 * `[correct_answer]:` in the prompt and answers `correct: yes` when the response's "Exact Answer:"
 * line matches the correct answer (case and punctuation aside). Tests can make it fail, hang,
 * answer slowly or say something else, and read every request it got.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface JudgeCall {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: { model?: string; messages?: { role: string; content: string }[]; temperature?: number; max_tokens?: number } & Record<string, unknown>;
}

export interface MockJudge {
  /** Base URL for ENVWORKER_JUDGE_URL (ends with /v1). */
  url: string;
  calls: JudgeCall[];
  /** Requests being answered now, and the most there ever were at once. */
  active: number;
  maxActive: number;
  /** The next `n` requests fail with this HTTP status (default 500). */
  failNext(n: number, status?: number): void;
  /** Every request waits this long before its answer (0: none). */
  delayMs: number;
  /** Requests are held open, never answered (until `hang` is false again or the server closes). */
  hang: boolean;
  /** Replace the grader: the answer text for a request. */
  answer: ((call: JudgeCall) => string) | undefined;
  close(): Promise<void>;
}

function norm(s: string): string {
  return s.toLowerCase().replace(/^the\s+/, "").replace(/[^\p{L}\p{N}.]+/gu, " ").replace(/\.$/, "").trim();
}

/** BrowseComp-style grading of the grader prompt (see envs/open-qa). */
export function gradeLikeBrowseComp(prompt: string): string {
  const response = /\[response\]:\s*([\s\S]*?)\n\nYour judgement/.exec(prompt)?.[1] ?? "";
  const correct = /\[correct_answer\]:\s*(.*)/.exec(prompt)?.[1]?.trim() ?? "";
  const extracted = [...response.matchAll(/^\W*exact answer\W*:\s*(.+)$/gim)].pop()?.[1]?.trim();
  const ok = extracted !== undefined && norm(extracted) === norm(correct);
  return [
    `extracted_final_answer: ${extracted ?? "None"}`,
    `reasoning: the extracted answer ${ok ? "matches" : "does not match"} the correct answer ${JSON.stringify(correct)}.`,
    `correct: ${ok ? "yes" : "no"}`,
    "confidence: 100",
  ].join("\n\n");
}

export async function startMockJudge(): Promise<MockJudge> {
  let failures = 0;
  let failStatus = 500;
  const held = new Set<() => void>();
  const judge: MockJudge = {
    url: "",
    calls: [],
    active: 0,
    maxActive: 0,
    delayMs: 0,
    hang: false,
    answer: undefined,
    failNext(n, status = 500) {
      failures = n;
      failStatus = status;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const release of held) release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      let body: JudgeCall["body"] = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      } catch {
        /* recorded as {} */
      }
      const call: JudgeCall = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body };
      judge.calls.push(call);
      judge.active++;
      judge.maxActive = Math.max(judge.maxActive, judge.active);
      res.on("close", () => judge.active--);
      if (judge.hang) {
        await new Promise<void>((release) => {
          held.add(release);
          res.on("close", release);
        });
        return;
      }
      if (judge.delayMs > 0) await new Promise((r) => setTimeout(r, judge.delayMs));
      if (res.destroyed) return;
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found" } }));
        return;
      }
      if (failures > 0) {
        failures--;
        res.writeHead(failStatus, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `mock judge failure ${failStatus}` } }));
        return;
      }
      const prompt = (body.messages ?? []).map((m) => m.content).join("\n");
      const text = judge.answer ? judge.answer(call) : gradeLikeBrowseComp(prompt);
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          id: `chatcmpl-${judge.calls.length}`,
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: body.model ?? "mock-judge",
          choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: text } }],
          usage: { prompt_tokens: Math.ceil(prompt.length / 4), completion_tokens: Math.ceil(text.length / 4), total_tokens: Math.ceil((prompt.length + text.length) / 4) },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  judge.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return judge;
}

/** Server settings naming the mock (fast retries and timeouts for tests). */
export function judgeEnv(judge: MockJudge, more: Record<string, string> = {}): Record<string, string> {
  return { ENVWORKER_JUDGE_URL: judge.url, ENVWORKER_JUDGE_MODEL: "mock-judge", ENVWORKER_JUDGE_API_KEY: "sk-operator", ...more };
}
