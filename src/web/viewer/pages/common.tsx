/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/**
 * What the viewer's pages share: the page shell, charts (<canvas data-chart="{spec}"> that the
 * client script draws with Chart.js), stat cards, number formats and URLs. Regions marked
 * data-live-region are refreshed in place while a run is still being written.
 */
import type { Child } from "hono/jsx";
import { Page } from "../../ui/layout.tsx";
import type { Run } from "../runs.ts";
import { histogram, type RunStats } from "../stats.ts";

export interface ChartSpec {
  type: "histogram" | "scatter";
  labels?: string[];
  counts?: number[];
  /** Bin edges, so a click on a bar can filter by its range. */
  edges?: [number, number][];
  points?: { x: number; y: number; label: string }[];
  /** A scatter's range, the same on both axes (default [0, 1]; stats.ts rewardAxis). */
  range?: [number, number];
  xLabel?: string;
  yLabel?: string;
  color?: string;
}

export const f3 = (x: number) => x.toFixed(3);
export const runHref = (run: Run) => `/runs/${encodeURIComponent(run.group)}/${encodeURIComponent(run.name)}`;
export const rolloutHref = (run: Run, example: number, rollout: number) => `${runHref(run)}/${example}/${rollout}`;
export const when = (run: Run) => {
  const iso = run.meta.started_at;
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : run.name;
};
export const rewardClass = (x: number | null, error: string | null) => (error !== null ? "err" : x === null ? "r-lo" : x >= 0.999 ? "r-hi" : x > 0 ? "r-mid" : "r-lo");

/** A page that follows a run still being written polls `live.url`, whose answer changes with `live.version`. */
export interface Live {
  url: string;
  version: string;
}

export function ViewerPage(props: { title: string; children: Child; live?: Live | undefined; current?: string }) {
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

export function Chart(props: { spec: ChartSpec; label: string; small?: boolean }) {
  return (
    <div class={props.small ? "chart-box small" : "chart-box"}>
      <canvas data-chart={JSON.stringify(props.spec)} role="img" aria-label={props.label}></canvas>
    </div>
  );
}

export function rewardHistogram(values: number[], color?: string): { spec: ChartSpec; label: string } {
  const h = histogram(values);
  return {
    spec: { type: "histogram", labels: h.labels, counts: h.counts, edges: h.edges, ...(color ? { color } : {}) },
    label: `histogram: ${h.labels.map((l, i) => `${l}: ${h.counts[i]}`).join(", ")}`,
  };
}

export function Stat(props: { k: string; children: Child; testid?: string }) {
  return (
    <div class="stat" data-testid={props.testid}>
      <div class="k">{props.k}</div>
      <div class="v">{props.children}</div>
    </div>
  );
}

export function passText(stats: RunStats): string {
  const ks = Object.keys(stats.passAtK);
  return ks.length ? ks.map((k) => `@${k} ${f3(stats.passAtK[k]!)}`).join(" · ") : "–";
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
