/**
 * The Open Reward Standard (ORS), served beside OpenEnv's protocol: what ORS's own client
 * (`ors-sdk`), the OpenReward SDK (`openreward`: TRL's `trl.experimental.openreward`, verifiers'
 * OpenReward taskset) and `openenv import` speak. Its paths are at the server's root, as ORS's
 * clients build them (an absolute path on the base URL: a path prefix would be dropped):
 *
 *   POST /create_session            SSE: `task_id` = a new session id, then `end`
 *   POST /create   (X-Session-ID)   {env_name?, task_spec} | {env_name?, split, index}: the session's episode
 *   POST /ping, /delete, /delete_session (X-Session-ID)
 *   GET  /list_environments
 *   GET  /{env}/tools  /{env}/splits         POST /{env}/tasks /num_tasks /task /task_range
 *   GET  /{env}/prompt /{env}/task_tools (X-Session-ID)
 *   POST /{env}/call {name, input} (X-Session-ID): SSE `task_id`, then the ToolOutput JSON
 *        (`chunk`s and `end`): {ok: true, output: {blocks, metadata, reward, finished}} | {ok: false, error};
 *        a comment every 10 s while the call runs (ORS's client gives up on a stream silent for
 *        30 s), and {name, input, task_id} resumes a call whose stream broke (ors-tasks.ts)
 *
 * Without `/{env}` (the OpenReward SDK without a variant), the paths are the first environment's,
 * as an ORS server's default environment.
 *
 * Mapping: a task is an example, its spec `{env, example, split, index, seed, example_id}` (the
 * reference `example` replays the same example over OpenEnv's protocol: `reset({example})`); a task
 * index is a dataset row, or a generated environment's seed. A session is an episode (its id is the
 * episode id); the prompt is the episode's prompt (one text block per message, `detail.role`); the
 * tools are the episode's (the environment's, then `submit`: the model's plain reply, a final
 * answer or a game move), and a call is a step: `reward` is the episode's once it is `finished`.
 * A session made without `env_name` (ORS's client, by split and index) gets its episode at its
 * first call under `/{env}`.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import type { Environment } from "../env/environment.ts";
import { ApiError, toApiError } from "../env/errors.ts";
import type { StepResult } from "../env/episode.ts";
import { episodeKey, type EpisodeHost } from "./episode-host.ts";
import type { EnvEngine } from "./engine.ts";
import { episodeTools, hasEpisodeTool, stepToolCall, SUBMIT_TOOL } from "./mcp-episode.ts";
import { newEpisodeId } from "./ids.ts";
import { OrsTasks } from "./ors-tasks.ts";
import { MAX_EXAMPLES } from "./protocol.ts";

// -- the wire (ors/types.py) -------------------------------------------------------------------

const Name = z.string().min(1).max(256);
const SplitName = z.string().min(1).max(64);
const Index = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

const CreateSession = z
  .object({
    env_name: Name.nullish(),
    task_spec: z.record(z.string(), z.unknown()).nullish(),
    split: SplitName.nullish(),
    index: Index.nullish(),
    secrets: z.record(z.string(), z.string()).nullish(),
    // The OpenReward SDK's own field (its toolsets): not ours to honour, accepted.
    toolset_name: z.string().max(256).nullish(),
  })
  .strict()
  .refine((r) => (r.task_spec != null) !== (r.split != null && r.index != null), { message: "Provide either task_spec or both split and index, not both/neither" })
  .refine((r) => (r.split == null) === (r.index == null), { message: "split and index must both be provided together" });
const SplitRequest = z.object({ split: SplitName }).strict();
const TaskRequest = z.object({ split: SplitName, index: Index }).strict();
const TaskRangeRequest = z.object({ split: SplitName, start: z.number().int().nullish(), stop: z.number().int().nullish() }).strict();
const ToolCall = z.object({ name: Name, input: z.record(z.string(), z.unknown()), task_id: z.string().max(256).nullish() }).strict();
/** A task spec as this server writes it: the reference is what a session needs. */
const TaskSpec = z.object({ example: z.string().min(1).max(16_384), env: Name.optional() }).loose();
/** A session id names its episode (and, on Workers, its Durable Object): letters, digits, `-` and `_` (ours, or a client's UUID). */
const SessionId = z.string().regex(/^[A-Za-z0-9_-]{1,255}$/);

