/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/** One rollout: its transcript beside its reward, metrics, timing, tokens and episode details. */
import { Conversation, type ChatMessage } from "../../ui/chat.tsx";
import { rewardErrorsIn, serviceErrorsIn, type Row, type Run } from "../runs.ts";
import { f3, rolloutHref, runHref, ViewerPage } from "./common.tsx";

function Json(props: { value: unknown }) {
  return <pre class="json">{typeof props.value === "string" ? props.value : JSON.stringify(props.value, null, 2)}</pre>;
}

export function RolloutPage(props: { run: Run; row: Row; prev: [number, number] | undefined; next: [number, number] | undefined }) {
  const { run, row } = props;
  const messages = [...row.prompt, ...row.completion] as ChatMessage[];
  const timing = row.timing ?? {};
  const usage = row.usage ?? { prompt_tokens: null, completion_tokens: null, total_tokens: null };
  const rewardErrors = rewardErrorsIn(row.env_info);
  const serviceErrors = serviceErrorsIn(row.env_info);
  const errored = row.error !== null || rewardErrors !== null || serviceErrors !== null;
  const low = errored || (row.reward ?? 0) < 0.5;
  return (
    <ViewerPage title={`example ${row.example_id} · rollout ${row.rollout} · ${run.env}`}>
      <div class="crumbs">
        <a href="/">Runs</a> / <a href={runHref(run)}>{`${run.env} · ${run.model}`}</a> / example {row.example_id} · rollout {row.rollout}
      </div>
      <div class="row" style="align-items:baseline">
        <h1 style="margin:0">
          Example {row.example_id} <span class="muted" style="font-weight:500">· rollout {row.rollout}</span>
        </h1>
        <span class="pill">
          {row.turns} turn{row.turns === 1 ? "" : "s"}
        </span>
        {row.done ? <span class="pill">done</span> : <span class="pill warn">not done</span>}
        {row.truncated ? <span class="pill warn">truncated</span> : null}
        {errored ? <span class="pill bad">error</span> : null}
        <span class="spacer"></span>
        <nav class="row small" aria-label="Rollouts">
          {props.prev ? <a href={rolloutHref(run, ...props.prev)}>← previous</a> : null}
          {props.next ? <a href={rolloutHref(run, ...props.next)}>next →</a> : null}
        </nav>
      </div>
      <div class="two" style="margin-top:1rem">
        <section aria-label="Transcript" data-testid="transcript">
          {row.error !== null ? (
            <div class="error-box" role="alert" style="margin-bottom:.75rem">
              {row.error}
            </div>
          ) : null}
          {rewardErrors !== null ? (
            <div class="error-box" role="alert" style="margin-bottom:.75rem" data-testid="reward-errors">
              {Object.entries(rewardErrors).map(([name, message]) => (
                <div>
                  reward function <code>{name}</code> failed (scored 0): {message}
                </div>
              ))}
            </div>
          ) : null}
          {serviceErrors !== null ? (
            <div class="error-box" role="alert" style="margin-bottom:.75rem" data-testid="service-errors">
              {serviceErrors.map((line) => (
                <div>scored while {line}</div>
              ))}
            </div>
          ) : null}
          <Conversation messages={messages} promptLength={row.prompt.length} />
        </section>
        <aside class="stack">
          <section class={`card reward-card${low ? " low" : ""}`} aria-label="Reward">
            <div class="muted small">reward</div>
            <div class="reward-big" data-testid="rollout-reward">
              {row.reward == null ? "–" : f3(row.reward)}
            </div>
            {row.metrics && Object.keys(row.metrics).length ? (
              <table style="margin-top:.5rem" aria-label="metrics">
                <tbody>
                  {Object.entries(row.metrics).map(([k, v]) => (
                    <tr>
                      <td>
                        <code>{k}</code>
                      </td>
                      <td class="num">{f3(v)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ) : null}
          </section>
          <section class="card">
            <h3>Time and tokens</h3>
            <dl class="kv">
              {Object.entries(timing).map(([k, v]) => (
                <>
                  <dt>{k.replace(/_ms$/, "")}</dt>
                  <dd>{`${v.toFixed(1)} ms`}</dd>
                </>
              ))}
              <dt>tokens</dt>
              <dd>
                {usage.prompt_tokens ?? 0} prompt + {usage.completion_tokens ?? 0} completion = {usage.total_tokens ?? 0}
              </dd>
              <dt>retries</dt>
              <dd>{row.retries}</dd>
            </dl>
          </section>
          <section class="card">
            <h3>Episode</h3>
            <dl class="kv">
              <dt>episode</dt>
              <dd>
                <code>{row.episode_id ?? "–"}</code>
              </dd>
              <dt>reset</dt>
              <dd>
                <code>{JSON.stringify(row.reset ?? {})}</code>
              </dd>
              <dt>env info</dt>
              <dd>
                <code>{JSON.stringify(row.env_info ?? {})}</code>
              </dd>
            </dl>
            {row.answer !== null && row.answer !== undefined ? (
              <>
                <h3 style="margin-top:.75rem">Answer</h3>
                <Json value={row.answer} />
              </>
            ) : null}
            {row.info && typeof row.info === "object" && Object.keys(row.info).length ? (
              <>
                <h3 style="margin-top:.75rem">Info</h3>
                <Json value={row.info} />
              </>
            ) : null}
          </section>
        </aside>
      </div>
    </ViewerPage>
  );
}
