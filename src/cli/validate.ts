/**
 * `envworker validate`: the checks OpenEnv's `openenv validate --url B` makes (its
 * cli/_validation.py), each tool called once (POST /mcp tools/call, arguments from its schema), then
 * an episode played with a scripted action: reset determinism, a
 * finite reward, reward functions that do not throw, and POST /score of the played completion
 * giving the episode's reward. Against a running server (--url: its origin or one environment's
 * URL) or environments loaded from specs and served in process; the same HTTP checks either way.
 */
import { parseArgs } from "node:util";
import { SPECS_HELP, UsageError, environmentsFor } from "./specs.ts";
import { createLogger, logger, setLogger } from "../server/log.ts";
import { exampleOf } from "./schema-example.ts";
import { readSetting } from "../settings/settings.ts";

export interface Check {
  name: string;
  ok: boolean;
  detail?: string;
  /** Not checked (a judged reward on a server without a judge): ok, but said in the verdict. */
  skipped?: boolean;
}

type Fetch = (url: string, init?: RequestInit) => Promise<Response>;

export interface ValidateOptions {
  /** The model turn sent at every step of the played episode. */
  action?: string;
  /** Headers sent with every request (a bearer token). */
  headers?: Record<string, string>;
}

/** What the scripted player says at every turn: no environment can be expected to accept it as right. */
export const DEFAULT_ACTION = "I do not know.";
/** Steps at most in the played episode (an environment's own maxTurns ends it sooner). */
const MAX_PLAYED_STEPS = 1000;

/** One request's status and JSON body (undefined when the body is not JSON). */
async function json(fetcher: Fetch, url: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const res = await fetcher(url, init);
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: undefined };
  }
}

/** An error response as one line: `HTTP 422 EXECUTION_ERROR: message`. */
function describe(r: { status: number; body: any }): string {
  const e = r.body?.error;
  return e?.code ? `HTTP ${r.status} ${e.code}: ${e.message}` : `HTTP ${r.status} ${JSON.stringify(r.body)?.slice(0, 300)}`;
}

const finite = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);

