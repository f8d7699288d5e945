/**
 * Saved eval runs on disk (`envworker eval -s`: {root}/{env}--{model}/{run id}/ with
 * results.jsonl and metadata.json), read for the viewer. Only what the pages list is kept in
 * memory per rollout (reward, metrics, turns, error, timing, tokens and where its line is); a
 * transcript is read from its line when asked for. A results.jsonl that grows (a run still being
 * written) is read on from where the last read stopped; one that was replaced is read again.
 */
import { open, readdir, readFile, stat } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { serviceErrorsOf } from "../../eval/report.ts";
import type { JsonObject } from "../../env/messages.ts";

/** metadata.json, leniently: a run still being written has only its settings. */
const MetaSchema = z
  .object({
    env: z.string().optional(),
    env_version: z.string().nullish(),
    env_args: z.record(z.string(), z.unknown()).nullish(),
    model: z.string().optional(),
    base_url: z.string().nullish(),
    envworker_url: z.string().nullish(),
    num_examples: z.number().int().nonnegative().optional(),
    rollouts_per_example: z.number().int().positive().optional(),
    max_concurrent: z.number().nullish(),
    seed: z.number().nullish(),
    split: z.string().nullish(),
    sampling_args: z.record(z.string(), z.unknown()).nullish(),
    run_id: z.string().optional(),
    started_at: z.string().optional(),
    time_ms: z.number().nullish(),
    avg_reward: z.number().nullish(),
    std_reward: z.number().nullish(),
    pass_at_k: z.record(z.string(), z.number()).nullish(),
    pass_threshold: z.number().nullish(),
    errors: z.number().nullish(),
    /** Stopped by Ctrl-C: the results are the rollouts that finished. */
    interrupted: z.boolean().nullish(),
    /** While the run is written: the eval process and its machine (see `abandoned`). */
    pid: z.number().int().nullish(),
    host: z.string().nullish(),
    usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() }).partial().nullish(),
    envworker_version: z.string().nullish(),
  })
  .loose();
export type Meta = z.infer<typeof MetaSchema>;

const num = z.number().nullish().catch(null);
const MessageSchema = z
  .object({
    role: z.string(),
    content: z.string().nullable().catch(null),
    tool_calls: z
      .array(z.object({ id: z.string().catch(""), type: z.string().optional(), function: z.object({ name: z.string().catch("?"), arguments: z.string().catch("") }) }).loose())
      .optional()
      .catch(undefined),
    tool_call_id: z.string().optional().catch(undefined),
    reasoning_content: z.string().optional().catch(undefined),
  })
  .loose();

/** A results.jsonl row, leniently: what the viewer shows; anything else is kept as it is. */
const RowSchema = z
  .object({
    example_id: z.number().int().nonnegative(),
    rollout: z.number().int().nonnegative(),
    reset: z.record(z.string(), z.unknown()).nullish().catch(null),
    episode_id: z.string().nullish().catch(null),
    prompt: z.array(MessageSchema).catch([]),
    completion: z.array(MessageSchema).catch([]),
    answer: z.unknown().optional(),
    info: z.unknown().optional(),
    env_info: z.record(z.string(), z.unknown()).nullish().catch(null),
    reward: num,
    metrics: z.record(z.string(), z.number()).nullish().catch(null),
    done: z.boolean().catch(false),
    truncated: z.boolean().catch(false),
    turns: z.number().int().nonnegative().catch(0),
    error: z.string().nullish().catch(null),
    retries: z.number().catch(0),
    timing: z.record(z.string(), z.number()).nullish().catch(null),
    usage: z.object({ prompt_tokens: num, completion_tokens: num, total_tokens: num }).nullish().catch(null),
  })
  .loose();
export type Row = z.infer<typeof RowSchema>;
export type RowMessage = z.infer<typeof MessageSchema>;

/** The episode's `reward_errors` (what eval saves in env_info), or null when none failed. */
export function rewardErrorsIn(envInfo: Record<string, unknown> | null | undefined): Record<string, string> | null {
  const errs = envInfo?.reward_errors;
  if (errs === null || typeof errs !== "object" || Array.isArray(errs) || Object.keys(errs).length === 0) return null;
  return Object.fromEntries(Object.entries(errs).map(([name, message]) => [name, typeof message === "string" ? message : JSON.stringify(message)]));
}

/** What the sandboxes and judge failed at while the rollout was scored (eval's env_info.service_errors), or null. */
export function serviceErrorsIn(envInfo: Record<string, unknown> | null | undefined): string[] | null {
  return serviceErrorsOf({ env_info: (envInfo ?? {}) as JsonObject }) ?? null;
}

