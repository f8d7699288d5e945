/**
 * `envworker eval ENV`: roll an environment out against any OpenAI-compatible model, in process
 * or against a running envworker (--url), and report what vf-eval reports. Flags follow vf-eval.
 */
import { sandboxKindFromEnv, type Sandbox } from "../sandbox/index.ts";
import { createLocalSandboxes } from "../sandbox/local.ts";
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import type { Environment } from "../env/environment.ts";
import { zodIssues } from "../env/episode.ts";
import {
  DEFAULT_RETRY,
  InProcessDriver,
  planJobs,
  RemoteDriver,
  runRollouts,
  RunInterruptedError,
  type EpisodeDriver,
  type RetryPolicy,
  type RolloutResult,
} from "../eval/rollout.ts";
import { formatSummary, isError, newRunId, resultsDir, summarize } from "../eval/report.ts";
import { JudgeClient } from "../server/judge-client.ts";
import { judgeSettingsFromEnv } from "../server/config.ts";
import { LiveResults } from "../eval/results-writer.ts";
import { envworkerVersion } from "./version.ts";
import { unreachable } from "../eval/reachable.ts";

export { envworkerVersion };
import { Progress, type ProgressStream } from "../eval/progress.ts";

export const EVAL_USAGE = `usage: envworker eval ENV [options]

Roll ENV out against an OpenAI-compatible chat-completions model and report rewards. ENV is a
shipped environment's name, a module (./src/index.ts), an installed package, or the name of an
environment of the project's config (envworker.config.ts or package.json "envworker"); without
ENV, the project's environment when its config lists exactly one. With --url, ENV is the name of
an environment of that server, which may be left out when the server serves one.

model:
  -m, --model NAME             model name (default gpt-4.1-mini)
  -b, --api-base-url URL       chat-completions base URL (default $OPENAI_BASE_URL; one of the two is
                               required: OpenAI's own is -b https://api.openai.com/v1)
  -k, --api-key-var VAR        NAME of the environment variable with the key (default OPENAI_API_KEY)
  -t, --max-tokens N           max_tokens per model turn
  -T, --temperature X          sampling temperature
  -S, --sampling-args JSON     merged into every request; wins over -t/-T ("extra_body" is flattened)
run:
  -n, --num-examples N         examples (default 5; -1 = the whole split of an in-process dataset)
  -r, --rollouts-per-example N rollouts of each example (default 3)
  -c, --max-concurrent N       rollouts in flight at once (default 32)
  -a, --env-args JSON          environment args, e.g. '{"difficulty":"hard"}'
      --seed N                 base seed (default 0): example i resets with seed N+i and index i
      --split NAME             dataset split (default: the environment's first)
      --url URL                a running envworker's base URL (env at URL/envs/ENV) instead of in process
      --url-token-var VAR      NAME of the variable with the server's bearer token (default ENVWORKER_TOKEN;
                               sent only when set)
      --timeout SECONDS        per-rollout time limit (default 600)
      --max-attempts N         attempts per model call on 429/5xx/network errors (default 5)
      --retry-base-ms MS       first backoff delay, doubled each retry, with jitter (default 500)
      --pass-threshold X       a rollout is correct for pass@k when reward >= X (default 1.0)
output:
  -s, --save-results           write results.jsonl and metadata.json
  -o, --output-dir DIR         where (default outputs): DIR/evals/ENV--MODEL/RUN_ID/
  -h, --help`;

/** Where the command writes, and what it reads instead of the process (tests pass their own). */
export interface EvalIO {
  stdout?: { write(s: string): unknown };
  stderr?: ProgressStream;
  env?: Record<string, string | undefined>;
  /** Environments available in process (default: ENV loaded as a spec, see src/cli/load.ts). */
  environments?: readonly Environment[];
  /** Clock for the run id and dates. */
  now?: () => Date;
  /**
   * Stops the run (as Ctrl-C does): no rollout starts after it aborts, the summary of the finished
   * ones is printed and saved marked interrupted. Default: SIGINT and SIGTERM of this process.
   */
  signal?: AbortSignal;
}

class EvalUsageError extends Error {}

