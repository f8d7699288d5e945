/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/** The viewer's first page: every saved run, sortable, with the two to compare picked here. */
import type { Run } from "../runs.ts";
import type { RunStats } from "../stats.ts";
import { f3, passText, runHref, ViewerPage, when, type Live } from "./common.tsx";

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
                      {run.complete && run.meta.interrupted ? (
                        <span class="pill warn" title="interrupted: the rollouts that finished">
                          interrupted {stats.rollouts}/{stats.expected}
                        </span>
                      ) : run.complete ? null : run.abandoned ? (
                        <span class="pill bad" title="its eval process is gone (killed) before it could finish">
                          stopped {stats.rollouts}/{stats.expected}
                        </span>
                      ) : (
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
            <span class="muted small">{props.runs.length} {props.runs.length === 1 ? "run" : "runs"}</span>
          </div>
        </form>
      )}
    </ViewerPage>
  );
}
