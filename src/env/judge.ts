/**
 * Judged rewards, the author's side: `defineJudge` turns a prompt template and a parser into
 * `judge.ask(input)`, which a reward function awaits. The judge itself (its URL, model, key,
 * limits) belongs to the operator: the platform hands it to reward functions as a service
 * (`input.judge`, see src/server/judge-client.ts), never configured by a request, so a client
 * cannot aim the server at another address.
 *
 * Nor can a client use the operator's model for its own ends: a client writes the response the
 * judge reads (and in POST /score maybe the question and answer too), so the judge's reply is
 * never returned to it, only the parsed verdict and a short reason (`JudgeSummary`); and every
 * call counts against the client's budget of judge calls (ENVWORKER_JUDGE_CLIENT_CALLS_PER_MIN).
 * A judge that should grade only the environment's own questions looks them up on the server
 * (open-qa does, by the example's id) rather than reading them from the reward input.
 */
import type { Message } from "./messages.ts";

export interface JudgeMessage {
  role: "system" | "user";
  content: string;
}

/** One judge request: what is cached and sent (the model is the operator's, or the author's default). */
export interface JudgeRequest {
  messages: JudgeMessage[];
  /** Used only when the operator names no model (ENVWORKER_JUDGE_MODEL). */
  model?: string | undefined;
  temperature?: number | undefined;
  maxTokens?: number | undefined;
}

export interface JudgeReply {
  /** The judge's answer (its reasoning and verdict, as text). */
  text: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  /** Answered from the server's cache: no call was made. */
  cached: boolean;
  /** Wall-clock time of the call, retries included (0 for a cache hit). */
  ms: number;
  /** Calls made to the endpoint for this request (retries included; 0 for a cache hit). */
  attempts: number;
}

/** The operator's judge as a platform service. */
export interface JudgeService {
  ask(request: JudgeRequest, options?: { signal?: AbortSignal | undefined }): Promise<JudgeReply>;
  /** What the client may be shown of an answer `ask` gave (`defineJudge` reports it; the rubric keeps it). */
  note?(summary: JudgeSummary): void;
}

export type JudgeErrorCode =
  /** The server has no judge (ENVWORKER_JUDGE_URL unset). */
  | "JUDGE_UNCONFIGURED"
  /** No answer within the judge's timeout, every attempt. */
  | "JUDGE_TIMEOUT"
  /** The endpoint failed (HTTP error, network error, empty answer) on every attempt. */
  | "JUDGE_FAILED"
  /** The author's parse refused the judge's answer. */
  | "JUDGE_UNPARSEABLE"
  /** The call's caller gave up (its episode closed, its deadline passed). */
  | "JUDGE_CANCELLED"
  /** The request itself is refused (too large). */
  | "JUDGE_INVALID"
  /**
   * The client has used its judge calls for now (ENVWORKER_JUDGE_CLIENT_CALLS_PER_MIN). Not a
   * reward's error: the rubric refuses the whole request with 429 (rubric.ts).
   */
  | "JUDGE_BUDGET";

/** A judge failure: the reward that asked scores 0 and reports `CODE: message` (see rubric.ts). */
export class JudgeError extends Error {
  override readonly name = "JudgeError";
  constructor(
    readonly code: JudgeErrorCode,
    message: string,
    /** JUDGE_BUDGET: seconds until the client's budget is whole again. */
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

/** Characters of a judge's reason shown to the client at most. */
export const JUDGE_REASON_MAX_CHARS = 200;

/**
 * What a client is shown of one judge answer: the verdict when it is a boolean or a number, and
 * the author's short reason (at most JUDGE_REASON_MAX_CHARS). Never the reply itself.
 */
export interface JudgeSummary {
  verdict?: boolean | number;
  reason?: string;
}

/** What a template can name: `{question}`, `{answer}`, `{response}`, and any string field of `info` or of `vars`. */
export interface JudgeInput {
  prompt: Message[];
  completion: Message[];
  answer: string;
  info?: unknown;
  judge?: JudgeService | undefined;
}

export interface JudgeSpec<Verdict> {
  /**
   * The judge's user message. A string template: `{question}` (the prompt's last user message),
   * `{answer}` (the reference answer), `{response}` (the completion's last assistant text), and
   * any string field of `info` by its name, filled in one pass (text the model wrote is never
   * read as a placeholder). Or a function of the reward input.
   */
  prompt: string | ((input: JudgeInput, vars: Record<string, string>) => string);
  /** An optional system message, a template like `prompt`. */
  system?: string;
  /** The verdict from the judge's answer; throwing (or returning undefined) makes a JUDGE_UNPARSEABLE reward error. */
  parse: (reply: string) => Verdict;
  /**
   * A short reason the client is shown beside the verdict (clipped to JUDGE_REASON_MAX_CHARS),
   * e.g. the judge's `reasoning:` line. The judge's reply itself never leaves the server.
   */
  reason?: (reply: string) => string | undefined;
  /** The model when the operator names none (ENVWORKER_JUDGE_MODEL wins). */
  model?: string;
  temperature?: number;
  maxTokens?: number;
}

export interface Judge<Verdict> {
  /** Ask the operator's judge about one completion; resolves to the parsed verdict. */
  ask(input: JudgeInput, vars?: Record<string, string>): Promise<Verdict>;
  /** The request `ask` would send (for tests and previews). */
  request(input: JudgeInput, vars?: Record<string, string>): JudgeRequest;
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

/** The verdict if it is plain (a boolean or a finite number), and the author's reason, clipped. */
function summarize(verdict: unknown, reason: ((reply: string) => string | undefined) | undefined, reply: string): JudgeSummary {
  const summary: JudgeSummary = {};
  if (typeof verdict === "boolean" || (typeof verdict === "number" && Number.isFinite(verdict))) summary.verdict = verdict;
  let why: unknown;
  try {
    why = reason?.(reply);
  } catch {
    why = undefined;
  }
  if (typeof why === "string" && why !== "") summary.reason = clip(why, JUDGE_REASON_MAX_CHARS);
  return summary;
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Fill `{name}` placeholders from `vars` in one pass; unknown names stay as written. */
export function fillTemplate(template: string, vars: Readonly<Record<string, string>>): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(vars, name) ? vars[name]! : whole));
}

function lastText(messages: readonly Message[], role: Message["role"]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === role && typeof m.content === "string") return m.content;
  }
  return "";
}