/** A rollout that failed, one of whose reward functions failed, or one scored while a service failed: an error in the counts and the filter. */
export const isErrorRow = (row: { error: string | null; rewardErrors: Record<string, string> | null; serviceErrors: string[] | null }) =>
  row.error !== null || row.rewardErrors !== null || row.serviceErrors !== null;

export interface RowSummary {
  example_id: number;
  rollout: number;
  reward: number | null;
  metrics: Record<string, number> | null;
  error: string | null;
  /** Reward functions that failed (name → message; they scored 0): the row counts as an error. */
  rewardErrors: Record<string, string> | null;
  /** What a sandbox or the judge failed at while it was scored: the row counts as an error. */
  serviceErrors: string[] | null;
  turns: number;
  done: boolean;
  truncated: boolean;
  total_ms: number | null;
  tokens: number;
  /** The last user message of the prompt, cut short: what the example asks. */
  prompt: string;
  /** Where the row's line is in results.jsonl. */
  offset: number;
  length: number;
}

export interface Run {
  /** `{group}/{name}`: the run's directory under the root. */
  id: string;
  group: string;
  name: string;
  dir: string;
  meta: Meta;
  env: string;
  model: string;
  /** metadata.json has the results (the run finished). */
  complete: boolean;
  /** Not complete, and the eval process writing it is gone (killed without a chance to finish): not live. */
  abandoned: boolean;
  /** Rollouts in example order. */
  rows: RowSummary[];
  /** Lines of results.jsonl that are not a readable row. */
  badLines: number;
  /** Changes whenever the run's files do. */
  version: string;
}

interface Cache {
  ino: number;
  parsed: number;
  rows: Map<string, RowSummary>;
  bad: number;
  metaKey: string;
  meta: Meta;
  metaOk: boolean;
}

const CHUNK = 1 << 20;
const PROMPT_EXCERPT = 240;

function clip(text: string, max: number): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** Calls `line` for every complete line of [start, end); returns where the last one ended. */
async function scanLines(path: string, start: number, end: number, line: (text: Buffer, offset: number) => void): Promise<number> {
  const fh = await open(path, "r");
  try {
    let pos = start;
    // The start of a line that has not ended yet, in pieces: joined once, when it ends.
    let pending: Buffer[] = [];
    let lineStart = start;
    while (pos < end) {
      const buf = Buffer.alloc(Math.min(CHUNK, end - pos));
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      const data = buf.subarray(0, bytesRead);
      let from = 0;
      for (let nl = data.indexOf(10); nl !== -1; nl = data.indexOf(10, from)) {
        const piece = data.subarray(from, nl);
        line(pending.length ? Buffer.concat([...pending, piece]) : piece, lineStart);
        pending = [];
        from = nl + 1;
        lineStart = pos + from;
      }
      if (from < data.length) pending.push(data.subarray(from));
      pos += bytesRead;
    }
    return lineStart;
  } finally {
    await fh.close();
  }
}

export class RunStore {
  private cache = new Map<string, Cache>();

  constructor(readonly root: string) {}

  /** Every run under the root, newest first. */
  async list(): Promise<Run[]> {
    const runs: Run[] = [];
    for (const group of await subdirs(this.root)) {
      for (const name of await subdirs(join(this.root, group))) {
        const run = await this.load(group, name);
        if (run) runs.push(run);
      }
    }
    return runs.sort((a, b) => (b.meta.started_at ?? b.name).localeCompare(a.meta.started_at ?? a.name));
  }

  /** A run by id; undefined unless it is a run directory under the root. */
  async get(id: string): Promise<Run | undefined> {
    const m = /^([^/\\]+)\/([^/\\]+)$/.exec(id);
    if (!m || m[1]!.startsWith(".") || m[2]!.startsWith(".")) return undefined;
    // Only a name the root really lists: an id never becomes a path by itself.
    if (!(await subdirs(this.root)).includes(m[1]!)) return undefined;
    if (!(await subdirs(join(this.root, m[1]!))).includes(m[2]!)) return undefined;
    return this.load(m[1]!, m[2]!);
  }

  /** One rollout's whole row (its transcript). */
  async row(run: Run, exampleId: number, rollout: number): Promise<Row | undefined> {
    const s = run.rows.find((r) => r.example_id === exampleId && r.rollout === rollout);
    if (!s) return undefined;
    const fh = await open(join(run.dir, "results.jsonl"), "r");
    try {
      const buf = Buffer.alloc(s.length);
      await fh.read(buf, 0, s.length, s.offset);
      const parsed = RowSchema.safeParse(JSON.parse(buf.toString("utf8")));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    } finally {
      await fh.close();
    }
  }

