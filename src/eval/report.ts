/**
 * What `envworker eval` reports: the numbers (mean, std, per-rollout lists, pass@k), the summary
 * in the shape vf-eval prints, and the saved results (results.jsonl + metadata.json).
 *
 * A rollout that failed (error) counts as reward 0 and metrics 0 in every number here; the saved
 * rows keep reward/metrics null so the failure stays visible. A rollout whose episode finished but
 * one of whose reward functions failed (it threw; a judge that is down, unconfigured or answered
 * nonsense) keeps the reward the environment gave, the failed function scored 0, and is an error
 * too: counted in `Errors:`, in metadata.json's `errors` (and, by function, `reward_errors`), never
 * a pass for pass@k. A trainer would otherwise get zeros nobody sees.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RolloutResult, Usage } from "./rollout-result.ts";
import { JUDGE_METRICS } from "../env/rubric.ts";
import { SERVICE_ERRORS } from "../env/service-failures.ts";

export interface Stat {
  avg: number;
  std: number;
  /** byRollout[k][i] = the value of rollout k of example i; null when it did not run (an interrupted run). */
  byRollout: (number | null)[][];
}

export interface Summary {
  n: number;
  r: number;
  reward: Stat;
  metrics: Record<string, Stat>;
  /** k → mean over examples of the unbiased pass@k estimate; empty when r = 1. */
  passAtK: Record<string, number>;
  passThreshold: number;
  /** Rollouts that failed or had a reward function fail; `rewards`: by reward function, how many failed. */
  errors: {
    count: number;
    first: string[];
    failedRollouts: number;
    rewards: Record<string, number>;
    /** Rollouts scored while a sandbox or the judge failed (none of whose reward functions failed). */
    services: number;
  };
  usage: Usage;
  /** What judged rewards cost, over every rollout (absent when no judge was asked). */
  judge?: JudgeUsage;
  seconds: number;
  rolloutsPerSecond: number;
}

export interface JudgeUsage {
  calls: number;
  cache_hits: number;
  prompt_tokens: number;
  completion_tokens: number;
  ms: number;
}

/** The judge's costs, summed from the rollouts' judge_* metrics (see rubric.ts). */
function judgeUsage(results: readonly RolloutResult[]): JudgeUsage | undefined {
  const sum = (name: string) => results.reduce((n, row) => n + finite(row.metrics?.[name]), 0);
  if (!results.some((row) => row.metrics && "judge_calls" in row.metrics)) return undefined;
  return { calls: sum("judge_calls"), cache_hits: sum("judge_cache_hits"), prompt_tokens: sum("judge_prompt_tokens"), completion_tokens: sum("judge_completion_tokens"), ms: sum("judge_ms") };
}

