/**
 * The machinery of the hack-probe suite (test/envs/hack-probes.test.ts): a probe is an adversarial
 * policy (a script of model turns, given the episode as reset), played through the environment's
 * real reset and step until the episode ends, or scored through POST /score's scoreItems. Each
 * has the most it may score and what it scores now, with the default args and, where the
 * environment has one, with `faithful: true` (the reference's formula, which paid some hacks).
 */
import { expect } from "vitest";
import type { Environment } from "../../src/env/environment.ts";
import { resetEpisode, stepEpisode, type EpisodeState, type ResetOptions } from "../../src/env/episode.ts";
import type { Services } from "../../src/env/services.ts";
import { scoreItems } from "../../src/server/score.ts";
import { cpuSlowdown } from "./slowdown.ts";

export interface Probe {
  name: string;
  /** The model's turns, from the episode as reset; played in a cycle until the episode ends. */
  turns: (ep: EpisodeState) => string[];
  /** The most the probe may score with the default args: the task's own partial credit at most. */
  max: number;
  /** What it scores now with the default args (the table's figure). */
  scores: number;
  /** What it scores with `faithful: true` (only for environments that have the arg). */
  faithful?: number;
  /** Score it statelessly (POST /score's path): for replies larger than an episode may hold. */
  stateless?: boolean;
}

export interface ProbeOutcome {
  reward: number;
  metrics: Record<string, number>;
  errors: Record<string, string> | undefined;
  ms: number;
}

/** Play `turns` (cycled; none = empty turns) from a fresh episode until it ends. */
export async function playProbe(env: Environment, reset: ResetOptions, turns: (ep: EpisodeState) => string[], services: Services = {}): Promise<ProbeOutcome> {
  const t0 = performance.now();
  let { state } = resetEpisode(env, "probe", reset);
  const script = turns(state);
  for (let i = 0; !state.done; i++) {
    state = (await stepEpisode(env, state, { content: script.length === 0 ? "" : script[i % script.length]! }, services)).state;
  }
  return { reward: state.reward!, metrics: state.metrics ?? {}, errors: state.reward_errors ?? undefined, ms: performance.now() - t0 };
}

/** Score one reply to the episode `reset` deals, statelessly (the /score path), with the episode's answer and info. */
export async function scoreProbe(env: Environment, reset: ResetOptions, turns: (ep: EpisodeState) => string[], services: Services = {}): Promise<ProbeOutcome> {
  const { state } = resetEpisode(env, "probe", reset);
  const t0 = performance.now();
  const completion = turns(state).map((content) => ({ role: "assistant" as const, content }));
  const prompt = state.messages.slice(0, state.prompt_length);
  const [r] = await scoreItems(env, [{ prompt, completion, answer: state.answer, info: state.info, args: reset.args as Record<string, unknown> | undefined }], services);
  return { reward: r!.reward, metrics: r!.metrics, errors: r!.errors, ms: performance.now() - t0 };
}

/** Rows of the probe table, printed with PROBE_TABLE=1 (the figures the README of the suite quotes). */
export const table: { env: string; probe: string; max: number; scores: number; faithful: number | undefined }[] = [];

/** Most time a probe may take on an idle machine, scaled by the load measured now. */
const IDLE_BOUND_MS = 3000;

/**
 * Run one probe with the default args (and with `faithful: true` when `probe.faithful` is given)
 * and check it: at most `max`, exactly `scores` (and `faithful`), no reward function failing
 * unless `allowErrors`, and within the time bound.
 */
export async function checkProbe(env: Environment, reset: ResetOptions, probe: Probe, services: Services = {}, opts: { allowErrors?: boolean; boundMs?: number } = {}): Promise<ProbeOutcome> {
  const run = probe.stateless ? scoreProbe : playProbe;
  const outcome = await run(env, reset, probe.turns, services);
  const where = `${env.name} × ${probe.name}`;
  if (!opts.allowErrors) expect(outcome.errors, `${where}: reward errors`).toBeUndefined();
  expect(outcome.reward, `${where}: at most ${probe.max}`).toBeLessThanOrEqual(probe.max + 1e-12);
  expect(outcome.reward, `${where}: scores`).toBeCloseTo(probe.scores, 9);
  expect(outcome.ms, `${where}: time`).toBeLessThan((opts.boundMs ?? IDLE_BOUND_MS) * cpuSlowdown());
  let faithful: number | undefined;
  if (probe.faithful !== undefined) {
    const ref = await run(env, { ...reset, args: { ...(reset.args ?? {}), faithful: true } }, probe.turns, services);
    if (!opts.allowErrors) expect(ref.errors, `${where} (faithful): reward errors`).toBeUndefined();
    expect(ref.reward, `${where} (faithful)`).toBeCloseTo(probe.faithful, 9);
    faithful = ref.reward;
  }
  table.push({ env: env.name, probe: probe.name, max: probe.max, scores: outcome.reward, faithful });
  return outcome;
}

/** Print the table (PROBE_TABLE=1): env, probe, most allowed, default score, faithful score. */
export function printTable(): void {
  if (!process.env.PROBE_TABLE) return;
  const f = (x: number | undefined) => (x === undefined ? "—" : String(Math.round(x * 10_000) / 10_000));
  const lines = table.map((r) => `| ${r.env} | ${r.probe} | ${f(r.max)} | ${f(r.scores)} | ${f(r.faithful)} |`);
  console.log(["| env | probe | max allowed | default | faithful |", "| --- | --- | --- | --- | --- |", ...lines].join("\n"));
}

/** The first seed (from 0) whose episode satisfies `pred`: probes pick their deal by what they need, not by a magic number. */
export function seedWhere(env: Environment, args: Record<string, unknown>, pred: (ep: EpisodeState) => boolean, limit = 2000): number {
  for (let seed = 0; seed < limit; seed++) if (pred(resetEpisode(env, "pick", { seed, args }).state)) return seed;
  throw new Error(`${env.name}: no seed below ${limit} deals the episode the probe needs`);
}

/** About 1 MiB of text: the huge reply every environment must read in bounded time. */
export const MEBIBYTE_OF_TEXT = "the quick brown fox jumps over the lazy dog 0123456789\n".repeat(Math.ceil((1 << 20) / 55)).slice(0, 1 << 20);

/** Latin letters swapped for Cyrillic look-alikes (а е о р с х у і): the text looks the same, is not. */
export function lookalike(text: string): string {
  const map: Record<string, string> = { a: "а", e: "е", o: "о", p: "р", c: "с", x: "х", y: "у", i: "і", A: "А", E: "Е", O: "О", P: "Р", C: "С", H: "Н", T: "Т", B: "В", M: "М", K: "К", X: "Х" };
  return Array.from(text, (ch) => map[ch] ?? ch).join("");
}

/** ASCII digits and letters as their fullwidth forms (U+FF10..): look-alikes of another width. */
export function fullwidth(text: string): string {
  return Array.from(text, (ch) => (/[0-9A-Za-z]/.test(ch) ? String.fromCodePoint(ch.codePointAt(0)! + 0xfee0) : ch)).join("");
}