/** Validate one environment base URL `B` (e.g. http://host:8000/envs/wordle). */
export async function validateBase(base: string, fetcher: Fetch = fetch, opts: ValidateOptions = {}): Promise<Check[]> {
  const headers = { "content-type": "application/json", ...opts.headers };
  const get = (path: string) => json(fetcher, `${base}${path}`, { headers: opts.headers ?? {} });
  const post = (path: string, body: unknown) => json(fetcher, `${base}${path}`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), headers });
  const checks: Check[] = [];
  const check = async (name: string, run: () => Promise<string | true>) => {
    try {
      const r = await run();
      checks.push(r === true ? { name, ok: true } : { name, ok: false, detail: r });
    } catch (err) {
      checks.push({ name, ok: false, detail: err instanceof Error ? err.message : String(err) });
    }
    return checks.at(-1)!.ok;
  };

  // openenv validate's checks.
  let paths: string[] = [];
  await check("GET /openapi.json has info.version 1.x (profile openenv-http/1.x)", async () => {
    const r = await get("/openapi.json");
    paths = Object.keys(r.body?.paths ?? {});
    return /^1\./.test(String(r.body?.info?.version)) || `info.version is ${JSON.stringify(r.body?.info?.version)}`;
  });
  await check('GET /health is 200 {"status":"healthy"}', async () => {
    const r = await get("/health");
    return (r.status === 200 && r.body?.status === "healthy") || `HTTP ${r.status} ${JSON.stringify(r.body)}`;
  });
  await check("GET /metadata has name and description", async () => {
    const r = await get("/metadata");
    return (typeof r.body?.name === "string" && typeof r.body?.description === "string") || JSON.stringify(r.body);
  });
  await check("GET /schema has action, observation and state objects", async () => {
    const r = await get("/schema");
    const missing = ["action", "observation", "state"].filter((k) => typeof r.body?.[k] !== "object");
    return missing.length === 0 || `missing ${missing.join(", ")}`;
  });
  await check('POST /mcp {} is 200 with jsonrpc "2.0"', async () => {
    const r = await post("/mcp", "{}");
    return (r.status === 200 && r.body?.jsonrpc === "2.0") || describe(r);
  });
  await check("OpenAPI paths have all of /reset, /step, /state (simulation profile)", async () => {
    const missing = ["/reset", "/step", "/state"].filter((p) => !paths.includes(p));
    return missing.length === 0 || `missing ${missing.join(", ")}`;
  });
  let prompt: unknown[] = [];
  const resets = await check("POST /reset gives an observation with messages, reward null, done false", async () => {
    const r = await post("/reset", { seed: 0 });
    if (r.status !== 200) return describe(r);
    const ok = Array.isArray(r.body?.observation?.messages) && r.body.reward === null && r.body.done === false && typeof r.body.episode_id === "string";
    if (ok) {
      prompt = r.body.observation.messages;
      await post("/close", { episode_id: r.body.episode_id });
    }
    return ok || JSON.stringify(r.body).slice(0, 300);
  });
  if (!resets) return checks;

  // Each tool, called once: an environment whose tool cannot run (no sandbox, a broken host) is no
  // use to a model, and an episode played with a text turn never calls it.
  const listed = await post("/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" });
  const tools: { name: string; inputSchema?: unknown }[] = Array.isArray(listed.body?.result?.tools) ? listed.body.result.tools : [];
  for (const tool of tools) {
    const args = exampleOf(tool.inputSchema ?? { type: "object" });
    const shown = JSON.stringify(args).slice(0, 80);
    await check(`tool ${tool.name} answers a call with arguments from its schema (${shown})`, async () => {
      const r = await post("/mcp", { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: tool.name, arguments: args } });
      if (r.body?.error) return `tools/call: ${r.body.error.message}`;
      if (r.status !== 200 || !Array.isArray(r.body?.result?.content)) return `tools/call: ${describe(r)}`;
      const text = r.body.result.content.map((c: { text?: unknown }) => (typeof c.text === "string" ? c.text : "")).join(" ");
      return r.body.result.isError !== true || `the tool failed: ${text.slice(0, 300)}`;
    });
  }

  // The episode: what a trainer would run into.
  await check("POST /reset with the same seed gives the same prompt", async () => {
    const r = await post("/reset", { seed: 0 });
    if (r.status !== 200) return describe(r);
    await post("/close", { episode_id: r.body.episode_id });
    return JSON.stringify(r.body.observation?.messages) === JSON.stringify(prompt) || "the second reset with seed 0 gave a different prompt: every random choice must go through the episode's rng";
  });
  let played: { id: string; reward: number; turns: number } | undefined;
  const unchecked: { name: string; message: string }[] = [];
  await check(`an episode played with a scripted turn (${JSON.stringify((opts.action ?? DEFAULT_ACTION).slice(0, 40))}) ends with finite rewards and no failing reward function`, async () => {
    const r = await post("/reset", { seed: 0 });
    if (r.status !== 200) return `reset: ${describe(r)}`;
    const id: string = r.body.episode_id;
    let last: any;
    let steps = 0;
    try {
      while (steps < MAX_PLAYED_STEPS) {
        steps++;
        const s = await post("/step", { episode_id: id, action: { content: opts.action ?? DEFAULT_ACTION } });
        if (s.status !== 200) return `step ${steps}: ${describe(s)}`;
        last = s.body;
        if (last.done === true) break;
        if (last.reward !== null) return `step ${steps}: reward ${JSON.stringify(last.reward)} before the episode is done (must be null)`;
      }
    } finally {
      if (last?.done !== true) await post("/close", { episode_id: id });
    }
    if (last?.done !== true) return `the episode is not done after ${MAX_PLAYED_STEPS} steps`;
    const problems: string[] = [];
    if (!finite(last.reward)) problems.push(`reward is ${JSON.stringify(last.reward)}, not a finite number`);
    for (const [name, value] of Object.entries(last.observation?.metrics ?? {})) {
      if (!finite(value)) problems.push(`metric ${name} is ${JSON.stringify(value)}`);
    }
    const errors = last.observation?.info?.reward_errors as Record<string, string> | undefined;
    for (const [name, message] of Object.entries(errors ?? {})) {
      if (unjudged(message)) unchecked.push({ name, message });
      else problems.push(`reward function ${name} failed: ${message}`);
    }
    // A sandbox or judge that failed while the episode was scored: its reward is no verdict.
    for (const line of (last.observation?.info?.service_errors ?? []) as string[]) {
      if (!unjudged(line.replace(/^judge: /, ""))) problems.push(`scored while ${line}`);
    }
    played = { id, reward: last.reward, turns: steps };
    return problems.length === 0 || problems.join("; ");
  });
  if (played) {
    const { id, reward } = played;
    await check("POST /score of the played completion gives the episode's reward", async () => {
      try {
        const st = await get(`/state?episode_id=${encodeURIComponent(id)}`);
        if (st.status !== 200) return `GET /state: ${describe(st)}`;
        const messages: unknown[] = st.body?.messages ?? [];
        const item = { prompt, completion: messages.slice(prompt.length), answer: st.body?.answer ?? "", info: st.body?.info ?? {} };
        const sc = await post("/score", { items: [item] });
        if (sc.status !== 200) return `POST /score: ${describe(sc)}`;
        const result = sc.body?.results?.[0];
        const failures = Object.entries((result?.errors ?? {}) as Record<string, string>).filter(([, v]) => !unjudged(v));
        if (failures.length > 0) return `POST /score: reward functions failed: ${failures.map(([k, v]) => `${k}: ${v}`).join("; ")}`;
        const same = finite(result?.reward) && Math.abs(result.reward - reward) <= 1e-9 * Math.max(1, Math.abs(reward));
        return (
          same ||
          `/score gives ${JSON.stringify(result?.reward)}, the episode gave ${reward}: a reward function depends on what /score does not have (the episode's state, which is {} there; see docs/authoring.md)`
        );
      } finally {
        await post("/close", { episode_id: id });
      }
    });
  }
  // Judged rewards the server could not ask a judge about: named, never passed over in silence.
  for (const { name, message } of unchecked) {
    checks.push({
      name: `reward function ${name}`,
      ok: true,
      skipped: true,
      detail: `not checked, it needs a judge the server does not have (${message}); set ENVWORKER_JUDGE_URL and ENVWORKER_JUDGE_MODEL to check it`,
    });
  }
  return checks;
}