/** The template's variables for one reward input. */
export function templateVars(input: JudgeInput, extra: Record<string, string> = {}): Record<string, string> {
  const vars: Record<string, string> = {};
  if (input.info && typeof input.info === "object" && !Array.isArray(input.info)) {
    for (const [k, v] of Object.entries(input.info)) if (typeof v === "string") vars[k] = v;
  }
  vars.question = lastText(input.prompt, "user");
  vars.answer = input.answer;
  vars.response = lastText(input.completion, "assistant");
  return Object.assign(vars, extra);
}

export function defineJudge<Verdict>(spec: JudgeSpec<Verdict>): Judge<Verdict> {
  const request = (input: JudgeInput, extra?: Record<string, string>): JudgeRequest => {
    const vars = templateVars(input, extra);
    const user = typeof spec.prompt === "function" ? spec.prompt(input, vars) : fillTemplate(spec.prompt, vars);
    const messages: JudgeMessage[] = [];
    if (spec.system !== undefined) messages.push({ role: "system", content: fillTemplate(spec.system, vars) });
    messages.push({ role: "user", content: user });
    return { messages, model: spec.model, temperature: spec.temperature, maxTokens: spec.maxTokens };
  };
  return {
    request,
    async ask(input, extra) {
      if (!input.judge) throw new JudgeError("JUDGE_UNCONFIGURED", "this server has no judge: its operator sets ENVWORKER_JUDGE_URL (and _MODEL, _API_KEY)");
      const reply = await input.judge.ask(request(input, extra));
      let verdict: Verdict;
      try {
        verdict = spec.parse(reply.text);
      } catch (err) {
        // Clipped: a parser's message may quote the reply, which is not the client's to read.
        throw new JudgeError("JUDGE_UNPARSEABLE", `the judge's answer could not be parsed: ${clip(err instanceof Error ? err.message : String(err), JUDGE_REASON_MAX_CHARS)}`);
      }
      if (verdict === undefined) throw new JudgeError("JUDGE_UNPARSEABLE", "the judge's answer could not be parsed");
      input.judge.note?.(summarize(verdict, spec.reason, reply.text));
      return verdict;
    },
  };
}

/**
 * The values of `label: value` lines, in order (`**Label:** value`, `- label: value` too), case
 * aside. Line by line: one regex over the whole text would retry from every line start, which is
 * quadratic in a text of blank lines.
 */
export function labelledValues(text: string, label: string): string[] {
  const escaped = label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const re = new RegExp(`^[^\\w]*${escaped}[^\\w]*:[\\s*]*(.*)$`, "i");
  const values: string[] = [];
  for (const line of text.split("\n")) {
    const m = re.exec(line);
    if (m) values.push(m[1]!.trim());
  }
  return values;
}

/**
 * A parser for judges that end with a labelled verdict (`correct: yes`), as BrowseComp's grader
 * does: true or false from the last `label: yes|no` line, throwing when there is none.
 */
export function yesNoVerdict(label = "correct"): (reply: string) => boolean {
  return (reply) => {
    const verdicts = labelledValues(reply, label).flatMap((v) => /^(yes|no)\b/i.exec(v)?.[1]?.toLowerCase() ?? []);
    const last = verdicts.at(-1);
    if (last === undefined) throw new Error(`no "${label}: yes|no" line in the judge's answer`);
    return last === "yes";
  };
}
