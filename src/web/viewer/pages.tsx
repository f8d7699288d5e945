/**
 * The viewer's pages, server-rendered with hono/jsx: the runs, one run, one rollout's
 * transcript, a comparison of two runs. Charts are <canvas data-chart="{spec}"> that the client
 * script (./client) draws with Chart.js; regions marked data-live-region are refreshed in place
 * while a run is still being written.
 */
import type { Child } from "hono/jsx";
import { Conversation, type ChatMessage } from "../ui/chat.tsx";
import { Page } from "../ui/layout.tsx";
import type { Row, Run } from "./runs.ts";
import { histogram, matches, type ComparedExample, type RowFilter, type RunStats } from "./stats.ts";

export interface ChartSpec {
  type: "histogram" | "scatter";
  labels?: string[];
  counts?: number[];
  /** Bin edges, so a click on a bar can filter by its range. */
  edges?: [number, number][];
  points?: { x: number; y: number; label: string }[];
  xLabel?: string;
  yLabel?: string;
  color?: string;
}

const f3 = (x: number) => x.toFixed(3);
const runHref = (run: Run) => `/runs/${encodeURIComponent(run.group)}/${encodeURIComponent(run.name)}`;
const rolloutHref = (run: Run, example: number, rollout: number) => `${runHref(run)}/${example}/${rollout}`;
const when = (run: Run) => {
  const iso = run.meta.started_at;
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : run.name;
};
const rewardClass = (x: number | null, error: string | null) => (error !== null ? "err" : x === null ? "r-lo" : x >= 0.999 ? "r-hi" : x > 0 ? "r-mid" : "r-lo");

/** A page that follows a run still being written polls `live.url`, whose answer changes with `live.version`. */
export interface Live {
  url: string;
  version: string;
}

function ViewerPage(props: { title: string; children: Child; live?: Live | undefined; current?: string }) {
  return (
    <Page
      title={`${props.title} · envworker view`}
      home="/"
      css="/assets/style.css"
      product="eval results"
      nav={[{ href: "/", label: "Runs", current: props.current === "runs" }]}
      scripts={["/assets/chart.umd.min.js", "/assets/viewer.js"]}
      boot={props.live ? { live: props.live } : {}}
    >
      {props.children}
    </Page>
  );
}

function Chart(props: { spec: ChartSpec; label: string; small?: boolean }) {
  return (
    <div class={props.small ? "chart-box small" : "chart-box"}>
      <canvas data-chart={JSON.stringify(props.spec)} role="img" aria-label={props.label}></canvas>
    </div>
  );
}

function rewardHistogram(values: number[], color?: string): { spec: ChartSpec; label: string } {
  const h = histogram(values);
  return {
    spec: { type: "histogram", labels: h.labels, counts: h.counts, edges: h.edges, ...(color ? { color } : {}) },
    label: `histogram: ${h.labels.map((l, i) => `${l}: ${h.counts[i]}`).join(", ")}`,
  };
}

function Stat(props: { k: string; children: Child; testid?: string }) {
  return (
    <div class="stat" data-testid={props.testid}>
      <div class="k">{props.k}</div>
      <div class="v">{props.children}</div>
    </div>
  );
}

function passText(stats: RunStats): string {
  const ks = Object.keys(stats.passAtK);
  return ks.length ? ks.map((k) => `@${k} ${f3(stats.passAtK[k]!)}`).join(" · ") : "–";
}

// ---------------------------------------------------------------------------------------------
// Runs

export type RunSort = "env" | "model" | "date" | "reward" | "errors";