/** The verdict line of one environment: `PASS name`, `FAIL name`, and what was not checked. */
export function verdict(name: string, checks: readonly Check[]): string {
  const bad = checks.filter((c) => !c.ok);
  const skipped = checks.filter((c) => c.skipped);
  const note = skipped.length > 0 ? ` (not checked: ${skipped.map((c) => c.name).join(", ")}: no judge)` : "";
  return `${bad.length === 0 ? "PASS" : "FAIL"} ${name}${note}`;
}

/**
 * A judged reward on a server without a judge: not the environment's fault (the operator names
 * the judge, ENVWORKER_JUDGE_URL); validating with one set checks those rewards too.
 */
function unjudged(message: string): boolean {
  return message.startsWith("JUDGE_UNCONFIGURED: ");
}

const USAGE = `usage: envworker validate [--url URL] [--action TEXT] [ENV ...]

Checks each environment: the checks of \`openenv validate --url\` (openapi, health, metadata,
schema, mcp, reset), each tool called once with arguments built from its schema (it must not
fail), then an episode played to the end with a scripted turn: the same seed gives
the same prompt, the reward and metrics are finite numbers, no reward function throws, respond
does not fail, and POST /score of the played completion gives the episode's reward.
Prints PASS or FAIL per environment with every check; exit 0 when all pass, 1 on any failure or
an unreachable server, 2 on usage errors.

  --url URL      a running server: its origin (http://127.0.0.1:8000, every environment it
                 lists, or those named) or one environment's URL (http://127.0.0.1:8000/envs/NAME).
                 ENVWORKER_TOKEN, when set, is sent as the bearer token.
  --action TEXT  the model turn played at every step (default ${JSON.stringify(DEFAULT_ACTION)})
  -h, --help

Without --url: environments loaded from specs, served in process, with the judge the
ENVWORKER_JUDGE_* settings name. A judged reward the server has no judge for (no URL, or no
model: JUDGE_UNCONFIGURED) is not checked, and said so: "PASS NAME (not checked: reward function
X: no judge)" and a SKIP line; any other judge failure (down, unparseable) is a FAIL.

${SPECS_HELP}`;

/** An error of fetch as one line: undici hides the reason (ECONNREFUSED…) in `cause`. */
function networkMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause;
  return cause instanceof Error ? `${err.message} (${(cause as { code?: string }).code ?? cause.message})` : err.message;
}