export type TaskSpecOf = { env: string; example: string; split: string; index: number | null; seed: number | null; example_id: string | number | null };

/** Tasks a generated environment counts (its seeds 0 … n−1; any seed is a task). */
export const GENERATED_TASKS = 2 ** 31 - 1;

// -- sessions ----------------------------------------------------------------------------------

/** What a session is, between `/create` and its episode's end. */
export interface OrsSession {
  /** The client that made it (client-id.ts): any other sees no such session. */
  client: string;
  /** The environment, once known (`env_name`, the task spec's, or the first call's). */
  env?: string | undefined;
  /** What the episode is made from: the example reference, or a split and index (resolved at the first call). */
  create: { example: string } | { split: string; index: number };
  /** Whether the episode exists (its id is the session id). */
  started: boolean;
  /** Last use (ms since the epoch): an idle session is forgotten. */
  at: number;
}

/**
 * Where sessions are kept: in memory on Node, in the session's Durable Object on Workers. Kept
 * under (client, sid), as episodes are (episode-host.ts): a session id chosen by one client never
 * finds, nor tells of, another client's session of that id.
 */
export interface OrsSessionStore {
  get(client: string, sid: string): Promise<OrsSession | undefined>;
  /** Stores the session (a new one past the store's limits: CAPACITY_REACHED). */
  put(client: string, sid: string, session: OrsSession): Promise<void>;
  delete(client: string, sid: string): Promise<void>;
  /** Throws CAPACITY_REACHED when a new session of this client would not be kept (stores with limits). */
  admit?(client: string): void;
}

/** ORS sessions a server keeps at most (MemoryOrsSessions). */
export const ORS_SESSIONS = 100_000;

export interface MemoryOrsSessionsOptions {
  /** Sessions at most (default ORS_SESSIONS). */
  max?: number;
  /** Sessions one client may keep at most (default: max): a client at its share gets CAPACITY_REACHED, others are served. */
  maxPerClient?: number;
  /** An unused session is forgotten after this long (default 900 s, as ORS's server reaps). */
  idleMs?: number;
  /** Clock, injectable for tests. */
  now?: () => number;
}

/**
 * Sessions in memory: at most `max`, each client at most `maxPerClient` (its share, as the episode
 * store's: one client filling its share does not stop another opening a session), each forgotten
 * after `idleMs` unused. A new session past a limit is refused (CAPACITY_REACHED), never made by
 * dropping another's.
 */
export class MemoryOrsSessions implements OrsSessionStore {
  readonly max: number;
  readonly maxPerClient: number;
  private readonly idleMs: number;
  private readonly now: () => number;
  // Ordered by last put (each put re-inserts): idle ones are at the front.
  private readonly sessions = new Map<string, OrsSession>();
  private readonly perClient = new Map<string, number>();

  constructor(opts: MemoryOrsSessionsOptions = {}) {
    this.max = opts.max ?? ORS_SESSIONS;
    this.maxPerClient = Math.min(opts.maxPerClient ?? this.max, this.max);
    this.idleMs = opts.idleMs ?? 900_000;
    this.now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.sessions.size;
  }

  /** One client's sessions. */
  sessionsOf(client: string): number {
    return this.perClient.get(client) ?? 0;
  }

  async get(client: string, sid: string) {
    const key = episodeKey(client, sid);
    const s = this.sessions.get(key);
    if (s && this.now() - s.at > this.idleMs) {
      this.forget(key, s);
      return undefined;
    }
    return s;
  }

  admit(client: string): void {
    this.expireIdle();
    if (this.sessions.size >= this.max) {
      throw new ApiError("CAPACITY_REACHED", `the server holds its maximum of ${this.max} ORS sessions; delete some or retry later`, { active_sessions: this.sessions.size, max_sessions: this.max });
    }
    if (this.sessionsOf(client) >= this.maxPerClient) {
      throw new ApiError("CAPACITY_REACHED", `this client holds its share of ${this.maxPerClient} ORS sessions; delete some or retry later`, {
        active_sessions: this.sessionsOf(client),
        max_sessions: this.maxPerClient,
      });
    }
  }