export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** Population standard deviation (numpy's default, as vf-eval prints). */
export function std(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const m = mean(xs);
  return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
}

/**
 * The unbiased pass@k estimator (Chen et al. 2021): 1 - C(n-c, k) / C(n, k) for n samples of
 * which c are correct. The ratio is the product of (n-c-i)/(n-i) for i < k: no factorials, no
 * overflow, and one exact division for k = 1.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (k > n) throw new RangeError(`pass@${k} needs at least ${k} samples, got ${n}`);
  if (n - c < k) return 1;
  let ratio = 1;
  for (let i = 0; i < k; i++) ratio *= (n - c - i) / (n - i);
  return 1 - ratio;
}

/** The k reported for r rollouts per example: powers of two below r, and r itself. */
export function passKs(r: number): number[] {
  if (r <= 1) return [];
  const ks: number[] = [];
  for (let k = 1; k < r; k *= 2) ks.push(k);
  ks.push(r);
  return ks;
}

/** The reward functions that failed in a rollout (name → message), from the episode's `info.reward_errors`. */
export function rewardErrorsOf(row: Pick<RolloutResult, "env_info">): Record<string, string> | undefined {
  const errs = row.env_info?.reward_errors;
  if (errs === null || typeof errs !== "object" || Array.isArray(errs) || Object.keys(errs).length === 0) return undefined;
  return Object.fromEntries(Object.entries(errs).map(([name, message]) => [name, typeof message === "string" ? message : JSON.stringify(message)]));
}

/** What the sandboxes and judge failed at during the rollout, from its steps' `info.service_errors`. */
export function serviceErrorsOf(row: Pick<RolloutResult, "env_info">): string[] | undefined {
  const errs = row.env_info?.[SERVICE_ERRORS];
  if (!Array.isArray(errs) || errs.length === 0) return undefined;
  return errs.map((e) => (typeof e === "string" ? e : JSON.stringify(e)));
}

/** A rollout that failed, one of whose reward functions failed, or one scored while a sandbox or the judge failed: an error in every count. */
export function isError(row: Pick<RolloutResult, "error" | "env_info">): boolean {
  return row.error !== null || rewardErrorsOf(row) !== undefined || serviceErrorsOf(row) !== undefined;
}

/** Why a rollout counts as an error, in one line. */
export function errorLine(row: Pick<RolloutResult, "error" | "env_info">): string | undefined {
  if (row.error !== null) return row.error;
  const lines = Object.entries(rewardErrorsOf(row) ?? {}).map(([name, message]) => `reward function ${JSON.stringify(name)} failed (scored 0): ${message}`);
  for (const line of serviceErrorsOf(row) ?? []) lines.push(`scored while ${line}`);
  return lines.length === 0 ? undefined : lines.join("; ");
}

/**
 * Rows in example-major order (example i, rollout k at i·r + k), as runRollouts returns them. An
 * interrupted run has holes (rollouts that never finished): every number is over the rows there.
 */
export function summarize(rows: readonly (RolloutResult | undefined)[], n: number, r: number, opts: { passThreshold: number; seconds: number }): Summary {
  const results = rows.filter((row): row is RolloutResult => row !== undefined);
  const at = (i: number, k: number) => rows[i * r + k];
  const grid = (value: (row: RolloutResult) => number): Stat => {
    const byRollout = Array.from({ length: r }, (_, k) =>
      Array.from({ length: n }, (_, i) => {
        const row = at(i, k);
        return row === undefined ? null : value(row);
      }),
    );
    const flat = results.map(value);
    return { avg: mean(flat), std: std(flat), byRollout };
  };
  const reward = grid((row) => finite(row.reward));
  const names: string[] = [];
  // The judge's costs are not scores: reported on their own line (Judge:), summed.
  const costs: readonly string[] = JUDGE_METRICS;
  for (const row of results) for (const name of Object.keys(row.metrics ?? {})) if (!names.includes(name) && !costs.includes(name)) names.push(name);
  const metrics: Record<string, Stat> = {};
  for (const name of names) metrics[name] = grid((row) => finite(row.metrics?.[name]));

  const passAt: Record<string, number> = {};
  for (const k of passKs(r)) {
    // Over the examples whose r rollouts all finished.
    const perExample = Array.from({ length: n }, (_, i) => i).flatMap((i) => {
      let c = 0;
      for (let j = 0; j < r; j++) {
        const row = at(i, j);
        if (row === undefined) return [];
        if (!isError(row) && row.reward !== null && row.reward >= opts.passThreshold) c++;
      }
      return [passAtK(r, c, k)];
    });
    passAt[String(k)] = mean(perExample);
  }

  const failed = results.filter(isError);
  const rewardFailures: Record<string, number> = {};
  for (const row of results) for (const name of Object.keys(rewardErrorsOf(row) ?? {})) rewardFailures[name] = (rewardFailures[name] ?? 0) + 1;
  const usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  for (const row of results) {
    usage.prompt_tokens += row.usage.prompt_tokens;
    usage.completion_tokens += row.usage.completion_tokens;
    usage.total_tokens += row.usage.total_tokens;
  }
  return {
    n,
    r,
    reward,
    metrics,
    passAtK: passAt,
    passThreshold: opts.passThreshold,
    errors: {
      count: failed.length,
      first: failed.slice(0, 5).map((row) => `example ${row.example_id}, rollout ${row.rollout}: ${errorLine(row)}`),
      failedRollouts: results.filter((row) => row.error !== null).length,
      rewards: rewardFailures,
      services: results.filter((row) => row.error === null && rewardErrorsOf(row) === undefined && serviceErrorsOf(row) !== undefined).length,
    },
    usage,
    ...(judgeUsage(results) ? { judge: judgeUsage(results)! } : {}),
    seconds: opts.seconds,
    rolloutsPerSecond: opts.seconds > 0 ? results.length / opts.seconds : 0,
  };
}

function finite(v: number | null | undefined): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

/** Python's round(x, 3): correctly rounded (as toFixed), but exact ties go to even. */
export function round3(x: number): number {
  // toFixed rounds the exact binary value correctly; it only differs from Python on exact ties,
  // which at 3 decimals are the odd multiples of 1/16 (0.0625, 0.1875, ...): x·16 is exact.
  const sixteenths = x * 16;
  if (Number.isInteger(sixteenths) && Math.abs(sixteenths) % 2 === 1) {
    const lo = Math.floor(x * 1000);
    return (lo % 2 === 0 ? lo : lo + 1) / 1000;
  }
  const fixed = Number(x.toFixed(3));
  return fixed === 0 ? 0 : fixed;
}

/** A float as Python's repr prints it (1.0, 0.5, 1e-05). */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return `${x}.0`;
  const s = String(x);
  const m = /^(-?[\d.]+)e([+-])(\d+)$/.exec(s);
  if (m) return `${m[1]}e${m[2]}${m[3]!.padStart(2, "0")}`;
  if (Math.abs(x) < 1e-4) {
    const [mant, exp] = x.toExponential().split("e");
    return `${mant}e-${exp!.slice(1).padStart(2, "0")}`;
  }
  return s;
}

