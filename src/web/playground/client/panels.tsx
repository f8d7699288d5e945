/** @jsxImportSource hono/jsx/dom */
/**
 * The playground's parts that only show what they are given: a tool call being written, the
 * reward at the end of an episode, and the panel of requests and replies.
 */
import { fieldsOf, initialValues, SchemaFields, type FieldValue } from "./schema-form.tsx";

export interface Tool {
  name: string;
  description: string;
  parameters: unknown;
}

export interface Exchange {
  n: number;
  method: string;
  path: string;
  request: unknown;
  status: number;
  response: unknown;
  ms: number;
}

export interface DraftCall {
  key: number;
  name: string;
  values: Record<string, FieldValue>;
}

export const fmt = (x: number | null | undefined) => (typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toFixed(3)) : "–");

/** One tool call of the turn being written: which tool, and its arguments from the tool's schema. */
export function ToolCallForm(props: { n: number; draft: DraftCall; tools: Tool[]; onChange: (next: Partial<DraftCall>) => void; onRemove: () => void }) {
  const { draft: d, tools } = props;
  const tool = tools.find((t) => t.name === d.name);
  const fields = fieldsOf(tool?.parameters);
  return (
    <fieldset data-testid="tool-call">
      <legend>Tool call {props.n}</legend>
      <div class="stack">
        <div class="row">
          <div style="flex:1;min-width:10rem">
            <label for={`call-${d.key}-tool`}>tool</label>
            <select
              id={`call-${d.key}-tool`}
              onChange={(e: Event) => {
                const name = (e.target as HTMLSelectElement).value;
                props.onChange({ name, values: initialValues(fieldsOf(tools.find((t) => t.name === name)?.parameters)) });
              }}
            >
              {tools.map((t) => (
                <option value={t.name} selected={t.name === d.name}>
                  {t.name}
                </option>
              ))}
            </select>
          </div>
          <button type="button" class="quiet" style="align-self:flex-end" onClick={props.onRemove}>
            Remove
          </button>
        </div>
        {tool?.description ? <p class="hint">{tool.description}</p> : null}
        <SchemaFields fields={fields} values={d.values} idPrefix={`call-${d.key}`} onChange={(name, v) => props.onChange({ values: { ...d.values, [name]: v } })} />
      </div>
    </fieldset>
  );
}

/** The end of an episode: the reward and each metric of the rubric. */
export function RewardCard(props: { reward: number | null; metrics: Record<string, number>; onAgain: (e: Event) => void; busy: boolean }) {
  const low = props.reward !== null && props.reward < 0.5;
  return (
    <div class={`card reward-card${low ? " low" : ""}`} id="reward" tabindex={-1} aria-live="polite">
      <div class="row">
        <div>
          <div class="muted small">reward</div>
          <div class="reward-big" data-testid="reward">
            {fmt(props.reward)}
          </div>
        </div>
        <div class="spacer"></div>
        <button type="button" onClick={props.onAgain} disabled={props.busy}>
          Play again
        </button>
      </div>
      {Object.keys(props.metrics).length ? (
        <table style="margin-top:.6rem" aria-label="metrics">
          <thead>
            <tr>
              <th>metric</th>
              <th class="num">value</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(props.metrics).map(([k, v]) => (
              <tr data-metric={k}>
                <td>
                  <code>{k}</code>
                </td>
                <td class="num">{fmt(v)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

/** Every request the page made and the reply, newest first: the protocol, shown as it happens. */
export function WirePanel(props: { exchanges: Exchange[]; api: string; shownApi: string }) {
  return (
    <aside class="card wire-area" aria-labelledby="wire-h">
      <h2 id="wire-h">On the wire</h2>
      <p class="muted small">
        Every request this page made and the server's reply, newest first: the same HTTP routes a trainer uses. All of them are described in{" "}
        <a href={`${props.api}/openapi.json`}>{`${props.shownApi}/openapi.json`}</a>.
      </p>
      {props.exchanges.length === 0 ? <p class="muted small">Nothing yet.</p> : null}
      {props.exchanges.map((x, i) => (
        <details class="exchange" open={i === 0} data-testid="exchange">
          <summary>
            <span>{x.method}</span>
            <span>{props.shownApi + x.path}</span>
            <span class={`status ${x.status >= 200 && x.status < 300 ? "ok" : "fail"}`}>{x.status || "network error"}</span>
            <span class="muted">{x.ms} ms</span>
          </summary>
          <div class="body">
            {x.request === undefined ? null : (
              <>
                <h4>request</h4>
                <pre class="json">{JSON.stringify(x.request, null, 2)}</pre>
              </>
            )}
            <h4>response</h4>
            <pre class="json">{typeof x.response === "string" ? x.response : JSON.stringify(x.response, null, 2)}</pre>
          </div>
        </details>
      ))}
    </aside>
  );
}