  async put(client: string, sid: string, session: OrsSession) {
    const key = episodeKey(client, sid);
    const old = this.sessions.get(key);
    if (old) this.sessions.delete(key);
    else {
      this.admit(client);
      this.perClient.set(client, this.sessionsOf(client) + 1);
    }
    this.sessions.set(key, session);
  }

  async delete(client: string, sid: string) {
    const key = episodeKey(client, sid);
    const s = this.sessions.get(key);
    if (s) this.forget(key, s);
  }

  private expireIdle(): void {
    const cutoff = this.now() - this.idleMs;
    for (const [key, s] of this.sessions) {
      if (s.at > cutoff) break; // ordered by last put: the rest are newer
      this.forget(key, s);
    }
  }

  private forget(key: string, s: OrsSession): void {
    this.sessions.delete(key);
    const left = this.sessionsOf(s.client) - 1;
    if (left > 0) this.perClient.set(s.client, left);
    else this.perClient.delete(s.client);
  }
}

export interface OrsDeps {
  envs: readonly Environment[];
  host: EpisodeHost;
  engine: EnvEngine;
  sessions: OrsSessionStore;
  clientOf: (c: Context) => string;
  /** The request's JSON body against a schema (the app's reader: limits, INVALID_JSON, VALIDATION_ERROR). */
  readBody: <S extends z.ZodType>(c: Context, schema: S) => Promise<z.output<S>>;
  /** How often a tool call's stream says it is alive (default HEARTBEAT_MS; tests make it short, 0: never). */
  heartbeatMs?: number | undefined;
}

/** A comment on a call's stream this often: ORS's server pings every 10 s, its client gives up after 30 s of silence. */
export const HEARTBEAT_MS = 10_000;

// -- answers -----------------------------------------------------------------------------------

/** ORS's errors are FastAPI's: `{"detail": message}` with the status. */
function detail(c: Context, status: number, message: string) {
  return c.json({ detail: message }, status as 400);
}

function orsError(c: Context, err: unknown) {
  const e = toApiError(err);
  return detail(c, e.status, e.code === "VALIDATION_ERROR" || e.code === "UNKNOWN_ENV" || e.code === "UNKNOWN_EPISODE" ? e.message : `${e.code}: ${e.message}`);
}

/** One SSE event; `data` has no newline (JSON, ids). */
const sse = (event: string, data: string) => `event: ${event}\ndata: ${data}\n\n`;

/** ORS's SSE framing of a result: chunks of 4096 characters, the last one `end` (ors/_reconnect.py). */
function sseResult(json: string): string {
  let out = "";
  for (let i = 0; i < json.length; i += 4096) out += sse(i + 4096 >= json.length ? "end" : "chunk", json.slice(i, i + 4096));
  return out || sse("end", "");
}

/** A new object each time: Node's adapter (@hono/node-server) writes an answer's Content-Length into the headers object it is given. */
const sseHeaders = () => ({ "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" });

/**
 * An SSE answer whose `task_id` goes out at once and whose result follows when the task is done,
 * with a comment every `heartbeatMs` meanwhile (ORS's client gives up on a stream silent for 30 s).
 * A client gone before the end stops the stream, not the task (it may come back for it).
 */
function sseTask(taskId: string, result: Promise<string>, heartbeatMs: number): Response {
  const encoder = new TextEncoder();
  let beat: ReturnType<typeof setInterval> | undefined;
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (text: string) => {
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          // The stream was cancelled (its client left): nothing more to say.
        }
      };
      send(sse("task_id", taskId));
      if (heartbeatMs > 0) beat = setInterval(() => send(": ping\n\n"), heartbeatMs);
      try {
        send(sseResult(await result));
      } catch (err) {
        send(sse("error", toApiError(err).message.replaceAll("\n", " ")));
      } finally {
        if (beat !== undefined) clearInterval(beat);
        try {
          controller.close();
        } catch {
          // Already cancelled.
        }
      }
    },
    cancel() {
      if (beat !== undefined) clearInterval(beat);
    },
  });
  return new Response(stream, { status: 200, headers: sseHeaders() });
}