/** A list of numbers as Python prints a list of rounded floats: [1.0, 0.5, 0.333]. */
export function pyList(xs: readonly (number | null)[]): string {
  return `[${xs.map((x) => (x === null ? "None" : pyFloat(round3(x)))).join(", ")}]`;
}

export interface RunInfo {
  env: string;
  /** "in-process" or the envworker URL. */
  location: string;
  model: string;
  baseUrl: string;
  /** The run was stopped (Ctrl-C) before every rollout finished. */
  interrupted?: boolean;
}

function statBlock(name: string, s: Stat): string[] {
  return [`${name}: avg - ${s.avg.toFixed(3)}, std - ${s.std.toFixed(3)}`, ...s.byRollout.map((xs, k) => `r${k + 1}: ${pyList(xs)}`)];
}

function clip(text: string, max = 300): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

/** The end-of-run report, in the shape vf-eval prints. */
export function formatSummary(s: Summary, info: RunInfo, results: readonly RolloutResult[]): string {
  const lines = [
    ...(info.interrupted ? [`--- Interrupted: ${results.length} of ${s.n * s.r} rollouts finished; the numbers below are over those ---`] : []),
    "--- Evaluation ---",
    `Environment: ${info.env}${info.location === "in-process" ? "" : ` (${info.location})`}`,
    `Model: ${info.model}`,
    `Provider: ${info.baseUrl}`,
    `Examples: ${s.n}`,
    `Rollouts per example: ${s.r}`,
  ];
  const sample = results.find((row) => row.error === null) ?? results[0];
  if (sample) {
    const lastPrompt = [...sample.prompt].reverse().find((m) => m.role === "user");
    const said = sample.completion
      .map((m) => {
        const calls = m.role === "assistant" && m.tool_calls ? m.tool_calls.map((c) => ` ${c.function.name}(${c.function.arguments})`).join("") : "";
        return `${m.role}: ${m.content ?? ""}${calls}`;
      })
      .join(" | ");
    lines.push("--- Example ---", `prompt: ${clip(lastPrompt?.content ?? "")}`, `completion: ${clip(said)}`);
    if (sample.error === null) lines.push(`reward: ${pyFloat(round3(sample.reward ?? 0))}`);
  }
  lines.push("--- All ---", "Rewards:", ...statBlock("reward", s.reward));
  for (const [name, stat] of Object.entries(s.metrics)) lines.push(...statBlock(name, stat));
  const ks = Object.keys(s.passAtK);
  if (ks.length > 0) {
    lines.push(`pass@k (correct = reward >= ${pyFloat(s.passThreshold)}):`);
    for (const k of ks) lines.push(`pass@${k}: ${s.passAtK[k]!.toFixed(3)}`);
  }
  const total = info.interrupted ? results.length : s.n * s.r;
  lines.push(`Errors: ${s.errors.count}/${total} rollouts${errorsNote(s.errors)}`);
  for (const e of s.errors.first) lines.push(`  ${clip(e, 400)}`);
  lines.push(`Timing: ${s.seconds.toFixed(2)} s total, ${s.rolloutsPerSecond.toFixed(2)} rollouts/s`);
  const u = s.usage;
  const per = (x: number) => (total === 0 ? "0.0" : (x / total).toFixed(1));
  lines.push(
    `Usage: prompt ${u.prompt_tokens}, completion ${u.completion_tokens}, total ${u.total_tokens} tokens` +
      ` (per rollout: prompt ${per(u.prompt_tokens)}, completion ${per(u.completion_tokens)}, total ${per(u.total_tokens)})`,
  );
  if (s.judge) {
    const j = s.judge;
    lines.push(
      `Judge: ${j.calls} calls, ${j.cache_hits} cache hits, prompt ${j.prompt_tokens}, completion ${j.completion_tokens} tokens, ${(j.ms / 1000).toFixed(2)} s` +
        ` (per rollout: ${per(j.calls)} calls, ${per(j.prompt_tokens + j.completion_tokens)} tokens)`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** What the errors were: failed rollouts (reward 0), failed reward functions (that function 0), failed services. */
function errorsNote(e: Summary["errors"]): string {
  if (e.count === 0) return "";
  const fns = Object.entries(e.rewards);
  if (fns.length === 0 && e.services === 0) return " (counted as reward 0)";
  const parts: string[] = [];
  if (e.failedRollouts > 0) parts.push(`${e.failedRollouts} failed, counted as reward 0`);
  if (fns.length > 0) parts.push(`${e.count - e.failedRollouts - e.services} with a failed reward function, scored 0: ${fns.map(([name, k]) => `${name} ${k}x`).join(", ")}`);
  if (e.services > 0) parts.push(`${e.services} scored while a sandbox or the judge failed`);
  return ` (${parts.join("; ")})`;
}

/** `{output_dir}/evals/{env}--{model, "/" → "--"}/{run id}` */
export function resultsDir(outputDir: string, env: string, model: string, runId: string): string {
  return join(outputDir, "evals", `${env}--${model.replaceAll("/", "--")}`, runId);
}

/** A sortable, unique-enough run id: UTC timestamp + 6 random hex digits. */
export function newRunId(date: Date): string {
  const iso = date.toISOString(); // 2025-01-02T03:04:05.678Z
  const stamp = `${iso.slice(0, 10).replaceAll("-", "")}-${iso.slice(11, 19).replaceAll(":", "")}`;
  const rand = Array.from(crypto.getRandomValues(new Uint8Array(3)), (b) => b.toString(16).padStart(2, "0")).join("");
  return `${stamp}-${rand}`;
}

/** One results.jsonl row per rollout. */
export function resultRow(row: RolloutResult): Record<string, unknown> {
  return {
    example_id: row.example_id,
    rollout: row.rollout,
    reset: row.reset,
    episode_id: row.episode_id,
    prompt: row.prompt,
    completion: row.completion,
    answer: row.answer,
    info: row.info,
    env_info: row.env_info,
    reward: row.reward,
    metrics: row.metrics,
    done: row.done,
    truncated: row.truncated,
    turns: row.turns,
    error: row.error,
    retries: row.retries,
    timing: row.timing,
    usage: row.usage,
  };
}

export async function saveResults(dir: string, results: readonly RolloutResult[], metadata: Record<string, unknown>): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "results.jsonl"), results.map((row) => `${JSON.stringify(resultRow(row))}\n`).join(""));
  await writeFile(join(dir, "metadata.json"), `${JSON.stringify(metadata, null, 2)}\n`);
}
