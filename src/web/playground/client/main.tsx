/** @jsxImportSource hono/jsx/dom */
/**
 * The playground in the browser: reset an episode, play the model's turns by hand (text and
 * tool calls), watch the reward, and see every request and reply as JSON. It talks to the
 * environment's HTTP routes only, so it works the same on Node and on Workers.
 */
import { render, useEffect, useState } from "hono/jsx/dom";
import { Conversation, type ChatMessage } from "../../ui/chat.tsx";
import type { Boot } from "../boot.ts";
import { RewardCard, ToolCallForm, WirePanel, type DraftCall, type Exchange, type Tool } from "./panels.tsx";
import { collect, fieldsOf, initialValues, SchemaFields, type Field, type FieldValue } from "./schema-form.tsx";

interface Episode {
  id: string;
  messages: ChatMessage[];
  promptLength: number;
  done: boolean;
  truncated: boolean;
  reward: number | null;
  metrics: Record<string, number>;
  turn: number;
  /** This episode's turn limit (the default args' until the server says otherwise). */
  maxTurns: number | null;
  closed: boolean;
}

type Json = Record<string, any>;

class ApiFailure extends Error {}

function errorText(status: number, body: unknown): string {
  const e = (body as Json | null)?.error;
  if (e && typeof e === "object") {
    const details = e.details === undefined ? "" : `\n${JSON.stringify(e.details, null, 2)}`;
    return `${status} ${e.code}: ${e.message}${details}`;
  }
  return `${status}: ${typeof body === "string" ? body.slice(0, 500) : JSON.stringify(body)}`;
}

/** OpenAI tool schemas (an observation's `tools`) or MCP tools (`tools/list`) → one shape. */
function toolsFrom(list: unknown): Tool[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((t: Json) => {
    const fn = t?.function ?? t;
    if (!fn || typeof fn.name !== "string") return [];
    return [{ name: fn.name, description: String(fn.description ?? ""), parameters: fn.parameters ?? fn.inputSchema ?? {} }];
  });
}

let exchangeCount = 0;
let callKey = 0;