// -- the routes --------------------------------------------------------------------------------

const splitType = (name: string) => (name === "train" || name === "test" ? name : "validation");

export function mountOrs(app: Hono<any>, deps: OrsDeps): void {
  const byName = new Map(deps.envs.map((e) => [e.name, e]));
  const calls = new OrsTasks();
  const heartbeatMs = deps.heartbeatMs ?? HEARTBEAT_MS;
  const defaultEnv = deps.envs[0];
  const envNamed = (name: string): Environment => {
    const env = byName.get(name);
    if (!env) throw new ApiError("UNKNOWN_ENV", `unknown environment ${JSON.stringify(name)}`);
    return env;
  };
  const sidOf = (c: Context): string => {
    const sid = SessionId.safeParse(c.req.header("x-session-id")?.trim());
    if (!sid.success) throw new ApiError("VALIDATION_ERROR", "X-Session-ID header is required (letters, digits, - and _)");
    return sid.data;
  };
  /** The caller's session, or 404 (another client's is as unknown as none). */
  const sessionOf = async (c: Context, sid: string): Promise<OrsSession> => {
    const s = await deps.sessions.get(deps.clientOf(c), sid);
    if (!s || s.client !== deps.clientOf(c)) throw new ApiError("UNKNOWN_EPISODE", "Active environment not found");
    return s;
  };

  /** The examples of a split, `start` … `stop` (rows, or a generated environment's seeds). */
  const tasks = async (c: Context, env: Environment, split: string, start: number, count: number): Promise<{ tasks: TaskSpecOf[]; total: number | null }> => {
    if (!env.splits.includes(split)) throw new ApiError("VALIDATION_ERROR", "Invalid split");
    const page = (await deps.engine.examples(env, { split, start, count }, { key: deps.clientOf(c), signal: c.req.raw.signal })) as {
      examples: { example: string; split: string; index: number | null; seed: number | null; example_id: string | number | null }[];
      total: number | null;
    };
    return { total: page.total, tasks: page.examples.map((e) => ({ env: env.name, example: e.example, split: e.split, index: e.index, seed: e.seed, example_id: e.example_id })) };
  };
  const numTasks = async (c: Context, env: Environment, split: string) => (await tasks(c, env, split, 0, 0)).total ?? GENERATED_TASKS;

  /** The session's episode, made at its first use under `/{env}` when `/create` did not know the environment. */
  const episodeOf = async (c: Context, env: Environment): Promise<string> => {
    const sid = sidOf(c);
    const s = await sessionOf(c, sid);
    if (s.env !== undefined && s.env !== env.name) throw new ApiError("UNKNOWN_EPISODE", `session ${sid} is an episode of ${s.env}, not ${env.name}`);
    if (!s.started) await start(c, env, sid, s);
    else await deps.sessions.put(s.client, sid, { ...s, at: Date.now() });
    return sid;
  };
  const start = async (c: Context, env: Environment, sid: string, s: OrsSession) => {
    let example: string;
    if ("example" in s.create) example = s.create.example;
    else {
      const found = await tasks(c, env, s.create.split, s.create.index, 1);
      if (found.tasks.length === 0) throw new ApiError("VALIDATION_ERROR", "Invalid index");
      example = found.tasks[0]!.example;
    }
    await deps.host.reset(env, { example, episode_id: sid }, s.client);
    try {
      await deps.sessions.put(s.client, sid, { ...s, env: env.name, started: true, at: Date.now() });
    } catch (err) {
      // Not kept (the store is full): nor is its episode.
      await deps.host.close(env, sid, s.client).catch(() => false);
      throw err;
    }
  };

  app.post("/create_session", (c) => new Response(sse("task_id", newEpisodeId()) + sse("end", ""), { headers: sseHeaders() }));
  app.post("/delete_session", (c) => {
    try {
      return c.json({ sid: sidOf(c) });
    } catch (err) {
      return orsError(c, err);
    }
  });
  app.get("/list_environments", (c) => c.json(deps.envs.map((e) => e.name)));

  app.post("/create", async (c) => {
    try {
      const sid = sidOf(c);
      const req = await deps.readBody(c, CreateSession);
      if (await deps.sessions.get(deps.clientOf(c), sid)) return detail(c, 400, "Session already exists");
      // Past its share of sessions a client is refused before its episode is made.
      deps.sessions.admit?.(deps.clientOf(c));
      let envName = req.env_name ?? undefined;
      let create: OrsSession["create"];
      if (req.task_spec != null) {
        const spec = TaskSpec.safeParse(req.task_spec);
        if (!spec.success) throw new ApiError("VALIDATION_ERROR", "task_spec must carry the example reference of one of this server's tasks: {example, env}");
        envName ??= spec.data.env;
        create = { example: spec.data.example };
      } else create = { split: req.split!, index: req.index! };
      // An environment this server does not have is ORS's 404; one served alone is the only choice.
      if (envName !== undefined) envNamed(envName);
      else if (deps.envs.length === 1) envName = defaultEnv!.name;
      const session: OrsSession = { client: deps.clientOf(c), env: envName, create, started: false, at: Date.now() };
      if (envName !== undefined) await start(c, envNamed(envName), sid, session);
      else await deps.sessions.put(session.client, sid, session);
      return c.json({ sid });
    } catch (err) {
      return orsError(c, err);
    }
  });

  app.post("/ping", async (c) => {
    try {
      const sid = sidOf(c);
      const s = await sessionOf(c, sid);
      await deps.sessions.put(s.client, sid, { ...s, at: Date.now() });
      return c.json({ status: "ok" });
    } catch (err) {
      return orsError(c, err);
    }
  });

  app.post("/delete", async (c) => {
    try {
      const sid = sidOf(c);
      const s = await deps.sessions.get(deps.clientOf(c), sid);
      if (s && s.client === deps.clientOf(c)) {
        await deps.sessions.delete(s.client, sid);
        if (s.started && s.env) await deps.host.close(envNamed(s.env), sid, s.client).catch(() => false);
      }
      return c.json({ sid });
    } catch (err) {
      return orsError(c, err);
    }
  });

  // Each environment's routes, under `/{env}` and (the first environment's) at the root.
  const routes = (prefix: string, envFor: (c: Context) => Environment) => {
    const guard = (handler: (c: Context, env: Environment) => Promise<Response> | Response) => async (c: Context) => {
      try {
        return await handler(c, envFor(c));
      } catch (err) {
        return orsError(c, err);
      }
    };
    app.get(`${prefix}/tools`, guard((c, env) => c.json({ tools: orsTools(env) })));
    app.get(`${prefix}/splits`, guard((c, env) => c.json(env.splits.map((name) => ({ name, type: splitType(name) })))));
    app.post(
      `${prefix}/tasks`,
      guard(async (c, env) => {
        const req = await deps.readBody(c, SplitRequest);
        const total = await numTasks(c, env, req.split);
        if (total > MAX_EXAMPLES) throw new ApiError("VALIDATION_ERROR", `list_tasks is not supported for this environment (${env.name} generates its tasks from seeds). Use the index-based API (num_tasks + get_task, task_range) instead.`);
        return c.json({ tasks: (await tasks(c, env, req.split, 0, total)).tasks, env_name: env.name });
      }),
    );
    app.post(
      `${prefix}/num_tasks`,
      guard(async (c, env) => c.json({ num_tasks: await numTasks(c, env, (await deps.readBody(c, SplitRequest)).split) })),
    );
    app.post(
      `${prefix}/task`,
      guard(async (c, env) => {
        const req = await deps.readBody(c, TaskRequest);
        const found = await tasks(c, env, req.split, req.index, 1);
        if (found.tasks.length === 0) throw new ApiError("VALIDATION_ERROR", "Invalid index");
        return c.json({ task: found.tasks[0], env_name: env.name });
      }),
    );
    app.post(
      `${prefix}/task_range`,
      guard(async (c, env) => {
        const req = await deps.readBody(c, TaskRangeRequest);
        const total = await numTasks(c, env, req.split);
        // Python's range(total)[start:stop]: negative indices count from the end.
        const at = (i: number | null | undefined, dflt: number) => (i == null ? dflt : i < 0 ? Math.max(0, total + i) : Math.min(i, total));
        const from = at(req.start, 0);
        const to = at(req.stop, total);
        const count = Math.max(0, to - from);
        if (count > MAX_EXAMPLES) throw new ApiError("VALIDATION_ERROR", `Invalid index range: at most ${MAX_EXAMPLES} tasks per request`);
        return c.json({ tasks: (await tasks(c, env, req.split, from, count)).tasks, env_name: env.name });
      }),
    );
    app.get(
      `${prefix}/task_tools`,
      guard(async (c, env) => {
        await episodeOf(c, env);
        return c.json({ tools: orsTools(env) });
      }),
    );
    app.get(
      `${prefix}/prompt`,
      guard(async (c, env) => {
        const sid = await episodeOf(c, env);
        const state = await deps.host.state(env, sid, deps.clientOf(c));
        const messages = (state.messages ?? []) as { role: string; content: string | null }[];
        const end = messages.findIndex((m) => m.role === "assistant");
        return c.json((end === -1 ? messages : messages.slice(0, end)).map((m) => ({ type: "text", text: m.content ?? "", detail: { role: m.role } })));
      }),
    );
    app.post(
      `${prefix}/call`,
      guard(async (c, env) => {
        // The body first: starting a session's episode reads the request's abort signal, and on
        // Node that hands the body's stream to a web Request (node-body.ts reads it from there then).
        const req = await deps.readBody(c, ToolCall);
        const sid = await episodeOf(c, env);
        const client = deps.clientOf(c);
        if (req.task_id != null) {
          // ORS's client coming back for a call whose stream broke: its answer, not a second call.
          const task = calls.find(client, sid, req.task_id);
          if (!task) return new Response(sse("error", "unknown task_id"), { status: 200, headers: sseHeaders() });
          return sseTask(req.task_id, task.result, heartbeatMs);
        }
        const id = newEpisodeId();
        const task = calls.start(client, sid, id, async () => JSON.stringify(await callTool(deps, env, sid, req.name, req.input as Record<string, unknown>, client)));
        return sseTask(id, task.result, heartbeatMs);
      }),
    );
  };
  routes("/:ors_env{[A-Za-z0-9][A-Za-z0-9._-]*}", (c) => envNamed(c.req.param("ors_env")!));
  if (defaultEnv) routes("", () => defaultEnv);
}