export function RunsPage(props: { root: string; runs: { run: Run; stats: RunStats }[]; sort: RunSort; dir: "asc" | "desc"; live: Live; message?: string | undefined }) {
  const header = (key: RunSort, label: string, num = false) => {
    const active = props.sort === key;
    const next = active && props.dir === "desc" ? "asc" : "desc";
    return (
      <th class={num ? "num" : ""} aria-sort={active ? (props.dir === "asc" ? "ascending" : "descending") : undefined}>
        <a href={`/?sort=${key}&dir=${next}`}>
          {label}
          {active ? (props.dir === "asc" ? " ↑" : " ↓") : ""}
        </a>
      </th>
    );
  };
  return (
    <ViewerPage title="Runs" live={props.live} current="runs">
      <h1>Eval runs</h1>
      <p class="lede">
        Saved by <code>envworker eval -s</code> under <code>{props.root}</code>. Pick two runs of the same environment to compare them.
      </p>
      {props.message ? (
        <div class="error-box" role="alert" style="margin-bottom:1rem">
          {props.message}
        </div>
      ) : null}
      {props.runs.length === 0 ? (
        <div class="card">
          No runs here yet. Save one with <code>npx envworker eval ENV -m MODEL -b URL -s</code>; it appears here while it runs.
        </div>
      ) : (
        <form action="/compare" method="get" data-live-region="runs" id="runs-region">
          <div class="table-wrap">
            <table data-testid="runs">
              <thead>
                <tr>
                  <th>
                    <span class="sr-only">compare</span>
                  </th>
                  {header("env", "Environment")}
                  {header("model", "Model")}
                  {header("date", "Date")}
                  <th class="num">n × r</th>
                  {header("reward", "Reward", true)}
                  <th class="num hide-narrow">pass@k</th>
                  {header("errors", "Errors", true)}
                  <th class="hide-narrow"></th>
                </tr>
              </thead>
              <tbody>
                {props.runs.map(({ run, stats }) => (
                  <tr data-run={run.id}>
                    <td>
                      <input type="checkbox" name="run" value={run.id} id={`pick-${run.id}`} aria-label={`compare ${run.env} ${run.model} ${when(run)}`} />
                    </td>
                    <td>
                      <a href={runHref(run)}>{run.env}</a>
                    </td>
                    <td>{run.model}</td>
                    <td class="nowrap">{when(run)}</td>
                    <td class="num nowrap">
                      {stats.n} × {stats.r}
                    </td>
                    <td class="num nowrap" data-testid="run-reward">
                      {f3(stats.reward.avg)} <span class="muted">± {f3(stats.reward.std)}</span>
                    </td>
                    <td class="num hide-narrow small nowrap">{passText(stats)}</td>
                    <td class="num">{stats.errors ? <span class="pill bad">{stats.errors}</span> : <span class="muted">0</span>}</td>
                    <td class="hide-narrow">
                      {run.complete ? null : (
                        <span class="pill good live">
                          {stats.rollouts}/{stats.expected}
                        </span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div class="row" style="margin-top:.75rem">
            <button type="submit" class="primary">
              Compare two selected runs
            </button>
            <span class="muted small">{props.runs.length} runs</span>
          </div>
        </form>
      )}
    </ViewerPage>
  );
}

// ---------------------------------------------------------------------------------------------
// One run

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
          {run.complete ? (
            <span class="pill">finished</span>
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
                      {e.shown.map((row) => (
                        <a
                          class={`chip ${rewardClass(row.reward, row.error)}`}
                          href={rolloutHref(run, row.example_id, row.rollout)}
                          title={`rollout ${row.rollout}: ${row.error ?? `reward ${row.reward ?? "–"}, ${row.turns} turns`}`}
                          aria-label={`example ${row.example_id} rollout ${row.rollout}: ${row.error ? "error" : `reward ${f3(row.reward ?? 0)}`}`}
                        >
                          {row.error !== null ? "error" : (row.reward ?? 0).toFixed(2)}
                        </a>
                      ))}
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

// ---------------------------------------------------------------------------------------------
// One rollout

function Json(props: { value: unknown }) {
  return <pre class="json">{typeof props.value === "string" ? props.value : JSON.stringify(props.value, null, 2)}</pre>;
}

export function RolloutPage(props: { run: Run; row: Row; prev: [number, number] | undefined; next: [number, number] | undefined }) {
  const { run, row } = props;
  const messages = [...row.prompt, ...row.completion] as ChatMessage[];
  const timing = row.timing ?? {};
  const usage = row.usage ?? { prompt_tokens: null, completion_tokens: null, total_tokens: null };
  const low = row.error !== null || (row.reward ?? 0) < 0.5;
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
        {row.error !== null ? <span class="pill bad">error</span> : null}
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

// ---------------------------------------------------------------------------------------------
// Two runs

function RunCard(props: { label: string; run: Run; stats: RunStats }) {
  const { run, stats } = props;
  return (
    <section class="card">
      <div class="muted small">{props.label}</div>
      <h2 style="margin:.1rem 0 .2rem">
        <a href={runHref(run)}>{run.model}</a>
      </h2>
      <p class="muted small">
        {when(run)} · {stats.n} × {stats.r} · run <code>{run.name}</code>
      </p>
      <div class="row">
        <span class="reward-big" style="font-size:1.6rem">
          {f3(stats.reward.avg)}
        </span>
        <span class="muted">± {f3(stats.reward.std)}</span>
        <span class="spacer"></span>
        <span class="small">{passText(stats)}</span>
      </div>
    </section>
  );
}

export function ComparePage(props: { a: Run; b: Run; sa: RunStats; sb: RunStats; rows: ComparedExample[] }) {
  const { a, b, rows } = props;
  const better = rows.filter((r) => r.diff > 1e-9).length;
  const worse = rows.filter((r) => r.diff < -1e-9).length;
  const differentPrompts = rows.filter((r) => !r.samePrompt).length;
  const meanDiff = rows.length ? rows.reduce((s, r) => s + r.diff, 0) / rows.length : 0;
  const sorted = [...rows].sort((x, y) => Math.abs(y.diff) - Math.abs(x.diff) || x.example_id - y.example_id);
  const scatter: ChartSpec = {
    type: "scatter",
    points: rows.map((r) => ({ x: r.a, y: r.b, label: `example ${r.example_id}` })),
    xLabel: `A: ${a.model}`,
    yLabel: `B: ${b.model}`,
  };
  const diffs = histogram(rows.map((r) => r.diff), { lo: -1, hi: 1 });
  return (
    <ViewerPage title={`compare · ${a.env}`}>
      <div class="crumbs">
        <a href="/">Runs</a> / compare
      </div>
      <h1>
        {a.env} <span class="muted" style="font-weight:500">· two runs</span>
      </h1>
      <div class="charts">
        <RunCard label="A" run={a} stats={props.sa} />
        <RunCard label="B" run={b} stats={props.sb} />
      </div>
      <div class="stats" style="margin-top:1rem">
        <Stat k="mean B − A" testid="mean-diff">
          {meanDiff >= 0 ? "+" : ""}
          {f3(meanDiff)}
        </Stat>
        <Stat k="B better">{better}</Stat>
        <Stat k="B worse">{worse}</Stat>
        <Stat k="same">{rows.length - better - worse}</Stat>
      </div>
      {differentPrompts ? (
        <div class="error-box" style="margin-top:1rem">
          {differentPrompts} of {rows.length} examples have different prompts in the two runs (another seed, split or args): their rewards are not comparable one to one.
        </div>
      ) : null}
      <div class="charts" style="margin-top:1rem">
        <section class="card" aria-labelledby="scatter-h">
          <h2 id="scatter-h">Mean reward per example</h2>
          <Chart spec={scatter} label={`scatter of ${rows.length} examples: A on x, B on y`} />
        </section>
        <section class="card" aria-labelledby="diff-h">
          <h2 id="diff-h">B − A per example</h2>
          <Chart spec={{ type: "histogram", labels: diffs.labels, counts: diffs.counts, color: "#6a3fb5" }} label={`histogram of differences: ${diffs.labels.map((l, i) => `${l}: ${diffs.counts[i]}`).join(", ")}`} />
        </section>
      </div>
      <div class="section-title">
        <h2>Examples</h2>
        <span class="muted small">largest difference first</span>
      </div>
      <div class="table-wrap">
        <table data-testid="compare">
          <thead>
            <tr>
              <th class="num">#</th>
              <th>prompt</th>
              <th class="num">A</th>
              <th class="num">B</th>
              <th class="num">B − A</th>
            </tr>
          </thead>
          <tbody>
            {sorted.map((r) => (
              <tr data-example={r.example_id}>
                <td class="num">{r.example_id}</td>
                <td class="small" style="max-width:52ch">
                  {r.prompt}
                  {r.samePrompt ? null : <span class="pill warn"> different prompt</span>}
                </td>
                <td class="num">
                  <a href={rolloutHref(a, r.example_id, 0)}>{f3(r.a)}</a>
                </td>
                <td class="num">
                  <a href={rolloutHref(b, r.example_id, 0)}>{f3(r.b)}</a>
                </td>
                <td class="num" data-testid="diff" style={`color:${r.diff > 1e-9 ? "var(--good)" : r.diff < -1e-9 ? "var(--bad)" : "var(--muted)"};font-weight:600`}>
                  {r.diff > 0 ? "+" : ""}
                  {f3(r.diff)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </ViewerPage>
  );
}

export function MessagePage(props: { title: string; message: string }) {
  return (
    <ViewerPage title={props.title}>
      <div class="crumbs">
        <a href="/">Runs</a>
      </div>
      <h1>{props.title}</h1>
      <p>{props.message}</p>
    </ViewerPage>
  );
}
