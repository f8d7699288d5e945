/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/** One run: its numbers, reward and metric histograms, settings, and its examples (filtered, ordered, paged). */
import type { Child } from "hono/jsx";
import type { Run } from "../runs.ts";
import { matches, type RowFilter, type RunStats } from "../stats.ts";
import { Chart, f3, rewardClass, rewardHistogram, rolloutHref, runHref, Stat, ViewerPage, when, type Live } from "./common.tsx";

export interface RunView {
  filter: RowFilter;
  order: "example" | "best" | "worst";
  page: number;
}

const PAGE_SIZE = 50;

function Settings(props: { run: Run }) {
  const m = props.run.meta;
  const items: [string, Child][] = [
    ["run", <code>{props.run.name}</code>],
    ["environment", `${props.run.env}${m.env_version ? ` v${m.env_version}` : ""}`],
    ["split", m.split ?? "–"],
    ["seed", m.seed ?? "–"],
    ["env args", <code>{JSON.stringify(m.env_args ?? {})}</code>],
    ["sampling", <code>{JSON.stringify(m.sampling_args ?? {})}</code>],
    ["model at", m.base_url ?? "–"],
    ["environment at", m.envworker_url ?? "in process"],
    ["time", typeof m.time_ms === "number" ? `${(m.time_ms / 1000).toFixed(1)} s` : "–"],
    ["envworker", m.envworker_version ?? "–"],
  ];
  return (
    <dl class="kv">
      {items.map(([k, v]) => (
        <>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </>
      ))}
    </dl>
  );
}

function numberParam(name: string, v: number | undefined) {
  return v === undefined ? "" : `&${name}=${v}`;
}

function viewQuery(view: RunView, page = view.page): string {
  const f = view.filter;
  return `?order=${view.order}${numberParam("min", f.min)}${numberParam("max", f.max)}${f.errorsOnly ? "&errors=1" : ""}${numberParam("tmin", f.minTurns)}${numberParam("tmax", f.maxTurns)}${page > 1 ? `&page=${page}` : ""}`;
}

