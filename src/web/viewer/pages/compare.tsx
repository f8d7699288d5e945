/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/** Two runs of one environment side by side: per-example mean rewards, their differences, a scatter. */
import type { Run } from "../runs.ts";
import { atShownPrecision, histogram, rewardAxis, type ComparedExample, type RunStats } from "../stats.ts";
import { Chart, f3, passText, rolloutHref, runHref, Stat, ViewerPage, when, type ChartSpec } from "./common.tsx";

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
  // Differences are at the precision shown (compareRuns): "same" is what reads as +0.000.
  const better = rows.filter((r) => r.diff > 0).length;
  const worse = rows.filter((r) => r.diff < 0).length;
  const differentPrompts = rows.filter((r) => !r.samePrompt).length;
  // From the means themselves: a mean of rounded differences would carry their rounding.
  const meanDiff = atShownPrecision(rows.length ? rows.reduce((s, r) => s + (r.b - r.a), 0) / rows.length : 0);
  const sorted = [...rows].sort((x, y) => Math.abs(y.diff) - Math.abs(x.diff) || x.example_id - y.example_id);
  const scatter: ChartSpec = {
    type: "scatter",
    points: rows.map((r) => ({ x: r.a, y: r.b, label: `example ${r.example_id}` })),
    // One range for both axes (y = x stays the diagonal), from the rewards: above 1, negative.
    range: rewardAxis(rows.flatMap((r) => [r.a, r.b])),
    xLabel: `A: ${a.model}`,
    yLabel: `B: ${b.model}`,
  };
  // Symmetric around 0, as wide as the largest difference (at least ±1).
  const spread = Math.max(1, ...rows.map((r) => Math.abs(r.diff)));
  const diffs = histogram(rows.map((r) => r.diff), { lo: -spread, hi: spread });
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
                <td class="num" data-testid="diff" style={`color:${r.diff > 0 ? "var(--good)" : r.diff < 0 ? "var(--bad)" : "var(--muted)"};font-weight:600`}>
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