  private async load(group: string, name: string): Promise<Run | undefined> {
    const dir = join(this.root, group, name);
    const resultsPath = join(dir, "results.jsonl");
    const metaPath = join(dir, "metadata.json");
    const [rs, ms] = await Promise.all([stat(resultsPath).catch(() => null), stat(metaPath).catch(() => null)]);
    if (!rs && !ms) return undefined;
    const id = `${group}/${name}`;
    let c = this.cache.get(id);
    if (!c || (rs && (rs.ino !== c.ino || rs.size < c.parsed))) {
      c = { ino: rs?.ino ?? 0, parsed: 0, rows: new Map(), bad: 0, metaKey: "", meta: {}, metaOk: false };
      this.cache.set(id, c);
    }
    if (rs && rs.size > c.parsed) {
      const cache = c;
      cache.parsed = await scanLines(resultsPath, cache.parsed, rs.size, (text, offset) => {
        if (text.length === 0) return;
        let row: Row | undefined;
        try {
          const parsed = RowSchema.safeParse(JSON.parse(text.toString("utf8")));
          if (parsed.success) row = parsed.data;
        } catch {
          // not JSON: counted below
        }
        if (!row) {
          cache.bad++;
          return;
        }
        const user = [...row.prompt].reverse().find((m) => m.role === "user");
        cache.rows.set(`${row.example_id}/${row.rollout}`, {
          example_id: row.example_id,
          rollout: row.rollout,
          reward: typeof row.reward === "number" ? row.reward : null,
          metrics: row.metrics ?? null,
          error: row.error ?? null,
          rewardErrors: rewardErrorsIn(row.env_info),
          serviceErrors: serviceErrorsIn(row.env_info),
          turns: row.turns,
          done: row.done,
          truncated: row.truncated,
          total_ms: typeof row.timing?.total_ms === "number" ? row.timing.total_ms : null,
          tokens: row.usage?.total_tokens ?? 0,
          prompt: clip(user?.content ?? "", PROMPT_EXCERPT),
          offset,
          length: text.length,
        });
      });
    }
    // Keyed by size as well as mtime, and marked read only once it parsed: a file rewritten in
    // place is empty for a moment, and its truncation and its write can share an mtime (the
    // kernel's file clock is coarse). Read in that moment, it was never read again: a live run
    // showed "2 of 2 rollouts" without its settings.
    const metaKey = ms ? `${ms.mtimeMs}:${ms.size}` : undefined;
    if (metaKey !== undefined && metaKey !== c.metaKey) {
      try {
        const parsed = MetaSchema.safeParse(JSON.parse(await readFile(metaPath, "utf8")));
        c.meta = parsed.success ? parsed.data : {};
        c.metaOk = parsed.success;
        c.metaKey = metaKey;
      } catch {
        // Being replaced right now, or not JSON (yet): keep what was read before, and read it again next time.
      }
    }
    const [envFromDir, modelFromDir] = splitGroup(group);
    const rows = [...c.rows.values()].sort((a, b) => a.example_id - b.example_id || a.rollout - b.rollout);
    return {
      id,
      group,
      name,
      dir,
      meta: c.meta,
      env: c.meta.env ?? envFromDir,
      model: c.meta.model ?? modelFromDir,
      complete: typeof c.meta.avg_reward === "number",
      abandoned: typeof c.meta.avg_reward !== "number" && processGone(c.meta.pid, c.meta.host),
      rows,
      badLines: c.bad,
      version: `${rs?.ino ?? 0}:${rs?.size ?? 0}:${ms?.mtimeMs ?? 0}:${ms?.size ?? 0}`,
    };
  }
}

/** The process `pid` of this machine (`host`) does not exist any more; unknown (another machine, no pid): false. */
function processGone(pid: number | null | undefined, host: string | null | undefined): boolean {
  if (typeof pid !== "number" || host !== hostname()) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
  // A zombie (killed, not yet reaped: a container's first process may never reap it) is gone too.
  try {
    return /^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** `{env}--{model with / as --}` → [env, model], for a run whose metadata is not there yet. */
function splitGroup(group: string): [string, string] {
  const i = group.indexOf("--");
  return i === -1 ? [group, "?"] : [group.slice(0, i), group.slice(i + 2).replaceAll("--", "/")];
}

async function subdirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && !e.name.startsWith(".")).map((e) => e.name).sort();
  } catch {
    return [];
  }
}