export function RunPage(props: { run: Run; stats: RunStats; view: RunView; live: Live | undefined }) {
  const { run, stats, view } = props;
  const f = view.filter;
  const hist = rewardHistogram(stats.reward.values);
  const examples = stats.examples
    .map((e) => ({ ...e, shown: e.rows.filter((row) => matches(row, f)) }))
    .filter((e) => e.shown.length > 0)
    .sort((a, b) => (view.order === "best" ? b.mean - a.mean : view.order === "worst" ? a.mean - b.mean : 0) || a.example_id - b.example_id);
  const shownRollouts = examples.reduce((s, e) => s + e.shown.length, 0);
  const pages = Math.max(1, Math.ceil(examples.length / PAGE_SIZE));
  const page = Math.min(view.page, pages);
  const slice = examples.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE);
  const u = stats.tokens;
  return (
    <ViewerPage title={`${run.env} · ${run.model}`} live={props.live}>
      <div class="crumbs">
        <a href="/">Runs</a> / {run.env}
      </div>
      <div data-live-region="head" id="head-region">
        <div class="row" style="align-items:baseline">
          <h1 style="margin:0">
            {run.env} <span class="muted" style="font-weight:500">· {run.model}</span>
          </h1>
          {run.complete && run.meta.interrupted ? (
            <span class="pill warn" data-testid="interrupted">
              interrupted · {stats.rollouts} of {stats.expected} rollouts
            </span>
          ) : run.complete ? (
            <span class="pill">finished</span>
          ) : run.abandoned ? (
            <span class="pill bad" data-testid="abandoned" title="its eval process is gone (killed) before it could finish">
              stopped · {stats.rollouts} of {stats.expected} rollouts
            </span>
          ) : (
            <span class="pill good live" data-testid="live">
              running · {stats.rollouts} of {stats.expected} rollouts
            </span>
          )}
          {run.badLines ? <span class="pill bad">{run.badLines} unreadable lines</span> : null}
        </div>
        <p class="muted small" style="margin-top:.25rem">
          {when(run)} · run <code>{run.name}</code>
        </p>
      </div>

      <div data-live-region="stats" id="stats-region">
        <div class="stats">
          <Stat k="reward" testid="stat-reward">
            {f3(stats.reward.avg)} <small>± {f3(stats.reward.std)}</small>
          </Stat>
          {Object.entries(stats.passAtK).map(([k, v]) => (
            <Stat k={`pass@${k}`}>{f3(v)}</Stat>
          ))}
          <Stat k="rollouts">
            {stats.n} <small>×</small> {stats.r}
          </Stat>
          <Stat k="errors">{stats.errors ? <span style="color:var(--bad)">{stats.errors}</span> : "0"}</Stat>
          <Stat k="tokens / rollout">{stats.rollouts ? Math.round(u.total / stats.rollouts) : 0}</Stat>
        </div>
      </div>

      <div class="two" style="margin-top:1rem" data-live-region="charts" id="charts-region">
        <section class="card" aria-labelledby="hist-h">
          <div class="row">
            <h2 id="hist-h" style="margin:0">
              Reward
            </h2>
            <span class="muted small">{stats.rollouts} rollouts; click a bar to list its rollouts</span>
          </div>
          <Chart spec={hist.spec} label={`Reward ${hist.label}`} />
        </section>
        <section class="card" aria-labelledby="metrics-h">
          <h2 id="metrics-h">Metrics</h2>
          {stats.metrics.length === 0 ? <p class="muted">No metrics yet.</p> : null}
          {stats.metrics.map((m) => {
            const h = rewardHistogram(m.values, "#6a3fb5");
            return (
              <div class="metric" data-metric={m.name} style="margin-bottom:.75rem">
                <div class="row small">
                  <code>{m.name}</code>
                  <span class="spacer"></span>
                  <span class="nowrap">
                    {f3(m.avg)} <span class="muted">± {f3(m.std)}</span>
                  </span>
                </div>
                <Chart spec={h.spec} label={`${m.name} ${h.label}`} small />
              </div>
            );
          })}
        </section>
      </div>

      <details class="card" style="margin-top:1rem">
        <summary>
          <strong>Settings</strong> <span class="muted small">split, seed, args, sampling, where it ran</span>
        </summary>
        <div style="margin-top:.6rem">
          <Settings run={run} />
        </div>
      </details>

      <div class="section-title" id="examples">
        <h2>Examples</h2>
        <span class="muted small" data-testid="shown">
          {examples.length} of {stats.examples.length} examples, {shownRollouts} of {stats.rollouts} rollouts
        </span>
      </div>
      <form class="card filters" method="get" action={`${runHref(run)}#examples`} aria-label="Filter rollouts">
        <div>
          <label for="f-min">reward ≥</label>
          <input id="f-min" name="min" type="number" step="any" value={f.min ?? ""} />
        </div>
        <div>
          <label for="f-max">reward ≤</label>
          <input id="f-max" name="max" type="number" step="any" value={f.max ?? ""} />
        </div>
        <div>
          <label for="f-tmin">turns ≥</label>
          <input id="f-tmin" name="tmin" type="number" min="0" step="1" value={f.minTurns ?? ""} />
        </div>
        <div>
          <label for="f-tmax">turns ≤</label>
          <input id="f-tmax" name="tmax" type="number" min="0" step="1" value={f.maxTurns ?? ""} />
        </div>
        <div>
          <label for="f-order">order</label>
          <select id="f-order" name="order">
            <option value="example" selected={view.order === "example"}>
              example
            </option>
            <option value="best" selected={view.order === "best"}>
              best first
            </option>
            <option value="worst" selected={view.order === "worst"}>
              worst first
            </option>
          </select>
        </div>
        <label class="check" for="f-errors" style="margin-bottom:.45rem">
          <input id="f-errors" name="errors" value="1" type="checkbox" checked={f.errorsOnly === true} /> errors only
        </label>
        <div class="row">
          <button type="submit" class="primary">
            Filter
          </button>
          <a class="button" href={`${runHref(run)}#examples`}>
            Clear
          </a>
        </div>
      </form>
      <div data-live-region="examples" id="examples-region" style="margin-top:1rem">
        <div class="table-wrap">
          <table data-testid="examples">
            <thead>
              <tr>
                <th class="num">#</th>
                <th>prompt</th>
                <th class="num">mean</th>
                <th>rollouts (reward)</th>
                <th class="num hide-narrow">turns</th>
              </tr>
            </thead>
            <tbody>
              {slice.map((e) => (
                <tr data-example={e.example_id}>
                  <td class="num">{e.example_id}</td>
                  <td class="small" style="max-width:46ch">
                    {e.prompt}
                  </td>
                  <td class="num">{f3(e.mean)}</td>
                  <td>
                    <div class="chips">
                      {e.shown.map((row) => {
                        // A failed reward function: the reward shown is the environment's, marked as an error.
                        const failed = row.rewardErrors
                          ? `reward function ${Object.keys(row.rewardErrors).join(", ")} failed`
                          : row.serviceErrors
                            ? `scored while ${row.serviceErrors.join("; ")}`
                            : undefined;
                        return (
                          <a
                            class={`chip ${rewardClass(row.reward, row.error ?? failed ?? null)}`}
                            href={rolloutHref(run, row.example_id, row.rollout)}
                            title={`rollout ${row.rollout}: ${row.error ?? `reward ${row.reward ?? "–"}, ${row.turns} turns${failed ? `; ${failed}${row.rewardErrors ? `: ${Object.values(row.rewardErrors).join("; ")}` : ""}` : ""}`}`}
                            aria-label={`example ${row.example_id} rollout ${row.rollout}: ${row.error ? "error" : `reward ${f3(row.reward ?? 0)}${failed ? `, error: ${failed}` : ""}`}`}
                          >
                            {row.error !== null ? "error" : `${(row.reward ?? 0).toFixed(2)}${failed ? " !" : ""}`}
                          </a>
                        );
                      })}
                    </div>
                  </td>
                  <td class="num hide-narrow">{[...new Set(e.shown.map((r) => r.turns))].join(", ")}</td>
                </tr>
              ))}
              {slice.length === 0 ? (
                <tr>
                  <td colspan={5} class="muted">
                    No rollout matches the filter.
                  </td>
                </tr>
              ) : null}
            </tbody>
          </table>
        </div>
        {pages > 1 ? (
          <nav class="pager" aria-label="Pages">
            {page > 1 ? <a href={`${runHref(run)}${viewQuery(view, page - 1)}#examples`}>← previous</a> : null}
            <span class="muted small">
              page {page} of {pages}
            </span>
            {page < pages ? <a href={`${runHref(run)}${viewQuery(view, page + 1)}#examples`}>next →</a> : null}
          </nav>
        ) : null}
      </div>
    </ViewerPage>
  );
}
