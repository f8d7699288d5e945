/**
 * The viewer in the browser: draws the pages' charts (<canvas data-chart>) with Chart.js (loaded
 * before this script from /assets/chart.umd.min.js), and keeps a page whose run is still being
 * written up to date: it polls the run's version and, when it changed, swaps in the page's
 * data-live-region parts from a fresh copy (forms and focus elsewhere stay as they are).
 */
import type { Chart as ChartType, ChartConfiguration } from "chart.js";
import type { ChartSpec } from "../pages/common.tsx";

declare const Chart: typeof ChartType;

const ACCENT = "#2f54c6";
const GRID = "#ecebe6";
const TEXT = "#676760";
const POLL_MS = 1500;

function withAlpha(hex: string, alpha: number): string {
  const n = Number.parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

function config(spec: ChartSpec): ChartConfiguration {
  const color = spec.color ?? ACCENT;
  const scales = {
    x: { grid: { color: GRID }, ticks: { color: TEXT, maxRotation: 0, autoSkipPadding: 8 } },
    y: { grid: { color: GRID }, ticks: { color: TEXT, precision: 0 }, beginAtZero: true },
  };
  if (spec.type === "scatter") {
    const points = spec.points ?? [];
    const [lo, hi] = spec.range ?? [0, 1];
    return {
      type: "scatter",
      data: {
        datasets: [
          { label: "examples", data: points.map((p) => ({ x: p.x, y: p.y })), backgroundColor: withAlpha(color, 0.55), borderColor: color, pointRadius: 4, pointHoverRadius: 6, clip: false },
          // y = x: above it B did better.
          { type: "line", label: "same reward", data: [{ x: lo, y: lo }, { x: hi, y: hi }], borderColor: "#b9b8b0", borderDash: [5, 4], borderWidth: 1, pointRadius: 0 },
        ],
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        layout: { padding: 6 },
        plugins: {
          legend: { display: false },
          tooltip: { callbacks: { label: (ctx) => (ctx.datasetIndex === 0 ? `${points[ctx.dataIndex]?.label}: A ${(ctx.parsed.x ?? 0).toFixed(3)}, B ${(ctx.parsed.y ?? 0).toFixed(3)}` : "") } },
        },
        scales: {
          x: { ...scales.x, min: lo, max: hi, title: { display: true, text: spec.xLabel ?? "A", color: TEXT } },
          y: { ...scales.y, min: lo, max: hi, beginAtZero: false, ticks: { color: TEXT }, title: { display: true, text: spec.yLabel ?? "B", color: TEXT } },
        },
      },
    };
  }
  return {
    type: "bar",
    data: { labels: spec.labels ?? [], datasets: [{ label: "rollouts", data: spec.counts ?? [], backgroundColor: withAlpha(color, 0.8), hoverBackgroundColor: color, borderRadius: 3, barPercentage: 0.92, categoryPercentage: 0.96 }] },
    options: {
      animation: false,
      maintainAspectRatio: false,
      plugins: { legend: { display: false } },
      // Every bin keeps its label (Chart.js would drop every other one where "−0.6 – −0.4" does
      // not fit): tilted instead when they are too wide to stand side by side.
      scales: { ...scales, x: { ...scales.x, ticks: { ...scales.x.ticks, autoSkip: false, maxRotation: 60 } } },
      onHover: (e, active) => {
        const target = e.native?.target as HTMLElement | undefined;
        if (target && spec.edges) target.style.cursor = active.length ? "pointer" : "default";
      },
      onClick: (_e, active) => {
        const i = active[0]?.index;
        const edge = i === undefined ? undefined : spec.edges?.[i];
        if (!edge) return;
        // The bar's rollouts: its range as the reward filter (the last bin includes its top).
        const url = new URL(location.href);
        url.searchParams.set("min", String(edge[0]));
        // [from, to): "reward ≤ to" minus a hair, except for the last bin, which includes its top.
        url.searchParams.set("max", String(i === (spec.edges?.length ?? 0) - 1 ? edge[1] : edge[1] - 1e-9));
        url.searchParams.delete("page");
        url.hash = "examples";
        location.assign(url);
      },
    },
  };
}

function drawCharts(root: ParentNode): void {
  if (typeof Chart === "undefined") return;
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  for (const canvas of Array.from(root.querySelectorAll<HTMLCanvasElement>("canvas[data-chart]"))) {
    Chart.getChart(canvas)?.destroy();
    try {
      new Chart(canvas, config(JSON.parse(canvas.dataset.chart ?? "{}") as ChartSpec));
    } catch (err) {
      console.error("chart", err);
    }
  }
}

interface Live {
  url: string;
  version: string;
}

/** Ticked checkboxes (the runs picked for a comparison) survive a region being replaced. */
function keepChecked(from: HTMLElement, to: HTMLElement): void {
  for (const box of Array.from(from.querySelectorAll<HTMLInputElement>("input[type=checkbox]:checked"))) {
    const same = Array.from(to.querySelectorAll<HTMLInputElement>("input[type=checkbox]")).find((b) => b.name === box.name && b.value === box.value);
    if (same) same.checked = true;
  }
}

async function follow(live: Live): Promise<void> {
  let version = live.version;
  for (;;) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    let next: { version?: string };
    try {
      next = (await (await fetch(live.url, { cache: "no-store" })).json()) as typeof next;
    } catch {
      continue;
    }
    if (next.version === undefined || next.version === version) continue;
    version = next.version;
    let fresh: Document;
    try {
      fresh = new DOMParser().parseFromString(await (await fetch(location.href, { cache: "no-store" })).text(), "text/html");
    } catch {
      continue;
    }
    for (const region of Array.from(document.querySelectorAll<HTMLElement>("[data-live-region]"))) {
      const replacement = fresh.getElementById(region.id);
      if (!replacement) continue;
      keepChecked(region, replacement);
      region.replaceWith(replacement);
      drawCharts(replacement);
    }
    const boot = JSON.parse(fresh.getElementById("boot")?.textContent ?? "{}") as { live?: Live };
    if (!boot.live) return; // the run finished: nothing more will change
  }
}

drawCharts(document);
const boot = JSON.parse(document.getElementById("boot")?.textContent ?? "{}") as { live?: Live };
if (boot.live) void follow(boot.live);