export async function validateCommand(argv: string[], out: (line: string) => void = console.log, errOut: (text: string) => void = console.error): Promise<number> {
  let values: { url?: string | undefined; action?: string | undefined; help?: boolean | undefined };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: { url: { type: "string" }, action: { type: "string" }, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
    }));
  } catch (err) {
    console.error(`envworker validate: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    out(USAGE);
    return 0;
  }
  const opts: ValidateOptions = { ...(values.action !== undefined ? { action: values.action } : {}) };
  let bases: { name: string; base: string }[];
  let fetcher: Fetch = fetch;
  let cleanup = async () => {};
  let flushLog = () => {};
  if (values.url !== undefined) {
    let url: URL;
    try {
      url = new URL(values.url);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error();
    } catch {
      console.error(`envworker validate: --url must be an http(s) URL, got ${JSON.stringify(values.url)}`);
      return 2;
    }
    const token = readSetting("ENVWORKER_TOKEN");
    if (token) opts.headers = { authorization: `Bearer ${token}` };
    const path = url.pathname.replace(/\/+$/, "");
    const one = /^(.*)\/envs\/([^/]+)$/.exec(path);
    const origin = `${url.origin}${one ? one[1] : path}`;
    try {
      if (one) {
        // One environment's URL (OpenEnv's habit): validate that one.
        const probe = await fetcher(`${origin}/envs/${one[2]}/health`, { headers: opts.headers ?? {} });
        await probe.body?.cancel();
        bases = [{ name: decodeURIComponent(one[2]!), base: `${origin}/envs/${one[2]}` }];
      } else {
        let names = positionals;
        if (names.length === 0) {
          const list = await json(fetcher, `${origin}/envs`, { headers: opts.headers ?? {} });
          names = Array.isArray(list.body?.envs) ? list.body.envs.map((e: { name: string }) => e.name) : [];
          if (names.length === 0) {
            console.error(`envworker validate: no environments at ${origin} (GET /envs: ${describe(list)}); give the server's origin or an environment's URL`);
            return 1;
          }
        }
        bases = names.map((name) => ({ name, base: `${origin}/envs/${encodeURIComponent(name)}` }));
      }
    } catch (err) {
      console.error(`envworker validate: cannot reach ${origin}: ${networkMessage(err)}`);
      return 1;
    }
  } else {
    let environments;
    try {
      ({ environments } = await environmentsFor(positionals));
    } catch (err) {
      if (err instanceof UsageError) {
        console.error(`envworker validate: ${err.message}`);
        return 2;
      }
      throw err;
    }
    const { buildNodeApp } = await import("../node/server.ts");
    const { judgeSettingsFromEnv } = await import("../server/config.ts");
    // Judged rewards are checked against the judge ENVWORKER_JUDGE_* names, as `serve` would use.
    const { app, sandboxes } = buildNodeApp(environments, { judge: judgeSettingsFromEnv(process.env) });
    fetcher = async (u, init) => app.request(u, init);
    // The in-process server's log (an environment's errors, with their stacks) is held while an
    // environment is checked and shown after its PASS/FAIL lines, where it explains them.
    const previous = logger();
    const held: string[] = [];
    setLogger(createLogger(previous.level, (line) => held.push(line)));
    flushLog = () => {
      // A judged reward without a judge is said by its SKIP line: its stack would only bury the rest.
      const shown = held.filter((l) => !/\n\s+JudgeError: (this server has no judge|no judge model)/.test(l));
      if (shown.length > 0) errOut(`  server log:\n${shown.map((l) => l.replace(/^/gm, "    ")).join("\n")}`);
      held.length = 0;
    };
    cleanup = async () => {
      setLogger(previous);
      await Promise.all(sandboxes.map((s) => s.dispose()));
    };
    bases = environments.map((e) => ({ name: e.name, base: `http://envworker.local/envs/${e.name}` }));
  }
  let failed = 0;
  try {
    for (const { name, base } of bases) {
      const checks = await validateBase(base, fetcher, opts);
      const bad = checks.filter((c) => !c.ok);
      if (bad.length) failed++;
      out(verdict(name, checks));
      for (const c of checks) out(`  ${c.skipped ? "SKIP" : c.ok ? "ok  " : "FAIL"} ${c.name}${c.detail ? `: ${c.detail}` : ""}`);
      flushLog();
    }
  } finally {
    await cleanup();
  }
  return failed === 0 ? 0 : 1;
}
