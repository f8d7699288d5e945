/**
 * The numbers the viewer shows, computed from the rows (so a run still being written has them
 * too), the way `envworker eval` computes them (src/eval/report.ts): a failed rollout counts as
 * reward 0 and metric 0, pass@k uses the unbiased estimator over examples with all r rollouts.
 */
import { mean, passAtK, passKs, std } from "../../eval/report.ts";
import { isErrorRow, type Run, type RowSummary } from "./runs.ts";

export interface ExampleStats {
  example_id: number;
  prompt: string;
  rows: RowSummary[];
  mean: number;
}

export interface MetricStats {
  name: string;
  avg: number;
  std: number;
  values: number[];
}

export interface RunStats {
  n: number;
  r: number;
  /** n × r from the metadata, or what the rows show. */
  expected: number;
  rollouts: number;
  reward: { avg: number; std: number; values: number[] };
  passAtK: Record<string, number>;
  errors: number;
  metrics: MetricStats[];
  tokens: { prompt: number; completion: number; total: number };
  examples: ExampleStats[];
  maxTurns: number;
}

const value = (x: number | null | undefined) => (typeof x === "number" && Number.isFinite(x) ? x : 0);

export function runStats(run: Run): RunStats {
  const rows = run.rows;
  const n = run.meta.num_examples ?? new Set(rows.map((r) => r.example_id)).size;
  // reduce, not Math.max(...xs): a spread of 100k rows would overflow the stack.
  const r = run.meta.rollouts_per_example ?? rows.reduce((m, x) => Math.max(m, x.rollout + 1), 1);
  const rewards = rows.map((x) => (x.error === null ? value(x.reward) : 0));
  const byExample = new Map<number, RowSummary[]>();
  for (const row of rows) {
    const list = byExample.get(row.example_id) ?? [];
    list.push(row);
    byExample.set(row.example_id, list);
  }
  const examples: ExampleStats[] = [...byExample.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([id, list]) => ({ example_id: id, prompt: list[0]?.prompt ?? "", rows: list, mean: mean(list.map((x) => (x.error === null ? value(x.reward) : 0))) }));

  const threshold = run.meta.pass_threshold ?? 1;
  const full = examples.filter((e) => e.rows.length === r);
  const pass: Record<string, number> = {};
  if (full.length > 0)
    for (const k of passKs(r)) {
      pass[String(k)] = mean(full.map((e) => passAtK(r, e.rows.filter((x) => !isErrorRow(x) && x.reward !== null && x.reward >= threshold).length, k)));
    }

  const names: string[] = [];
  for (const row of rows) for (const name of Object.keys(row.metrics ?? {})) if (!names.includes(name)) names.push(name);
  const metrics = names.map((name) => {
    const values = rows.map((x) => (x.error === null ? value(x.metrics?.[name]) : 0));
    return { name, avg: mean(values), std: std(values), values };
  });
  const u = run.meta.usage;
  const tokens = run.complete && u ? { prompt: u.prompt_tokens ?? 0, completion: u.completion_tokens ?? 0, total: u.total_tokens ?? 0 } : { prompt: 0, completion: 0, total: rows.reduce((s, x) => s + x.tokens, 0) };
  return {
    n,
    r,
    expected: n * r,
    rollouts: rows.length,
    reward: { avg: mean(rewards), std: std(rewards), values: rewards },
    passAtK: pass,
    errors: rows.filter(isErrorRow).length,
    metrics,
    tokens,
    examples,
    maxTurns: rows.reduce((m, x) => Math.max(m, x.turns), 0),
  };
}

export interface Histogram {
  labels: string[];
  counts: number[];
  /** Each bin's [from, to): the last one includes its top. */
  edges: [number, number][];
}

/** The smallest of 1, 2, 2.5, 5 times a power of ten that is at least x (x > 0): a bin width or tick step that reads well. */
export function niceStep(x: number): number {
  if (!(x > 0) || !Number.isFinite(x)) return 1;
  const power = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * power >= x * (1 - 1e-12)) return Number((m * power).toPrecision(12));
  return 10 * power;
}