function App(props: { boot: Boot }) {
  const { boot } = props;
  const env = boot.env;
  const [argFields, setArgFields] = useState<Field[] | null>(null);
  const [argValues, setArgValues] = useState<Record<string, FieldValue>>({});
  const [seed, setSeed] = useState("");
  const [split, setSplit] = useState(env.splits[0] ?? "");
  const [index, setIndex] = useState("");
  const [episode, setEpisode] = useState<Episode | null>(null);
  const [tools, setTools] = useState<Tool[]>([]);
  const [exchanges, setExchanges] = useState<Exchange[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [content, setContent] = useState("");
  const [calls, setCalls] = useState<DraftCall[]>([]);
  const [resumeId, setResumeId] = useState("");
  const [copied, setCopied] = useState(false);
  useEffect(() => setCopied(false), [episode?.id]);

  async function api(method: string, path: string, body?: unknown): Promise<Json> {
    const t0 = performance.now();
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.headers = { "content-type": "application/json" };
      init.body = JSON.stringify(body);
    }
    let status = 0;
    let parsed: unknown;
    try {
      const res = await fetch(boot.api + path, init);
      status = res.status;
      const text = await res.text();
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    } catch (err) {
      parsed = String(err);
    }
    const ex: Exchange = { n: ++exchangeCount, method, path, request: body, status, response: parsed, ms: Math.round(performance.now() - t0) };
    setExchanges((xs) => [ex, ...xs].slice(0, 100));
    if (status < 200 || status >= 300) throw new ApiFailure(errorText(status, parsed));
    return parsed as Json;
  }

  async function guarded(work: () => Promise<void>) {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (err) {
      setError(err instanceof ApiFailure ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  }

  const remember = (id: string | null) => {
    const url = new URL(location.href);
    if (id) url.searchParams.set("episode_id", id);
    else url.searchParams.delete("episode_id");
    history.replaceState(null, "", url);
  };
  const focusReply = () => setTimeout(() => document.getElementById("reply")?.focus(), 0);

  async function resume(id: string) {
    const st = await api("GET", `/state?episode_id=${encodeURIComponent(id)}`);
    const messages = (Array.isArray(st.messages) ? st.messages : []) as ChatMessage[];
    const firstAssistant = messages.findIndex((m) => m.role === "assistant");
    setEpisode({
      id: String(st.episode_id ?? id),
      messages,
      promptLength: firstAssistant === -1 ? messages.length : firstAssistant,
      done: st.done === true,
      truncated: st.truncated === true,
      reward: typeof st.reward === "number" ? st.reward : null,
      metrics: (st.metrics ?? {}) as Record<string, number>,
      turn: Number(st.step_count ?? 0),
      maxTurns: typeof st.max_turns === "number" ? st.max_turns : env.max_turns,
      closed: false,
    });
    setCalls([]);
    remember(String(st.episode_id ?? id));
    const listed = await api("POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" });
    setTools(toolsFrom(listed.result?.tools));
    focusReply();
  }

  useEffect(() => {
    void guarded(async () => {
      const schema = await api("GET", "/schema");
      const fields = fieldsOf(schema.args);
      setArgFields(fields);
      setArgValues(initialValues(fields));
      const id = new URL(location.href).searchParams.get("episode_id");
      if (id) {
        setResumeId(id);
        await resume(id);
      }
    });
  }, []);

  const onReset = (e: Event) => {
    e.preventDefault();
    void guarded(async () => {
      const body: Json = {};
      if (seed.trim() !== "") {
        const s = Number(seed);
        if (!Number.isInteger(s) || s < 0) throw new ApiFailure("seed must be a whole number ≥ 0");
        body.seed = s;
      }
      if (split && split !== env.splits[0]) body.split = split;
      if (index.trim() !== "") {
        const i = Number(index);
        if (!Number.isInteger(i) || i < 0) throw new ApiFailure("index must be a whole number ≥ 0");
        body.index = i;
      }
      const args = collect(argFields ?? [], argValues, { omitDefaults: true });
      if (args.errors.length) throw new ApiFailure(args.errors.join("\n"));
      if (Object.keys(args.value).length) body.args = args.value;
      const r = await api("POST", "/reset", body);
      const messages = (r.observation?.messages ?? []) as ChatMessage[];
      // Args of its own may change the turn limit (wordle's num_guesses): the episode's state has it.
      const maxTurns = body.args ? Number((await api("GET", `/state?episode_id=${encodeURIComponent(r.episode_id)}`)).max_turns) : env.max_turns;
      setEpisode({ id: r.episode_id, messages, promptLength: messages.length, done: r.done === true, truncated: false, reward: null, metrics: {}, turn: 0, maxTurns, closed: false });
      setTools(toolsFrom(r.observation?.tools));
      setCalls([]);
      setContent("");
      remember(r.episode_id);
      focusReply();
    });
  };

  const onStep = (e: Event) => {
    e.preventDefault();
    if (!episode) return;
    void guarded(async () => {
      const toolCalls = calls.map((d, i) => {
        const tool = tools.find((t) => t.name === d.name);
        const parsed = collect(fieldsOf(tool?.parameters), d.values, { omitDefaults: false });
        if (parsed.errors.length) throw new ApiFailure(`tool call ${i + 1} (${d.name}): ${parsed.errors.join("; ")}`);
        return { id: `call_${episode.turn + 1}_${i + 1}`, type: "function" as const, function: { name: d.name, arguments: JSON.stringify(parsed.value) } };
      });
      const action: Json = { content: content === "" && toolCalls.length ? null : content };
      if (toolCalls.length) action.tool_calls = toolCalls;
      const r = await api("POST", "/step", { episode_id: episode.id, action });
      const obs = r.observation ?? {};
      const assistant: ChatMessage = { role: "assistant", content: action.content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
      setEpisode({
        ...episode,
        messages: [...episode.messages, assistant, ...((obs.messages ?? []) as ChatMessage[])],
        done: r.done === true,
        truncated: obs.truncated === true,
        reward: typeof r.reward === "number" ? r.reward : null,
        metrics: (obs.metrics ?? {}) as Record<string, number>,
        turn: typeof obs.turn === "number" ? obs.turn : episode.turn + 1,
      });
      setContent("");
      setCalls([]);
      if (r.done) setTimeout(() => document.getElementById("reward")?.focus(), 0);
      else focusReply();
    });
  };

  const onClose = () => {
    if (!episode) return;
    void guarded(async () => {
      await api("POST", "/close", { episode_id: episode.id });
      setEpisode({ ...episode, closed: true });
      remember(null);
    });
  };

  const onResume = (e: Event) => {
    e.preventDefault();
    const id = resumeId.trim();
    if (!id) return setError("give an episode id to resume");
    void guarded(() => resume(id));
  };

  const addCall = () => {
    const tool = tools[0];
    if (!tool) return;
    setCalls([...calls, { key: ++callKey, name: tool.name, values: initialValues(fieldsOf(tool.parameters)) }]);
    setTimeout(() => document.getElementById(`call-${callKey}-tool`)?.focus(), 0);
  };
  const updateCall = (key: number, next: Partial<DraftCall>) => setCalls(calls.map((c) => (c.key === key ? { ...c, ...next } : c)));

  const canStep = episode !== null && !episode.done && !episode.closed;

  return (
    <div class="play">
        <section class="card start-area" aria-labelledby="start-h">
          <h2 id="start-h">Start an episode</h2>
          <form onSubmit={onReset} class="stack">
            <div class="fields">
              <div>
                <label for="seed">seed</label>
                <input id="seed" type="number" min="0" step="1" inputmode="numeric" placeholder="random" value={seed} onInput={(e: Event) => setSeed((e.target as HTMLInputElement).value)} />
              </div>
              <div>
                <label for="split">split</label>
                <select id="split" onChange={(e: Event) => setSplit((e.target as HTMLSelectElement).value)}>
                  {env.splits.map((s) => (
                    <option value={s} selected={s === split}>
                      {s}
                    </option>
                  ))}
                </select>
              </div>
              <div>
                <label for="index">index</label>
                <input id="index" type="number" min="0" step="1" inputmode="numeric" placeholder="from the seed" value={index} onInput={(e: Event) => setIndex((e.target as HTMLInputElement).value)} />
              </div>
            </div>
            {argFields && argFields.length ? (
              <details>
                <summary class="label" style="display:list-item">
                  Arguments <span class="muted small">({argFields.length}, from <code>GET {boot.shownApi}/schema</code>; defaults are not sent)</span>
                </summary>
                <div style="margin-top:.6rem">
                  <SchemaFields fields={argFields} values={argValues} idPrefix="arg" onChange={(name, v) => setArgValues({ ...argValues, [name]: v })} />
                </div>
              </details>
            ) : null}
            <div class="row">
              <button class="primary" type="submit" disabled={busy}>
                Reset
              </button>
              <span class="muted small">POST {boot.shownApi}/reset</span>
            </div>
          </form>
          <form onSubmit={onResume} style="margin-top:1rem;padding-top:.9rem;border-top:1px solid var(--border)">
            <label for="resume-id">Resume episode</label>
            <div class="row">
              <input id="resume-id" type="text" autocomplete="off" spellcheck={false} placeholder="episode id" value={resumeId} style="flex:1;width:auto;min-width:0" onInput={(e: Event) => setResumeId((e.target as HTMLInputElement).value)} />
              <button type="submit" disabled={busy}>
                Resume
              </button>
            </div>
          </form>
        </section>
      <div class="stack episode-area">

        {error ? (
          <div class="error-box" role="alert">
            {error}
          </div>
        ) : null}

        {episode ? (
          <section class="card stack" aria-labelledby="episode-h">
            <div class="episode-bar">
              <h2 id="episode-h" style="margin:0">
                Episode
              </h2>
              <code data-testid="episode-id">{episode.id}</code>
              <span class="pill">
                turn {episode.turn}
                {episode.maxTurns === null ? "" : ` / ${episode.maxTurns}`}
              </span>
              {episode.done ? <span class="pill good">done</span> : <span class="pill accent">in progress</span>}
              {episode.truncated ? <span class="pill warn">truncated</span> : null}
              {episode.closed ? <span class="pill">closed</span> : null}
              <span class="spacer"></span>
              {navigator.clipboard ? (
                <button
                  type="button"
                  class="quiet"
                  onClick={() =>
                    void navigator.clipboard.writeText(episode.id).then(
                      () => setCopied(true),
                      () => setCopied(false),
                    )
                  }
                >
                  {copied ? "Copied" : "Copy id"}
                </button>
              ) : null}
              <button type="button" class="quiet" onClick={onClose} disabled={busy || episode.closed}>
                Close episode
              </button>
            </div>
            <Conversation messages={episode.messages} promptLength={episode.promptLength} />

            {episode.done ? <RewardCard reward={episode.reward} metrics={episode.metrics} onAgain={onReset} busy={busy} /> : null}

            {canStep ? (
              <form class="composer stack" onSubmit={onStep}>
                <div>
                  <label for="reply">
                    Your reply as the assistant
                  </label>
                  <textarea
                    id="reply"
                    rows={5}
                    value={content}
                    spellcheck={false}
                    placeholder="Type the model's answer…"
                    aria-describedby="reply-hint"
                    onInput={(e: Event) => setContent((e.target as HTMLTextAreaElement).value)}
                    onKeyDown={(e: KeyboardEvent) => {
                      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
                        e.preventDefault();
                        (e.target as HTMLTextAreaElement).form?.requestSubmit();
                      }
                    }}
                  ></textarea>
                  <span class="hint" id="reply-hint">
                    Ctrl+Enter sends it. {tools.length ? "Add tool calls below to call the environment's tools." : ""}
                  </span>
                </div>
                {calls.map((d, i) => (
                  <ToolCallForm
                    n={i + 1}
                    draft={d}
                    tools={tools}
                    onChange={(next) => updateCall(d.key, next)}
                    onRemove={() => setCalls(calls.filter((c) => c.key !== d.key))}
                  />
                ))}
                <div class="row">
                  <button class="primary" type="submit" disabled={busy}>
                    Step
                  </button>
                  {tools.length ? (
                    <button type="button" onClick={addCall} disabled={busy}>
                      Add tool call
                    </button>
                  ) : null}
                  <span class="muted small">POST {boot.shownApi}/step</span>
                </div>
              </form>
            ) : null}
          </section>
        ) : (
          <section class="card muted">Press Reset to start an episode: the prompt appears here as a chat, and you answer as the model.</section>
        )}
      </div>

      <WirePanel exchanges={exchanges} api={boot.api} shownApi={boot.shownApi} />
    </div>
  );
}

const bootEl = document.getElementById("boot");
const root = document.getElementById("app");
if (bootEl && root) {
  root.textContent = "";
  render(<App boot={JSON.parse(bootEl.textContent ?? "{}") as Boot} />, root);
}