const OPTIONS = {
  model: { type: "string", short: "m" },
  "api-base-url": { type: "string", short: "b" },
  "api-key-var": { type: "string", short: "k" },
  "num-examples": { type: "string", short: "n" },
  "rollouts-per-example": { type: "string", short: "r" },
  "max-concurrent": { type: "string", short: "c" },
  "max-tokens": { type: "string", short: "t" },
  temperature: { type: "string", short: "T" },
  "sampling-args": { type: "string", short: "S" },
  "env-args": { type: "string", short: "a" },
  "save-results": { type: "boolean", short: "s" },
  "output-dir": { type: "string", short: "o" },
  url: { type: "string" },
  "url-token-var": { type: "string" },
  seed: { type: "string" },
  split: { type: "string" },
  timeout: { type: "string" },
  "max-attempts": { type: "string" },
  "retry-base-ms": { type: "string" },
  "pass-threshold": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

function int(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < min) throw new EvalUsageError(`--${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  return v;
}

function float(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const v = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(v)) throw new EvalUsageError(`--${name} must be a number, got ${JSON.stringify(raw)}`);
  return v;
}

function jsonObject(name: string, raw: string | undefined): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (err) {
    throw new EvalUsageError(`--${name} is not valid JSON: ${(err as Error).message}`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new EvalUsageError(`--${name} must be a JSON object`);
  return v as Record<string, unknown>;
}

/** -t/-T, then -S on top; `extra_body` (the Python SDK's escape hatch) is merged into the body. */
export function samplingArgs(maxTokens: number | undefined, temperature: number | undefined, extra: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (maxTokens !== undefined) out.max_tokens = maxTokens;
  if (temperature !== undefined) out.temperature = temperature;
  const { extra_body, ...rest } = extra ?? {};
  Object.assign(out, rest);
  if (extra_body !== undefined) {
    if (extra_body === null || typeof extra_body !== "object" || Array.isArray(extra_body)) throw new EvalUsageError("--sampling-args extra_body must be an object");
    Object.assign(out, extra_body);
  }
  return out;
}

export async function evalCommand(argv: string[], io: EvalIO = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const env = io.env ?? process.env;
  const now = io.now ?? (() => new Date());
  try {
    return await run(argv, { stdout, stderr, env, now, environments: io.environments, signal: io.signal });
  } catch (err) {
    if (err instanceof EvalUsageError || (err instanceof Error && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS"))) {
      stderr.write(`envworker eval: ${err.message}\n\n${EVAL_USAGE}\n`);
      return 2;
    }
    throw err;
  }
}

/** The environment to evaluate in process: `spec` among the given environments, or loaded as a spec. */
async function pickEnvironment(spec: string | undefined, given: readonly Environment[] | undefined): Promise<Environment> {
  let all: readonly Environment[];
  if (given) all = given;
  else {
    const { loadEnvironments, SpecError } = await import("./load.ts");
    try {
      all = (await loadEnvironments(spec === undefined ? [] : [spec])).environments;
    } catch (err) {
      if (err instanceof SpecError) throw new EvalUsageError(err.message);
      throw err;
    }
  }
  const named = spec === undefined ? undefined : all.find((e) => e.name === spec);
  if (named) return named;
  if (spec !== undefined && given) {
    const { didYouMean } = await import("../server/did-you-mean.ts");
    throw new EvalUsageError(`unknown environment ${JSON.stringify(spec)}${didYouMean(spec, all.map((e) => e.name))}; known: ${all.map((e) => e.name).join(", ")}`);
  }
  if (all.length === 1) return all[0]!;
  throw new EvalUsageError(`${spec === undefined ? "which environment?" : `${spec} holds several environments;`} give ENV, one of: ${all.map((e) => e.name).join(", ")}`);
}

interface Resolved {
  stdout: { write(s: string): unknown };
  stderr: ProgressStream;
  env: Record<string, string | undefined>;
  now: () => Date;
  environments: readonly Environment[] | undefined;
  signal: AbortSignal | undefined;
}

/**
 * Ctrl-C (SIGINT) or SIGTERM stops the run: `signal` aborts, and the run ends with what finished.
 * The bin shim forwards the signal the terminal also sent this process, so one Ctrl-C arrives
 * twice: signals in the first second after the first are that echo; one after it exits at once.
 */
function interruptOnSignals(stderr: ProgressStream): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  let first = 0;
  const on = (name: NodeJS.Signals) => {
    if (!controller.signal.aborted) {
      first = performance.now();
      stderr.write(`\nenvworker eval: ${name}: stopping; the rollouts in flight are cut short, those that finished are summarized and saved (again to quit at once)\n`);
      controller.abort(new RunInterruptedError(name));
      return;
    }
    if (performance.now() - first < 1000) return;
    stderr.write(`envworker eval: ${name} again: quitting without a summary\n`);
    process.exit(130);
  };
  const onInt = () => on("SIGINT");
  const onTerm = () => on("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  return {
    signal: controller.signal,
    dispose: () => {
      // Interrupted: the handlers stay while this process summarizes, saves and exits. The shim's
      // echo of the Ctrl-C can come late on a busy machine, and without a handler it killed the
      // process by SIGINT (no exit 130, the summary cut off).
      if (controller.signal.aborted) return;
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
    },
  };
}

/** parseArgs refuses `-n -1` (a value that looks like a flag): join negative numbers to their flag. */
function joinNegativeValues(argv: readonly string[]): string[] {
  const takesValue = new Set<string>();
  for (const [name, o] of Object.entries(OPTIONS)) {
    if (o.type !== "string") continue;
    takesValue.add(`--${name}`);
    if ("short" in o) takesValue.add(`-${o.short}`);
  }
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    if (takesValue.has(a) && next !== undefined && /^-\d+(\.\d+)?$/.test(next)) {
      out.push(a.startsWith("--") ? `${a}=${next}` : `${a}${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/**
 * ENV when --url is given without it (nor a URL that names it, `.../envs/NAME`): the server's only
 * environment; a server with several is asked which, with their names.
 */
async function serverEnvironment(origin: string, token: string | undefined): Promise<string> {
  let names: string[];
  try {
    const res = await fetch(new URL("envs", origin.endsWith("/") ? origin : `${origin}/`), { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(30_000) });
    const body = (await res.json()) as { envs?: { name?: unknown }[] };
    names = (body.envs ?? []).map((e) => String(e.name));
  } catch (err) {
    throw new EvalUsageError(`which environment of the server? give ENV (the server's list at ${origin} could not be read: ${(err as Error).message})`);
  }
  if (names.length === 1) return names[0]!;
  throw new EvalUsageError(`which environment of the server? give ENV: it serves ${names.length > 20 ? `${names.length}, among them ${names.slice(0, 20).join(", ")}` : names.join(", ")}`);
}

async function run(argv: string[], io: Resolved): Promise<number> {
  const { values, positionals } = parseArgs({ args: joinNegativeValues(argv), options: OPTIONS, allowPositionals: true });
  if (values.help) {
    io.stdout.write(`${EVAL_USAGE}\n`);
    return 0;
  }
  if (positionals.length > 1) throw new EvalUsageError(`one environment at a time, got ${positionals.join(", ")}`);
  let envName = positionals[0] ?? "";

  const model = values.model ?? "gpt-4.1-mini";
  const givenBase = values["api-base-url"] ?? (io.env.OPENAI_BASE_URL || undefined);
  // No silent default: a forgotten -b would send every rollout to OpenAI's public endpoint.
  if (givenBase === undefined) {
    throw new EvalUsageError("which model server? give its chat-completions base URL with -b (e.g. -b http://127.0.0.1:8001/v1 for a local vLLM; -b https://api.openai.com/v1 for OpenAI) or set OPENAI_BASE_URL");
  }
  const baseUrl = givenBase.replace(/\/+$/, "");
  if (!/^https?:\/\//.test(baseUrl)) throw new EvalUsageError(`-b must be an http(s) URL, got ${JSON.stringify(givenBase)}`);
  const keyVar = values["api-key-var"] ?? "OPENAI_API_KEY";
  let n = values["num-examples"] === "-1" ? -1 : int("num-examples", values["num-examples"], 5, 1);
  const r = int("rollouts-per-example", values["rollouts-per-example"], 3, 1);
  const concurrency = int("max-concurrent", values["max-concurrent"], 32, 1);
  const maxTokens = values["max-tokens"] === undefined ? undefined : int("max-tokens", values["max-tokens"], 0, 1);
  const temperature = float("temperature", values.temperature);
  const sampling = samplingArgs(maxTokens, temperature, jsonObject("sampling-args", values["sampling-args"]));
  const envArgs = jsonObject("env-args", values["env-args"]);
  const seed = int("seed", values.seed, 0, 0);
  const split = values.split;
  const timeoutS = float("timeout", values.timeout) ?? 600;
  if (timeoutS <= 0) throw new EvalUsageError("--timeout must be positive");
  const retry: RetryPolicy = {
    ...DEFAULT_RETRY,
    maxAttempts: int("max-attempts", values["max-attempts"], DEFAULT_RETRY.maxAttempts, 1),
    baseDelayMs: int("retry-base-ms", values["retry-base-ms"], DEFAULT_RETRY.baseDelayMs, 0),
  };
  const passThreshold = float("pass-threshold", values["pass-threshold"]) ?? 1;
  const outputDir = values["output-dir"] ?? "outputs";

  // The episode side.
  let driver: EpisodeDriver;
  let sandboxes: Sandbox[] = [];
  let envVersion: string | null = null;
  let effectiveSplit: string | undefined = split;
  if (values.url !== undefined) {
    let origin: string;
    try {
      const u = new URL(values.url);
      if (!envName) envName = /\/envs\/([a-z0-9][a-z0-9-]*)\/?$/.exec(u.pathname)?.[1] ?? "";
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("not http(s)");
      // The server's base URL is wanted; forgive one that already ends with /envs/ENV.
      u.pathname = u.pathname.replace(/\/+$/, "").replace(new RegExp(`/envs/${envName.replace(/[^a-z0-9-]/g, "")}$`), "");
      u.search = "";
      u.hash = "";
      origin = u.toString();
    } catch {
      throw new EvalUsageError(`--url must be an http(s) URL, got ${JSON.stringify(values.url)}`);
    }
    const tokenVar = values["url-token-var"] ?? "ENVWORKER_TOKEN";
    const token = io.env[tokenVar];
    if (values["url-token-var"] !== undefined && !token) throw new EvalUsageError(`--url-token-var: ${tokenVar} is not set`);
    if (!envName) envName = await serverEnvironment(origin, token);
    const remote = new RemoteDriver(origin, envName, { retry, headers: token ? { authorization: `Bearer ${token}` } : {} });
    try {
      const meta = await remote.metadata(AbortSignal.timeout(30_000));
      envVersion = typeof meta.version === "string" ? meta.version : null;
      // -n -1: the whole split, as many as the server's /examples counts.
      if (n === -1) n = await remote.exampleTotal(split, Object.keys(envArgs ?? {}).length ? envArgs : undefined, AbortSignal.timeout(30_000));
    } catch (err) {
      io.stderr.write(`envworker eval: cannot use ${envName} at ${remote.location}: ${(err as Error).message}\n`);
      return 1;
    }
    driver = remote;
  } else {
    const environment = await pickEnvironment(positionals[0], io.environments);
    envName = environment.name;
    envVersion = environment.version;
    let parsedArgs: unknown;
    try {
      parsedArgs = environment.parseArgs(envArgs);
    } catch (err) {
      const issues = zodIssues(err);
      const text = Array.isArray(issues) ? issues.map((i: { path: string; message: string }) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ") : String(issues);
      throw new EvalUsageError(`invalid --env-args for ${envName}: ${text}`);
    }
    const useSplit = split ?? environment.splits[0]!;
    effectiveSplit = useSplit;
    if (!environment.splits.includes(useSplit)) throw new EvalUsageError(`unknown split ${JSON.stringify(useSplit)}; ${envName} has ${environment.splits.join(", ")}`);
    const rows = environment.datasetFor(parsedArgs, useSplit);
    if (n === -1) {
      if (!rows) throw new EvalUsageError(`-n -1 (the whole split) needs a dataset; ${envName} generates its examples`);
      n = rows.length;
    } else if (rows && n > rows.length) {
      io.stderr.write(`note: the ${useSplit} split of ${envName} has ${rows.length} examples; evaluating all ${rows.length}\n`);
      n = rows.length;
    }
    // Every sandbox a server on this machine has (JavaScript and Python), lazy, each run in a state
    // no earlier run touched, as a server gives it.
    const local = createLocalSandboxes({ kind: sandboxKindFromEnv(io.env) });
    sandboxes = local.owned;
    // Judged rewards ask the judge the ENVWORKER_JUDGE_* settings name, as a server would.
    const judgeSettings = judgeSettingsFromEnv(io.env);
    const judge = judgeSettings ? new JudgeClient(judgeSettings) : undefined;
    driver = new InProcessDriver(environment, { services: (scope) => ({ ...local.forScope(scope), judge: judge?.forScope(scope) }) });
  }
  const disposeSandboxes = () => Promise.all(sandboxes.map((s) => s.dispose()));

  // The model side: the SDK's retries are off, ours (testable, abortable) are in runRollout.
  const key = io.env[keyVar];
  if (key === undefined || key === "") {
    io.stderr.write(`note: ${keyVar} is not set; sending a placeholder API key (fine for local servers)\n`);
  }
  const client = new OpenAI({ baseURL: baseUrl, apiKey: key || "EMPTY", maxRetries: 0 });
  const why = await unreachable(baseUrl);
  if (why !== undefined) {
    io.stderr.write(`envworker eval: cannot reach the model server ${baseUrl}: ${why} (-b sets it)\n`);
    await disposeSandboxes();
    return 1;
  }

  const jobs = planJobs(n, r, { seed, split, args: envArgs });
  const started = io.now();
  const runId = newRunId(started);
  const where = values.url !== undefined ? ` at ${driver.location}` : "";
  io.stderr.write(`envworker eval: ${envName}${where}, ${model} via ${baseUrl}: ${n} examples x ${r} rollouts, ${Math.min(concurrency, jobs.length)} at a time\n`);
  const progress = new Progress({ total: jobs.length, stream: io.stderr, label: envName });
  // With -s the run is written as it goes, so `envworker view` can show it live.
  const live = values["save-results"] ? new LiveResults(resultsDir(outputDir, envName, model, runId)) : undefined;
  // What metadata.json says of the run's settings, while it runs and at its end.
  const settings = {
    env: envName,
    env_version: envVersion,
    env_args: envArgs ?? {},
    model,
    base_url: baseUrl,
    envworker_url: values.url !== undefined ? driver.location : null,
    num_examples: n,
    rollouts_per_example: r,
  };
  // pid and host: the viewer tells a run still being written from one whose process died (kill -9).
  live?.start({ ...settings, seed, split: effectiveSplit ?? null, run_id: runId, started_at: started.toISOString(), pid: process.pid, host: hostname() });
  const t0 = performance.now();
  const signals = io.signal ? undefined : interruptOnSignals(io.stderr);
  try {
    const stopSignal = io.signal ?? signals!.signal;
    let all: RolloutResult[];
    try {
      all = await runRollouts({
        jobs,
        concurrency,
        driver,
        model: { client, model, sampling },
        retry,
        timeoutMs: Math.round(timeoutS * 1000),
        signal: stopSignal,
        onResult: (row) => {
          progress.tick(row.reward, isError(row));
          live?.append(row);
        },
      });
    } finally {
      await disposeSandboxes();
    }
    const seconds = (performance.now() - t0) / 1000;
    progress.finish();
    // Interrupted: what finished is the run; the rollouts cut short or never started are not in it.
    const interrupted = all.some((row) => row.interrupted);
    const results = all.filter((row) => !row.interrupted);

    const summary = summarize(
      all.map((row) => (row.interrupted ? undefined : row)),
      n,
      r,
      { passThreshold, seconds },
    );
    io.stdout.write(formatSummary(summary, { env: envName, location: driver.location, model, baseUrl, interrupted }, results));

    if (live) {
      const dir = live.dir;
      const avgMetrics: Record<string, number> = {};
      for (const [name, stat] of Object.entries(summary.metrics)) avgMetrics[name] = stat.avg;
      const metadata = {
        ...settings,
        max_concurrent: concurrency,
        seed,
        // In process the environment's default split is known; remotely the server reports it.
        split: effectiveSplit ?? (typeof results[0]?.env_info.split === "string" ? results[0].env_info.split : null),
        sampling_args: sampling,
        run_id: runId,
        date: started.toISOString().slice(0, 10),
        time: started.toISOString().slice(11, 19),
        started_at: started.toISOString(),
        time_ms: Math.round(seconds * 1000 * 1000) / 1000,
        avg_reward: summary.reward.avg,
        std_reward: summary.reward.std,
        avg_metrics: avgMetrics,
        pass_at_k: summary.passAtK,
        pass_threshold: passThreshold,
        ...(interrupted ? { interrupted: true, completed_rollouts: results.length } : {}),
        errors: summary.errors.count,
        // By reward function: how many rollouts it failed in (each also counted in `errors`).
        ...(Object.keys(summary.errors.rewards).length > 0 ? { reward_errors: summary.errors.rewards } : {}),
        // Rollouts scored while a sandbox or the judge failed (each also counted in `errors`).
        ...(summary.errors.services > 0 ? { service_errors: summary.errors.services } : {}),
        usage: summary.usage,
        ...(summary.judge ? { judge_usage: summary.judge } : {}),
        envworker_version: envworkerVersion(),
      };
      try {
        await live.finish(results, metadata);
      } catch (err) {
        io.stderr.write(`envworker eval: could not save the results to ${dir}: ${(err as Error).message}\n`);
        return 1;
      }
      io.stdout.write(`${interrupted ? "Saved the finished rollouts (interrupted) to" : "Saved results to"} ${dir}\nSee them in a browser: npx envworker view ${shellWord(dir)}\n`);
    }
    // 130: stopped by Ctrl-C, as a shell reports it.
    if (interrupted) return 130;
    return summary.errors.count === results.length && results.length > 0 ? 1 : 0;
  } finally {
    signals?.dispose();
  }
}

/** A path as one shell word: as is when it is plain, else single-quoted. */
function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}