/** A multiple of a step as the decimal it is (0.3, not 0.30000000000000004; 0, not −0). */
const decimal = (x: number) => Number(x.toFixed(10)) || 0;

/**
 * Equal bins of a width that reads well (0.1, 0.2, 0.25, 0.5, 1, …) over [lo, hi] (default [0, 1]),
 * widened to the values' range when they leave it (a reward of 3.2, a negative one): about `bins`
 * of them (default 10); the last bin is closed.
 */
export function histogram(values: readonly number[], opts: { bins?: number; lo?: number; hi?: number } = {}): Histogram {
  const target = opts.bins ?? 10;
  let lo = opts.lo ?? 0;
  let hi = opts.hi ?? 1;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  const width = niceStep((hi - lo) / target);
  lo = decimal(Math.floor(lo / width + 1e-9) * width);
  const bins = Math.max(1, Math.ceil((hi - lo) / width - 1e-9));
  // Edges rounded so that 0.3 is an edge (not 0.30000000000000004), and values binned against
  // those same edges: a reward of exactly 0.7 is in 0.7–0.8, whatever 0.7 / 0.1 rounds to.
  const edge = (i: number) => Number((lo + i * width).toFixed(10));
  const edges = Array.from({ length: bins }, (_, i): [number, number] => [edge(i), edge(i + 1)]);
  const counts = new Array<number>(bins).fill(0);
  for (const v of values) {
    let i = Math.min(bins - 1, Math.max(0, Math.floor((v - lo) / width)));
    while (i + 1 < bins && v >= edges[i + 1]![0]) i++;
    while (i > 0 && v < edges[i]![0]) i--;
    counts[i]!++;
  }
  // Unicode minus, so that "−0.2 – 0" does not read as a range of dashes.
  const fmt = (x: number) => String(Number(x.toFixed(2))).replace("-", "\u2212");
  const labels = edges.map(([a, b]) => `${fmt(a)} – ${fmt(b)}`);
  return { labels, counts, edges };
}

/**
 * The range of a chart's reward axis: [0, 1] for rewards in it, else widened to the rewards (above
 * 1, negative) and out to a step that reads well, so every point is on the chart.
 */
export function rewardAxis(values: readonly number[]): [number, number] {
  let lo = 0;
  let hi = 1;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  const step = niceStep((hi - lo) / 5);
  return [decimal(Math.floor(lo / step + 1e-9) * step), decimal(Math.ceil(hi / step - 1e-9) * step)];
}

/** x at the precision the viewer shows (3 decimals), never −0: float noise (1.35 against 1.3500000000000003) is no difference. */
export function atShownPrecision(x: number): number {
  const r = Number(x.toFixed(3));
  return r === 0 ? 0 : r;
}

export interface RowFilter {
  min?: number | undefined;
  max?: number | undefined;
  errorsOnly?: boolean;
  minTurns?: number | undefined;
  maxTurns?: number | undefined;
}

export function matches(row: RowSummary, f: RowFilter): boolean {
  const reward = row.error === null ? value(row.reward) : 0;
  if (f.min !== undefined && reward < f.min) return false;
  if (f.max !== undefined && reward > f.max) return false;
  if (f.errorsOnly && !isErrorRow(row)) return false;
  if (f.minTurns !== undefined && row.turns < f.minTurns) return false;
  if (f.maxTurns !== undefined && row.turns > f.maxTurns) return false;
  return true;
}

export interface ComparedExample {
  example_id: number;
  prompt: string;
  a: number;
  b: number;
  /** B − A at the precision shown (atShownPrecision): what the table, the counts and the bins agree on. */
  diff: number;
  /** Both runs asked the same thing (their prompts match). */
  samePrompt: boolean;
}

/** Examples both runs have, with each run's mean reward and B − A. */
export function compareRuns(a: RunStats, b: RunStats): ComparedExample[] {
  const other = new Map(b.examples.map((e) => [e.example_id, e]));
  return a.examples.flatMap((e) => {
    const o = other.get(e.example_id);
    return o ? [{ example_id: e.example_id, prompt: e.prompt, a: e.mean, b: o.mean, diff: atShownPrecision(o.mean - e.mean), samePrompt: e.prompt === o.prompt }] : [];
  });
}