/** The episode's tools as ORS lists them: `{name, description, input_schema}`. */
export function orsTools(env: Environment) {
  return (episodeTools(env) as { name: string; description?: string; inputSchema?: unknown }[]).map((t) => ({ name: t.name, description: t.description ?? "", input_schema: t.inputSchema ?? null }));
}

/**
 * One ORS tool call: a step of the session's episode (a tool call, or `submit`'s plain reply).
 * `ok: false` when nothing was played (a tool the episode does not have, a finished episode,
 * arguments `submit` refuses); a tool that failed took its turn, its error text in the blocks
 * and `metadata.error` (OpenEnv's `{error_type, message}`).
 */
export async function callTool(deps: Pick<OrsDeps, "host">, env: Environment, sid: string, name: string, input: Record<string, unknown>, client: string | undefined) {
  if (!hasEpisodeTool(env, name)) return { ok: false, error: `tool_not_found: no tool ${JSON.stringify(name)}; tools: ${orsTools(env).map((t) => t.name).join(", ")}` };
  let step: StepResult;
  try {
    step = await stepToolCall(env, deps.host, sid, name, input, client);
  } catch (err) {
    const e = toApiError(err);
    if (e.status >= 500) throw err;
    return { ok: false, error: `${e.code}: ${e.message}` };
  }
  const obs = step.observation as unknown as { result: { content: { text: string }[] }; error: unknown; turn: number; truncated: boolean; metrics?: Record<string, number> };
  const text = obs.result.content.map((b) => b.text).join("\n");
  const metadata: Record<string, unknown> = { episode_id: step.episode_id, turn: obs.turn, truncated: obs.truncated, ...(obs.metrics ? { metrics: obs.metrics } : {}), ...(obs.error ? { error: obs.error } : {}) };
  if (name === SUBMIT_TOOL) metadata.submitted = true;
  return { ok: true, output: { blocks: [{ type: "text", text, detail: null }], metadata, reward: step.reward, finished: step.done } };
}
