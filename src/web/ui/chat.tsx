/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/**
 * A conversation as the protocol carries it (OpenAI chat messages), drawn the same way by the
 * playground (in the browser, hono/jsx/dom) and the viewer (on the server, hono/jsx). No hooks
 * here: these components render under both runtimes.
 */

export interface ToolCall {
  id: string;
  type?: string;
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: string;
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  reasoning_content?: string;
}

/** Tool-call arguments pretty-printed when they are JSON, as sent otherwise. */
export function prettyArguments(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

function Message(props: { m: ChatMessage; toolName?: string | undefined }) {
  const { m } = props;
  const role = ["system", "user", "assistant", "tool"].includes(m.role) ? m.role : "user";
  return (
    <article class={`msg ${role}`} data-role={m.role}>
      <header>
        <span class="role">{m.role}</span>
        {m.role === "tool" ? (
          <span class="muted small">
            {props.toolName ? <code>{props.toolName}</code> : null} result{m.tool_call_id ? ` · ${m.tool_call_id}` : ""}
          </span>
        ) : null}
      </header>
      {m.reasoning_content ? (
        <details class="reasoning">
          <summary>reasoning ({m.reasoning_content.length} characters)</summary>
          <pre>{m.reasoning_content}</pre>
        </details>
      ) : null}
      {m.content !== null && m.content !== "" ? <pre class="content">{m.content}</pre> : m.tool_calls?.length ? null : <p class="muted small">(empty)</p>}
      {(m.tool_calls ?? []).map((call) => (
        <div class="toolcall" data-tool={call.function.name}>
          <span class="muted small">calls </span>
          <span class="name">{call.function.name}</span>
          <span class="muted small"> · {call.id}</span>
          <pre>{prettyArguments(call.function.arguments)}</pre>
        </div>
      ))}
    </article>
  );
}

/**
 * Messages in order; `promptLength` of them are the prompt, and every assistant message after it
 * opens a new turn (the environment's replies follow it).
 */
export function Conversation(props: { messages: readonly ChatMessage[]; promptLength?: number }) {
  const names = new Map<string, string>();
  for (const m of props.messages) for (const c of m.tool_calls ?? []) names.set(c.id, c.function.name);
  const promptLength = props.promptLength ?? 0;
  let turn = 0;
  const items = props.messages.map((m, i) => {
    const sep = i >= promptLength && m.role === "assistant" ? <div class="turn-sep">turn {++turn}</div> : null;
    return (
      <>
        {sep}
        <Message m={m} toolName={m.tool_call_id ? names.get(m.tool_call_id) : undefined} />
      </>
    );
  });
  return <div class="chat">{items}</div>;
}
